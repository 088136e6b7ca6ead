"""runner.domain.rmobility.legal_move_count (the r-mobility count of every ply, from attack
masks) against python-chess's own generator, on random games: standard and Chess960,
with pins, promotions, en passant and castling met along the way."""

from __future__ import annotations

import random

import chess
import pytest

from runner.domain.adjudication import natural_end
from runner.domain.rmobility import legal_move_count, position_halves

SPECIAL = [
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # both castlings
    "4k3/8/8/2KPp2r/8/8/8/8 w - e6 0 1",  # en passant that would expose the king: illegal
    "4k3/8/8/3Pp3/8/8/8/4K3 w - e6 0 1",  # en passant
    "r3k3/1P6/8/8/8/8/8/4K3 w - - 0 1",  # promotions, by a push and by a capture
    "4k3/4r3/8/8/8/8/4P3/4K3 w - - 0 1",  # a pawn pinned on its file: pushes only
    "4k3/8/8/1b6/8/3P4/4K3/8 w - - 0 1",  # a pawn pinned on a diagonal: no push
    "4k3/8/8/8/8/2b5/3N4/4K3 w - - 0 1",  # a pinned knight: no move
    "4k3/8/8/b7/8/8/3Q4/4K3 w - - 0 1",  # a pinned queen: along the pin only
    "k7/8/8/8/8/8/8/7K b - - 0 1",
]


def test_special_positions() -> None:
    for text in SPECIAL:
        board = chess.Board(text)
        assert legal_move_count(board) == board.legal_moves.count(), text


@pytest.mark.slow
def test_random_games_standard_and_chess960() -> None:
    rng = random.Random(41)
    checked = 0
    for game in range(300):
        board = chess.Board()
        if game % 3 == 0:
            board = chess.Board.from_chess960_pos(rng.randrange(960))
        for _ in range(rng.randint(10, 160)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            expected = board.legal_moves.count()
            assert legal_move_count(board) == expected, board.fen()
            assert position_halves(board) == 2 * expected + (0 if board.is_check() else 1)
            checked += 1
    assert checked > 10000


STALEMATES = [
    "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",  # the king alone
    "8/5b2/5P2/8/p7/1k6/p7/K7 w - - 1 122",  # a blocked pawn
    "8/8/3q4/4R3/6pp/3k1p2/7K/3n1r2 w - - 0 116",  # a pinned rook (from random games)
    "5kbQ/8/1P3BP1/8/8/4R3/6N1/6K1 b - - 0 103",  # a pinned bishop
    "1R2R1bk/6p1/6P1/5p2/5P1K/8/8/8 b - - 0 120",  # a pinned bishop, blocked pawns
]


def test_the_count_tells_the_natural_end_of_stalemates_and_mates() -> None:
    """The referee ends a game on r-mobility's count (no second move generation): a count
    of 0 with pinned or blocked pieces on the board is a stalemate, as python-chess says."""
    for text in STALEMATES:
        board = chess.Board(text)
        assert board.is_stalemate(), text
        assert legal_move_count(board) == 0, text
        end = natural_end(board, position_halves(board) // 2)
        assert end is not None and end.reason == "Draw by stalemate", text
        assert end == natural_end(board)
    mate = chess.Board("6rk/5Npp/8/8/8/8/8/6K1 b - - 0 1")  # smothered
    assert mate.is_checkmate() and position_halves(mate) == 0
    assert natural_end(mate, 0) == natural_end(mate) and natural_end(mate, 0).reason == "White mates"
    busy = chess.Board("k7/p1q5/P7/8/8/8/8/RR5K b - - 0 1")
    assert natural_end(busy, position_halves(busy) // 2) is None
