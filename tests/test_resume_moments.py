"""Resume at moments the SIGKILL crash test (test_resume.py) reaches only by chance: a game
cut at an exact ply and continued from its position (TCEC rule 7.c.v), compared move for
move with the same game played without interruption.

The engines are the deterministic fakes (tests/fakes/det_engine.py: the move depends only on
the position), played by the real referee through `run`; the interruption is an error
raised by the event stream's consumer after a chosen ply, which ends the run (exit 1) with
that ply in the move log, as a crash a quarter of a second later would.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import chess.pgn
import psutil
import pytest
import yaml
from testkit import wait_until, write_config

from runner.cli.run import cli_run
from runner.config import load_config
from runner.domain.events import GameEvent, MovePlayed
from runner.errors import EXIT_FAIL, EXIT_OK, StopEvent
from runner.play.referee import play_game as referee_play
from runner.service.setup import stop_requested, stop_signals

FAKE = Path(__file__).resolve().parent / "fakes" / "det_engine.py"
pytestmark = pytest.mark.engines  # real engine processes (the fake engines)


def moments_config(directory: Path, **more: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "book.pgn").write_text('[Event "o"]\n\n1. d4 Nf6 *\n\n')
    data = {
        "Event": "resume moments", "TimeControl": "60+1",
        "SwissOptions": {"GamesPerMatch": 1, "Rounds": 1, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Openings": {"File": "book.pgn"},
        "Adjudication": {"TcecWin": {"ScoreCp": 1000, "Plies": 8},
                         "TcecDraw": {"MaxPawns": 16, "MaxPieces": 32, "ScoreCp": 0, "Plies": 30},
                         "MaxMoves": 60},
        "Interruption": {"Mode": "resume", "Adjudicate": False},
        "Engines": [{"Name": f"D{i}", "Command": sys.executable,
                     "Args": [str(FAKE), style, f"moments-{i}", "0"], "Nodes": 1}
                    for i, style in ((1, "greedy"), (2, "random"))],
        **more,
    }
    return write_config(directory, data)


def args() -> argparse.Namespace:
    return argparse.Namespace(finish_games=False, quiet=True)


class CutAfter:
    """The real referee, whose first attempt at each game is cut after engine ply ``ply``."""

    can_resume = True

    def __init__(self, ply: int):
        self.ply = ply

    async def __call__(self, spec: Any, *, emit: Any, attempt: int = 1, **kw: Any) -> Any:
        def cut(event: GameEvent) -> None:
            emit(event)
            if attempt == 1 and isinstance(event, MovePlayed) and event.ply >= self.ply:
                raise StopEvent(f"the runner stops after ply {event.ply}")

        return await referee_play(spec, emit=cut, attempt=attempt, **kw)


_VOLATILE = [re.compile(p) for p in (
    r",? ?game resumed after an interruption, clocks White [0-9:.]+ Black [0-9:.]+",
    r"\[%(clk|emt) [0-9:.]+\]", r"nps=\d+", r"\s*\d+(\.\d+)?s\b")]


def pgn_moves(path: Path) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The single game's headers and (move, comment) with the times taken out."""
    with open(path, encoding="utf-8") as handle:
        game = chess.pgn.read_game(handle)
    assert game is not None
    out = []
    for node in game.mainline():
        comment = node.comment
        for pattern in _VOLATILE:
            comment = pattern.sub("", comment)
        out.append((node.move.uci(), comment))
    return dict(game.headers), out


@pytest.mark.slow
@pytest.mark.parametrize("extras", [{"PgnComments": "extended"}, {"PgnExtras": ["TCEC"]}])
def test_a_game_continued_from_its_position_keeps_the_pgn_data_of_its_first_moves(
        tmp_path: Path, extras: dict[str, Any]) -> None:
    clean = load_config(moments_config(tmp_path / "clean", **extras))
    assert cli_run(clean, args()) == EXIT_OK
    headers, reference = pgn_moves(clean.pgn_out)
    assert len(reference) > 14

    cut = load_config(moments_config(tmp_path / "cut", **extras))
    assert cli_run(cut, args(), play_game=CutAfter(12)) == EXIT_FAIL
    conn = sqlite3.connect(cut.database)
    assert conn.execute("SELECT MAX(ply) FROM moves").fetchone()[0] == 12
    conn.close()
    assert cli_run(cut, args()) == EXIT_OK  # the plain referee continues it from ply 12
    resumed_headers, moves = pgn_moves(cut.pgn_out)
    assert resumed_headers["ResumedFromPly"] == "12"
    assert resumed_headers["Result"] == headers["Result"]
    assert moves == reference  # the moves before the cut keep their clocks, evals, rule counts
    if "PgnComments" in extras:
        assert all("[%eval" in c for _, c in moves[2:12])
    else:
        assert all("Rd=" in c and "Rr=" in c for _, c in moves[2:12])


FAULTY = Path(__file__).resolve().parent / "fakes" / "fake_uci.py"
REPO = Path(__file__).resolve().parent.parent


def engines_of(token: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if any(token in part for part in proc.info["cmdline"] or []) and \
                proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_during_the_engine_check_at_start_up_is_a_clean_stop(
        tmp_path: Path, signum: int) -> None:
    """`run` checks every engine before its first game (seconds with engines that load a
    network). SIGTERM (systemctl stop) or Ctrl-C then must stop it as at any other moment:
    exit 130 with the message, no traceback, no engine left."""
    token = f"startup-{signum}-{tmp_path.name[-8:]}"
    path = moments_config(tmp_path / "event")
    data = yaml.safe_load(path.read_text())
    data["Engines"][1] = {"Name": "Slow", "Command": sys.executable, "Nodes": 1,
                          "Args": [str(FAULTY), "--handshake-delay", "3", token]}
    write_config(path.parent, data, path.name)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(path)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_until(lambda: engines_of(token), "the check to start the slow engine", 30, proc,
               step=0.01)
    proc.send_signal(signum)
    output, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130, output
    assert "Traceback" not in output and "interrupted; run the same command to resume" in output
    time.sleep(0.2)
    assert engines_of(token) == []


def test_a_stop_that_lands_in_an_engine_checks_task_is_not_logged_as_never_retrieved(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The KeyboardInterrupt of a stop signal during the engine check ends the task it lands
    in; `run` turns it into exit 130, and asyncio must not add "Task exception was never
    retrieved" to the user's terminal when that task is freed (seen in CI, where the
    signal lands in a task's step only now and then: here it always does)."""
    import gc

    from runner.config import EngineConfig
    from runner.play import engines

    async def stopped(engine: EngineConfig, timeout: float) -> None:
        raise KeyboardInterrupt  # as the signal handler raises it, inside the task's step

    monkeypatch.setattr(engines, "_probe", stopped)
    config = EngineConfig(name="A", command=sys.executable)
    with caplog.at_level("ERROR", logger="asyncio"), pytest.raises(KeyboardInterrupt):
        engines.probe_engines([config, config])
    gc.collect()  # the tasks freed: where asyncio would log
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()], caplog.text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed one
def test_outside_the_loop_a_stop_signal_is_remembered_even_when_python_swallows_it() -> None:
    """The first SIGTERM/SIGINT outside the loop raises a KeyboardInterrupt and is
    remembered, so that one Python swallows (raised in a ``__del__``) still stops the run
    when its loop starts; the handlers are put back afterwards."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    class Finalised:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.05)  # the KeyboardInterrupt is raised here, and ignored by Python

    swallowed: list[type[BaseException]] = []
    hook, sys.unraisablehook = sys.unraisablehook, lambda u: swallowed.append(u.exc_type)
    try:
        with stop_signals():
            assert stop_requested() is None
            Finalised()  # collected at once
            assert stop_requested() == signal.SIGTERM
    finally:
        sys.unraisablehook = hook
    assert swallowed == [KeyboardInterrupt]  # the case this test is about: Python ignored it
    assert stop_requested() is None
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_a_second_stop_signal_while_the_first_unwinds_ends_the_runner_at_once() -> None:
    """A second signal while the clean stop unwinds (Ctrl-C pressed twice, during the
    clean-up of the engine check) ends the process with the signal's default action, as a
    crash would, instead of a traceback from a second KeyboardInterrupt."""
    code = ("import os, signal, time\n"
            "from runner.service.setup import stop_requested, stop_signals\n"
            "with stop_signals():\n"
            "    try:\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "        time.sleep(5)\n"
            "    except KeyboardInterrupt:\n"
            "        print('first', flush=True)\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "        time.sleep(5)\n"
            "print('not reached')\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == -signal.SIGINT
    assert done.stdout == "first\n" and "Traceback" not in done.stderr


def killed_inside_atomic_write(path: Path) -> Path:
    """Kill (SIGKILL) a process inside runner.store.database.atomic_write(path, ...): the
    temp file it was writing is left beside ``path``."""
    code = ("import sys; from pathlib import Path; from runner.store.database import atomic_write; "
            "atomic_write(Path(sys.argv[1]), 'x' * (64 << 20))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = set(path.parent.iterdir())
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], env=env)
    wait_until(lambda: set(path.parent.iterdir()) - before, "the temp file to appear", 30,
               proc, step=0.001)
    proc.kill()
    proc.wait()
    (left,) = set(path.parent.iterdir()) - before
    return left


@pytest.mark.slow
def test_temp_files_of_a_run_killed_while_rewriting_the_pgn_or_snapshot_are_removed(
        tmp_path: Path) -> None:
    config = load_config(moments_config(tmp_path / "event"))
    assert cli_run(config, args()) == EXIT_OK
    pgn, snapshot = config.pgn_out.read_bytes(), config.swiss.state_path.read_bytes()
    left = [killed_inside_atomic_write(config.pgn_out),
            killed_inside_atomic_write(config.swiss.state_path)]
    assert all(p.name.startswith(".") and p.name.endswith(".tmp") for p in left)
    other = config.pgn_out.with_name(f".{config.pgn_out.name}.notours.tmp")
    other.write_text("someone else's")
    assert cli_run(config, args()) == EXIT_OK  # the event is complete: nothing is played
    assert not any(p.exists() for p in left)
    assert other.exists()  # not a name atomic_write gives
    assert config.pgn_out.read_bytes() == pgn
    assert json.loads(config.swiss.state_path.read_bytes())["games_finished"] == \
        json.loads(snapshot)["games_finished"] == 1


def test_a_pgn_whose_end_a_power_cut_turned_into_zeros_is_rebuilt_without_a_backup(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A power cut while the PGN was appended to can leave its new size on disk without the
    data (the end reads as NUL bytes). That is our own file cut short: rebuilt from the
    database, not kept aside as "games that are not this event's"."""
    config = load_config(moments_config(tmp_path / "event"))
    assert cli_run(config, args()) == EXIT_OK
    pgn = config.pgn_out.read_bytes()
    config.pgn_out.write_bytes(pgn[:len(pgn) // 2] + b"\0" * (len(pgn) - len(pgn) // 2))
    capsys.readouterr()
    assert cli_run(config, argparse.Namespace(finish_games=False, quiet=False)) == EXIT_OK
    out = capsys.readouterr().out
    assert config.pgn_out.read_bytes() == pgn
    assert "not this event's" not in out and "Rebuilt" in out
    assert not list(config.pgn_out.parent.glob("*.bak"))
    # a file that is not ours is still kept aside, zeros or not
    config.pgn_out.write_bytes(b"[Event \"another\"]\n" + b"\0" * 100)
    assert cli_run(config, args()) == EXIT_OK
    assert config.pgn_out.read_bytes() == pgn
    assert len(list(config.pgn_out.parent.glob("*.bak"))) == 1
