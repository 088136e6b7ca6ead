"""Crash test: SIGKILL the real runner at random moments, resume, compare with a clean run.

The runner is started as a real subprocess (`python -m runner run CONFIG`) with the built-in
referee and deterministic fake UCI engines (tests/fakes/det_engine.py: the move
depends only on the position, so a replayed game is the same game). Every kill is SIGKILL:
no handler runs, whatever was being written is cut where it stands.

The kills are placed by what the runner has done, not by the wall clock, so they land the
same way on a fast or a slow machine. The first comes as soon as the database file appears
(a first start cut short while it creates its state, or just after; the exact spot varies,
the deterministic leftovers are in test_store.py). Each later one comes a random moment
after the run has started a game (the game is in progress: it must be replayed) or finished
one (cut in the PGN append or the snapshot). The random moment is under half the shortest
game of the clean run, so a run killed after a start records no game and one killed after a
finish at most two: all the kills land before the event can end.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import chess.pgn
import psutil
import pytest
import yaml
from testkit import wait_until, write_config

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fakes" / "det_engine.py"
KILLS = 10
PLAYERS = 7
ROUNDS = 3
pytestmark = pytest.mark.engines  # real subprocesses and engine processes (fake engines)


def crash_config(directory: Path, token: str, concurrency: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    engines = []
    for i in range(1, PLAYERS + 1):
        style = "greedy" if i % 2 else "random"
        engines.append({"Name": f"D{i}", "Command": sys.executable, "Args": [str(FAKE), style, f"{token}-{i}", "10"],
                        "Nodes": 1})
    return write_config(directory, {
        "Event": "crash test", "TimeControl": "120+1", "Concurrency": concurrency,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": ROUNDS, "Seeding": "listed",
                         "AllowExtraPairsOnTie": True, "StatePath": "state/swiss.json"},
        "Adjudication": {"TcecWin": {"ScoreCp": 1000, "Plies": 10}, "MaxMoves": 60},
        # Interrupted games continue from their position (TCEC rule 7.c.v) with the rule
        # counts restored; the 7.c.ii-iv shortcuts are off so that every game ends exactly
        # as in the uninterrupted run (the fake engines' moves depend on the position only).
        "Interruption": {"Mode": "resume", "Adjudicate": False},
        "Engines": engines,
    })


def start(config: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                                stdout=out, stderr=subprocess.STDOUT, env=env)


def db_games(db: Path) -> list[tuple]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT game_id, round, game_in_round, white, black, extra, status, result, reason, "
            "moves FROM games ORDER BY game_id").fetchall()
    finally:
        conn.close()


def pgn_games(path: Path) -> list[tuple]:
    games = []
    with open(path, encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            moves = " ".join(m.uci() for m in game.mainline_moves())
            games.append((game.headers["Round"], game.headers["White"], game.headers["Black"],
                          game.headers["Result"], moves))
    return games


def engines_alive(token: str) -> list[int]:
    alive = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if any(token in part for part in cmd) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            alive.append(proc.pid)
    return alive


def game_durations(db: Path) -> list[float]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT duration_s FROM games WHERE status='finished'")]
    finally:
        conn.close()


def wait_for(proc: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float = 60.0,
             poll: float = 0.002) -> bool:
    """Wait until ``ready()`` (testkit.wait_until); False if the process ended first."""
    try:
        return bool(wait_until(ready, "the runner to get there", timeout, proc, step=poll))
    except AssertionError:
        if proc.poll() is not None:
            return False
        proc.kill()
        raise


def log_since(log: Path, offset: int) -> str:
    with open(log, "rb") as handle:
        handle.seek(offset)
        return handle.read().decode("utf-8", errors="replace")


def running_logs(db: Path) -> dict[int, list[str]]:
    """The per-move log of each game in progress (as a kill left it)."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        logs: dict[int, list[str]] = {}
        for game_id, data in conn.execute(
                "SELECT m.game_id, m.data FROM moves m JOIN games g USING (game_id) "
                "WHERE g.status='running' ORDER BY m.game_id, m.ply"):
            logs.setdefault(game_id, []).append(json.loads(data)["uci"])
        return logs
    except sqlite3.OperationalError:  # killed before the schema was there
        return {}
    finally:
        conn.close()


@pytest.mark.slow
def test_sigkill_at_random_moments_then_resume_matches_clean_run(tmp_path: Path) -> None:
    token = f"crash{os.getpid()}x{tmp_path.name[-12:]}"
    clean = crash_config(tmp_path / "clean", token, concurrency=2)
    proc = start(clean, tmp_path / "clean.log")
    assert proc.wait(timeout=300) == 0, (tmp_path / "clean.log").read_text()[-3000:]
    reference = db_games(tmp_path / "clean" / "state" / "swiss.sqlite3")
    assert len([g for g in reference if not g[5]]) == PLAYERS // 2 * 2 * ROUNDS
    assert all(g[6] == "finished" for g in reference)
    shortest = min(game_durations(tmp_path / "clean" / "state" / "swiss.sqlite3"))

    crashed = crash_config(tmp_path / "crashed", token, concurrency=2)
    db = tmp_path / "crashed" / "state" / "swiss.sqlite3"
    log = tmp_path / "crashed.log"
    log.touch()
    rng = random.Random(20261122)
    # where each kill lands: after this run's first "Started game" or "Finished game" line
    triggers = ["Started game "] * (KILLS - KILLS // 2) + ["Finished game "] * (KILLS // 2)
    rng.shuffle(triggers)
    plan: list[str | None] = [None, *triggers]  # None: as soon as the database file exists
    kills = 0
    logged: list[tuple[int, list[str]]] = []  # (game, its logged moves) at each kill
    for trigger in plan:
        offset = log.stat().st_size
        proc = start(crashed, log)
        if trigger is None:
            reached = wait_for(proc, db.exists, poll=0.0005)
        else:
            reached = wait_for(proc, lambda t=trigger, o=offset: t in log_since(log, o))
            time.sleep(rng.uniform(0, shortest / 2))
        if not reached or proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        kills += 1
        if db.exists():
            for game_id, ucis in running_logs(db).items():
                logged.append((game_id, ucis))
    assert kills == len(plan), f"the event ended after {kills} kills:\n{log.read_text()[-3000:]}"
    proc = start(crashed, log)
    code = proc.wait(timeout=240)
    assert code == 0, log.read_text()[-3000:]
    output = log.read_text()
    assert "Resuming event" in output
    assert "game(s) interrupted, each played on with the same opening and colours:" in output  # a kill hit a game in progress

    games = db_games(db)
    assert games == reference  # same games, same order, same results and moves
    # every game continued from its position: its moves start with those logged at the kill
    final = {g[0]: g[9].split() for g in games}
    assert logged and any(ucis for _, ucis in logged)
    for game_id, ucis in logged:
        assert final[game_id][:len(ucis)] == ucis, game_id
    assert re.search(r"continues from ply \d+ \(TCEC rule 7\.c\.v\)", output), output[-3000:]
    # none missing, none twice: the PGN holds each recorded game exactly once
    in_pgn = pgn_games(tmp_path / "crashed" / "state" / "games.pgn")
    assert len(in_pgn) == len(games)
    assert sorted(in_pgn) == sorted(pgn_games(tmp_path / "clean" / "state" / "games.pgn"))
    assert not list((tmp_path / "crashed" / "state").glob("*.bak"))  # only our own PGN was there
    # no engine process left behind by any of the killed runs
    time.sleep(0.2)
    assert engines_alive(token) == []
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    assert conn.execute("SELECT COUNT(*) FROM processes").fetchone()[0] == 0
    conn.close()


@pytest.mark.slow
def test_stop_signals_and_damaged_views_then_resume_match_a_clean_run(tmp_path: Path) -> None:
    """SIGTERM / SIGINT (with and without --finish-games) while games are played, and
    between runs the views damaged as a crash or an operator leaves them: the PGN cut
    short, the JSON snapshot deleted, the WAL deleted after the clean stop (everything must
    be in the database file by then). Every stop is exit 130 and leaves no engine; the
    event then ends as the uninterrupted one, with the extended PGN data of the games that
    continued from their position."""
    token = f"stops{os.getpid()}x{tmp_path.name[-12:]}"
    extras = {"PgnComments": "extended", "PgnExtras": ["TCEC"]}

    def config(name: str) -> Path:
        path = crash_config(tmp_path / name, token, concurrency=2)
        data = yaml.safe_load(path.read_text())
        data["SwissOptions"]["Rounds"] = 2
        data["Engines"] = data["Engines"][:5]
        data.update(extras)
        return write_config(path.parent, data, path.name)

    clean = config("clean")
    proc = start(clean, tmp_path / "clean.log")
    assert proc.wait(timeout=300) == 0, (tmp_path / "clean.log").read_text()[-3000:]
    state = tmp_path / "stopped" / "state"
    stopped = config("stopped")
    log = tmp_path / "stopped.log"
    log.touch()
    rng = random.Random(20261123)
    plans = [(signal.SIGTERM, [], "pgn"), (signal.SIGINT, [], "snapshot"),
             (signal.SIGTERM, ["--finish-games"], "wal"), (signal.SIGINT, [], "pgn"),
             (signal.SIGTERM, [], "wal"), (signal.SIGINT, ["--finish-games"], "snapshot")]
    for signum, extra, damage in plans:
        offset = log.stat().st_size
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        with open(log, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(stopped), *extra],
                                    cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
        assert wait_for(proc, lambda o=offset: "Started game " in log_since(log, o)), \
            log.read_text()[-3000:]
        time.sleep(rng.uniform(0.05, 0.3))  # mid-game: a game continues from its position
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == 130, log_since(log, offset)[-3000:]
        time.sleep(0.2)
        assert engines_alive(token) == []
        if damage == "pgn" and (state / "games.pgn").exists() and (state / "games.pgn").stat().st_size:
            os.truncate(state / "games.pgn", rng.randrange((state / "games.pgn").stat().st_size))
        elif damage == "snapshot":
            (state / "swiss.json").unlink()
        elif damage == "wal":
            (state / "swiss.sqlite3-wal").unlink(missing_ok=True)
    proc = start(stopped, log)
    assert proc.wait(timeout=240) == 0, log.read_text()[-3000:]
    output = log.read_text()
    assert "Traceback" not in output
    assert re.search(r"continues from ply \d+ \(TCEC rule 7\.c\.v\)", output), output[-3000:]
    assert db_games(state / "swiss.sqlite3") == db_games(tmp_path / "clean" / "state" / "swiss.sqlite3")

    def pgn_data(path: Path) -> list[tuple]:
        games = []
        with open(path, encoding="utf-8") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                comments = tuple(re.sub(r"\[%(clk|emt) [0-9:.]+\]|nps=\d+|\s*\d+(\.\d+)?s\b|,? ?game "
                                        r"resumed after an interruption, clocks White \S+ Black \S+",
                                        "", n.comment) for n in game.mainline())
                games.append((game.headers["Round"], game.headers["Result"], comments))
        return sorted(games)

    assert pgn_data(state / "games.pgn") == pgn_data(tmp_path / "clean" / "state" / "games.pgn")
    assert not list(state.glob("*.bak")) and not list(state.glob(".*.tmp"))
