"""Time controls in cutechess-cli syntax, and the runner's own game clocks.

Syntax: ``[moves/]time[+increment]`` or ``inf``.
``time`` is seconds (``90``, ``0.5``) or ``m:ss`` / ``h:mm:ss`` (``45:00`` is 45 minutes).
``moves/`` makes the period repeat: ``40/90:00+30`` gives 90 minutes for every 40 moves.

Note the trap for TCEC users: TCEC writes "45+4.5" meaning 45 minutes, but in cutechess
syntax ``45+4.5`` is 45 *seconds*; 45 minutes is ``45:00+4.5``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUM = r"\d+(?:\.\d+)?"
# Upper bounds: anything beyond is a typo (or an overflow), not a time control.
MAX_BASE_S = 7 * 24 * 3600  # one week per period
MAX_INCREMENT_S = 3600.0
MAX_MOVES = 1000
_TC_RE = re.compile(  # ASCII: \d would take any script's digits ('٣' read as 3 s)
    rf"^(?:(?P<moves>\d+)/)?(?P<time>{_NUM}|\d+:\d{{1,2}}(?::\d{{1,2}})?(?:\.\d+)?|inf)(?:\+(?P<inc>{_NUM}))?$",
    re.ASCII,
)


def _fmt(seconds: float) -> str:
    """Shortest decimal form: 2700 -> '2700', 4.5 -> '4.5', 0.05 -> '0.05'."""
    text = f"{seconds:.3f}".rstrip("0").rstrip(".")
    return text or "0"


@dataclass(frozen=True)
class TimeControl:
    """One repeating period: ``moves`` per ``base`` seconds (``moves`` None = whole game)."""

    base: float | None  # seconds; None means infinite
    increment: float = 0.0
    moves: int | None = None

    @property
    def infinite(self) -> bool:
        return self.base is None

    def __str__(self) -> str:
        """Canonical cutechess form, as accepted by ``-each tc=``."""
        if self.base is None:
            return "inf"
        text = _fmt(self.base)
        if self.moves:
            text = f"{self.moves}/{text}"
        if self.increment:
            text += f"+{_fmt(self.increment)}"
        return text

    def pgn_tag(self) -> str:
        """Value of the PGN ``TimeControl`` tag as cutechess writes it (seconds)."""
        return "-" if self.base is None else str(self)

    def human(self) -> str:
        """Readable form for logs: '45:00 + 4.5s'."""
        if self.base is None:
            return "infinite"
        minutes, seconds = divmod(self.base, 60)
        body = f"{int(minutes)}:{seconds:04.1f}".replace(".0", "") if minutes else f"{_fmt(self.base)}s"
        if self.moves:
            body = f"{self.moves} moves in {body}"
        return body + (f" + {_fmt(self.increment)}s" if self.increment else "")


def parse_time_control(text: object) -> TimeControl:
    """Parse cutechess time-control syntax; raise ValueError with the reason on bad input."""
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError("a string like '45:00+4.5', '40/90:00+30', '10+0.1' or 'inf'")
    if isinstance(text, float) and not math.isfinite(text):
        raise ValueError("a finite time (a number this large or not a number is not a time "
                         "control; write 'inf' for no clock)")
    raw = str(text).strip()
    if len(raw) > 64:
        raise ValueError("at most 64 characters, like '45:00+4.5' or '40/90:00+30'")
    match = _TC_RE.match(raw)
    if not match:
        raise ValueError("[moves/]time[+increment] with time in seconds or m:ss, or 'inf'")
    time_text = match["time"]
    if time_text == "inf":
        if match["moves"] or match["inc"]:
            raise ValueError("'inf' takes no moves or increment")
        return TimeControl(base=None)
    if ":" in time_text:
        parts = time_text.split(":")
        if any(float(p) >= 60 for p in parts[1:]):
            raise ValueError("minutes and seconds after ':' must be below 60")
        base = 0.0
        for part in parts:
            base = base * 60 + float(part)
    else:
        base = float(time_text)
    if base <= 0:
        raise ValueError("a positive time")
    if not base <= MAX_BASE_S:
        raise ValueError(f"a time of at most {MAX_BASE_S} s (7 days) per period")
    moves = int(match["moves"]) if match["moves"] else None
    if moves == 0:
        raise ValueError("moves per period must be at least 1")
    if moves is not None and moves > MAX_MOVES:
        raise ValueError(f"at most {MAX_MOVES} moves per period")
    increment = float(match["inc"] or 0)
    if not increment <= MAX_INCREMENT_S:
        raise ValueError(f"an increment of at most {MAX_INCREMENT_S:g} s")
    for what, value in (("a time", base), ("an increment", increment)):
        if abs(value * 1000 - round(value * 1000)) > 1e-6:  # '0.0000001' was shown as '0'
            raise ValueError(f"{what} in whole milliseconds (at most 3 decimals), as clocks "
                             "and the PGN TimeControl tag count them")
    return TimeControl(base=base, increment=increment, moves=moves)


@dataclass
class Clock:
    """One player's clock, measured by the runner (never trusted from the engine)."""

    tc: TimeControl
    remaining: float = 0.0  # seconds left in the current period
    moves_made: int = 0

    def __post_init__(self) -> None:
        self.remaining = self.tc.base if self.tc.base is not None else float("inf")

    @property
    def moves_to_go(self) -> int | None:
        """Moves left in the current period (UCI ``movestogo``), None without periods."""
        if not self.tc.moves:
            return None
        return self.tc.moves - (self.moves_made % self.tc.moves)

    def spend(self, seconds: float, margin: float = 0.0) -> bool:
        """Charge one move. Return False if the flag fell (beyond ``margin`` seconds)."""
        if self.tc.base is None:
            self.moves_made += 1
            return True
        self.remaining -= seconds
        if self.remaining < -margin:
            return False
        self.remaining = max(self.remaining, 0.0) + self.tc.increment
        self.moves_made += 1
        if self.tc.moves and self.moves_made % self.tc.moves == 0:
            self.remaining += self.tc.base
        return True
