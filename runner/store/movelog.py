"""The per-move log: every MovePlayed appended to the database, durably but off the event loop.

Moves are buffered in memory and written by one background thread, in one transaction every
``interval`` seconds (default 0.25 s), through its own connection with ``synchronous=FULL``:
a power cut loses at most the moves of the last interval, never a recorded game, and the
engines' event loop never waits for an fsync. When a game finishes, the loop takes the
game's moves that are still buffered (:meth:`MoveLog.settle`) and commits them in the same
transaction as the game's record, while the thread is held off.

The events are buffered as they come and turned into rows (JSON) by whoever writes them:
the thread, or the game's record at its end; the event loop only appends to a list.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import operator
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from runner.domain.events import EVENT_VERSION, MovePlayed
from runner.store.forensics import connect

MoveRow = tuple[int, int, int, str]  # game_id, ply, attempt, JSON of the MovePlayed

_MOVE_FIELDS = tuple(f.name for f in dataclasses.fields(MovePlayed))
_move_values = operator.attrgetter(*_MOVE_FIELDS)
_encode = json.JSONEncoder(separators=(",", ":")).encode


def move_json(event: MovePlayed) -> str:
    """``json.dumps(event_to_json(event), separators=(",", ":"))``, the same text at half the
    cost (every value of a MovePlayed is a JSON scalar, or the tuple ``pv``, which JSON
    writes as the list event_to_json makes of it)."""
    data = dict(zip(_MOVE_FIELDS, _move_values(event), strict=True))
    data["v"] = EVENT_VERSION
    return _encode(data)


def move_row(event: MovePlayed) -> MoveRow:
    return (event.game_id, event.ply, event.attempt, move_json(event))


def move_rows(events: Iterable[MovePlayed]) -> list[MoveRow]:
    return [(e.game_id, e.ply, e.attempt, move_json(e)) for e in events]


INSERT_MOVES = "INSERT OR REPLACE INTO moves (game_id, ply, attempt, data) VALUES (?, ?, ?, ?)"


class MoveLog:
    """Buffer + writer thread for the ``moves`` table of one database."""

    def __init__(self, path: Path, *, interval: float = 0.25,
                 on_flush: Callable[[], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None):
        self.path = path
        self.interval = interval
        self.on_flush = on_flush
        self.on_error = on_error
        self._pending: list[MovePlayed] = []  # in arrival order; encoded when written
        self._lock = threading.Lock()  # guards _pending
        self._writing = threading.Lock()  # held while a batch is written (or a game settled)
        self._stop = threading.Event()
        self._conn: sqlite3.Connection | None = None
        self._thread = threading.Thread(target=self._run, name="move-log", daemon=True)
        self.failed: BaseException | None = None
        self.written = 0

    def start(self) -> MoveLog:
        self._conn = connect(self.path, self.path, isolation_level=None, timeout=30.0,
                             check_same_thread=False)
        self._conn.execute("PRAGMA synchronous=FULL")
        self._thread.start()
        return self

    # ---- called on the event loop ----------------------------------------------------------

    def append(self, event: MovePlayed) -> None:
        with self._lock:
            self._pending.append(event)

    @contextlib.contextmanager
    def settle(self, game_id: int) -> Iterator[list[MoveRow]]:
        """Hold the writer off and hand over the game's buffered moves.

        Use as ``with log.settle(gid) as rows:`` and commit ``rows`` with the game's record
        inside the block; if the block raises, the rows go back to the buffer.
        """
        with self._writing:
            with self._lock:
                events = [e for e in self._pending if e.game_id == game_id]
                self._pending = [e for e in self._pending if e.game_id != game_id]
            try:
                yield move_rows(events)
            except BaseException:
                with self._lock:
                    self._pending[:0] = events
                raise

    @contextlib.contextmanager
    def restart(self, game_id: int, attempt: int) -> Iterator[None]:
        """Drop buffered moves of the game's earlier attempts; the block deletes the stored
        ones that the new attempt replaces, with the writer held off."""
        with self._writing:
            with self._lock:
                self._pending = [e for e in self._pending
                                 if e.game_id != game_id or e.attempt >= attempt]
            yield

    def flush(self) -> None:
        """Write what is buffered now (used at shutdown and by tests)."""
        self._write_batch()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        with contextlib.suppress(sqlite3.Error):
            self._write_batch()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ---- the thread ---------------------------------------------------------------------

    def _write_batch(self) -> int:
        with self._writing:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch or self._conn is None:
                return 0
            try:
                rows = move_rows(batch)
                self._conn.execute("BEGIN IMMEDIATE")
                self._conn.executemany(INSERT_MOVES, rows)
                self._conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
                with self._lock:
                    self._pending[:0] = batch
                raise
            self.written += len(batch)
            return len(batch)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                if self._write_batch() and self.on_flush is not None:
                    self.on_flush()
            except sqlite3.Error as exc:  # disk full, I/O error: keep the moves, say so once
                if self.failed is None:
                    self.failed = exc
                    if self.on_error is not None:
                        self.on_error(exc)
            else:
                self.failed = None
