"""The Syzygy tables this process has open: opened once per set of directories, shared by every
game (probing is thread-safe), closed once when the run ends. The rules probe what they are
handed (runner.domain.adjudication.tablebase_verdict, Adjudicator): the domain keeps no state."""

from __future__ import annotations

import contextlib
from pathlib import Path

import chess.syzygy

from runner.config.typed import TablebaseConfig

_OPEN: dict[tuple[str, ...], chess.syzygy.Tablebase] = {}


def open_tablebase(config: TablebaseConfig) -> chess.syzygy.Tablebase:
    """Open (once per process) the Syzygy tables in ``config.paths``; probing is thread-safe."""
    key = tuple(str(Path(p).resolve()) for p in config.paths)
    tb = _OPEN.get(key)
    if tb is None:
        tb = chess.syzygy.Tablebase()
        for path in key:
            tb.add_directory(path)
        _OPEN[key] = tb
    return tb


def open_count() -> int:
    """How many sets of tables are open (none once the run closed them)."""
    return len(_OPEN)


def close_tablebases() -> None:
    """Close every Syzygy table this process opened (:func:`open_tablebase`): once, when the
    run ends, since concurrent games share them; a later open reads them again."""
    while _OPEN:
        _, tb = _OPEN.popitem()
        with contextlib.suppress(Exception):
            tb.close()


__all__ = ["close_tablebases", "open_count", "open_tablebase"]
