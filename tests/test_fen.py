"""The fast FEN (runner.domain.fen) is python-chess's FEN, to the character, on both paths:
the compiled piece placement (runner.domain._fen) and the pure-Python one."""

from __future__ import annotations

import importlib
import random
import sys
from collections.abc import Callable

import chess
import pytest

from runner.domain import fen as fastfen
from runner.domain.fen import board_fen_native, board_fen_python, castling_xfen, fen

PLACEMENTS: list[Callable[[chess.Board], str]] = [board_fen_python]
if fastfen.NATIVE:
    PLACEMENTS.append(board_fen_native)


def _random_games(seed: int, games: int) -> list[chess.Board]:
    """Every position of ``games`` random games (a quarter of them Chess960), as copies."""
    rng = random.Random(seed)
    positions = []
    for game in range(games):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 4 == 0 else chess.Board()
        for _ in range(rng.randrange(1, 160)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
            positions.append(board.copy())
    return positions


def _random_placements(seed: int, count: int) -> list[chess.Board]:
    """Boards with random pieces on random squares (not legal positions: every placement
    python-chess can hold, full and empty ranks, runs of every length)."""
    rng = random.Random(seed)
    boards = [chess.Board(None), chess.Board()]
    for _ in range(count):
        board = chess.Board(None)
        for square in rng.sample(chess.SQUARES, rng.randrange(65)):
            board.set_piece_at(square, chess.Piece(rng.choice(chess.PIECE_TYPES),
                                                   rng.choice(chess.COLORS)))
        boards.append(board)
    return boards


def test_the_compiled_part_is_built_here() -> None:
    """The test install builds it (scripts/install.sh brings gcc and python3-dev): a broken
    build must not pass unnoticed as the pure path."""
    assert fastfen.NATIVE and fastfen.board_fen is fastfen.board_fen_native


@pytest.mark.parametrize("placement", PLACEMENTS, ids=lambda f: f.__name__)
def test_piece_placement_equals_python_chess(placement: Callable[[chess.Board], str]) -> None:
    boards = _random_placements(11, 1000) + _random_games(12, 10)
    for board in boards:
        assert placement(board) == board.board_fen(), board.board_fen()


def test_the_compiled_placement_refuses_impossible_bitboards() -> None:
    if not fastfen.NATIVE:
        pytest.skip("runner.domain._fen is not built")
    from runner.domain._fen import board_fen

    empty = (0,) * 6
    assert board_fen(*empty, 0, 0) == "8/8/8/8/8/8/8/8"
    assert board_fen(1 << 63, 0, 0, 0, 0, 0, 1 << 63, 0) == "7P/8/8/8/8/8/8/8"  # h8
    assert board_fen(0, 0, 0, 0, 0, 1 << 7, 0, 1 << 7) == "8/8/8/8/8/8/8/7k"  # h1
    with pytest.raises(ValueError, match="a1"):
        board_fen(1, 0, 0, 0, 0, 0, 1, 1)  # a1 in both colours
    with pytest.raises(ValueError, match="h8"):
        board_fen(*empty, 1 << 63, 0)  # a colour on h8, no piece
    with pytest.raises(ValueError, match="2\\*\\*64"):
        board_fen(-1, 0, 0, 0, 0, 0, 0, 0)
    with pytest.raises(TypeError, match="8 bitboards"):
        board_fen(0, 0)
    with pytest.raises(TypeError, match="int"):
        board_fen("0", 0, 0, 0, 0, 0, 0, 0)


@pytest.mark.slow
def test_fast_fen_equals_python_chess_on_random_games() -> None:
    positions = _random_games(7, 200)
    assert len(positions) > 5000
    for board in positions:
        assert fen(board) == board.fen()
        for placement in PLACEMENTS:
            assert placement(board) == board.board_fen()


def test_fields_after_the_placement_as_python_chess_writes_them() -> None:
    # en passant only when a legal capture exists, as python-chess writes it
    board = chess.Board("rnbqkbnr/ppp1pppp/8/8/3pP3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 3")
    assert fen(board) == board.fen() and " e3 " in fen(board)
    board = chess.Board()
    board.push_san("e4")
    assert fen(board) == board.fen() and " - " in fen(board)
    # every set of standard castling rights, before and after a move
    for rights in ("KQkq", "KQk", "Kq", "Q", "kq", "-"):
        board = chess.Board(f"r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w {rights} - 7 41")
        assert fen(board) == board.fen() and castling_xfen(board) == rights
        board.push_san("Kf1" if "K" in rights or "Q" in rights else "a3")
        assert fen(board) == board.fen()
    # rights python-chess drops (no rook on the corner, the king off e1)
    board = chess.Board("r3k1r1/8/8/8/8/8/8/4K2R w KQkq - 0 1")
    assert fen(board) == board.fen() == "r3k1r1/8/8/8/8/8/8/4K2R w Kq - 0 1"
    # Chess960: python-chess's own X-FEN (an outer rook named by its file)
    board = chess.Board("1r2k1rr/8/8/8/8/8/8/RR2K2R w HBhb - 0 1", chess960=True)
    assert fen(board) == board.fen() and castling_xfen(board) == board.castling_xfen()
    # clocks and move numbers as they are, however large
    board = chess.Board("8/8/8/4k3/8/8/8/4K3 b - - 99 123456789")
    assert fen(board) == board.fen()


def test_without_the_compiled_module_the_python_placement_is_taken(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A module that cannot be imported (not built: no compiler) means the pure path, the
    same text, without a word."""
    monkeypatch.setitem(sys.modules, "runner.domain._fen", None)  # an import now fails
    try:
        pure = importlib.reload(fastfen)
        assert not pure.NATIVE and pure.board_fen is pure.board_fen_python
        with pytest.raises(ImportError, match="not built"):
            pure.board_fen_native(chess.Board())
        for board in _random_games(5, 3):
            assert pure.fen(board) == board.fen()
    finally:
        monkeypatch.undo()
        importlib.reload(fastfen)
    assert fastfen.NATIVE and fastfen.board_fen is fastfen.board_fen_native  # back as it was
