"""R-mobility: TCEC's second tiebreak, rewarding the side that squeezed its opponent hardest.

Rules (TCEC rule 3, r-mobility; docs/standings.md):

* After every move, the mover *achieves* g = legal moves of the side to move, + 0.5 when that
  side is not in check (mate = 0.0, stalemate = 0.5).
* A pawn move or a capture resets: everything achieved before it is forgotten and the position
  after the resetting move is the first candidate. The start position counts as a reset.
* The game's G is the smallest g since the last reset; a later position replaces it only when
  strictly smaller (the first achiever keeps ties). Tag ``G2.5`` when White achieved it,
  ``-G2.5`` when Black did. A decisive game is ``G0.0`` for the winner whatever happened.
* Points: achiever 1/2 + (1/2)^(1+2G), opponent 1/2 - (1/2)^(1+2G), as exact fractions.

g is always a multiple of 1/2, so internally it is kept as the integer 2g ("halves").
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from fractions import Fraction

import chess

from runner.domain.models import BLACK_WIN, DRAW, RESULTS, WHITE_WIN
from runner.domain.variant import board_at
from runner.errors import RecordInvalid

HALF = Fraction(1, 2)
# Tag of a drawn game in which no position was reached since the start (no moves at all):
# nobody achieved anything, both players get 1/2.
NO_POSITION_TAG = "G-"
_TAG = re.compile(r"^(-?)G(\d+)(?:\.(0|5))?$")


def format_tag(halves: int, white_achieved: bool) -> str:
    """Tag for G = halves/2: ``G1.5`` (White achieved) or ``-G1.5`` (Black)."""
    text = f"G{halves // 2}.{5 if halves % 2 else 0}"
    return text if white_achieved else "-" + text


def parse_tag(tag: str) -> tuple[int, bool]:
    """``"-G2.5"`` -> (5, False): G in halves and whether White achieved it."""
    m = _TAG.match(tag.strip())
    if not m:
        raise ValueError(f"bad r-mobility tag {tag!r}: expected G<n>.0 or G<n>.5, "
                         f"with a leading '-' when Black achieved it (e.g. G1.5, -G2.0)")
    halves = int(m.group(2)) * 2 + (1 if m.group(3) == "5" else 0)
    return halves, m.group(1) != "-"


def position_halves(board: chess.Board) -> int:
    """2g for the side to move in ``board``: twice its legal moves, +1 when not in check."""
    if board.is_check():
        return 2 * board.legal_moves.count()
    return 2 * legal_move_count(board) + 1


def legal_move_count(board: chess.Board) -> int:
    """How many legal moves the side to move has: ``board.legal_moves.count()``, counted
    from python-chess's public attack masks without making a move object each (about a
    fifth of the referee's CPU per ply went to generating them for this count).

    A position in check, a board of another variant or one without a king of the side to
    move is counted by python-chess's generator."""
    us = board.turn
    king = board.king(us)
    if king is None or type(board) is not chess.Board or board.is_check():
        return board.legal_moves.count()
    occupied = board.occupied
    own = board.occupied_co[us]
    theirs = board.occupied_co[not us]
    # pinned pieces: one piece of ours between the king and a slider of theirs on its line
    pins: dict[int, int] = {}
    snipers = ((chess.BB_RANK_ATTACKS[king][0] | chess.BB_FILE_ATTACKS[king][0])
               & (board.rooks | board.queens) & theirs)
    snipers |= chess.BB_DIAG_ATTACKS[king][0] & (board.bishops | board.queens) & theirs
    for sniper in chess.scan_forward(snipers):
        blockers = chess.between(king, sniper) & occupied
        if blockers and not blockers & (blockers - 1) and blockers & own:
            pins[chess.lsb(blockers)] = chess.ray(king, sniper)
    count = 0
    for to in chess.scan_forward(chess.BB_KING_ATTACKS[king] & ~own):
        if not board.is_attacked_by(not us, to):  # not in check: no x-ray through the king
            count += 1
    for square in chess.scan_forward(own & ~board.pawns & ~board.kings):
        targets = board.attacks_mask(square) & ~own
        if square in pins:
            targets &= pins[square]
        count += targets.bit_count()
    # pawns: pushes, double pushes, captures; a promotion is four moves
    empty = ~occupied & chess.BB_ALL
    last = chess.BB_RANK_8 if us == chess.WHITE else chess.BB_RANK_1
    third = chess.BB_RANK_3 if us == chess.WHITE else chess.BB_RANK_6
    pinned = 0
    for square in pins:
        pinned |= chess.BB_SQUARES[square]
    pawns = board.pawns & own
    free = pawns & ~pinned
    if us == chess.WHITE:
        single = (free << 8) & empty
        double = ((single & third) << 8) & empty
        takes = [((free & ~chess.BB_FILE_A) << 7) & theirs, ((free & ~chess.BB_FILE_H) << 9) & theirs]
    else:
        single = (free >> 8) & empty
        double = ((single & third) >> 8) & empty
        takes = [((free & ~chess.BB_FILE_A) >> 9) & theirs, ((free & ~chess.BB_FILE_H) >> 7) & theirs]
    for targets in (single, *takes):
        count += (targets & ~last).bit_count() + 4 * (targets & last).bit_count()
    count += double.bit_count()
    for square in chess.scan_forward(pawns & pinned):
        targets = chess.BB_PAWN_ATTACKS[us][square] & theirs
        step = chess.BB_SQUARES[square + (8 if us == chess.WHITE else -8)] & empty
        if step:
            targets |= step
            if step & third:
                targets |= chess.BB_SQUARES[square + (16 if us == chess.WHITE else -16)] & empty
        targets &= pins[square]
        count += (targets & ~last).bit_count() + 4 * (targets & last).bit_count()
    if board.ep_square is not None:
        count += sum(1 for _ in board.generate_legal_ep())
    if board.has_castling_rights(us):
        count += sum(1 for _ in board.generate_castling_moves())
    return count


class RMobility:
    """The r-mobility of a game kept as it is played (what :func:`game_rmobility` does for a
    whole game at once), so that the referee records a game without a pause proportional to
    its length: each position counted as it comes (:meth:`played`), or left to count at the
    game's end (:meth:`deferred`), where only a draw needs them and only those since the last
    pawn move or capture (a reset forgets all before it): :meth:`settle`."""

    __slots__ = ("best", "pending", "plies")

    def __init__(self) -> None:
        self.best: tuple[int, bool] | None = None  # (halves, White achieved)
        self.plies = 0
        self.pending = 0  # positions deferred, the last ones of the game, not counted yet

    def deferred(self, resets: bool) -> None:
        """After a move was pushed: its position is counted at the end, by :meth:`settle`
        (if the game is drawn and no reset comes after it)."""
        self.plies += 1
        if resets:
            self.best, self.pending = None, 1
        else:
            self.pending += 1

    def settle(self, board: chess.Board) -> None:
        """Count the deferred positions: ``board`` is the game's last position, its move
        stack holding at least the deferred plies (a copy: its moves are popped)."""
        halves = []
        for left in range(self.pending, 0, -1):
            halves.append((position_halves(board), board.turn == chess.BLACK))
            if left > 1:
                board.pop()
        for g, white in reversed(halves):
            if self.best is None or g < self.best[0]:
                self.best = (g, white)
        self.pending = 0

    def played(self, board: chess.Board, resets: bool, halves: int | None = None) -> None:
        """After a move was pushed on ``board``; ``resets``: it was a pawn move or a capture.
        ``halves``: :func:`position_halves` of ``board``, when the caller has it already."""
        assert not self.pending, "positions deferred: settle() them first"
        g = position_halves(board) if halves is None else halves
        self.plies += 1
        if resets or self.best is None or g < self.best[0]:
            self.best = (g, board.turn == chess.BLACK)  # the mover is the side not to move now

    def replay(self, board: chess.Board, moves: Sequence[str]) -> None:
        """Push the UCI ``moves`` on ``board`` (changed in place), counting each position.
        Raises ValueError on an illegal move, naming the ply."""
        for ply, uci in enumerate(moves, start=self.plies + 1):
            try:
                move = chess.Move.from_uci(uci)
            except ValueError:
                raise ValueError(f"ply {ply}: bad UCI move {uci!r}") from None
            if not board.is_legal(move):
                raise ValueError(f"ply {ply}: illegal move {uci!r} in {board.fen()}")
            resets = board.is_zeroing(move)
            board.push(move)
            self.played(board, resets)

    def tag(self, result: str) -> str:
        """The game's tag for its PGN ``result``."""
        if result == WHITE_WIN:
            return format_tag(0, True)
        if result == BLACK_WIN:
            return format_tag(0, False)
        if result not in RESULTS:
            raise RecordInvalid(f"bad result {result!r}: expected one of {', '.join(RESULTS)}")
        assert not self.pending, "positions deferred: settle() them first"
        return NO_POSITION_TAG if self.best is None else format_tag(*self.best)


def game_rmobility(start_fen: str | None, moves: Sequence[str], result: str) -> str:
    """The r-mobility tag of a game from its start position, UCI moves and PGN result.

    Raises ValueError on an illegal move or an unknown result, naming the ply.
    """
    tracker = RMobility()
    if result in RESULTS and result not in (WHITE_WIN, BLACK_WIN):  # decisive: G0.0, winner
        try:
            board = board_at(start_fen)
        except ValueError as exc:
            raise ValueError(f"bad start FEN {start_fen!r}: {exc}") from None
        tracker.replay(board, moves)
    return tracker.tag(result)


def record_rmobility(start_fen: str | None, moves: Sequence[str], result: str) -> str | None:
    """``game_rmobility`` for a backend recording a game: never raises (a tiebreak tag must
    never cost a played game), logs and returns None instead."""
    try:
        return game_rmobility(start_fen, moves, result)
    except Exception:  # noqa: BLE001
        logging.getLogger(__name__).exception("r-mobility of a game failed; recorded without it")
        return None


def rmobility_points(tag: str | None, result: str) -> tuple[Fraction, Fraction]:
    """(White, Black) r-mobility points of one game.

    A decisive result always gives 1/0 (the winner achieved G0.0, whatever the tag says).
    A draw without a tag (None, or ``G-`` = no move was played) gives 1/2 each.
    """
    if result == WHITE_WIN:
        return Fraction(1), Fraction(0)
    if result == BLACK_WIN:
        return Fraction(0), Fraction(1)
    if result != DRAW:
        raise RecordInvalid(f"bad result {result!r}: expected one of {', '.join(RESULTS)}")
    if tag is None or tag.strip() == NO_POSITION_TAG:
        return HALF, HALF
    halves, white_achieved = parse_tag(tag)
    bonus = Fraction(1, 2 ** (1 + halves))  # (1/2)^(1+2G) with 2G = halves
    achiever, other = HALF + bonus, HALF - bonus
    return (achiever, other) if white_achieved else (other, achiever)


def bye_points(games: int) -> Fraction:
    """A BYE has no moves: it is worth the points of a win for every game of the match."""
    return Fraction(games)
