"""The store's one writer: every write of a running event, in the order it was submitted.

One queue holds everything the event loop hands the store: each MovePlayed, and every other
write as a job (a game's start, its record, an engine process to sweep, a round's pairing, a
metadata value, a barrier). One background thread takes the queue in order, through its own
connection with ``synchronous=FULL``. The ordering rule:

* **Nothing is written out of order.** A job runs only after every move and every job
  submitted before it is committed; consecutive moves are committed together, in one
  transaction at most ``interval`` seconds after the first of them was queued (default
  0.05 s), or at once when a job follows them. A batch of moves alone is committed without
  an fsync (``synchronous=NORMAL``: WAL, so every reader sees it at once, and a crash of the
  process loses nothing; the connection is set to NORMAL for the batches and back to FULL
  before a job only when that changes); the writer fsyncs the WAL file itself at the latest
  ``sync_s`` seconds (default 0.9) after such a commit, and when it closes (a synced commit
  meanwhile, a game's record above all, syncs every commit before it earlier: after a record
  the writer has none of them left to fsync itself). So a power cut loses at
  most the moves of the last second (rule 7.c goes on from the last one kept), never a
  recorded game: a job's commit keeps the connection's ``synchronous=FULL``. After a commit
  of moves, or of a job with nothing left queued (a game's record: the next game's start
  follows), the thread waits ``interval`` for the next ones (a game in play queues its moves
  without waking it: one wake per batch, not two); with nothing queued then and nothing to
  sync, it sleeps until something is queued.
  :meth:`StoreWriter.flush` is a barrier in the same queue, never a second writer: whoever calls
  it (the loop's worker threads, a test) waits for the writer to reach it.
* **A game's start goes with the moves.** :meth:`StoreWriter.restart` queues it as a move is
  (it wakes the thread only when it sleeps): it is committed in the transaction of the moves
  around it (its book moves first), in its order among them, within ``interval``; its write
  (unsynced) runs in a savepoint of that transaction (``Store.transaction`` joins an open
  one), so a start that fails fails alone. A batch that cannot be written (not a full disk)
  hands its starts back as jobs of their own.
* **Writes are idempotent on (game, attempt, ply).** A logged move never replaces a row of a
  later attempt, and is not written at all for an attempt older than the game's current one;
  a game's start deletes only rows of *earlier* attempts beyond the kept prefix, never rows
  of its own attempt. So a write repeated after an error, or a stale event, cannot undo a
  newer one.
* **A game's record takes its moves along.** When a finished game's record job
  (:meth:`StoreWriter.settle`) comes up, the game's moves queued before it are committed in the
  record's own transaction.
* **A full disk is waited out.** A write that fails because the disk is full (SQLITE_FULL,
  ENOSPC) is not dropped and not failed: it goes back to the head of the queue with all that
  came after it, the writer says so (``on_wait``: once, then every ``report_every`` seconds,
  with the space it needs) and tries again until it succeeds, then goes on in order
  (``on_space``). The loop meanwhile only appends. Closing the writer while it waits gives up:
  the jobs still queued fail (the games they belong to are decided again by rule 7.c on
  resume), and nothing committed before is touched. Any other failed job hands its error to
  its future; a failed batch of moves is kept in memory and tried again (reported once).

The events are turned into rows (JSON) by the writer thread; the event loop only appends.
Test seam: ``StoreWriter.between`` (None in production) is called on the writer thread after it
has taken its next piece of the queue and before it writes it.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import dataclasses
import errno
import json
import operator
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import msgspec

from runner.domain.events import EVENT_VERSION, MovePlayed
from runner.store.forensics import connect

MoveRow = tuple[int, int, int, str]  # game_id, ply, attempt, JSON of the MovePlayed

_MOVE_FIELDS = tuple(f.name for f in dataclasses.fields(MovePlayed))
_move_values = operator.attrgetter(*_MOVE_FIELDS)
_encode = json.JSONEncoder(separators=(",", ":")).encode
_msgspec_encode = msgspec.json.Encoder().encode


def move_json_generic(event: MovePlayed) -> str:
    """``json.dumps(event_to_json(event), separators=(",", ":"))``, at half its cost (every
    value of a MovePlayed is a JSON scalar, or the tuple ``pv``, which JSON writes as the
    list event_to_json makes of it)."""
    data = dict(zip(_MOVE_FIELDS, _move_values(event), strict=True))
    data["v"] = EVENT_VERSION
    return _encode(data)


def _msgspec_tail() -> bytes | None:
    """What follows the fields msgspec writes of a MovePlayed (``,"kind":"move","v":N}``),
    None when its text of a sample move is not :func:`move_json_generic`'s (another
    msgspec)."""
    sample = MovePlayed(game_id=1, ply=2, uci="e2e4", san="e4", fen="f", white_clock_ms=None,
                        black_clock_ms=3, score_cp=-4, mate=None, pv=("e7e5",), comment="c",
                        at_ms=1 << 40)
    tail = ("," + _encode({"kind": sample.kind, "v": EVENT_VERSION})[1:]).encode()
    try:
        text = (_msgspec_encode(sample)[:-1] + tail).decode()
    except (TypeError, ValueError):
        return None
    return tail if text == move_json_generic(sample) else None


_MSGSPEC_TAIL = _msgspec_tail()
# the values msgspec writes as json does: every field but pv one of _SCALARS, pv strings
_scalar_values = operator.attrgetter(*(name for name in _MOVE_FIELDS if name != "pv"))
_SCALARS = frozenset((int, bool, type(None), str))
_STRINGS = frozenset((str,))


def move_json(event: MovePlayed) -> str:
    """The move log's row text: :func:`move_json_generic`'s, written by msgspec's encoder of
    the dataclass (about a third of the cost) when its text is the same: no float anywhere
    (msgspec writes 1e16 where ``json`` writes 1e+16), only printable ASCII in the strings
    (msgspec writes the others as UTF-8 where ``json`` escapes them), integers of at most 64
    bits, and a msgspec that writes the fields as the sample above."""
    if _MSGSPEC_TAIL is not None and _SCALARS.issuperset(map(type, _scalar_values(event))) \
            and type(event.pv) in (tuple, list) and _STRINGS.issuperset(map(type, event.pv)):
        try:
            row = _msgspec_encode(event)
        except (TypeError, ValueError, OverflowError):  # msgspec.EncodeError: a ValueError
            row = None
        if row is not None and row.isascii() and b"\x7f" not in row:
            return (row[:-1] + _MSGSPEC_TAIL).decode()
    return move_json_generic(event)


def move_row(event: MovePlayed) -> MoveRow:
    return (event.game_id, event.ply, event.attempt, move_json(event))


def move_rows(events: Iterable[MovePlayed]) -> list[MoveRow]:
    return [(e.game_id, e.ply, e.attempt, move_json(e)) for e in events]



# A move never replaces a row of a later attempt, nor is written for an attempt older than
# the game's current one (the module's ordering rule).
INSERT_MOVES = (
    "INSERT INTO moves (game_id, ply, attempt, data) SELECT ?1, ?2, ?3, ?4"
    " WHERE ?3 >= COALESCE((SELECT attempt FROM games WHERE game_id=?1), 0)"
    " ON CONFLICT (game_id, ply) DO UPDATE SET attempt=excluded.attempt, data=excluded.data"
    " WHERE excluded.attempt >= moves.attempt")

Job = Callable[[sqlite3.Connection], Any]
Settle = Callable[[sqlite3.Connection, list[MoveRow]], Any]


@dataclasses.dataclass(eq=False)
class _Job:
    run: Job | None
    future: concurrent.futures.Future[Any]
    settle: Settle | None = None  # a game's record: it commits the game's queued moves
    game_id: int | None = None
    started: bool = False  # its future is RUNNING (a job tried again after a full disk)
    joins: bool = False  # a game's start: committed with the moves around it (restart)

    def begin(self) -> bool:
        """Mark the future running (once); False if it was cancelled before."""
        if not self.started:
            if not self.future.set_running_or_notify_cancel():
                return False
            self.started = True
        return True


class DiskFull(Exception):
    """The writer was closed while it waited for disk space; the write was not made."""


def disk_full(exc: BaseException, path: Path | None = None) -> bool:
    """Did this write fail because the disk (or the user's quota) is full?

    SQLite reports a full disk as SQLITE_FULL, except where the write that failed was the
    WAL's index or an fsync (SQLITE_IOERR_*): that counts as full when the database's file
    system has (next to) no space left."""
    if isinstance(exc, OSError):
        return exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not isinstance(exc, sqlite3.Error):
        return False
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or "disk is full" in str(exc):
        return True
    if name.startswith("SQLITE_IOERR") and path is not None:
        return free_bytes(path) < 1 << 20
    return False


def free_bytes(path: Path) -> int:
    """Bytes this user may still write on the file system that holds ``path``."""
    try:
        st = os.statvfs(path.parent if not path.is_dir() else path)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _commit_batch(conn: sqlite3.Connection, batch: list[MovePlayed | _Job], path: Path
                  ) -> list[tuple[_Job, Any, BaseException | None]]:
    """Commit moves and the games' starts among them, in order, in one transaction; each
    start's result or error (a start's full disk is raised: the whole batch waits). An error
    of the batch is raised with the transaction still open (the caller rolls it back)."""
    done: list[tuple[_Job, Any, BaseException | None]] = []
    conn.execute("BEGIN IMMEDIATE")
    moves: list[MovePlayed] = []
    for item in batch:
        if isinstance(item, MovePlayed):
            moves.append(item)
            continue
        if moves:
            conn.executemany(INSERT_MOVES, move_rows(moves))
            moves = []
        if not item.begin():
            continue
        assert item.run is not None
        try:
            done.append((item, item.run(conn), None))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the job
            if disk_full(exc, path):
                raise
            done.append((item, None, exc))
    if moves:
        conn.executemany(INSERT_MOVES, move_rows(moves))
    conn.execute("COMMIT")
    return done


def _sync_file(path: str | Path, sync: Callable[[int], None]) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        sync(fd)
    finally:
        os.close(fd)


def _space_needed(items: list[MovePlayed | _Job]) -> int:
    """A generous estimate of the space the waiting writes need (rows, WAL frames)."""
    moves = sum(len(move_json(e)) for e in items if isinstance(e, MovePlayed))
    return max(1 << 20, 4 * moves + 64 * 1024 * sum(isinstance(e, _Job) for e in items))


class StoreWriter:
    """The store's one ordered writer: the ``moves`` table of one database, and every other
    write of a running event (:meth:`submit`), through one queue and one thread."""

    retry_s = 1.0  # a write that found the disk full is tried again this often
    report_every = 300.0  # "still waiting for disk space" at most this often

    def __init__(self, path: Path, *, interval: float = 0.05, sync_s: float = 0.9,
                 on_flush: Callable[[], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None,
                 on_wait: Callable[[str], None] | None = None,
                 on_space: Callable[[str], None] | None = None):
        self.path = path
        self.interval = interval
        self.sync_s = sync_s
        self.on_flush = on_flush
        self.on_error = on_error
        self.on_wait = on_wait  # the disk is full: what is waiting and what it needs
        self.on_space = on_space  # the disk has space again: the writer goes on
        self._queue: collections.deque[MovePlayed | _Job] = collections.deque()
        self._jobs = 0  # _Job items in the queue (they wake the thread)
        self._lock = threading.Lock()  # guards _queue and _jobs
        self._wake = threading.Condition(self._lock)
        self._writing = threading.RLock()  # held while the writer (or close) writes
        self._stop = threading.Event()
        self._conn: sqlite3.Connection | None = None
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self.failed: BaseException | None = None  # the last failed batch of moves (None: ok)
        self.waiting: BaseException | None = None  # the disk-full error being waited out
        self.written = 0  # moves committed
        self.starts = 0  # games' starts committed with them (restart)
        self.between: Callable[[], None] | None = None  # test seam (module docstring)
        self.gave_up = False  # stopped while waiting for disk space (give_up)
        self.unsynced_since: float | None = None  # monotonic time of the first commit not fsynced
        self.syncs = 0  # fsyncs of the WAL made by the writer itself
        self.wakes = 0  # times the thread woke from a wait (a notify or a timeout)
        self._idle = False  # the thread sleeps until something is queued
        self._moved = False  # the last turn committed moves (more are likely to follow)
        self._dir_synced = False  # the WAL's directory entry fsynced once (a new WAL file)
        self._at_full = True  # the connection's synchronous=FULL (NORMAL while moves go out)

    def start(self) -> StoreWriter:
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

    # ---- called on the event loop (or any thread) ------------------------------------------

    def append(self, event: MovePlayed) -> None:
        with self._lock:
            self._queue.append(event)
            if self._idle:
                self._idle = False
                self._wake.notify()

    def submit(self, job: Job) -> concurrent.futures.Future[Any]:
        """Run ``job(connection)`` on the writer thread after everything submitted before it
        (moves included); its result (or its exception) in the future. Before :meth:`start`,
        or once the thread has stopped, it runs at once in the caller's thread (after what is
        queued)."""
        return self._enqueue(_Job(job, concurrent.futures.Future()))

    def settle(self, game_id: int, job: Settle) -> concurrent.futures.Future[Any]:
        """Submit the game's record: ``job(connection, rows)`` gets the game's moves queued
        before it, and commits them in its transaction, synced (``synchronous=FULL``: every
        commit before it is then durable too, and the writer has none of them to fsync)."""
        return self._enqueue(_Job(None, concurrent.futures.Future(), job, game_id))

    def restart(self, game_id: int, attempt: int, job: Job) -> concurrent.futures.Future[Any]:
        """A new attempt of a game: queued moves of its earlier attempts are dropped (the
        start job deletes the stored ones it replaces) and ``job`` is queued as a move is
        (it wakes the writer only when it sleeps) and committed in the same transaction as
        the moves around it, within ``interval``: ``job`` commits through
        :meth:`Store.transaction` unsynced, which joins the writer's open transaction."""
        if attempt > 1:  # (a first attempt has no earlier one whose moves could be queued)
            with self._lock:
                if any(isinstance(e, MovePlayed) and e.game_id == game_id and e.attempt < attempt
                       for e in self._queue):
                    self._queue = collections.deque(
                        e for e in self._queue if not (isinstance(e, MovePlayed) and e.game_id
                                                       == game_id and e.attempt < attempt))
        return self._enqueue(_Job(job, concurrent.futures.Future(), joins=True))

    def flush(self) -> None:
        """Wait until everything submitted so far is written: a barrier in the queue (never a
        second writer). On the writer thread, before start or after close: written here."""
        if self.on_writer():
            return  # the writer reaches what is queued after the job that called this
        self.submit(lambda conn: None).result()

    def close(self) -> None:
        """Write what is queued and stop the thread (a writer waiting for disk space gives
        up: see the module docstring)."""
        with self._lock:
            self._stop.set()
            self._wake.notify()
        if self._thread.is_alive():
            self._thread.join()
        self._drain_here()  # none is left unless the thread died or gave up
        if self.unsynced_since is not None:
            self._sync()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def give_up(self) -> None:
        """Stop waiting for disk space (a stop signal): the writes still queued fail with
        DiskFull at once; :meth:`close` then finishes the thread."""
        with self._lock:
            self.gave_up = True
            self._stop.set()
            self._wake.notify()

    def pending(self) -> int:
        """Items (moves and jobs) not written yet."""
        with self._lock:
            return len(self._queue)

    # ---- the thread ---------------------------------------------------------------------

    def _enqueue(self, job: _Job) -> concurrent.futures.Future[Any]:
        with self._lock:
            self._queue.append(job)
            if self.running:
                if not job.joins:
                    self._jobs += 1
                    self._wake.notify()
                elif self._idle:  # a game's start: as a move (committed at the next batch)
                    self._idle = False
                    self._wake.notify()
                return job.future
            self._jobs += not job.joins
        self._drain_here()
        return job.future

    def _take(self) -> list[MovePlayed | _Job]:
        with self._lock:
            items = list(self._queue)
            self._queue.clear()
            self._jobs = 0
        return items

    def _put_back(self, items: list[MovePlayed | _Job]) -> None:
        """Return unwritten items to the head of the queue, in their order."""
        if not items:
            return
        with self._lock:
            self._queue.extendleft(reversed(items))
            self._jobs += sum(1 for e in items if isinstance(e, _Job) and not e.joins)

    def _drain_here(self) -> None:
        """Write the whole queue in the calling thread (before start, after close)."""
        with self._writing:
            items = self._take()
            left = self._write_items(items, trailing=True, giving_up=True)
            assert not left

    def _write_items(self, items: list[MovePlayed | _Job], *, trailing: bool,
                     giving_up: bool = False) -> list[MovePlayed | _Job]:
        """Write ``items`` in order; return what was not written (to go back to the queue):
        the moves after the last job unless ``trailing``, or everything from a write that
        found the disk full. ``giving_up``: a full disk fails the rest instead."""
        batch: list[MovePlayed | _Job] = []  # moves and the games' starts among them
        for i, item in enumerate(items):
            if isinstance(item, MovePlayed) or item.joins:
                batch.append(item)
                continue
            mine: list[MovePlayed] = []
            if item.game_id is not None:
                mine = [e for e in batch if isinstance(e, MovePlayed) and e.game_id == item.game_id]
                if mine:
                    batch = [e for e in batch if not (isinstance(e, MovePlayed)
                                                      and e.game_id == item.game_id)]
            full = self._write_moves(batch)
            if full is not None:
                return self._full(full, [*batch, *mine, *items[i:]], giving_up)
            batch = []
            if not item.begin():
                continue
            try:
                if self._conn is None:
                    raise sqlite3.ProgrammingError(f"{self.path}: the store's writer is closed")
                self._synchronous(full=True)
                if item.settle is not None:
                    changes = self._conn.total_changes
                    result = item.settle(self._conn, move_rows(mine))
                    if self._conn.total_changes != changes and not self._conn.in_transaction:
                        self.unsynced_since = None  # its synced commit: all before it durable
                else:
                    assert item.run is not None
                    result = item.run(self._conn)
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the job
                if disk_full(exc, self.path):  # not failed: it waits at the queue's head
                    return self._full(exc, [*mine, *items[i:]], giving_up)
                item.future.set_exception(exc)
                batch = list(mine)  # a record that failed: its moves are still logged
            else:
                item.future.set_result(result)
        if not trailing:
            return list(batch)
        full = self._write_moves(batch)
        if full is not None:
            return self._full(full, list(batch), giving_up)
        return []

    def _full(self, exc: BaseException, rest: list[MovePlayed | _Job], giving_up: bool
              ) -> list[MovePlayed | _Job]:
        if not giving_up:
            self.waiting = exc
            return rest
        moves = 0
        for item in rest:
            if isinstance(item, MovePlayed):
                moves += 1
            elif item.begin():
                item.future.set_exception(DiskFull(
                    f"{self.path}: not written, the disk is full ({exc})"))
        if moves and self.on_error is not None:
            self.on_error(DiskFull(f"{moves} logged move(s) not written: the disk is full "
                                   f"({exc}); the games they belong to go on from the last "
                                   "move written, by rule 7.c"))
        return []

    def _write_moves(self, batch: list[MovePlayed | _Job]) -> BaseException | None:
        """Commit a batch of moves, with the games' starts among them, in order, in one
        transaction. A full disk is returned (the caller waits it out); any other error
        keeps the moves queued (reported once) and lets the jobs go on: the ordering rule
        makes a late move harmless; the starts go back as jobs of their own."""
        if self._conn is None:
            for item in batch:
                if isinstance(item, _Job) and item.begin():
                    item.future.set_exception(sqlite3.ProgrammingError(
                        f"{self.path}: the store's writer is closed"))
            return None
        if not batch:
            return None
        try:
            self._synchronous(full=False)  # fsynced by _sync, within sync_s
            done = _commit_batch(self._conn, batch, self.path)
        except (sqlite3.Error, OSError) as exc:
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            if disk_full(exc, self.path):
                return exc
            for item in batch:  # each start on its own next time (a job that wakes)
                if isinstance(item, _Job):
                    item.joins = False
            self._put_back(list(batch))
            if self.failed is None:
                self.failed = exc
                if self.on_error is not None:
                    self.on_error(exc)
            return None
        for job, result, error in done:
            if error is None:
                job.future.set_result(result)
            else:
                job.future.set_exception(error)
        self.failed = None
        self.written += len(batch) - len(done)
        self.starts += len(done)
        if self.unsynced_since is None:
            self.unsynced_since = time.monotonic()
        return None

    def _synchronous(self, *, full: bool) -> None:
        """The connection's ``synchronous`` set for what comes next: NORMAL for batches of
        moves, FULL for every job (a job's commit is synced; :meth:`Store.transaction`
        counts on it). Set only when it changes: consecutive batches share one setting."""
        if self._at_full != full and self._conn is not None:
            self._conn.execute(f"PRAGMA synchronous={'FULL' if full else 'NORMAL'}")
            self._at_full = full

    def _sync(self) -> None:
        """Make every commit so far durable: fsync the WAL file (what a commit with
        ``synchronous=FULL`` does), and its directory the first time (a new WAL file's
        entry). A failed fsync is reported (``on_error``) and tried again at the next turn."""
        since = self.unsynced_since
        try:
            _sync_file(f"{self.path}-wal", os.fdatasync)  # (what SQLite's own sync does)
            if not self._dir_synced:
                _sync_file(self.path.parent, os.fsync)
                self._dir_synced = True
        except FileNotFoundError:  # no WAL: checkpointed into the database and removed
            pass
        except OSError as exc:
            if self.on_error is not None:
                self.on_error(OSError(exc.errno, f"cannot sync the move log to disk: "
                                                 f"{exc.strerror}", f"{self.path}-wal"))
            return
        self.syncs += 1
        if self.unsynced_since == since:
            self.unsynced_since = None

    def _wait_for_space(self, rest: list[MovePlayed | _Job], since: float,
                        last_report: float) -> float:
        now = time.monotonic()
        if self.on_wait is not None and (last_report == 0.0
                                         or now - last_report >= self.report_every):
            waited = "" if last_report == 0.0 else f" (waiting for {now - since:.0f} s)"
            self.on_wait(
                f"{self.path}: the disk is full ({self.waiting}){waited}; waiting for space: "
                f"about {_size(_space_needed(rest))} needed, {_size(free_bytes(self.path))} free "
                "now. The games in progress go on and the event continues by itself when "
                "space is freed; a stop signal stops it (nothing recorded is lost)")
            last_report = now
        with self._lock:
            if not self._stop.is_set():
                self._wake.wait(self.retry_s)
        return last_report

    def _sleep(self, due: float) -> float:
        """Wait (holding the lock) until a job comes, the writer stops, or it is time to
        commit the queued moves (``due``; returned, later when the queue was empty) or to
        fsync. With nothing queued: until ``due`` when moves were committed less than
        ``interval`` ago (the moves of a game in play come one after the other: they are
        queued without waking the thread, and committed at ``due``, within ``interval`` of
        each), then until anything is queued (or the fsync is due)."""
        while not self._jobs and not self._stop.is_set():
            now = time.monotonic()
            if not self._queue:  # until a move (append wakes an idle writer) or the fsync
                sync = None if self.unsynced_since is None else self.unsynced_since + self.sync_s
                if sync is not None and now >= sync:
                    break
                if self._moved and now < due:  # moves just committed: the next wait for due
                    self._wake.wait(due - now if sync is None else min(due, sync) - now)
                    self.wakes += 1  # (without a wake of their own: a game goes on)
                    continue
                self._idle = True
                self._wake.wait(None if sync is None else sync - now)
                self.wakes += 1
                if not self._idle:  # a move: its batch is committed ``interval`` from now
                    due = time.monotonic() + self.interval
                self._idle = False
                continue
            if due <= now:
                break
            self._wake.wait(due - now)
            self.wakes += 1
        return due

    def _run(self) -> None:
        due = time.monotonic() + self.interval
        since = last_report = 0.0
        while True:
            with self._lock:
                due = self._sleep(due)
                stopping = self._stop.is_set()
            now = time.monotonic()
            trailing = stopping or now >= due
            if trailing:
                due = now + self.interval
            with self._writing:
                items = self._take()
                if self.between is not None and items:
                    self.between()
                self.waiting = None
                before = self.written + self.starts
                rest = self._write_items(items, trailing=trailing, giving_up=stopping)
                self._moved = self.written + self.starts > before
                if items and not rest and not trailing:  # a job's turn, nothing left queued:
                    due = time.monotonic() + self.interval  # the next moves (a game's start
                    self._moved = True  # after a record) are taken at due, without a wake
                self._put_back(rest)
                if self.unsynced_since is not None and (
                        stopping or time.monotonic() - self.unsynced_since >= self.sync_s):
                    self._sync()
            if self.waiting is not None:
                if since == 0.0:
                    since = time.monotonic()
                last_report = self._wait_for_space(rest, since, last_report)
                continue
            if since:
                if self.on_space is not None and not stopping:
                    self.on_space(f"{self.path}: disk space is back after "
                                  f"{time.monotonic() - since:.0f} s; every waiting write is "
                                  "done and the event goes on")
                since = last_report = 0.0
            if stopping:
                return
            if self.written + self.starts > before and self.on_flush is not None:
                self.on_flush()
