"""The store's one writer: every MovePlayed appended to the database, and every other write
of a running event (game starts, records, engine processes), durably but off the event loop.

Moves are buffered in memory and written by one background thread, in one transaction every
``interval`` seconds (default 0.25 s), through its own connection with ``synchronous=FULL``:
a power cut loses at most the moves of the last interval, never a recorded game. The same
thread runs the other writes (:meth:`MoveLog.submit`), in the order they were submitted and
as soon as they come; the loop gets a future for each, so that it never waits for an fsync
or an SQLite lock and still learns of a failed commit before it acts on it. When a game
finishes, its moves that are still buffered are handed to its record's job
(:meth:`MoveLog.settle`) and committed in the same transaction.

The events are buffered as they come and turned into rows (JSON) by whoever writes them:
the thread, or the game's record at its end; the event loop only appends to a list.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import json
import operator
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

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

Job = Callable[[sqlite3.Connection], Any]


class MoveLog:
    """Buffer + writer thread for the ``moves`` table of one database, and the thread that
    runs every other write of a running event (:meth:`submit`)."""

    def __init__(self, path: Path, *, interval: float = 0.25,
                 on_flush: Callable[[], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None):
        self.path = path
        self.interval = interval
        self.on_flush = on_flush
        self.on_error = on_error
        self._pending: list[MovePlayed] = []  # in arrival order; encoded when written
        self._lock = threading.Lock()  # guards _pending and _jobs
        self._wake = threading.Condition(self._lock)  # a job was submitted, or stop
        self._jobs: collections.deque[tuple[Job, concurrent.futures.Future[Any]]] = \
            collections.deque()
        self._writing = threading.RLock()  # held while a batch is written (or a game settled)
        self._stop = threading.Event()
        self._conn: sqlite3.Connection | None = None
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self.failed: BaseException | None = None
        self.written = 0

    def start(self) -> MoveLog:
        self._conn = connect(self.path, self.path, isolation_level=None, timeout=30.0,
                             check_same_thread=False)
        self._conn.execute("PRAGMA synchronous=FULL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._thread.start()
        return self

    @property
    def conn(self) -> sqlite3.Connection | None:
        """The writer's connection: use it only in a job (on the writer thread)."""
        return self._conn

    @property
    def running(self) -> bool:
        """Does the writer thread take jobs (started, not closed)?"""
        return self._thread.is_alive() and not self._stop.is_set()

    def on_writer(self) -> bool:
        """Is this the writer thread?"""
        return threading.current_thread() is self._thread

    # ---- called on the event loop ----------------------------------------------------------

    def append(self, event: MovePlayed) -> None:
        with self._lock:
            self._pending.append(event)

    def submit(self, job: Job) -> concurrent.futures.Future[Any]:
        """Run ``job(connection)`` on the writer thread, after every job submitted before it
        its result (or its exception) in the future. Before :meth:`start`, or once the thread
        has stopped, it runs in the caller's thread."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if self.running:
                self._jobs.append((job, future))
                self._wake.notify()
                return future
        self._run_job(job, future)
        return future

    def settle(self, game_id: int, job: Callable[[sqlite3.Connection, list[MoveRow]], Any]
               ) -> concurrent.futures.Future[Any]:
        """Take the game's buffered moves and submit ``job(connection, rows)``: the game's
        record commits them in its transaction. If the job fails, the moves go back to the
        buffer."""
        with self._lock:
            events = [e for e in self._pending if e.game_id == game_id]
            self._pending = [e for e in self._pending if e.game_id != game_id]

        def run(conn: sqlite3.Connection) -> Any:
            try:
                return job(conn, move_rows(events))
            except BaseException:
                with self._lock:
                    self._pending[:0] = events
                raise

        return self.submit(run)

    def restart(self, game_id: int, attempt: int, job: Job) -> concurrent.futures.Future[Any]:
        """Drop buffered moves of the game's earlier attempts and submit ``job``, which deletes
        the stored ones that the new attempt replaces (it runs before the new attempt's
        moves are written)."""
        with self._lock:
            self._pending = [e for e in self._pending
                             if e.game_id != game_id or e.attempt >= attempt]
        return self.submit(job)

    def flush(self) -> None:
        """Write what is buffered now (used at shutdown and by tests)."""
        self._write_batch()

    def close(self) -> None:
        with self._lock:
            self._stop.set()
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join()
        self._run_jobs()  # none is left unless the thread died
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

    def _run_job(self, job: Job, future: concurrent.futures.Future[Any]) -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            with self._writing:
                if self._conn is None:
                    raise sqlite3.ProgrammingError(f"{self.path}: the store's writer is closed")
                result = job(self._conn)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the job
            future.set_exception(exc)
        else:
            future.set_result(result)

    def _run_jobs(self) -> None:
        while True:
            with self._lock:
                if not self._jobs:
                    return
                job, future = self._jobs.popleft()
            self._run_job(job, future)

    def _run(self) -> None:
        due = time.monotonic() + self.interval
        while True:
            with self._lock:
                while not self._jobs and not self._stop.is_set():
                    wait = due - time.monotonic()
                    if wait <= 0:
                        break
                    self._wake.wait(wait)
                stopping = self._stop.is_set()
            self._run_jobs()
            if stopping:
                return
            if time.monotonic() < due:
                continue
            due = time.monotonic() + self.interval
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
