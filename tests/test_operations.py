"""Operator features (docs/operators.md): config keys, CPU affinity checked with psutil on real
engines, engine logs, start-up time-outs, progress/ETA and the progress bar, extended PGN read
back by python-chess, ECO/Elo/TCEC fields, EPD out."""

from __future__ import annotations

import asyncio
import io
import os
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import chess
import chess.pgn
import psutil
import pytest
from testkit import make_record, spec_for, wait_until, write_config

from runner.cli import main
from runner.config import AdjudicationConfig, EngineConfig, TcecDrawRule, load_config
from runner.domain.eco import classify
from runner.domain.eta import eta_seconds
from runner.domain.models import GameSpec, Opening
from runner.domain.timecontrol import parse_time_control
from runner.play.enginelog import GameLog
from runner.play.referee import play_game
from runner.service.views.progress import format_eta

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FAKE = HERE / "fakes" / "fake_uci.py"
PY = sys.executable
CORES = sorted(os.sched_getaffinity(0))


def ops_config(tmp_path: Path, extra: dict, engines: list | None = None, name: str = "ev.yaml") -> Path:
    data = {
        "Event": "ops", "SwissOptions": {"GamesPerMatch": 1, "Rounds": 1, "StatePath": "state/s.json",
                                         "Seeding": "listed"},
        "TimeControl": "3+0.05",
        "Engines": engines or [
            {"Name": "A", "Command": PY, "Args": [str(FAKE)]},
            {"Name": "B", "Command": PY, "Args": [str(FAKE)]},
        ],
        **extra,
    }
    return write_config(tmp_path, data, name)


def fake(name: str, *flags: str, **kw) -> EngineConfig:
    return EngineConfig(name=name, command=PY, args=(str(FAKE), *flags), **kw)


def spec(white: EngineConfig, black: EngineConfig, tc: str = "3+0.05", **kw) -> GameSpec:
    return GameSpec(game_id=1, round=1, game_in_round=1, white=white, black=black,
                    time_control=parse_time_control(tc),
                    adjudication=kw.pop("adjudication", AdjudicationConfig(max_moves=20)),
                    event="Ops", site="here", **kw)


# --------------------------------------------------------------------------- config


def test_operator_keys_are_read_and_startup_timeout_reaches_each_engine(tmp_path):
    path = ops_config(tmp_path, {
        "Concurrency": 1, "Affinity": [[CORES[0]]], "StartupTimeoutS": 45,
        "EngineLogs": {"Dir": "logs", "Keep": "all"}, "PgnComments": "extended",
        "PgnExtras": ["ECO", "Elo", "TCEC"], "EpdOut": "out/final.epd",
    }, engines=[{"Name": "A", "Command": PY, "StartupTimeoutS": 120},
                {"Name": "B", "Command": PY}])
    config = load_config(path)
    assert config.affinity is not None and config.affinity.slots == ((CORES[0],),)
    assert [e.startup_timeout_s for e in config.engines] == [120.0, 45.0]
    assert config.engine_logs.dir == tmp_path / "logs" and config.engine_logs.keep == "all"
    assert config.pgn_comments == "extended" and config.pgn_extras == ("ECO", "Elo", "TCEC")
    assert config.epd_out == tmp_path / "out" / "final.epd"
    plain = load_config(ops_config(tmp_path, {}, name="plain.yaml"))
    assert plain.affinity is None and plain.engine_logs is None and plain.pgn_comments == "cutechess"
    assert [e.startup_timeout_s for e in plain.engines] == [None, None]


def test_auto_affinity_gives_each_slot_threads_cores(tmp_path):
    engines = [{"Name": "A", "Command": PY, "Options": {"Threads": 1}}, {"Name": "B", "Command": PY}]
    config = load_config(ops_config(tmp_path, {"Concurrency": len(CORES), "Affinity": "auto"}, engines))
    assert config.affinity.slots == tuple((c,) for c in CORES)


@pytest.mark.parametrize("extra, engines, expect", [
    ({"Concurrency": len(CORES) + 1, "Affinity": "auto"}, None,
     f"Concurrency {len(CORES) + 1} x Threads 1 = {len(CORES) + 1} cores"),
    ({"Concurrency": 1, "Affinity": "auto"},
     [{"Name": "A", "Command": PY, "Options": {"Threads": len(CORES) + 1}}, {"Name": "B", "Command": PY}],
     f"x Threads {len(CORES) + 1}"),
    ({"Affinity": [[999]]}, None, "Affinity[0]: got [999], expected cores this machine"),
    ({"Concurrency": 2, "Affinity": [[CORES[0]]]}, None, "at least Concurrency = 2 core lists"),
    ({"Affinity": [[CORES[0]], [CORES[0]]]}, None, "also in Affinity[0]"),
    ({"Affinity": "yes"}, None, "Affinity: got 'yes', expected auto, off, or a list of core lists"),
    ({"EngineLogs": {"Dir": "l", "Keep": "some"}}, None, "EngineLogs.Keep: got 'some', expected failures | all"),
    ({"EngineLogs": {"Keep": "all"}}, None, "EngineLogs.Dir: missing required key"),
    ({"PgnComments": "full"}, None, "PgnComments: got 'full', expected cutechess | extended"),
    ({"PgnExtras": ["Eco"]}, None, "PgnExtras[0]: got 'Eco', expected ECO | Elo | TCEC"),
    ({"StartupTimeoutS": 0}, None, "StartupTimeoutS: got 0, expected seconds from 1 to 3600"),
    ({}, [{"Name": "A", "Command": PY, "StartupTimeoutS": "long"}, {"Name": "B", "Command": PY}],
     "Engines[0].StartupTimeoutS: got 'long'"),
    ({"Backend": "cutechess", "Affinity": "auto"}, None, "no Affinity with Backend: cutechess"),
    ({"EpdOut": "state/games.pgn"}, None, "EpdOut: got 'state/games.pgn', expected a file of its own (it is PgnOut"),
])
def test_bad_operator_keys_are_exit_2_and_nothing_is_written(tmp_path, capsys, extra, engines, expect):
    path = ops_config(tmp_path, extra, engines)
    assert main(["validate", str(path)]) == 2
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert expect in err, err
    assert f"{path}:" in err and "Traceback" not in err
    assert not (tmp_path / "state").exists()


# --------------------------------------------------------------------------- affinity


def _owned_engines(runner_pid: int) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            token = proc.environ().get("SWISS_RUNNER_OWNER", "")
        except psutil.Error:
            continue
        if token.startswith(f"{runner_pid}:"):
            found.append(proc)
    return found


@pytest.mark.engines
@pytest.mark.slow
@pytest.mark.skipif(len(CORES) < 2, reason="needs 2 cores for 2 game slots")
def test_affinity_pins_every_thread_of_both_engines_to_its_slot(tmp_path):
    engines = [{"Name": f"SF{i}", "Command": "stockfish", "Options": {"Threads": 1, "Hash": 16}}
               for i in range(4)]
    path = ops_config(tmp_path, {"Concurrency": 2, "Affinity": "auto", "TimeControl": "4+0.05",
                            "Adjudication": {"MaxMoves": 25}}, engines)
    runner = subprocess.Popen([PY, "-m", "runner", "run", str(path)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples: list[list[frozenset[int]]] = []
    threads_seen = 0
    db = tmp_path / "state" / "s.sqlite3"

    def playing() -> bool:
        """A game has started: the engine check before the first game (unpinned: it plays
        no game) is over."""
        if not db.exists():
            return False
        try:
            conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
            try:
                return conn.execute("SELECT COUNT(*) FROM games WHERE status!='scheduled'"
                                    ).fetchone()[0] > 0
            finally:
                conn.close()
        except sqlite3.Error:
            return False

    try:
        while runner.poll() is None and not playing():
            time.sleep(0.02)
        while runner.poll() is None:
            masks = []
            for proc in _owned_engines(runner.pid):
                try:
                    thread_masks = {frozenset(os.sched_getaffinity(t.id)) for t in proc.threads()}
                except (psutil.Error, OSError):
                    continue
                threads_seen += len(proc.threads()) if thread_masks else 0
                assert len(thread_masks) == 1, f"threads of one engine on different cores: {thread_masks}"
                masks.append(thread_masks.pop())
            if masks:
                samples.append(masks)
            time.sleep(0.05)
        out = runner.stdout.read()
    finally:
        if runner.poll() is None:
            runner.kill()
    assert runner.returncode == 0, out
    slots = {frozenset({CORES[0]}), frozenset({CORES[1]})}
    seen = {m for sample in samples for m in sample}
    assert seen == slots, seen  # both slots used, nothing outside them
    for sample in samples:  # at most the two engines of one game share a slot
        for slot in slots:
            assert sample.count(slot) <= 2, sample
    assert max(len(s) for s in samples) >= 3  # two games really ran at once
    assert threads_seen > len(samples)  # engines have several threads, all were checked


def test_pin_tree_pins_threads_and_children():
    from runner.play.affinity import SlotPool, pin_tree

    child = subprocess.Popen([PY, "-c", "import subprocess,sys,time; "
                              "subprocess.Popen([sys.executable,'-c','import time; time.sleep(30)']); "
                              "time.sleep(30)"])
    try:
        wait_until(lambda: psutil.Process(child.pid).children(), "the child's own child started")
        assert pin_tree(child.pid, [CORES[-1]]) >= 2
        procs = [psutil.Process(child.pid), *psutil.Process(child.pid).children(recursive=True)]
        assert len(procs) == 2
        assert all(p.cpu_affinity() == [CORES[-1]] for p in procs)
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()
        child.wait()
    pool = SlotPool([(0,), (1,)])
    with pool.take() as first, pool.take() as second:
        assert {first, second} == {(0,), (1,)} and not pool.free
    assert pool.free == [(0,), (1,)]


# --------------------------------------------------------------------------- time-outs


@pytest.mark.slow
def test_startup_timeout_per_engine_replaces_the_fixed_30s():
    slow = ("--handshake-delay", "1.5")
    record = asyncio.run(play_game(spec(fake("Slow", *slow, startup_timeout_s=0.5), fake("B"))))
    assert record.reason == "White's connection stalls"
    record = asyncio.run(play_game(spec(fake("Slow", *slow, startup_timeout_s=5), fake("B")),
                                   startup_timeout=0.5))
    assert record.termination is None or record.termination == "adjudication", record.reason
    assert len(record.moves) > 0


# --------------------------------------------------------------------------- engine logs


def test_engine_log_of_a_crash_is_kept_and_named_in_the_pgn(tmp_path):
    log = GameLog(tmp_path / "game-00001.log", "failures", "crash test")
    record = asyncio.run(play_game(spec(fake("A"), fake("Crash", "--crash-on-go", "2")),
                                   engine_log=log))
    assert record.reason == "Black disconnects"
    text = (tmp_path / "game-00001.log").read_text()
    assert "A(white) > uci" in text and "Crash(black) < uciok" in text
    assert "Crash(black) > go " in text and "A(white) < bestmove" in text
    assert "# game over: Black disconnects" in text
    stamps = [float(line.split()[0]) for line in text.splitlines() if not line.startswith("#")]
    assert stamps == sorted(stamps) and stamps[-1] > 0
    game = chess.pgn.read_game(io.StringIO(record.pgn))
    assert game.headers["EngineLog"] == str(tmp_path / "game-00001.log")
    ok = GameLog(tmp_path / "game-00002.log", "failures")
    record = asyncio.run(play_game(spec(fake("A"), fake("B")), engine_log=ok))
    assert record.termination in (None, "adjudication")
    assert not (tmp_path / "game-00002.log").exists() and "EngineLog" not in record.pgn


def test_event_with_logs_epd_progress_and_status(tmp_path, capsys):
    engines = [{"Name": "A", "Command": PY, "Args": [str(FAKE)]},
               {"Name": "Crash", "Command": PY, "Args": [str(FAKE), "--crash-on-go", "3"]},
               {"Name": "C", "Command": PY, "Args": [str(FAKE)]},
               {"Name": "D", "Command": PY, "Args": [str(FAKE)]}]
    path = ops_config(tmp_path, {"EngineLogs": {"Dir": "logs"}, "EpdOut": "final.epd",
                            "Adjudication": {"MaxMoves": 15}}, engines)
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    finished = [line for line in out.splitlines() if line.startswith("Finished game")]
    assert len(finished) == 2
    assert finished[0].endswith("[1/2 games, ETA 0:00:00]") or "[1/2 games, ETA 0:00:0" in finished[0]
    assert finished[1].endswith("[2/2 games, ETA 0:00:00]")
    logs = sorted((tmp_path / "logs").glob("*.log"))
    assert len(logs) == 1, logs  # only the crashed game keeps its log
    pgn = io.StringIO((tmp_path / "state" / "games.pgn").read_text())
    games = [chess.pgn.read_game(pgn), chess.pgn.read_game(pgn)]
    crashed = [g for g in games if "disconnects" in g.end().comment]
    assert len(crashed) == 1 and crashed[0].headers["EngineLog"] == str(logs[0])
    epd = (tmp_path / "final.epd").read_text().splitlines()
    assert sorted(epd) == sorted(g.end().board().fen() for g in games)
    assert main(["status", str(path)]) == 0
    status = capsys.readouterr().out
    assert "Engine logs of failed games:" in status and str(logs[0]) in status
    assert "disconnects" in status


def test_epd_positions_are_replayed_and_written_off_the_event_loop(tmp_path, monkeypatch):
    """EpdOut replays each game to its final position: on the sink's own thread, in the
    order the games ended, never on the loop (an engine of another game may be thinking)."""
    import threading

    from runner.domain.events import GameFinished
    from runner.service.views import epd as operations

    threads: list[int] = []
    real = operations.final_fen

    def final_fen(start_fen, moves):
        threads.append(threading.get_ident())
        return real(start_fen, moves)

    monkeypatch.setattr(operations, "final_fen", final_fen)
    sink = operations.EpdSink(tmp_path / "out" / "final.epd")
    games = [["e2e4", "e7e5"], ["d2d4"], ["g1f3", "g8f6", "c2c4"]]
    for n, moves in enumerate(games, 1):
        record = make_record(spec_for(fake("A"), fake("B"), game=n), "1-0")
        sink.handle(GameFinished(n, replace(record, moves=moves), 1))
    sink.close()
    assert threads and threading.get_ident() not in threads
    expected = []
    for moves in games:
        board = chess.Board()
        for uci in moves:
            board.push_uci(uci)
        expected.append(board.fen())
    assert (tmp_path / "out" / "final.epd").read_text().splitlines() == expected


# --------------------------------------------------------------------------- progress


def test_eta_from_measured_game_lengths():
    """The estimator itself: tests/test_eta.py."""
    assert eta_seconds([], 5, [], 2) is None
    assert eta_seconds([10, 30], 0, [], 2) == 0.0
    assert eta_seconds([20] * 50, 4, [], 2) == pytest.approx(40.0, rel=0.1)  # 2 waves of 20 s
    assert eta_seconds([20] * 50, 1, [5], 4) == pytest.approx(15.0)  # the last game's rest
    assert format_eta(3725) == "ETA 1:02:05" and "unknown" in format_eta(None)


def test_live_view_on_a_terminal_and_plain_lines_otherwise(tmp_path):
    from runner.config import load_config as load
    from runner.service.tournament import Tournament
    from runner.store.database import Store

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    for stream, live in ((Tty(), True), (io.StringIO(), False)):
        folder = tmp_path / str(live)
        folder.mkdir()
        config = load(ops_config(folder, {"Adjudication": {"MaxMoves": 10}}))
        store = Store.open(config.database)
        try:
            tournament = Tournament(config, store, out=stream)
            assert tournament.prepare() is None
            assert asyncio.run(tournament.run()) == 0
        finally:
            store.close()
        text = stream.getvalue()
        assert "Finished game 1 (A vs B)" in text or "Finished game 1 (B vs A)" in text
        assert ("games |" in text and "\r" in text) is live, text[-400:]


# --------------------------------------------------------------------------- PGN


def test_eco_codes_from_the_generated_scid_table():
    sicilian = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6"]
    assert classify(chess.Board(), sicilian) == "B90"  # Najdorf
    assert classify(chess.Board(), ["d2d4", "g8f6", "c2c4", "e7e6", "b1c3", "f8b4"]) == "E20"  # Nimzo-Indian
    assert classify(chess.Board(), sicilian + ["c1e3", "e7e5"]) == "B90"  # deeper: the last known
    assert classify(chess.Board("8/8/8/8/8/8/k7/K7 w - - 0 1"), []) is None


@pytest.mark.slow
@pytest.mark.engines
def test_extended_pgn_is_read_back_by_python_chess_with_clocks_and_evals():
    white = EngineConfig("Stockfish", "/usr/games/stockfish", rating=3500.4, options={"Hash": 16})
    black = EngineConfig("Ethereal", "/usr/games/ethereal-chess", options={"Hash": 16})
    adj = AdjudicationConfig(tcec_draw=TcecDrawRule(plies=10), max_moves=12)
    opening = Opening(0, "Sicilian", moves=("e2e4", "c7c5"))
    record = asyncio.run(play_game(spec(white, black, "5+0.1", adjudication=adj, opening=opening,
                                        pgn_comments="extended",
                                        pgn_extras=("ECO", "Elo", "TCEC"))))
    game = chess.pgn.read_game(io.StringIO(record.pgn))
    assert game.headers["WhiteElo"] == "3500" and "BlackElo" not in game.headers
    assert game.headers["ECO"].startswith("B")
    nodes = list(game.mainline())
    assert [n.comment for n in nodes[:2]] == ["book", "book"]
    engine_moves = nodes[2:]
    assert len(engine_moves) >= 10
    clocks = [n.clock() for n in engine_moves]
    assert all(c is not None and 0 < c <= 5.1 for c in clocks), clocks
    evals = [n.eval() for n in engine_moves]
    assert sum(e is not None for e in evals) >= len(engine_moves) - 1
    for node in engine_moves:
        assert node.emt() is not None
        base = node.comment.split(",")[0]
        assert base == record.comments[node.ply() - 1], (base, node.comment)  # cutechess text first
        if node.eval() is not None:  # [%eval] is White's view; cutechess's text is the mover's
            cp = node.eval().white().score(mate_score=100000)
            mover_text = float(base.split("/")[0]) if "M" not in base else None
            if mover_text is not None:
                sign = 1 if node.turn() == chess.BLACK else -1  # node.turn(): side to move after
                assert abs(sign * mover_text * 100 - cp) <= 1
        assert "n=" in node.comment and "R50=" in node.comment and "Rr=-1000" in node.comment
        assert "Rd=" in node.comment and "Rd=-1000" not in node.comment
    assert any("pv=" in n.comment for n in engine_moves)
    # the default stays cutechess's form: no commands, no extra tags
    plain = asyncio.run(play_game(spec(white, black, "5+0.1", adjudication=adj, opening=opening)))
    assert "[%" not in plain.pgn and "ECO" not in plain.pgn and "Elo" not in plain.pgn
    assert all("," not in c and "=" not in c for c in plain.comments)
