"""Game adjudication, fed ply by ply (like cutechess's GameAdjudicator).

Rules (TCEC rules 6.b-6.c, docs/referee.md, and the config keys under
``Adjudication``):

- Syzygy: a position with at most ``MaxPieces`` men and no castling rights is probed with
  WDL; the real halfmove clock decides between a win and a fifty-move draw (via DTZ), so
  cursed wins and blessed losses are draws unless ``Ignore50``.
- TCEC draw rule: ``Plies`` consecutive plies with |mover's eval| <= ``ScoreCp`` while the
  position has <= ``MaxPawns`` pawns and <= ``MaxPieces`` other pieces (kings included).
  Reset when the gate fails or a ply has no score or a mate score; not by pawn moves or
  captures. Book plies carry no evaluation and do not count.
- TCEC win rule: ``Plies`` consecutive plies in which the mover's eval, seen from the same
  side, is >= ``ScoreCp`` for that side (so both engines agree). Mate scores count as
  winning scores; a ply without a score resets.
- MaxMoves: a draw once the game (from its start position) has 2 x MaxMoves plies.
"""

from __future__ import annotations

import functools
import operator
from dataclasses import dataclass

import chess
import chess.engine
import chess.syzygy

from runner.config.typed import AdjudicationConfig, TcecDrawRule, TcecWinRule
from runner.domain.models import BLACK_WIN, DRAW, WHITE_WIN

_MATE_CP = 100_000
SIDE = {chess.WHITE: "White", chess.BLACK: "Black"}


@dataclass(frozen=True)
class End:
    result: str
    reason: str
    termination: str | None = None
    details: str | None = None


def win_for(color: chess.Color) -> str:
    return WHITE_WIN if color == chess.WHITE else BLACK_WIN


def natural_end(board: chess.Board, legal_moves: int | None = None,
                may_repeat: bool = True) -> End | None:
    """Rules of chess (with the automatic draws cutechess applies), cutechess wording.

    ``legal_moves``: how many legal moves the side to move has (or any number above 0 when
    only known to be some: the move that led here gave check and no mate), when the caller
    knows it already: they are not generated again. ``may_repeat``: False when the caller
    knows the position is not on the board for the third time (:class:`RepetitionWindow`):
    python-chess's check is not asked."""
    if not (any(board.generate_legal_moves()) if legal_moves is None else legal_moves):
        if board.is_check():  # one move generation (or none) for mate and stalemate
            winner = not board.turn
            return End(win_for(winner), f"{SIDE[winner]} mates")
        return End(DRAW, "Draw by stalemate")
    # a pawn, rook or queen on the board is mating material (python-chess checks it per side)
    if not (board.pawns | board.rooks | board.queens) and board.is_insufficient_material():
        return End(DRAW, "Draw by insufficient mating material")
    # No position before a pawn move or a capture comes back, and a position comes back at
    # the earliest 4 plies later: a third time needs 8 plies without one (the halfmove
    # clock). python-chess's check walks the whole game's stack at every ply.
    if may_repeat and board.halfmove_clock >= 8 and board.is_repetition(3):
        return End(DRAW, "Draw by 3-fold repetition")
    if board.halfmove_clock >= 100:
        return End(DRAW, "Draw by fifty moves rule")
    return None


# each square's lines: the rank, file and diagonals through it (python-chess's BB_RAYS)
_LINES = [functools.reduce(operator.or_, chess.BB_RAYS[square]) for square in chess.SQUARES]


def pawn_can_push(board: chess.Board) -> bool:
    """Has the side to move a pawn off every line through its king with the square ahead of
    it empty? Asked only out of check (as :func:`king_can_step`), where that push is a legal
    move: a piece off its king's lines is pinned by nothing, and moving it (not en passant)
    opens no line to the king. Then it has one, without generating any (a few bitboard
    operations: most positions with pawns)."""
    turn = board.turn
    king = board.king(turn)
    if king is None:
        return False
    pawns = board.pawns & board.occupied_co[turn] & ~_LINES[king]
    ahead = pawns << 8 if turn else pawns >> 8
    return bool(ahead & ~board.occupied & chess.BB_ALL)


def king_can_step(board: chess.Board) -> bool:
    """Can the king of the side to move step to a square that is neither its own piece's nor
    attacked? Asked only out of check (the caller knows it: no ``+`` in the last move's SAN),
    where that step is a legal move (python-chess's own test of a king move, and no slider's
    line runs through a king it does not attack): then it has one, without generating any."""
    turn = board.turn
    king = board.king(turn)
    if king is None:
        return False
    steps = chess.BB_KING_ATTACKS[king] & ~board.occupied_co[turn]
    them = not turn
    attackers = board.attackers_mask
    while steps:
        low = steps & -steps
        if not attackers(them, low.bit_length() - 1):
            return True
        steps ^= low
    return False


class RepetitionWindow:
    """The occupied squares of each position since the last pawn move or capture, fed after
    every ply. No position before such a move comes back, and a position on the board a
    third time has the same occupied squares as the two before it: where this window does
    not hold them, python-chess's repetition check (which walks the whole game's positions
    at every ply) need not be asked."""

    __slots__ = ("occupied",)

    def __init__(self) -> None:
        self.occupied: list[int] = []

    def played(self, board: chess.Board) -> bool:
        """After a move was pushed on ``board``: may its position be there for the third
        time? (False only when it surely is not.)"""
        occupied = self.occupied
        if board.halfmove_clock == 0:
            occupied.clear()
        occupied.append(board.occupied)
        if len(occupied) <= board.halfmove_clock:  # the window began before the first ply fed
            return True
        return occupied.count(board.occupied) >= 3


@dataclass(frozen=True)
class Verdict:
    """An adjudicated result, in cutechess wording."""

    result: str  # "1-0" | "0-1" | "1/2-1/2"
    reason: str  # "Draw by adjudication: TCEC draw rule"
    details: str  # PGN TerminationDetails: "TCEC draw rule", "SyzygyTB", ...
    termination: str = "adjudication"


def _win(color: chess.Color, details: str) -> Verdict:
    side = "White" if color == chess.WHITE else "Black"
    return Verdict(WHITE_WIN if color == chess.WHITE else BLACK_WIN,
                   f"{side} wins by adjudication: {details}", details)


def _draw(details: str) -> Verdict:
    return Verdict(DRAW, f"Draw by adjudication: {details}", details)


def tablebase_verdict(tb: chess.syzygy.Tablebase, board: chess.Board, max_pieces: int,
                      ignore50: bool = False) -> Verdict | None:
    """Syzygy verdict for ``board`` (side to move's view turned into a result), or None."""
    if chess.popcount(board.occupied) > max_pieces or board.castling_rights:
        return None
    try:
        wdl = tb.probe_wdl(board)
    except (KeyError, IndexError, ValueError):
        return None  # table missing (MissingTableError is a KeyError) or unprobeable
    stm = board.turn
    if wdl == 0:
        return _draw("SyzygyTB")
    if ignore50:
        return _win(stm if wdl > 0 else not stm, "SyzygyTB")
    if abs(wdl) == 1:  # cursed win / blessed loss even with a fresh fifty-move counter
        return _draw("SyzygyTB")
    # Unconditional result with counter 0; the real halfmove clock may still save the loser.
    try:
        dtz = abs(tb.probe_dtz(board))
    except (KeyError, IndexError, ValueError):
        return None
    total = board.halfmove_clock + dtz
    if total < 100:
        return _win(stm if wdl > 0 else not stm, "SyzygyTB")
    if total > 100:
        return _draw("SyzygyTB")
    return None  # exactly on the edge: DTZ may be rounded by one ply, let them play on


def _cp(score: chess.engine.Score | None) -> int | None:
    if score is None:
        return None
    return score.score(mate_score=_MATE_CP)


class TcecDrawWindow:
    """The TCEC draw rule's counter (specs/tcec-rules.md section 1), shared by both backends.

    Gate: at most ``max_pawns`` pawns and ``max_pieces`` other pieces (kings counted, as TCEC
    does); leaving the gate (a promotion) or a ply without a centipawn score (none, or a mate
    score) restarts the count; book plies neither count nor reset; pawn moves and captures do
    not reset. Fires after ``plies`` consecutive plies with |eval| <= ``score_cp``.
    """

    def __init__(self, rule: TcecDrawRule):
        self.rule = rule
        self.count = 0

    def update(self, board: chess.Board, cp: int | None, *, book: bool = False) -> bool:
        """Feed the position after a ply and the mover's centipawn score; True when it fires."""
        rule = self.rule
        pawns = chess.popcount(board.pawns)
        pieces = chess.popcount(board.occupied) - pawns
        if pawns > rule.max_pawns or pieces > rule.max_pieces:
            self.count = 0
            return False
        if book:
            return False
        if cp is not None and abs(cp) <= rule.score_cp:
            self.count += 1
        else:
            self.count = 0
        return self.count >= rule.plies


class Adjudicator:
    """Stateful per-game adjudicator. Call ``update`` after every ply."""

    def __init__(self, config: AdjudicationConfig,
                 tablebase: chess.syzygy.Tablebase | None = None):
        self.config = config
        self.tablebase = tablebase  # opened by the caller (runner.play.tablebases)
        self.draw_window = TcecDrawWindow(config.tcec_draw) if config.tcec_draw else None
        self.win_count = 0
        self.win_side: chess.Color | None = None

    def will_probe(self, board: chess.Board) -> bool:
        """Would :meth:`update` probe the tablebase for this position (file reads)?"""
        tbc = self.config.tablebases
        return (self.tablebase is not None and tbc is not None and not board.castling_rights
                and chess.popcount(board.occupied) <= tbc.max_pieces)

    def update(self, board: chess.Board, score: chess.engine.Score | None = None, *,
               book: bool = False) -> Verdict | None:
        """Feed the position after a ply and the mover's score (relative to the mover).

        ``board.move_stack`` must hold the plies played since the game's start position.
        Returns a verdict when a rule fires, else None.
        """
        config = self.config
        tbc = config.tablebases
        if self.tablebase is not None and tbc is not None:
            verdict = tablebase_verdict(self.tablebase, board, tbc.max_pieces, tbc.ignore50)
            if verdict is not None:
                return verdict
        # the draw rule counts centipawn scores only; the win rule counts mates as winning
        if self.draw_window is not None and self.draw_window.update(
                board, None if score is None else score.score(), book=book):
            return _draw("TCEC draw rule")
        if config.tcec_win is not None and not book:
            verdict = self._win_rule(not board.turn, _cp(score), config.tcec_win)
            if verdict is not None:
                return verdict
        if config.max_moves and len(board.move_stack) >= 2 * config.max_moves:
            return _draw("maximal game length")
        return None

    def _win_rule(self, mover: chess.Color, cp: int | None, rule: TcecWinRule) -> Verdict | None:
        """The TCEC win rule's count after a ply of ``mover`` scored ``cp`` (mates as
        :func:`_cp`): its verdict when it fires."""
        if cp is None:
            self.win_count, self.win_side = 0, None
            return None
        white_cp = cp if mover == chess.WHITE else -cp
        side: chess.Color | None = None
        if white_cp >= rule.score_cp:
            side = chess.WHITE
        elif white_cp <= -rule.score_cp:
            side = chess.BLACK
        if side is None:
            self.win_count, self.win_side = 0, None
            return None
        if side == self.win_side:
            self.win_count += 1
        else:
            self.win_count, self.win_side = 1, side
        if self.win_count >= rule.plies:
            return _win(side, "TCEC win rule")
        return None
