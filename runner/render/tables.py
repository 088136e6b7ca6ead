"""The one table renderer: aligned text for a terminal, Markdown for a page. Every cell is
made printable (a control character from a PGN or the database is shown as ``\\x1b``, never
sent raw to a terminal); a Markdown cell also has ``|`` escaped and HTML shown as text."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from runner.domain.text import markdown_cell, printable


def text_table(header: Sequence[str], body: Sequence[Sequence[str]],
               right: Collection[int] = ()) -> str:
    """A header, a rule and the rows, columns two spaces apart; the columns ``right`` right-
    aligned, the others left-aligned; trailing spaces dropped."""
    rows = [list(map(str, row)) for row in [header, *body]]
    if not all("".join(row).isprintable() for row in rows):  # (each cell made printable)
        rows = [[printable(c) for c in row] for row in rows]
    widths = [max(map(len, column)) for column in zip(*rows, strict=True)]
    # one format for every line (str.format pads as str.ljust and str.rjust do)
    line = "  ".join([f"{{:{'>' if i in right else '<'}{w}}}"
                      for i, w in enumerate(widths)]).format
    return "\n".join([line(*rows[0]).rstrip(), line(*["-" * w for w in widths]).rstrip(),
                      *[line(*cells).rstrip() for cells in rows[1:]]])


def markdown_table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """A Markdown (GitHub) table; an empty cell is a space."""
    def row(cells: Sequence[str]) -> str:
        return "| " + " | ".join(markdown_cell(c) or " " for c in cells) + " |"

    return "\n".join([row(header), "|" + "|".join("---" for _ in header) + "|", *map(row, body)])
