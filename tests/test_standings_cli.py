"""`swiss-runner standings CONFIG`: no state -> exit 1; a real state written through the store,
with games played by Stockfish and r-mobility computed from their moves."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import chess
import chess.engine
import pytest
from testkit import write_config

from runner.cli import main
from runner.config import load_config
from runner.config.fingerprint import event_fingerprint
from runner.domain.models import DRAW, GameRecord
from runner.domain.rmobility import game_rmobility, rmobility_points
from runner.store.database import Store

os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + "/usr/games"

CONFIG = """\
Event: standings cli test
SwissOptions: {{GamesPerMatch: 1, Rounds: 1, StatePath: {state}/swiss_state.json}}
TimeControl: "40/60"
Engines:
  - {{Name: SF-A, Command: stockfish, Nodes: 2000}}
  - {{Name: SF-B, Command: stockfish, Nodes: 2000}}
  - {{Name: SF-C, Command: stockfish, Nodes: 2000}}
  - {{Name: SF-D, Command: stockfish, Nodes: 2000}}
"""


def standings_config(tmp_path: Path) -> Path:
    return write_config(tmp_path, CONFIG.format(state=tmp_path / "state"))


def test_no_state_exits_1_with_a_clear_message(tmp_path, capsys):
    code = main(["standings", str(standings_config(tmp_path))])
    err = capsys.readouterr().err
    assert code == 1
    assert "no tournament state yet" in err and "swiss-runner run" in err


def play(fen: str, max_plies: int) -> tuple[list[str], str]:
    """Stockfish against itself from ``fen``; a draw when ``max_plies`` is reached."""
    board = chess.Board(fen)
    with chess.engine.SimpleEngine.popen_uci(shutil.which("stockfish")) as engine:
        while not board.is_game_over(claim_draw=True) and board.ply() < max_plies:
            board.push(engine.play(board, chess.engine.Limit(nodes=2000)).move)
    outcome = board.outcome(claim_draw=True)
    result = outcome.result() if outcome else DRAW
    return [m.uci() for m in board.move_stack], result


@pytest.mark.engines
def test_standings_of_real_games_through_the_store(tmp_path, capsys):
    if shutil.which("stockfish") is None:
        pytest.skip("stockfish not installed")
    config = load_config(standings_config(tmp_path))
    # game 1: KQ vs K, Stockfish mates; game 2: a rook ending, stopped as a draw after 30 plies
    mate_fen = "8/8/8/4k3/8/8/8/3QK3 w - - 0 1"
    rook_fen = "8/8/4k3/8/2R5/8/4K3/6r1 w - - 0 1"
    games = []
    for fen, plies in ((mate_fen, 200), (rook_fen, 30)):
        moves, result = play(fen, plies)
        games.append((fen, moves, result, game_rmobility(fen, moves, result)))
    assert games[0][2] == "1-0" and games[0][3] == "G0.0"
    assert games[1][2] == DRAW and games[1][3] not in ("G0.0", "-G0.0")

    store = Store.open(config.database)
    try:
        store.init_event(event_fingerprint(config), [e.name for e in config.engines], [], event=config.event,
                         games_per_match=1, rounds=1)
        pairs = (("SF-A", "SF-B"), ("SF-C", "SF-D"))
        store.add_round(1, pairs, None, (), (), [
            {"game_id": i + 1, "game_in_round": i + 1, "pair_index": i, "leg": 1, "white": w,
             "black": b, "match_index": i, "opening": None} for i, (w, b) in enumerate(pairs)])
        for i, ((w, b), (fen, moves, result, tag)) in enumerate(zip(pairs, games, strict=True)):
            store.record_game(i + 1, GameRecord(white=w, black=b, result=result, reason="test",
                                                moves=moves, rmobility=tag, start_fen=fen))
    finally:
        store.close()

    assert main(["standings", str(config.path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["engine"]: r for r in doc["standings"]}
    assert doc["standings"][0]["engine"] == "SF-A" and rows["SF-A"]["score"] == 1
    assert rows["SF-B"]["score"] == 0 and rows["SF-C"]["score"] == 0.5
    white, black = rmobility_points(games[1][3], DRAW)
    assert rows["SF-C"]["tiebreaks_exact"]["RMobility"] == str(white)
    assert rows["SF-D"]["tiebreaks_exact"]["RMobility"] == str(black)
    assert rows["SF-C"]["rounds"][0]["games"][0]["rmobility"] == games[1][3]
    # the draw's achiever ranks above the other drawer (same score, SB 0.25 each)
    achiever = "SF-C" if not games[1][3].startswith("-") else "SF-D"
    assert doc["standings"][1]["engine"] == achiever

    assert main(["standings", str(config.path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Standings after round 1: 4 engines, single rounds")
    assert "Crosstable" in text and "1w" in text
