"""FEN of a position, about 3.5x faster than ``chess.Board.fen()`` (same text).

The referee writes the FEN after every ply into the game's MovePlayed event. python-chess
builds it square by square through ``piece_at`` (about 190 us per call on the reference
machine, the largest single cost of the runner per ply); this reads the twelve piece
bitboards once (about 35 us plus the castling and en-passant fields). The result is checked
against python-chess in the tests.
"""

from __future__ import annotations

import chess

_SYMBOLS = [(chess.WHITE, t, chess.piece_symbol(t).upper()) for t in chess.PIECE_TYPES] + [
    (chess.BLACK, t, chess.piece_symbol(t)) for t in chess.PIECE_TYPES]
_RANKS = [[rank * 8 + file for file in range(8)] for rank in range(7, -1, -1)]


def board_fen(board: chess.Board) -> str:
    cells = [""] * 64
    bitboards = (0, board.pawns, board.knights, board.bishops, board.rooks, board.queens,
                 board.kings)
    occupied = board.occupied_co
    for color, piece_type, symbol in _SYMBOLS:
        for square in chess.scan_forward(bitboards[piece_type] & occupied[color]):
            cells[square] = symbol
    rows = []
    for squares in _RANKS:
        row = ""
        empty = 0
        for square in squares:
            symbol = cells[square]
            if symbol:
                if empty:
                    row += str(empty)
                    empty = 0
                row += symbol
            else:
                empty += 1
        if empty:
            row += str(empty)
        rows.append(row)
    return "/".join(rows)


def fen(board: chess.Board) -> str:
    """``board.fen()`` (en passant square only when a legal capture exists, as python-chess)."""
    ep = board.ep_square if board.ep_square is not None and board.has_legal_en_passant() else None
    return (f"{board_fen(board)} {'w' if board.turn else 'b'} {board.castling_xfen()} "
            f"{chess.SQUARE_NAMES[ep] if ep is not None else '-'} {board.halfmove_clock} "
            f"{board.fullmove_number}")
