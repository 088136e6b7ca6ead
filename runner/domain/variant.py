"""Chess960 (Fischer Random) and Double Fischer Random start positions and boards.

An event's ``Variant`` is ``standard``, ``chess960`` (both sides the same back rank, one of
the 960 numbered positions) or ``dfrc`` (White's and Black's back ranks drawn independently).
Both 960 variants are played with python-chess's ``chess960=True`` boards: castling is the
king-takes-rook move in UCI (``e1h1``), ``O-O``/``O-O-O`` in SAN, and castling rights in the
FEN are X-FEN (``KQkq`` for the outermost rooks, the rook's file otherwise), as python-chess
writes them. Pure: no I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import chess

VARIANTS = ("standard", "chess960", "dfrc")
POSITIONS = 960  # Chess960 start positions, numbered 0..959 (Scharnagl); 518 is the standard one
PGN_VARIANT = "Chess960"  # the PGN Variant tag of both 960 variants (python-chess reads it)


def is_960(variant: str) -> bool:
    """Whether games of ``variant`` are played with Chess960 castling."""
    return variant in ("chess960", "dfrc")


def position_fen(white: int, black: int | None = None) -> str:
    """The start FEN of Chess960 position ``white`` (``black`` too: DFRC, Black's back rank
    taken from that number's position), X-FEN castling as python-chess writes it."""
    import chess

    for number in (white, black):
        if number is not None and not 0 <= number < POSITIONS:
            raise ValueError(f"Chess960 position {number}: expected 0..{POSITIONS - 1}")
    board = chess.Board.from_chess960_pos(white)
    if black is not None and black != white:
        other = chess.Board.from_chess960_pos(black)
        for file in range(8):
            square = chess.square(file, 7)
            board.set_piece_at(square, other.piece_at(square))
        board.castling_rights = (board.castling_rights & chess.BB_RANK_1) | (
            other.castling_rights & chess.BB_RANK_8)
    return board.fen()


def position_name(white: int, black: int | None = None) -> str:
    """What the PGN's Opening tag shows for a numbered start: ``Chess960 #518`` /
    ``DFRC #12/#400``."""
    if black is None:
        return f"Chess960 #{white}"
    return f"DFRC #{white}/#{black}"


def board_at(start_fen: str | None, chess960: bool | None = None) -> chess.Board:
    """The board a game starts from (None = the standard start).

    ``chess960`` None (a replay that does not know the event's variant): Chess960 castling
    when the FEN's castling rights only make sense in Chess960 (python-chess's
    ``has_chess960_castling_rights``). A 960 start whose kings and rooks stand where
    standard chess has them plays the same game either way, and python-chess reads both
    ways of writing its castling moves on both kinds of board.
    """
    import chess

    board = chess.Board(start_fen) if start_fen else chess.Board()
    if chess960 is None:
        chess960 = board.has_chess960_castling_rights()
    if chess960:
        board = chess.Board(start_fen, chess960=True) if start_fen else chess.Board(chess960=True)
    return board


def start_problem(start: str | chess.Board, variant: str) -> str | None:
    """Why ``start`` (a FEN, or a board as read) cannot start a game of ``variant``, or None.

    Only the castling rights are checked against the variant: a 960 event accepts any
    legal position (a book may start after some moves); a standard event refuses castling
    rights that only Chess960 has; a chess960 event refuses a DFRC start (back ranks differ).
    """
    import chess

    board = chess.Board(start, chess960=True) if isinstance(start, str) else start.copy(stack=False)
    if not is_960(variant) and board.has_chess960_castling_rights():
        board.chess960 = True
        return (f"castling rights {board.castling_xfen()!r} are not valid in standard chess "
                "(they are in Chess960: set Variant: chess960 or dfrc if that is meant)")
    if variant == "chess960" and board.castling_rights:
        white = _back_rank(board, chess.WHITE)
        black = _back_rank(board, chess.BLACK)
        if white and black and white != black.upper() and board.fullmove_number == 1 \
                and board.turn == chess.WHITE and _untouched(board):
            return ("White's and Black's back ranks differ: that is Double Fischer Random, "
                    "set Variant: dfrc")
    return None


def _back_rank(board: chess.Board, color: chess.Color) -> str:
    import chess

    rank = 0 if color == chess.WHITE else 7
    pieces = [board.piece_at(chess.square(file, rank)) for file in range(8)]
    return "".join(p.symbol() if p else "." for p in pieces)


def _untouched(board: chess.Board) -> bool:
    """Every pawn on its start rank (a start position, not a book exit)."""
    import chess

    return (board.pawns & board.occupied_co[chess.WHITE] == chess.BB_RANK_2
            and board.pawns & board.occupied_co[chess.BLACK] == chess.BB_RANK_7)


def replay_960(board: chess.Board) -> chess.Board:
    """``board``'s game (start and moves) on a Chess960 board: a 960 game read back without
    knowing its variant from a start whose castling rights look standard (518 and its like)."""
    import chess

    start = board.root()
    out = chess.Board(start.fen(), chess960=True)
    for move in board.move_stack:
        out.push(out.parse_uci(start.uci(move)))
        start.push(move)
    return out
