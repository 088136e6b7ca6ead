"""End to end with real Debian engines: the PGN, the JSON snapshot, the database and
`swiss-runner audit` of the produced PGN all tell the same story."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import chess.pgn
import pytest
from testkit import write_config

from runner.cli import main

REPO = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.engines

ENGINES = [  # odd count: one bye per round; fixed nodes/depth, one thread (deterministic enough)
    {"Name": "Stockfish", "Command": "stockfish", "Rating": 3500, "Nodes": 3000,
     "Options": {"Threads": 1, "Hash": 1}},
    # Ethereal aborts on Hash 1 (TT assertion) and ignores a node limit when given clocks
    {"Name": "Ethereal", "Command": "ethereal-chess", "Rating": 3300, "Depth": 5,
     "Options": {"Threads": 1, "Hash": 2}},
    {"Name": "Fairy-Stockfish", "Command": "fairy-stockfish", "Rating": 3400, "Nodes": 3000,
     "Options": {"Threads": 1, "Hash": 1}},
    {"Name": "Toga II", "Command": "toga2", "Rating": 2900, "Depth": 3},
    {"Name": "Fairymax", "Command": "fairymax", "Protocol": "xboard", "Rating": 2000, "Depth": 3},
]


@pytest.fixture(autouse=True)
def games_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") + os.pathsep + "/usr/games")


def engines_config(tmp_path: Path, games_per_match: int, rounds: int, schedule: str) -> Path:
    path = write_config(tmp_path, {
        "Event": "e2e", "Site": "tests", "TimeControl": "60+1", "Concurrency": 2,
        "SwissOptions": {"GamesPerMatch": games_per_match, "Rounds": rounds, "SeedGroupCount": 2,
                         "DoubleRoundSchedule": schedule, "RandomSeed": 7,
                         "StatePath": "state/swiss.json"},
        "Openings": {"File": str(REPO / "books" / "default.pgn"), "Plies": 8},
        "Adjudication": {"TcecDraw": {"MaxPawns": 8, "MaxPieces": 8, "ScoreCp": 20, "Plies": 10},
                         "TcecWin": {"ScoreCp": 800, "Plies": 8}, "MaxMoves": 70},
        "Engines": ENGINES,
    })
    return path


@pytest.mark.slow
@pytest.mark.parametrize(("games_per_match", "rounds", "schedule"),
                         [(1, 3, "split"), (2, 2, "consecutive")])
def test_real_event_pgn_snapshot_db_and_audit_agree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], games_per_match: int, rounds: int,
        schedule: str) -> None:
    config = engines_config(tmp_path, games_per_match, rounds, schedule)
    assert main(["run", str(config)]) == 0
    out = capsys.readouterr().out
    total = len(ENGINES) // 2 * games_per_match * rounds
    assert f"Started game 1 of {total} (" in out and "Event complete. Final standings:" in out

    state = tmp_path / "state"
    conn = sqlite3.connect(f"{(state / 'swiss.sqlite3').as_uri()}?mode=ro", uri=True)
    rows = conn.execute("SELECT game_id, round, game_in_round, white, black, result, moves, "
                        "opening, status, finish_seq, reason FROM games ORDER BY game_id").fetchall()
    seeds = [r[0] for r in conn.execute("SELECT name FROM players ORDER BY seed")]
    byes = [r[0] for r in conn.execute("SELECT bye FROM rounds ORDER BY number")]
    conn.close()
    assert len(rows) == total and {r[8] for r in rows} == {"finished"}
    assert not [r for r in rows if "disconnects" in r[10] or "crash" in r[10]]  # real games
    assert len(set(byes)) == rounds and None not in byes  # odd count: a new bye each round
    for r in rows:  # every game starts with its match's book moves
        book = json.loads(r[7])["moves"]
        assert r[6].split()[: len(book)] == book and len(book) == 8

    # PGN: the same games, in the order they finished, with the moves of the database
    pgn = []
    with open(state / "games.pgn", encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            pgn.append((game.headers["Round"], game.headers["White"], game.headers["Black"],
                        game.headers["Result"], " ".join(m.uci() for m in game.mainline_moves())))
    by_finish = sorted(rows, key=lambda r: r[9])
    assert pgn == [(f"{r[1]}.{r[2]}", r[3], r[4], r[5], r[6]) for r in by_finish]

    # JSON snapshot: same results, standings whose points add up
    snap = json.loads((state / "swiss.json").read_text())
    assert snap["games_finished"] == total and snap["seeds"] == seeds
    snap_games = sorted((g["game_id"], g["white"], g["black"], g["result"])
                        for rd in snap["rounds"] for p in rd["pairs"] for g in p["games"])
    assert snap_games == [(r[0], r[3], r[4], r[5]) for r in rows]
    assert sorted(s["engine"] for s in snap["standings"]) == sorted(seeds)
    assert sum(s["score"] for s in snap["standings"]) == total + rounds * games_per_match

    # audit replays the PGN through the pairing rules and finds the same pairings
    seeds_file = tmp_path / "seeds.txt"
    seeds_file.write_text("\n".join(seeds) + "\n")
    assert main(["audit", str(state / "games.pgn"), "--seeds", str(seeds_file)]) == 0
    assert f"all {rounds} rounds match" in capsys.readouterr().out

    assert main(["status", str(config)]) == 0
    status = capsys.readouterr().out
    assert f"Games: {total} of {total} finished; event complete" in status
