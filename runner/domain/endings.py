"""How a game ended: one enum and a pure classifier (no I/O).

The classifier reads what a PGN or our state records about the end of a game: the result,
the ``Termination`` and ``TerminationDetails`` tags and the cutechess-style reason text (the
last PGN comment, e.g. ``"Black wins by adjudication: SyzygyTB"``). It understands the
wordings of our referee and adjudicator, of cutechess-cli 1.5.1 and of TCEC's PGNs
(``[TerminationDetails "3-Fold repetition"]``).
"""

from __future__ import annotations

import re
from enum import StrEnum


class GameEnd(StrEnum):
    """How a game ended. The value is the stable key used in JSON and CSV."""

    MATE = "mate"
    RESIGN = "resign"  # an engine resigned by itself
    ADJ_RESIGN = "adjudication-resign"  # cutechess -resign: "White wins by adjudication"
    ADJ_TCEC_WIN = "adjudication-tcec-win"
    ADJ_TCEC_DRAW = "adjudication-tcec-draw"
    ADJ_DRAW = "adjudication-draw"  # cutechess -draw: "Draw by adjudication"
    ADJ_TABLEBASE = "adjudication-tablebase"
    ADJ_MOVE_LIMIT = "adjudication-move-limit"
    ADJ_OTHER = "adjudication-other"
    TIME_FORFEIT = "time-forfeit"
    DISCONNECT = "disconnect"  # crash, engine exit, abandoned
    STALL = "stall"
    ILLEGAL_MOVE = "illegal-move"
    REPETITION = "repetition"
    FIFTY_MOVES = "fifty-moves"
    STALEMATE = "stalemate"
    INSUFFICIENT_MATERIAL = "insufficient-material"
    AGREEMENT = "agreement"
    UNKNOWN = "unknown"


LABELS: dict[GameEnd, str] = {
    GameEnd.MATE: "mate",
    GameEnd.RESIGN: "resignation",
    GameEnd.ADJ_RESIGN: "adjudication: resign rule",
    GameEnd.ADJ_TCEC_WIN: "adjudication: TCEC win rule",
    GameEnd.ADJ_TCEC_DRAW: "adjudication: TCEC draw rule",
    GameEnd.ADJ_DRAW: "adjudication: draw rule",
    GameEnd.ADJ_TABLEBASE: "adjudication: tablebases",
    GameEnd.ADJ_MOVE_LIMIT: "adjudication: move limit",
    GameEnd.ADJ_OTHER: "adjudication: other",
    GameEnd.TIME_FORFEIT: "time forfeit",
    GameEnd.DISCONNECT: "crash / disconnect",
    GameEnd.STALL: "stalled connection",
    GameEnd.ILLEGAL_MOVE: "illegal move",
    GameEnd.REPETITION: "3-fold repetition",
    GameEnd.FIFTY_MOVES: "50-move rule",
    GameEnd.STALEMATE: "stalemate",
    GameEnd.INSUFFICIENT_MATERIAL: "insufficient material",
    GameEnd.AGREEMENT: "draw by agreement",
    GameEnd.UNKNOWN: "unknown",
}

# Checked in order against the lower-cased reason, then TerminationDetails, then Termination.
_RULES: tuple[tuple[str, GameEnd], ...] = (
    (r"illegal", GameEnd.ILLEGAL_MOVE),  # first: the move text that follows is arbitrary
    (r"syzygy|tablebase|\btb\b|egtb", GameEnd.ADJ_TABLEBASE),
    (r"tcec draw", GameEnd.ADJ_TCEC_DRAW),
    (r"tcec win", GameEnd.ADJ_TCEC_WIN),
    (r"tcec resign", GameEnd.ADJ_TCEC_WIN),
    (r"maximal game length|move limit|max(imum)? ?moves", GameEnd.ADJ_MOVE_LIMIT),
    (r"\bmates?\b|checkmate", GameEnd.MATE),
    (r"stalemate", GameEnd.STALEMATE),
    (r"insufficient", GameEnd.INSUFFICIENT_MATERIAL),
    (r"fifty|50[- ]?move", GameEnd.FIFTY_MOVES),
    (r"repetition", GameEnd.REPETITION),
    (r"loses on time|on time|timeout|time forfeit|time-forfeit|flag", GameEnd.TIME_FORFEIT),
    (r"stall", GameEnd.STALL),
    (r"disconnect|abandon|crash|terminat", GameEnd.DISCONNECT),
    (r"\bresign", GameEnd.RESIGN),
    (r"agree", GameEnd.AGREEMENT),
)

_DECISIVE_ONLY = {GameEnd.MATE, GameEnd.RESIGN, GameEnd.ADJ_RESIGN, GameEnd.ADJ_TCEC_WIN,
                  GameEnd.ILLEGAL_MOVE}
_DRAW_ONLY = {GameEnd.REPETITION, GameEnd.FIFTY_MOVES, GameEnd.STALEMATE,
              GameEnd.INSUFFICIENT_MATERIAL, GameEnd.ADJ_TCEC_DRAW, GameEnd.ADJ_DRAW,
              GameEnd.ADJ_MOVE_LIMIT, GameEnd.AGREEMENT}


def _match(text: str) -> GameEnd | None:
    for pattern, end in _RULES:
        if re.search(pattern, text):
            return end
    return None


def classify_end(result: str, termination: str | None = None, details: str | None = None,
                 reason: str | None = None) -> GameEnd:
    """Classify a finished game.

    ``result`` is the PGN result; ``termination``/``details`` the PGN tags; ``reason`` the
    cutechess-style reason ("White mates", "Draw by adjudication: TCEC draw rule", ...).
    A class that contradicts the result (a "mate" that is a draw) gives ``UNKNOWN``.
    """
    reason_l = (reason or "").strip().lower()
    details_l = (details or "").strip().lower()
    term_l = (termination or "").strip().lower()
    end: GameEnd | None = None
    for text in (reason_l, details_l):
        if text:
            end = _match(text)
            if end is not None:
                break
    adjudicated = "adjudication" in reason_l or term_l == "adjudication"
    if end is None and adjudicated:
        # cutechess -resign / -draw give "White wins by adjudication" / "Draw by adjudication"
        end = GameEnd.ADJ_DRAW if result == "1/2-1/2" else GameEnd.ADJ_RESIGN
        if details_l:
            end = GameEnd.ADJ_OTHER
    if end is None and term_l and term_l not in ("normal", "unterminated"):
        end = _match(term_l)
        if end is None and term_l == "rules infraction":
            end = GameEnd.ILLEGAL_MOVE
    if end is None:
        return GameEnd.UNKNOWN
    if adjudicated and end == GameEnd.RESIGN:
        end = GameEnd.ADJ_RESIGN
    if result == "1/2-1/2" and end in _DECISIVE_ONLY:
        return GameEnd.UNKNOWN
    if result in ("1-0", "0-1") and end in _DRAW_ONLY:
        return GameEnd.UNKNOWN
    return end
