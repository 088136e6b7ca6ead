"""A move log that does not replay never stops the event (issue #38, item 2): an interrupted
game whose logged moves have a gap, an illegal or unparsable move, or a position that does
not match is decided from the longest prefix that replays (TCEC rule 7.c), or played again
from its start when no engine move of it is left; a message names the game and the fault."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from test_interruption import OPEN, log, run
from test_resume_moments import CutAfter, args, moments_config, pgn_moves

from runner.cli.run import cli_run
from runner.config import load_config
from runner.domain.interruption import parse_log, replayable
from runner.errors import EXIT_FAIL, EXIT_OK


def test_the_longest_prefix_that_replays() -> None:
    started, moves = log(None, OPEN, [0] * 6)
    assert replayable(started["start_fen"], moves)[2] is None
    gap = moves[:3] + moves[4:]
    prefix, board, problem = replayable(started["start_fen"], gap)
    assert len(prefix) == 3 and board is not None and len(board.move_stack) == 3
    assert problem == "ply 4 is missing (the next logged ply is 5)"
    illegal = [*moves[:2], {**moves[2], "uci": "e1e8"}, *moves[3:]]
    prefix, _, problem = replayable(started["start_fen"], illegal)
    assert len(prefix) == 2 and "ply 3 (e1e8) is illegal" in problem
    garbage = [*moves[:4], {**moves[4], "uci": "zz"}]
    assert "does not parse" in replayable(started["start_fen"], garbage)[2]
    wrong_fen = [*moves[:5], {**moves[5], "fen": moves[3]["fen"]}]
    prefix, board, problem = replayable(started["start_fen"], wrong_fen)
    assert len(prefix) == 5 and len(board.move_stack) == 5 and "is not the one" in problem
    assert replayable("not a fen", moves)[1] is None
    rows = [(m["ply"], json.dumps(m)) for m in moves]
    rows[3] = (4, '{"ply": 4, "uci"')
    parsed, problem = parse_log(rows)
    assert len(parsed) == 3 and "ply 4 is not valid JSON" in problem


def test_a_decision_stands_on_the_prefix_and_says_why() -> None:
    started, moves = log(None, OPEN, [0, 0, 0, 0, 1200, -1050])
    assert run(started, moves).action == "finish"  # both winning for White (7.c.ii)
    cut = moves[:4] + [{**moves[4], "uci": "a1a1"}] + moves[5:]
    decision = run(started, cut)
    assert decision.action == "resume" and decision.ply == 4 and len(decision.moves) == 4
    assert "ply 5" in decision.problem
    nothing = run(started, [{**moves[0], "ply": 2}, *moves[1:]])
    assert nothing.action == "replay" and "ply 1" in nothing.problem


def _damage(db: Path, how: str) -> None:
    conn = sqlite3.connect(db)
    with conn:
        if how == "gap":
            conn.execute("DELETE FROM moves WHERE ply=7")
        elif how == "illegal":
            data = json.loads(conn.execute("SELECT data FROM moves WHERE ply=9").fetchone()[0])
            data["uci"] = "a1a8" if data["uci"] != "a1a8" else "h1h8"
            conn.execute("UPDATE moves SET data=? WHERE ply=9", (json.dumps(data),))
        elif how == "json":
            conn.execute("UPDATE moves SET data='{\"ply\": 5, ' WHERE ply=5")
        elif how == "fen":
            fen = conn.execute("SELECT data FROM moves WHERE ply=4").fetchone()[0]
            data = json.loads(conn.execute("SELECT data FROM moves WHERE ply=10").fetchone()[0])
            data["fen"] = json.loads(fen)["fen"]
            conn.execute("UPDATE moves SET data=? WHERE ply=10", (json.dumps(data),))
        elif how == "book":  # the first engine move is broken: nothing to keep
            conn.execute("UPDATE moves SET data='[]' WHERE ply=3")
    conn.close()


@pytest.mark.engines
@pytest.mark.parametrize("how, kept, says", [
    ("gap", 6, "ply 7 is missing"), ("illegal", 8, "of ply 9"), ("json", 4, "not valid JSON"),
    ("fen", 9, "logged after ply 10"), ("book", None, "ply 3 is not an object")])
def test_an_interrupted_game_with_a_damaged_log_is_decided_from_what_replays(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str, kept: int | None,
        says: str) -> None:
    config = load_config(moments_config(tmp_path))
    assert cli_run(config, args(), play_game=CutAfter(12)) == EXIT_FAIL
    _damage(config.database, how)
    capsys.readouterr()
    assert cli_run(config, args()) == EXIT_OK  # before the fix: exit 1, every time
    out = capsys.readouterr()
    assert "Game 1 (D2 vs D1)" in out.out and says in out.out, out
    assert "Traceback" not in out.out + out.err
    headers, moves = pgn_moves(config.pgn_out)
    if kept is None:
        assert "ResumedFromPly" not in headers
    else:
        assert headers["ResumedFromPly"] == str(kept)
    conn = sqlite3.connect(config.database)
    assert conn.execute("SELECT status FROM games").fetchall() == [("finished",)]
    plies = [r[0] for r in conn.execute("SELECT ply FROM moves WHERE game_id=1 ORDER BY ply")]
    conn.close()
    assert plies == list(range(1, len(moves) + 1))  # the damaged rows were replaced
