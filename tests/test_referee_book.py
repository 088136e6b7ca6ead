"""The referee plays an opening's book moves once per opening (runner.play.referee._book):
a book move that ends the game is dropped, as cutechess does, and a bad line is refused.
Where the next book move is legal the side to move has a move, so mate and stalemate are
not looked for again; the result is the one a ply-by-ply check with python-chess gives:
lines through mates, stalemates, repetitions, the fifty-move rule, illegal and null moves,
FEN and Chess960 starts."""

from __future__ import annotations

import random

import chess
import pytest

from runner.domain.adjudication import natural_end
from runner.domain.fen import fen
from runner.domain.models import Opening
from runner.domain.variant import board_at
from runner.play.referee import RefereeError, _book


def _by_the_rules(opening: Opening, chess960: bool) -> tuple[object, ...] | str:
    """Every book ply checked by python-chess in full (legality, then the rules' end)."""
    board = board_at(opening.fen, chess960)
    kept, sans, fens, resets = [], [], [], []
    for uci in opening.moves:
        try:
            move = board.parse_uci(uci)
        except ValueError:
            return f"illegal {uci} in {board.fen()}"
        zeroing = board.is_zeroing(move)
        san = board.san_and_push(move)
        if natural_end(board) is not None:
            board.pop()
            break
        kept.append(move.uci())
        sans.append(san)
        fens.append(fen(board))
        resets.append(zeroing)
    if not any(board.legal_moves):
        return "over"
    return (kept, sans, fens, resets, board.fen(), [m.uci() for m in board.move_stack])


def _played(opening: Opening, chess960: bool) -> tuple[object, ...] | str:
    try:
        book = _book(opening, chess960)
    except RefereeError as exc:
        text = str(exc)
        if "start position is already over" in text:
            return "over"
        uci, where = text.split("illegal book move '")[1].split("' in ")
        return f"illegal {uci} in {where}"
    return (book.kept, book.sans, book.fens, book.resets, book.board.fen(),
            [m.uci() for m in book.board.move_stack])


def _line(rng: random.Random, board: chess.Board, plies: int) -> list[str]:
    moves = []
    for _ in range(plies):
        legal = list(board.legal_moves)
        if not legal:
            break
        move = rng.choice(legal)
        moves.append(move.uci())
        board.push(move)
    return moves


@pytest.mark.parametrize("chess960", [False, True])
def test_book_lines_end_where_the_rules_end_them(chess960: bool) -> None:
    rng = random.Random(52 + chess960)
    starts = [None, "7k/5Q2/6K1/8/8/8/8/8 w - - 0 1",  # mate and stalemate in one
              "4k3/8/8/8/8/8/8/4K2R w K - 97 80",  # the fifty-move rule within the book
              "4k3/8/8/8/8/8/3n4/4K3 w - - 0 1"]  # insufficient material after a capture
    lines = 0
    for n in range(400):
        if chess960:
            start = chess.Board.from_chess960_pos(rng.randrange(960)).fen()
        else:
            start = rng.choice(starts)
        board = board_at(start, chess960)
        moves = _line(rng, board.copy(), rng.choice([1, 4, 12, 40, 160]))
        kind = n % 5
        if kind == 1 and moves:  # a move after the line's end, or an illegal one inside it
            moves.insert(rng.randrange(len(moves) + 1), rng.choice(["e2e4", "a1a8", "h7h5"]))
        elif kind == 2:  # the knights back and forth: a threefold repetition in the book
            moves = ["g1f3", "g8f6", "f3g1", "f6g8"] * 3 + moves
            start = None
        elif kind == 3 and moves:  # a null move somewhere
            moves.insert(rng.randrange(len(moves) + 1), "0000")
        elif kind == 4:  # fool's mate, then moves the mated side cannot make
            moves, start = ["f2f3", "e7e5", "g2g4", "d8h4", "e2e4", "a7a6"], None
        opening = Opening(n, f"line {n}", start, tuple(moves))
        if chess960 and start is None:
            continue
        assert _played(opening, chess960) == _by_the_rules(opening, chess960), moves
        lines += 1
    assert lines >= 200


def test_a_mate_in_the_book_is_dropped_and_the_moves_after_it_are_not_read() -> None:
    book = _book(Opening(0, "fool", None, ("f2f3", "e7e5", "g2g4", "d8h4", "e2e4")), False)
    assert book.kept == ["f2f3", "e7e5", "g2g4"] and book.sans == ["f3", "e5", "g4"]
    with pytest.raises(RefereeError, match="illegal book move 'e2e5'"):
        _book(Opening(1, "bad", None, ("f2f3", "e7e5", "e2e5")), False)


def test_a_book_move_is_read_as_python_chess_reads_it() -> None:
    """The next book move's quick reading (a plain move or a king's step, then python-chess's
    ``is_into_check``) gives what ``parse_uci`` gives (None for an illegal or null move) on
    random positions of standard chess and Chess960, for every legal move, castling in
    both notations, and random moves."""
    from runner.play.referee import _legal

    def parsed(board: chess.Board, uci: str) -> chess.Move | None:
        try:
            move = board.parse_uci(uci)
        except ValueError:
            return None
        return move if move else None

    rng = random.Random(52)
    checked = 0
    for game in range(60):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 3 == 0 \
            else chess.Board()
        for _ in range(70):
            legal = list(board.legal_moves)
            if not legal:
                break
            tries = [m.uci() for m in legal] + ["e1g1", "e1c1", "e8g8", "e8c8", "e1h1",
                                                "e8a8", "0000", "e7e8q", "a2a4", "zz"]
            tries += [chess.Move(rng.randrange(64), rng.randrange(64)).uci() for _ in range(10)]
            for uci in tries:
                want, got = parsed(board, uci), _legal(board, uci)
                assert got == want, (board.fen(), uci)
                assert got is None or got.uci() == want.uci()  # type: ignore[union-attr]
                checked += 1
            board.push(rng.choice(legal))
    assert checked > 20000
