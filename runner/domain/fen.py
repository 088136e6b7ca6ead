"""FEN of a position, python-chess's ``Board.fen()`` text at a fraction of its cost.

The referee writes the FEN after every ply into the game's MovePlayed event. python-chess
builds it square by square through ``piece_at`` (about 35 us a call on a quiet machine, three
to five times that in a running event whose caches the engines share); here the piece
placement comes from the twelve piece bitboards at once, written by the compiled
``runner.domain._fen`` (under a microsecond) where it is built, else by
:func:`board_fen_python` (about 6 us), and the castling and en-passant fields as python-chess
writes them. The compiled part is optional (setup.py; no C compiler: the pure path, the same
text), and ``SWISS_RUNNER_PIPES=python`` in the environment (the switch to the pure-Python path
of every compiled part: runner.play.pipes) takes the pure path where it is built: the choice is
made once, when this module is imported, from the environment (the one thing of the process
this module reads). :data:`NATIVE` says which one runs. The tests compare both with
python-chess.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import chess

#: the switch (and its value) that takes the pure-Python path of every compiled part
SWITCH, PURE = "SWISS_RUNNER_PIPES", "python"

try:  # optional: built by pip install where a C compiler and Python's headers are present
    from runner.domain._fen import board_fen as _native_board_fen  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - the pure path (tests call it directly)
    _native_board_fen = None

_SYMBOLS = [(chess.WHITE, t, ord(chess.piece_symbol(t).upper())) for t in chess.PIECE_TYPES] + [
    (chess.BLACK, t, ord(chess.piece_symbol(t))) for t in chess.PIECE_TYPES]
#: square -> its place in the 8 ranks of 8 characters joined by "/" (rank 8 first)
_PLACE = [(7 - square // 8) * 9 + square % 8 for square in range(64)]
_EMPTY = bytearray(b"/".join([b"." * 8] * 8))
_RUNS = [("." * n, str(n)) for n in range(8, 0, -1)]  # longest first


def board_fen_python(board: chess.Board) -> str:
    """``board.board_fen()``, in Python: the pieces written into a template, then runs of
    empty squares replaced by their length."""
    cells = _EMPTY[:]
    bitboards = (0, board.pawns, board.knights, board.bishops, board.rooks, board.queens,
                 board.kings)
    occupied = board.occupied_co
    place = _PLACE
    for color, piece_type, symbol in _SYMBOLS:
        squares = bitboards[piece_type] & occupied[color]
        while squares:
            low = squares & -squares
            cells[place[low.bit_length() - 1]] = symbol
            squares ^= low
    text = cells.decode()
    for run, digits in _RUNS:
        if run in text:
            text = text.replace(run, digits)
    return text


def board_fen_native(board: chess.Board) -> str:
    """``board.board_fen()`` by the compiled ``runner.domain._fen`` (ImportError: not built)."""
    if _native_board_fen is None:
        raise ImportError("runner.domain._fen (the compiled FEN) is not built")
    return _native_board_fen(board.pawns, board.knights, board.bishops,  # type: ignore[no-any-return]
                             board.rooks, board.queens, board.kings,
                             board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK])


#: which piece placement :func:`board_fen` and :func:`fen` write with: True for the compiled
#: one, False for :func:`board_fen_python` (the same text): not built, or the switch said so
BUILT = _native_board_fen is not None  # the compiled placement loads (whatever the switch)
NATIVE = BUILT and (os.environ.get(SWITCH) or "").strip().lower() != PURE
board_fen: Callable[[chess.Board], str] = board_fen_native if NATIVE else board_fen_python

_STANDARD_RIGHTS = ((chess.BB_H1, "K"), (chess.BB_A1, "Q"), (chess.BB_H8, "k"), (chess.BB_A8, "q"))
#: the rights on the four corners -> their X-FEN field (a constant table of 16)
_STANDARD_XFEN = {
    sum(square for i, (square, _) in enumerate(_STANDARD_RIGHTS) if subset >> i & 1):
    "".join(letter for i, (_, letter) in enumerate(_STANDARD_RIGHTS) if subset >> i & 1) or "-"
    for subset in range(16)}


def castling_xfen(board: chess.Board) -> str:
    """``board.castling_xfen()``; without Chess960 the rights can only be KQkq (python-chess
    keeps a standard board's rights on the corners: another is asked of python-chess)."""
    if not board.castling_rights:  # no rights left (most of a game): none to clean
        return "-"
    text = None if board.chess960 else _STANDARD_XFEN.get(board.clean_castling_rights())
    return board.castling_xfen() if text is None else text


def fen(board: chess.Board) -> str:
    """``board.fen()`` (en passant square only when a legal capture exists, as python-chess)."""
    ep = board.ep_square
    # a legal capture needs a pawn of the side to move next to the pawn that moved two
    # squares: where none is, python-chess's search for one is not asked
    if ep is not None and not (board.pawns & board.occupied_co[board.turn]
                               & chess.BB_PAWN_ATTACKS[not board.turn][ep]
                               and board.has_legal_en_passant()):
        ep = None
    return (f"{board_fen(board)} {'w' if board.turn else 'b'} {castling_xfen(board)} "
            f"{chess.SQUARE_NAMES[ep] if ep is not None else '-'} {board.halfmove_clock} "
            f"{board.fullmove_number}")
