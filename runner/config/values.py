"""Plain checks of single values the schema cannot express: names printed into PGN tags and
tables, file names this system takes, engine arguments and option values."""

from __future__ import annotations

import math
import os
import stat
import unicodedata
from pathlib import Path
from typing import Any

from runner.config.limits import MAX_NAME_CHARS, MAX_PATH_CHARS, MAX_PATH_PART_CHARS


def shown(value: str, limit: int = 120) -> str:
    """``value`` as safe to print in a message: control characters escaped, cut short."""
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in value[: limit + 1])
    return text if len(value) <= limit else text[:limit] + "..."


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name written into PGN tags and printed tables, or None."""
    bad = sorted({ch for ch in value if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")})
    if bad:
        shown = ", ".join(repr(ch)[1:-1] for ch in bad[:5])
        return (f"one line of printable text (it contains the control or formatting "
                f"character(s) {shown}: newlines, tabs and escape sequences would break the "
                "PGN, the tables and the terminal)")
    if len(value) > MAX_NAME_CHARS:
        return f"at most {MAX_NAME_CHARS} characters (got {len(value)})"
    return None


def path_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a file name on this system, or None."""
    if not isinstance(value, str):
        return None
    if "\0" in value:
        return "a path without NUL characters"
    if len(value) > MAX_PATH_CHARS:
        return f"a path of at most {MAX_PATH_CHARS} characters (got {len(value)})"
    longest = max((len(part.encode("utf-8", "surrogateescape")) for part in value.split(os.sep)),
                  default=0)
    if longest > MAX_PATH_PART_CHARS:
        return (f"a path whose every part is at most {MAX_PATH_PART_CHARS} bytes (one part "
                f"has {longest})")
    return None


def plain_word(value: Any) -> bool:
    """A command-line argument or engine option: one line of text, or a finite number."""
    if isinstance(value, bool):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int):
        return abs(value) < 10**18
    if isinstance(value, str):
        return all(ch == " " or ch.isprintable() for ch in value) and len(value) <= MAX_PATH_CHARS
    return False


def stat_is_special(path: Path) -> bool:
    """True when ``path`` exists and is not a regular file (a FIFO, device, socket)."""
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False
