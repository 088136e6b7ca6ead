"""The fast FEN (runner.domain.fen) is python-chess's FEN, to the character."""

from __future__ import annotations

import random

import chess
import pytest

from runner.domain.fen import fen


@pytest.mark.slow
def test_fast_fen_equals_python_chess_on_random_games() -> None:
    rng = random.Random(7)
    positions = 0
    for game in range(200):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 4 == 0 else chess.Board()
        for _ in range(rng.randrange(1, 160)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            assert fen(board) == board.fen()
            positions += 1
    assert positions > 5000
    # en passant only when a legal capture exists, as python-chess writes it
    board = chess.Board("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3")
    assert fen(board) == board.fen() and " e3 " in fen(board)
    board = chess.Board()
    board.push_san("e4")
    assert fen(board) == board.fen() and " - " in fen(board)
