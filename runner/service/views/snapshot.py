"""The JSON snapshot (StatePath): the document (snapshotdoc.py) written from a thread with its own
read-only connection, and the sink that rewrites it as the event goes."""

from __future__ import annotations

import sqlite3

from runner.config.typed import Config
from runner.errors import print_error as err
from runner.service.views.rewrite import RewriteSink
from runner.service.views.sink import ThreadReader, ViewErrors
from runner.service.views.snapshotdoc import StateCache, write_snapshot
from runner.store import queries
from runner.store.database import Store, StoreError


class SnapshotFile:
    """Writes the JSON snapshot from a thread with its own read-only connection (kept open
    between snapshots, read in one transaction: a consistent view)."""

    def __init__(self, config: Config, store: Store, errors: ViewErrors) -> None:
        self.config, self.store = config, store
        self.cache = StateCache(on_view_error=lambda exc: errors.report(
            f"{exc.what} in the JSON snapshot (StatePath)", exc))
        self.reader = ThreadReader(store.path)

    def write_now(self) -> None:
        """From the loop's own connection (before the event runs)."""
        write_snapshot(self.config, self.store, self.cache)

    def in_thread(self) -> bool:
        """Write it from the reader; False when it failed (the previous one stays)."""
        try:
            reader = self.reader.get()
            if reader is None:
                return True
            with queries.read_snapshot(reader.conn):
                return write_snapshot(self.config, reader, self.cache,
                                      runner_running=True)  # this runner holds the lock
        except (StoreError, sqlite3.Error) as exc:
            self.close()
            # The snapshot is derived from the database: a failed read costs one dashboard
            # update, never the event (every game is committed through the main connection).
            safe = (f"the games are safe in {self.store.path}"
                    if self.store.files_problem(save=False) is None else
                    f"{self.store.path} is not the file this run writes any more")
            err(f"{self.config.swiss.state_path}: cannot update the JSON snapshot ({exc}); the "
                f"previous snapshot is intact and {safe}")
            return False

    def close(self) -> None:
        self.reader.close()


class SnapshotSink(RewriteSink):
    """Rewrites the JSON snapshot (StatePath) at every game start and end, and at most every
    ``interval`` seconds while moves come in (the document: runner.service.views.snapshotdoc).

    A game's end is written within ``end_settle`` (0.5 s), sooner when the next game starts
    meanwhile (then within ``settle`` of that start): with engines started afresh for each
    game the next start comes 0.15-0.3 s after the end, and one write shows both. A start
    or end is written no sooner than ``interval`` after the last write that showed one
    (``event_gap``): games shorter than ``interval`` make one write per ``interval``."""

    what = "the JSON snapshot (StatePath)"
    end_settle = 0.5

    def __init__(self, file: SnapshotFile, interval: float, errors: ViewErrors | None = None):
        super().__init__(file.in_thread, interval, errors)

    @property  # type: ignore[override]
    def event_gap(self) -> float:
        return self.interval


__all__ = ["SnapshotFile", "SnapshotSink"]
