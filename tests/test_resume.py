"""Crash test: SIGKILL the real runner at random moments, resume, compare with a clean run.

The runner is started as a real subprocess (`python -m runner run CONFIG`) with the built-in
referee and deterministic fake UCI engines (tests/orchestrator_fakes/det_engine.py: the move
depends only on the position, so a replayed game is the same game). Every kill is SIGKILL:
no handler runs, whatever was being written is cut where it stands.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import chess.pgn
import psutil
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "orchestrator_fakes" / "det_engine.py"
KILLS = 10
PLAYERS = 7
ROUNDS = 3
pytestmark = pytest.mark.engines  # real subprocesses and engine processes (fake engines)


def write_config(directory: Path, token: str, concurrency: int) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    engines = []
    for i in range(1, PLAYERS + 1):
        style = "greedy" if i % 2 else "random"
        engines.append({"Name": f"D{i}", "Command": str(FAKE), "Args": [style, f"{token}-{i}", "10"],
                        "Nodes": 1})
    path = directory / "event.yaml"
    path.write_text(yaml.safe_dump({
        "Event": "crash test", "TimeControl": "120+1", "Concurrency": concurrency,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": ROUNDS, "Seeding": "listed",
                         "AllowExtraPairsOnTie": True, "StatePath": "state/swiss.json"},
        "Adjudication": {"TcecWin": {"ScoreCp": 1000, "Plies": 10}, "MaxMoves": 60},
        "Engines": engines,
    }, sort_keys=False))
    return path


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


def test_sigkill_at_random_moments_then_resume_matches_clean_run(tmp_path: Path) -> None:
    token = f"crash{os.getpid()}x{tmp_path.name[-12:]}"
    clean = write_config(tmp_path / "clean", token, concurrency=2)
    proc = start(clean, tmp_path / "clean.log")
    assert proc.wait(timeout=300) == 0, (tmp_path / "clean.log").read_text()[-3000:]
    reference = db_games(tmp_path / "clean" / "state" / "swiss.sqlite3")
    assert len([g for g in reference if not g[5]]) == PLAYERS // 2 * 2 * ROUNDS
    assert all(g[6] == "finished" for g in reference)

    crashed = write_config(tmp_path / "crashed", token, concurrency=2)
    db = tmp_path / "crashed" / "state" / "swiss.sqlite3"
    log = tmp_path / "crashed.log"
    rng = random.Random(20261122)
    kills = 0
    deadline = time.monotonic() + 240
    while True:
        proc = start(crashed, log)
        if kills < KILLS:
            try:
                proc.wait(timeout=rng.uniform(0.3, 1.5))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
                kills += 1
                continue
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        assert code == 0, log.read_text()[-3000:]
        break
    assert kills >= KILLS - 2, "the runs ended before most kills: kill earlier"
    output = log.read_text()
    assert "Resuming event" in output
    assert "will be replayed from the start" in output  # some kill hit a game in progress

    games = db_games(db)
    assert games == reference  # same games, same order, same results and moves
    # none missing, none twice: the PGN holds each recorded game exactly once
    in_pgn = pgn_games(tmp_path / "crashed" / "state" / "games.pgn")
    assert len(in_pgn) == len(games)
    assert sorted(in_pgn) == sorted(pgn_games(tmp_path / "clean" / "state" / "games.pgn"))
    # no engine process left behind by any of the killed runs
    time.sleep(0.2)
    assert engines_alive(token) == []
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    assert conn.execute("SELECT COUNT(*) FROM processes").fetchone()[0] == 0
    conn.close()
