"""Pondering (``Ponder: true``): the config and its core check, and a real event between two
Stockfish processes that ponder, read back from the engine logs (every line to and from
each engine, time-stamped by the runner)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import chess
import chess.pgn
import psutil
import pytest
from testkit import fake, spec_for, write_config
from web_support import start_runner

from runner.cli import main
from runner.config import load_config
from runner.config.operatorkeys import available_cores
from runner.config.typed import AdjudicationConfig, EngineConfig
from runner.domain.events import MovePlayed
from runner.domain.models import GameSpec
from runner.domain.timecontrol import parse_time_control
from runner.play.enginelog import GameLog
from runner.play.referee import engine_cpus, play_game


def _config(tmp_path: Path, **top: object) -> Path:
    return write_config(tmp_path, {
        "TimeControl": "5+0.1", "SwissOptions": {"Rounds": 1, "StatePath": "state/s.json"},
        "Engines": [{"Name": "A", "Command": "stockfish", "Options": {"Hash": 16}},
                    {"Name": "B", "Command": "stockfish", "Options": {"Hash": 16},
                     "Ponder": False}],
        **top})


def test_ponder_config_and_cores(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    config = load_config(_config(tmp_path, Ponder=True, Affinity="off"))
    assert [e.ponder for e in config.engines] == [True, False]  # the engine's own key wins
    assert [e.ponder for e in load_config(_config(tmp_path)).engines] == [False, False]
    cores = len(available_cores())
    # each engine of a pondering game needs its own cores: Concurrency x 2 x Threads
    heavy = {"Engines": [{"Name": n, "Command": "stockfish", "Options": {"Threads": cores}}
                         for n in ("A", "B")]}
    path = _config(tmp_path, Ponder=True, **heavy)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"Concurrency 1 x 2 engines x Threads {cores} = {2 * cores} cores" in err, err
    assert "Affinity: off" in err
    assert main(["validate", str(_config(tmp_path, Ponder=True, Affinity="off", **heavy))]) == 0
    capsys.readouterr()
    assert main(["validate", str(_config(tmp_path, Ponder=True, Affinity="auto", **heavy))]) == 2
    assert "Affinity" in capsys.readouterr().err
    if cores >= 2:  # a slot of 2 cores: one for each engine of the game
        assert main(["validate", str(_config(tmp_path, Ponder=True, Affinity="auto"))]) == 0
        out = capsys.readouterr().out
        assert f"slot 1 -> cores {', '.join(map(str, available_cores()[:2]))} (engines that " \
               "ponder: White on the first half, Black on the second)" in out, out
    assert main(["validate", str(_config(tmp_path, Ponder=True, Affinity=[[0]]))]) == 2
    assert "Affinity[0]: got [0], expected at least 2 cores (2 pondering engines x Threads 1)" \
        in capsys.readouterr().err
    path = _config(tmp_path, Ponder="yes", Affinity="off")
    assert main(["validate", str(path)]) == 2
    assert "Ponder: got 'yes', expected true or false" in capsys.readouterr().err


def test_each_engine_of_a_pondering_game_gets_its_own_cores() -> None:
    a = EngineConfig("A", "/usr/games/stockfish", ponder=True)
    b = EngineConfig("B", "/usr/games/stockfish")
    spec = GameSpec(game_id=1, round=1, game_in_round=1, white=a, black=b,
                    time_control=parse_time_control("5+0.1"), adjudication=AdjudicationConfig())
    assert engine_cpus(spec, chess.WHITE, [0, 1, 2, 3]) == [0, 1]
    assert engine_cpus(spec, chess.BLACK, [0, 1, 2, 3]) == [2, 3]
    quiet = GameSpec(game_id=1, round=1, game_in_round=1, white=b, black=b,
                     time_control=parse_time_control("5+0.1"), adjudication=AdjudicationConfig())
    assert engine_cpus(quiet, chess.BLACK, [0, 1]) == [0, 1]  # no pondering: shared
    assert engine_cpus(spec, chess.BLACK, None) is None


LOG_LINE = re.compile(r"^\s*\+(\d+\.\d+) (\S+?)\((white|black)\) ([<>]) (.*)$")


def _searches(log: Path) -> tuple[list[tuple[float, str, str, float]], int, int]:
    """From an engine log: the moves each engine gave as its move of the game (time of the
    bestmove, side, move, ms from its go or ponderhit), and the counts of ponderhit / stop
    after go ponder."""
    state: dict[str, dict[str, object]] = {}
    played = []
    hits = misses = 0
    for line in log.read_text().splitlines():
        m = LOG_LINE.match(line)
        if not m:
            continue
        t, side, direction, text = float(m.group(1)), m.group(3), m.group(4), m.group(5)
        s = state.setdefault(side, {"start": None, "pondering": False, "drop": False})
        if direction == ">":
            if text.startswith("go ponder"):
                s.update(pondering=True, start=None)
            elif text.startswith("go"):
                s.update(pondering=False, start=t)
            elif text == "ponderhit":
                hits += 1
                s.update(pondering=False, start=t)
            elif text == "stop" and s["pondering"]:
                misses += 1
                s.update(pondering=False, drop=True)
        elif text.startswith("bestmove"):
            if s["drop"]:
                s["drop"] = False
                continue
            assert s["start"] is not None, line
            played.append((t, side, text.split()[1], t - s["start"]))
            s["start"] = None
    played.sort()
    return played, hits, misses


@pytest.mark.engines
@pytest.mark.slow
def test_pondering_game_between_two_stockfish(tmp_path: Path) -> None:
    if shutil.which("stockfish") is None:
        pytest.skip("stockfish is not installed (scripts/install.sh installs it)")
    pinned = len(available_cores()) >= 2  # each engine on a core of its own (Affinity: auto)
    path = write_config(tmp_path, {
        "Event": "Ponder", "TimeControl": "8+0.1", "Ponder": True,
        "Affinity": "auto" if pinned else "off",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "StatePath": "state/s.json"},
        "Adjudication": {"MaxMoves": 30},
        "EngineLogs": {"Dir": "logs", "Keep": "all"}, "PgnComments": "extended",
        "Engines": [{"Name": n, "Command": "stockfish", "Options": {"Hash": 16, "Threads": 1}}
                    for n in ("SF1", "SF2")]})
    log = tmp_path / "run.log"
    runner = start_runner(path, log)
    cores: dict[int, set[frozenset[int]]] = {}  # engine pid -> the core sets seen
    together: list[list[frozenset[int]]] = []  # both engines' cores at one moment
    try:
        while runner.poll() is None:
            if "Started game" not in log.read_text():  # the engine check before: not pinned
                time.sleep(0.1)
                continue
            with contextlib.suppress(psutil.Error):
                engines = [p for p in psutil.Process(runner.pid).children(recursive=True)
                           if p.name() == "stockfish"]
                now = []
                for proc in engines:
                    mask = frozenset(proc.cpu_affinity())
                    cores.setdefault(proc.pid, set()).add(mask)
                    now.append(mask)
                if len(now) == 2:
                    together.append(now)
            time.sleep(0.2)
        assert runner.wait() == 0, log.read_text()[-3000:]
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    if pinned:
        assert together, "never saw both engines running"
        assert all(len(masks) == 1 for masks in cores.values()), cores  # never moved
        for a, b in together:  # pinned to a core each, never the same one
            assert len(a) == len(b) == 1 and a != b, (a, b)
    config = load_config(path)
    conn = sqlite3.connect(config.database)
    try:
        rows = conn.execute("SELECT game_id, moves, termination, reason FROM games "
                            "ORDER BY game_id").fetchall()
        logged = {gid: [json.loads(d) for (d,) in conn.execute(
            "SELECT data FROM moves WHERE game_id=? ORDER BY ply", (gid,))] for gid, *_ in rows}
    finally:
        conn.close()
    total_hits = 0
    for gid, moves, termination, reason in rows:
        assert termination != "time forfeit" and "time" not in reason, reason
        log = tmp_path / "logs" / f"game-{gid:05d}.log"
        played, hits, misses = _searches(log)
        assert log.read_text().count("> setoption name Ponder value true") == 2  # each, once
        total_hits += hits
        # the moves of the game are the engines' answers to go / ponderhit, in order; the
        # answers to a stop after go ponder are not moves of the game
        assert [uci for _, _, uci, _ in played] == moves.split()
        assert [side for _, side, _, _ in played] == [
            "white" if i % 2 == 0 else "black" for i in range(len(played))]
        # each move charged what the engine took from its go / ponderhit to its bestmove,
        # and the clocks are what that leaves (20 ms for the log's own writing and rounding on
        # a loaded host: a charged ponder search would be off by hundreds)
        remaining = {"white": 8000, "black": 8000}
        for (_, side, _, took), move in zip(played, logged[gid], strict=True):
            assert abs(move["time_ms"] - took) <= 20, (move, took)
            remaining[side] += 100 - move["time_ms"]
            assert abs(move[f"{side}_clock_ms"] - remaining[side]) <= 2, move
            remaining[side] = move[f"{side}_clock_ms"]
        assert hits + misses >= len(moves.split()) // 2  # every engine move after the first
    assert total_hits >= 5
    with open(config.pgn_out) as handle:
        game = chess.pgn.read_game(handle)
    assert game is not None and all(n.clock() is not None for n in game.mainline())


# --------------------------------------------------------------------------- fault injection


def _first_legal(plies: int) -> list[str]:
    board, out = chess.Board(), []
    for _ in range(plies):
        move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
        board.push(move)
        out.append(move.uci())
    return out


def _ponderer(tmp_path: Path, mode: str, *flags: str) -> tuple[EngineConfig, Path]:
    log = tmp_path / f"{mode}.log"
    return replace(fake("P", "--ponder", mode, "--log", str(log), *flags), ponder=True), log


@pytest.mark.slow
def test_ponderhit_charges_only_the_time_after_it(tmp_path: Path) -> None:
    """The ponderer thinks 0.3 s after each ponderhit; its opponent 0.5 s a move, all of it
    pondered on: each move after the first is charged about 0.3 s, not 0.8 s."""
    white, log = _ponderer(tmp_path, "right", "--think", "0.3")
    black = fake("B", "--think", "0.5")
    events: list = []
    record = asyncio.run(play_game(spec_for(white, black, "20+0",
                                            adjudication=AdjudicationConfig(max_moves=4)),
                                   emit=events.append))
    sent = log.read_text().splitlines()
    assert sum(line == "ponderhit" for line in sent) >= 2 and "stop" not in sent[:-2]
    assert sum(line.startswith("go ponder") for line in sent) >= 2
    assert any(line == "setoption name Ponder value true" for line in sent) is False  # no option
    white_times = [e.time_ms for e in events if isinstance(e, MovePlayed) and e.ply % 2 == 1]
    assert len(white_times) >= 3 and record.termination != "time forfeit"
    assert all(280 <= t < 450 for t in white_times), white_times
    assert record.moves == _first_legal(len(record.moves))  # the fakes' moves, no other


def test_ponder_miss_stops_and_plays_the_real_position(tmp_path: Path) -> None:
    white, log = _ponderer(tmp_path, "wrong")
    record = asyncio.run(play_game(spec_for(white, fake("B"), "20+0",
                                            adjudication=AdjudicationConfig(max_moves=4))))
    sent = log.read_text().splitlines()
    assert "ponderhit" not in sent
    stops = [i for i, line in enumerate(sent) if line == "stop"]
    assert len(stops) >= 2
    for i in stops[:-1]:  # after each stop: the real position, then go (not go ponder)
        assert sent[i - 1].startswith("go ponder")
        assert sent[i + 1].startswith("position") and sent[i + 2].startswith("go wtime")
        assert sent[i + 1] != sent[i - 2]  # not the position it pondered on
    assert record.termination == "adjudication"
    assert record.moves == _first_legal(len(record.moves))  # no answer to a stop was played


@pytest.mark.slow
def test_an_engine_deaf_to_stop_stalls(tmp_path: Path) -> None:
    white, _ = _ponderer(tmp_path, "deaf")
    record = asyncio.run(play_game(spec_for(white, fake("B"), "20+0"), startup_timeout=1.0))
    assert (record.result, record.termination) == ("0-1", "stalled connection")
    assert record.reason == "White's connection stalls"


@pytest.mark.slow
@pytest.mark.engines
def test_xboard_engine_is_told_hard(tmp_path: Path) -> None:
    """An XBoard engine with Ponder gets ``hard`` (python-chess's pondering) and plays on."""
    if shutil.which("phalanx") is None or shutil.which("stockfish") is None:
        pytest.skip("phalanx and stockfish are needed (scripts/install.sh installs them)")
    white = EngineConfig("Phalanx", shutil.which("phalanx") or "", protocol="xboard", ponder=True)
    black = EngineConfig("SF", shutil.which("stockfish") or "", options={"Hash": 16})
    log = GameLog(tmp_path / "game.log", "all")
    record = asyncio.run(play_game(spec_for(white, black, "5+0.1",
                                            adjudication=AdjudicationConfig(max_moves=12)),
                                   engine_log=log))
    text = (tmp_path / "game.log").read_text()
    assert "Phalanx(white) > hard" in text and "Phalanx(white) > easy" not in text.split(
        "Phalanx(white) > hard")[0]  # hard from its first move on
    assert "SF(black) > hard" not in text and "go ponder" not in text  # SF does not ponder
    assert record.termination in ("adjudication", "checkmate", "normal"), record.reason
    assert len(record.moves) >= 10
