"""TCEC rule 7.c: what becomes of a game interrupted by a crash, a kill or an abort.

Pure: a function of the game's logged events (its GameStarted and its MovePlayed events in
wire form), the configuration and, for rule iv, an open Syzygy tablebase. Applied in this
order (docs/resume.md):

0. The log already shows the end: the last logged position is mate, stalemate, a draw by
   rule, or an adjudication rule of ``Adjudication`` fired on the last logged ply (the kill
   came between that ply and the record). The game ends as it would have.
1. (7.c.ii) Both engines' last reported scores are >= ``WinScoreCp`` for the same side
   (mate scores count): that side wins.
2. (7.c.iii) Both |score| <= ``DrawScoreCp`` and both engines have made ``DrawMoves`` moves
   of their own (book moves do not count): a draw.
3. (7.c.iv) At most ``TablebasePieces`` men and the configured Syzygy tables cover the
   position: the tablebase result with the real halfmove clock (cursed wins are draws unless
   ``Ignore50``).
4. (7.c.v) Otherwise the game continues from the position reached: fresh engines, the whole
   move history, each clock as after the last logged move plus the compensation, the TCEC
   draw/win rule counts as they were.

Rules 1-3 only with ``Interruption.Adjudicate``; ``Interruption.Mode: replay`` replays every
interrupted game from its first move instead (the behaviour before rule 7.c was built), and so
does a backend that cannot continue a game from a position (cutechess-cli).

:func:`foresee` is the one source of what becomes of an interrupted game: the run acts on its
:class:`Decision` and every surface (the run's lines, ``status``, the dashboard, the TD's
messages) says :meth:`Decision.words`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import chess
import chess.syzygy

from runner.config.typed import AdjudicationConfig, InterruptionConfig
from runner.domain.adjudication import (
    SIDE,
    End,
    natural_end,
    tablebase_verdict,
    win_for,
)
from runner.domain.events import ResumePoint
from runner.domain.models import DRAW
from runner.domain.timecontrol import TimeControl
from runner.domain.variant import board_at

INTERRUPTION = "server interruption"  # TerminationDetails, and the reason's suffix


@dataclass(frozen=True)
class Decision:
    """``finish`` (with ``end``), ``resume`` (with ``resume``) or ``replay``."""

    action: str
    rule: str  # what decided: "log", "7.c.ii", "7.c.iii", "7.c.iv", "7.c.v", "replay"
    end: End | None = None
    resume: ResumePoint | None = None
    board: chess.Board | None = None  # the position reached (move stack from the start)
    moves: tuple[dict[str, Any], ...] = ()  # the logged moves the decision stands on
    problem: str | None = None  # why the log was cut short (None: it all replayed)
    why: str = ""  # a replay's reason ("Interruption.Mode is replay", ...)

    @property
    def ply(self) -> int:
        return len(self.resume.moves) if self.resume else (
            len(self.board.move_stack) if self.board is not None else 0)

    def words(self) -> str:
        """What becomes of the game, as every surface says it: "continues from ply 105
        (TCEC rule 7.c.v)", "replayed from move 1: ...", "decided at ply 80: 1-0 (TCEC
        rule 7.c.ii)"."""
        if self.action == "resume":
            return f"continues from ply {self.ply} (TCEC rule 7.c.v)"
        if self.action == "finish":
            assert self.end is not None
            return f"decided at ply {self.ply}: {self.end.result} ({RULE_WORDS[self.rule]})"
        return f"replayed from move 1: {self.why or 'its move log cannot be used'}"


RULE_WORDS = {"log": "the end its move log shows", "7.c.ii": "TCEC rule 7.c.ii",
              "7.c.iii": "TCEC rule 7.c.iii", "7.c.iv": "TCEC rule 7.c.iv",
              "7.c.v": "TCEC rule 7.c.v"}
POLICY_REPLAY = "Interruption.Mode is replay"
NO_MOVE = "no move was logged"
NO_ENGINE_MOVE = "no engine move was logged"


def cannot_resume(backend: str) -> str:
    """A replay's reason when the backend cannot continue a game from a position."""
    return f"the {backend} backend cannot continue a game from a position"


def _white_cp(move: dict[str, Any], mover: chess.Color) -> int | None:
    """The mover's reported score from White's point of view (mates as +-100000); None
    when the log has none, or one that is not a whole number (a damaged or hostile log)."""
    try:
        if move.get("mate") is not None:
            cp = 100_000 if int(move["mate"]) > 0 else -100_000
        elif move.get("score_cp") is not None:
            cp = int(move["score_cp"])
        else:
            return None
    except (TypeError, ValueError):
        return None
    return cp if mover == chess.WHITE else -cp


def board_after(start_fen: str | None, moves: list[dict[str, Any]]) -> chess.Board:
    board = board_at(start_fen)
    for move in moves:
        board.push_uci(move["uci"])
    return board


def parse_log(rows: list[tuple[int, str]]) -> tuple[list[dict[str, Any]], str | None]:
    """A game's logged moves from their stored rows (ply, JSON text): the rows that parse,
    up to the first that does not, and what was wrong with it (None: all parsed)."""
    moves: list[dict[str, Any]] = []
    for ply, text in rows:
        try:
            move = json.loads(text)
        except (TypeError, ValueError) as exc:
            return moves, f"the logged move of ply {ply} is not valid JSON ({exc})"
        if not isinstance(move, dict):
            return moves, f"the logged move of ply {ply} is not an object"
        moves.append(move)
    return moves, None


def replayable(start_fen: str | None, moves: list[dict[str, Any]]
               ) -> tuple[list[dict[str, Any]], chess.Board | None, str | None]:
    """The longest prefix of ``moves`` that replays from ``start_fen``: plies 1, 2, 3 ...
    without a gap, each a legal move whose position matches the FEN logged with it.

    Returns the prefix, the board after it (None when the start position itself does not
    parse) and what stopped the replay (None: the whole log replays)."""
    try:
        board = board_at(start_fen)
    except ValueError as exc:
        return [], None, f"the logged start position {start_fen!r} is not valid ({exc})"
    for i, move in enumerate(moves):
        ply = i + 1
        got = move.get("ply")
        if got != ply:
            what = f"ply {ply} is missing (the next logged ply is {got})" if isinstance(
                got, int) and got > ply else f"ply {ply} is logged as ply {got!r}"
            return moves[:i], board, what
        uci = move.get("uci")
        try:
            parsed = chess.Move.from_uci(uci) if isinstance(uci, str) else None
        except ValueError:
            parsed = None
        if parsed is None:
            return moves[:i], board, f"the move of ply {ply} ({uci!r}) does not parse"
        if not board.is_legal(parsed):
            try:  # a castling move written the other way (king to rook / two squares)
                parsed = board.parse_uci(uci)
            except ValueError:
                return moves[:i], board, f"the move of ply {ply} ({uci}) is illegal " \
                    f"in {board.fen()}"
        board.push(parsed)
        fen = move.get("fen")
        if isinstance(fen, str) and fen.split()[:2] != board.fen().split()[:2]:
            board.pop()
            return moves[:i], board, (f"the position logged after ply {ply} ({fen}) is not "
                                      f"the one its move gives ({board.fen()} + {uci})")
    return list(moves), board, None


def attempt_words(attempt: int, resumed_from_ply: int) -> str:
    """How a game's current attempt began, once it was interrupted: "continued from ply 73
    (attempt 2)", "replayed from move 1 (attempt 2)"; "" for a first attempt."""
    if resumed_from_ply:
        return f"continued from ply {resumed_from_ply} (attempt {attempt})"
    return f"replayed from move 1 (attempt {attempt})" if attempt > 1 else ""


def policy_words(mode: str, backend: str, resumes: bool) -> str:
    """What becomes of games interrupted now, before their logs are read: the same reasons
    :func:`foresee` gives, for a message that names the policy (the TD's ``pause --now``)."""
    if mode == "replay":
        return f"each is replayed from move 1: {POLICY_REPLAY}"
    if not resumes:
        return f"each is replayed from move 1: {cannot_resume(backend)}"
    return ("each continues from the ply it reached (TCEC rule 7.c.v) unless rule 7.c "
            "decides it from its log")


def foresee(started: dict[str, Any] | None, rows: list[tuple[int, str]], *,
            interruption: InterruptionConfig, adjudication: AdjudicationConfig,
            time_control: TimeControl, tablebase: chess.syzygy.Tablebase | None = None,
            backend: str = "python-chess", resumes: bool = True,
            unreadable: str | None = None) -> Decision:
    """What becomes of an interrupted game, from the store's facts: its latest GameStarted
    (``started``; ``unreadable`` says why it could not be read), its logged rows (ply, JSON
    text), the ``Interruption`` policy and whether the ``backend`` ``resumes`` a game from a
    position. The one source for the run and everything that tells of it."""
    if not rows:
        return Decision("replay", "replay", why=NO_MOVE)
    moves, bad = parse_log(rows)
    if unreadable:
        moves, bad = [], unreadable
    if resumes or interruption.mode == "replay":
        decision = decide(started, moves, interruption=interruption, adjudication=adjudication,
                          time_control=time_control, tablebase=tablebase)
    else:
        decision = Decision("replay", "replay", why=cannot_resume(backend))
    if bad and not decision.problem:
        decision = replace(decision, problem=bad)
    if decision.action == "replay" and not decision.why:
        decision = replace(decision, why=f"its move log does not replay: {decision.problem}"
                           if decision.problem else NO_ENGINE_MOVE)
    return decision


def decide(started: dict[str, Any] | None, moves: list[dict[str, Any]], *,
           interruption: InterruptionConfig, adjudication: AdjudicationConfig,
           time_control: TimeControl,
           tablebase: chess.syzygy.Tablebase | None = None) -> Decision:
    """What to do with an interrupted game whose log is ``started`` + ``moves``."""
    if interruption.mode == "replay":
        return Decision("replay", "replay", why=POLICY_REPLAY)
    start_fen = (started or {}).get("start_fen") or chess.STARTING_FEN
    moves, replayed, problem = replayable(start_fen, moves)
    engine_moves = [m for m in moves if not m.get("book")]
    if replayed is None or not engine_moves:  # nothing the engines played would be kept
        return Decision("replay", "replay", problem=problem)
    board = replayed
    last = moves[-1]
    found = _decide(started, moves, board, last, start_fen, interruption=interruption,
                    adjudication=adjudication, time_control=time_control, tablebase=tablebase)
    return replace(found, moves=tuple(moves), problem=problem)


def _decide(started: dict[str, Any] | None, moves: list[dict[str, Any]], board: chess.Board,
            last: dict[str, Any], start_fen: str, *, interruption: InterruptionConfig,
            adjudication: AdjudicationConfig, time_control: TimeControl,
            tablebase: chess.syzygy.Tablebase | None) -> Decision:

    # 0. the log already shows the end
    end = natural_end(board)
    if end is None:
        end = _fired(board, last, adjudication, tablebase)
    if end is not None:
        return Decision("finish", "log", end=end, board=board)

    # the engines' last scores, and how many moves each has made
    first_mover = chess.Board(start_fen).turn
    last_score: dict[chess.Color, int | None] = {chess.WHITE: None, chess.BLACK: None}
    made = {chess.WHITE: 0, chess.BLACK: 0}
    for move in moves:
        mover = first_mover if move["ply"] % 2 == 1 else not first_mover
        if move.get("book"):
            continue
        made[mover] += 1
        last_score[mover] = _white_cp(move, mover)

    if interruption.adjudicate:
        w, b = last_score[chess.WHITE], last_score[chess.BLACK]
        limit = interruption.win_score_cp
        if w is not None and b is not None:
            for side, sign in ((chess.WHITE, 1), (chess.BLACK, -1)):
                if sign * w >= limit and sign * b >= limit:  # 7.c.ii
                    return Decision("finish", "7.c.ii", board=board, end=End(
                        win_for(side), f"{SIDE[side]} wins by adjudication: {INTERRUPTION}",
                        "adjudication", INTERRUPTION))
            if (abs(w) <= interruption.draw_score_cp and abs(b) <= interruption.draw_score_cp
                    and min(made.values()) >= interruption.draw_moves):  # 7.c.iii
                return Decision("finish", "7.c.iii", board=board, end=End(
                    DRAW, f"Draw by adjudication: {INTERRUPTION}", "adjudication", INTERRUPTION))
        tbc = adjudication.tablebases
        if tablebase is not None and tbc is not None and interruption.tablebase_pieces:
            verdict = tablebase_verdict(tablebase, board, interruption.tablebase_pieces,
                                        tbc.ignore50)
            if verdict is not None:  # 7.c.iv
                return Decision("finish", "7.c.iv", board=board, end=End(
                    verdict.result, verdict.reason, verdict.termination, verdict.details))

    # 7.c.v: go on from the position reached
    compensation_ms = int(round(interruption.compensation(time_control.base) * 1000))

    def clock(key: str) -> int | None:
        value = last.get(key)
        if value is None:
            value = (started or {}).get(key)
        return None if value is None else int(value) + compensation_ms

    win_plies = int(last.get("win_plies") or 0)
    win_side = None
    if win_plies:
        score = _white_cp(last, not board.turn)
        win_side = None if score is None else ("white" if score > 0 else "black")
    point = ResumePoint(
        moves=tuple(m["uci"] for m in moves), comments=tuple(m.get("comment", "") for m in moves),
        book_plies=sum(1 for m in moves if m.get("book")),
        white_clock_ms=clock("white_clock_ms"), black_clock_ms=clock("black_clock_ms"),
        white_moves=made[chess.WHITE], black_moves=made[chess.BLACK],
        compensation_ms=compensation_ms, draw_plies=int(last.get("draw_plies") or 0),
        win_plies=win_plies, win_side=win_side,
        start_time=(started or {}).get("start_time", ""), workers=played_by(started, moves),
        played_s=played_seconds(moves))
    return Decision("resume", "7.c.v", resume=point, board=board)


def played_seconds(moves: list[dict[str, Any]]) -> float | None:
    """How long the logged ``moves`` took to play: the engines' measured time on each (book
    moves none). Never a difference of wall-clock times, which a clock stepped between two
    runs would bend into months; None when an engine move lacks its time."""
    total = 0
    for move in moves:
        if move.get("book"):
            continue
        ms = move.get("time_ms")
        if not isinstance(ms, int | float) or ms < 0:
            return None
        total += ms
    return round(total / 1000, 3)


def played_by(started: dict[str, Any] | None, moves: list[dict[str, Any]]) -> tuple[str, ...]:
    """The cluster workers that played the logged ``moves``, in order: those the latest
    attempt (``started``) continued from, and its own worker when it logged a move past its
    resume point (an attempt lost before its first move played none of them)."""
    started = started or {}
    names = list(started.get("played_by") or ())
    resumed_from = int(started.get("resumed_from_ply") or 0)
    if started.get("worker") and any(m["ply"] > resumed_from for m in moves):
        names.append(str(started["worker"]))
    return tuple(dict.fromkeys(names))


def _fired(board: chess.Board, last: dict[str, Any], adjudication: AdjudicationConfig,
           tablebase: chess.syzygy.Tablebase | None) -> End | None:
    """An Adjudication rule that fired on the last logged ply (the record was not written)."""
    tbc = adjudication.tablebases
    if tablebase is not None and tbc is not None:
        verdict = tablebase_verdict(tablebase, board, tbc.max_pieces, tbc.ignore50)
        if verdict is not None:
            return End(verdict.result, verdict.reason, verdict.termination, verdict.details)
    draw = adjudication.tcec_draw
    if draw is not None and int(last.get("draw_plies") or 0) >= draw.plies:
        return End(DRAW, "Draw by adjudication: TCEC draw rule", "adjudication", "TCEC draw rule")
    win = adjudication.tcec_win
    if win is not None and int(last.get("win_plies") or 0) >= win.plies:
        score = _white_cp(last, not board.turn)
        if score is not None and score != 0:
            side = chess.WHITE if score > 0 else chess.BLACK
            return End(win_for(side), f"{SIDE[side]} wins by adjudication: TCEC win rule",
                       "adjudication", "TCEC win rule")
    if adjudication.max_moves and len(board.move_stack) >= 2 * adjudication.max_moves:
        return End(DRAW, "Draw by adjudication: maximal game length", "adjudication",
                   "maximal game length")
    return None
