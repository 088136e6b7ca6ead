"""Text that is safe to show: names and other stored strings on a terminal or in markdown.

Names are validated by the config loader, but what is printed comes from the state database,
books and PGN files too; a terminal escape sequence or a newline in any of them must not
reach the user's terminal raw.
"""

from __future__ import annotations

import math


def printable(text: object) -> str:
    """``text`` with every non-printable character (ESC, newline, tab, other controls)
    shown as a Python-style escape: ``\\x1b``, ``\\n``."""
    value = str(text)
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in value)


def printable_lines(text: str) -> str:
    """Each line of ``text`` made :func:`printable` (the line breaks themselves are kept)."""
    return "\n".join(printable(line) for line in text.split("\n"))


def markdown_cell(text: object) -> str:
    """A markdown table cell: printable, ``|`` escaped, HTML shown as text, not rendered."""
    import html  # late: only markdown output needs it (not every start of a run)

    return html.escape(printable(text), quote=False).replace("|", "\\|")


def fixed_text(value: float | None, digits: int = 0) -> str:
    """``value`` with ``digits`` decimals, never "-0"; "" for None or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0"


__all__ = ["fixed_text", "markdown_cell", "printable", "printable_lines"]
