"""The problems found in one config file, each naming the file, the key path (and its line),
the bad value and what was expected."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` for the closest of ``names`` to ``name`` (difflib, else a
    match but for case), or "" when none is close."""
    import difflib  # late: only a config with a problem needs it (not every start)

    names = list(names)
    hint = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    if not hint:
        lowered = {n.lower(): n for n in names}
        hint = [lowered[name.lower()]] if name.lower() in lowered else []
    return f"; did you mean {hint[0]!r}?" if hint else ""


class Problems:
    """Collects problems; each names file, key path (and line), bad value and expectation."""

    def __init__(self, path: Path, lines: dict[str, int]):
        self.path = path
        self.lines = lines
        self.problems: list[str] = []
        self.schema_keys: set[str] = set()  # key paths the schema already reported

    def problem(self, key: str, message: str) -> None:
        line = self.lines.get(key)
        where = f"{self.path}:{line}" if line else str(self.path)
        self.problems.append(f"{where}: {key}: {message}")

    def bad(self, key: str, value: Any, expected: str) -> None:
        shown = repr(value[:120]) + "..." if isinstance(value, str) and len(value) > 120 else repr(value)
        if len(shown) > 200:  # a huge list or mapping
            shown = shown[:200] + "..."
        self.problem(key, f"got {shown}, expected {expected}")

    def unknown(self, key: str, name: str, names: list[str]) -> None:
        """``name`` is not one of ``names``: say so, with the closest as "did you mean"."""
        self.problem(key, f"unknown key{did_you_mean(name, names)} (allowed: {', '.join(names)})")

    def reported(self, key: str) -> bool:
        """Whether the schema reported ``key`` or a key inside it (no second message)."""
        return any(k == key or k.startswith((key + ".", key + "[")) for k in self.schema_keys)
