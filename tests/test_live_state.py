"""Every move recorded, visible live, and kept through kill -9 (real engines, real runner).

A real `swiss-runner run` plays Stockfish against Ethereal in its own process. While a game
is in progress, `status --json` (read-only, from the database) and the StatePath snapshot
show its moves, clocks and scores within about a second of each move. The runner is then
killed with SIGKILL in the middle of game 2: the per-move log keeps that game's moves up to
the kill (less at most the last second), game 1 is unchanged, and the same command finishes
the event with game 2 continued from the position it reached (TCEC rule 7.c.v: clocks as
logged plus the compensation), the event's PGN audits clean, and no engine is left behind.
"""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path

import chess
import chess.pgn
import psutil
import pytest
from testkit import wait_until, write_config

from runner.cli import main

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.engines, pytest.mark.slow]


def live_config(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = write_config(directory, {
        "Event": "live", "TimeControl": "8+0.1", "SnapshotIntervalS": 0.5,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 70},
        "Engines": [{"Name": "Stockfish", "Command": "stockfish", "Options": {"Hash": 16}},
                    {"Name": "Ethereal", "Command": "ethereal-chess", "Options": {"Hash": 16}}],
    })
    return path


def status_json(config: Path, *, before_start: bool = False) -> dict | None:
    """``status --json``; with ``before_start``, None while the runner has not recorded the
    event yet (its database exists from the first moment, its event a moment later)."""
    out = io.StringIO()
    with redirect_stdout(out):
        code = main(["status", str(config), "--json"])
    if before_start and code == 1 and "no event recorded yet" in out.getvalue():
        return None
    assert code == 0
    return json.loads(out.getvalue())


def logged(db: Path, game_id: int) -> list[dict]:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return [json.loads(r[0]) for r in conn.execute(
            "SELECT data FROM moves WHERE game_id=? ORDER BY ply", (game_id,))]
    finally:
        conn.close()


def game_row(db: Path, game_id: int) -> tuple:
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT status, result, reason, moves, pgn FROM games WHERE game_id=?",
                            (game_id,)).fetchone()
    finally:
        conn.close()


def engines_of(runner_pids: list[int]) -> list[int]:
    """Processes still running that one of these runners started (their owner token)."""
    prefixes = tuple(f"{pid}:" for pid in runner_pids)
    found = []
    for proc in psutil.process_iter():
        try:
            token = proc.environ().get("SWISS_RUNNER_OWNER", "")
            if token.startswith(prefixes) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found


def check_live(game: dict) -> None:
    """A game in progress as the state document shows it."""
    assert game["ply"] == len(game["moves"]) == len(game["san"]) > 0
    board = chess.Board()
    for uci in game["moves"]:
        board.push_uci(uci)
    assert board.fen() == game["fen"]
    assert game["clocks"]["white_ms"] is not None and game["clocks"]["black_ms"] is not None
    assert game["clocks"]["turn"] == ("white" if board.turn else "black")
    assert game["white_id"].startswith(game["white"]) and game["black_id"].startswith(game["black"])
    for side in ("white", "black"):
        if game["ply"] >= 2:
            last = game["last"][side]
            assert last["depth"] and last["nodes"] and (last["score_cp"] is not None or last["mate"])


def test_moves_are_live_and_survive_kill_9(tmp_path: Path) -> None:
    config = live_config(tmp_path)
    db = tmp_path / "state" / "swiss.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    lags: list[float] = []
    snapshot_lags: list[float] = []
    seen_ply = 0
    finished_game1 = None

    def sample() -> bool:
        """One look at status and the snapshot (their lags kept); True once game 2 is
        at ply 16."""
        nonlocal seen_ply, finished_game1
        data = status_json(config, before_start=not lags) if db.exists() else None
        if data is None:
            return False
        assert (data["format"], data["version"]) == ("swiss-runner-state", 2)
        games = [g for g in data["in_progress"] if g["ply"] > 0]
        if not games:
            return False
        game = games[0]
        check_live(game)
        now_ms = time.time() * 1000
        lags.append(now_ms - game["clocks"]["at_ms"])
        snap = json.loads((tmp_path / "state" / "swiss.json").read_text())
        snap_games = [g for g in snap["in_progress"] if g["game_id"] == game["game_id"]]
        if snap_games and snap_games[0]["ply"]:
            snapshot_lags.append(now_ms - snap_games[0]["clocks"]["at_ms"])
        if game["game_id"] != 2:
            return False
        finished_game1 = finished_game1 or game_row(db, 1)
        seen_ply = max(seen_ply, game["ply"])
        return game["ply"] >= 16

    try:
        wait_until(sample, "game 2 to reach ply 16", 240, proc, step=0.3, log=log)
        kill_ms = time.time() * 1000
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    # the game was visible live: the newest move shown was at most about a second old
    lags.sort()
    assert lags[len(lags) // 2] < 1500, lags
    assert snapshot_lags and sorted(snapshot_lags)[len(snapshot_lags) // 2] < 2500, snapshot_lags
    # after kill -9: the log holds game 2's moves up to the kill, less at most the last second
    moves = logged(db, 2)
    assert [m["ply"] for m in moves] == list(range(1, len(moves) + 1))
    assert len(moves) >= seen_ply  # everything status showed was already durable
    assert moves[-1]["at_ms"] >= kill_ms - 1000 - 400  # a move takes up to ~0.4 s here
    assert game_row(db, 2)[0] == "running"
    assert finished_game1 is not None and finished_game1[0] == "finished"
    # the same command finishes the event; game 1 unchanged, game 2 continued from its position
    second = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out, err = second.communicate(timeout=300)
    result = subprocess.CompletedProcess(second.args, second.returncode, out, err)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "1 game(s) interrupted, each played on with the same opening and colours:" \
        in result.stdout
    said = f"interrupted at ply {len(moves)}: continues from ply {len(moves)} (TCEC rule 7.c.v)"
    assert said in result.stdout
    assert game_row(db, 1) == finished_game1
    final = game_row(db, 2)
    assert final[0] == "finished"
    played = final[3].split()
    assert played[:len(moves)] == [m["uci"] for m in moves]  # the game went on from there
    log2 = logged(db, 2)
    assert [m["uci"] for m in log2] == played
    assert {m["attempt"] for m in log2[:len(moves)]} == {1}
    assert {m["attempt"] for m in log2[len(moves):]} <= {2}
    # the clocks at the resume point: as logged, plus the compensation (8 s base: 1 s)
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    started = json.loads(conn.execute("SELECT started_event FROM games WHERE game_id=2").fetchone()[0])
    conn.close()
    assert started["resumed_from_ply"] == len(moves) and started["attempt"] == 2
    assert started["white_clock_ms"] == moves[-1]["white_clock_ms"] + 1000
    assert started["black_clock_ms"] == moves[-1]["black_clock_ms"] + 1000
    game = chess.pgn.read_game(io.StringIO(final[4]))
    assert game.headers["ResumedFromPly"] == str(len(moves))
    assert "game resumed after an interruption" in list(game.mainline())[len(moves) - 1].comment
    assert logged(db, 1) and [m["uci"] for m in logged(db, 1)] == finished_game1[3].split()
    data = status_json(config)
    assert data["complete"] and data["in_progress"] == [] and data["games_finished"] == 2
    # the event's PGN still audits against the TCEC Swiss rules
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(data["seeds"]) + "\n")
    audit = subprocess.run([sys.executable, "-m", "runner", "audit",
                            str(tmp_path / "state" / "games.pgn"), "--seeds", str(seeds)],
                           cwd=REPO, capture_output=True, text=True, env=env)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    wait_until(lambda: engines_of([proc.pid, second.pid]) == [], "no engine of either runner "
               "left", 5)
