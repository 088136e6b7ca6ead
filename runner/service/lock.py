"""One runner per event, and a way to ask whether a runner is driving it (for `status` and
the dashboard, never blocking the runner).

Two marks, neither of which opens the database outside SQLite (POSIX drops every fcntl
lock a process holds on a file when any descriptor of that file is closed, and SQLite's
locks are fcntl locks: a runner that opened and closed its own database file would let the
next connection to close anywhere delete its live WAL):

* an ``flock`` on the lock file beside the database (``<database>.lock``, naming the pid),
  taken before the store is opened and held for the whole run; a lock file deleted or
  replaced between its opening and its locking is opened again;
* the runner's own record in the database (meta ``runner``: pid, process start time, host,
  a token of the run), written once the run goes ahead (a refused run writes nothing). A
  lock file deleted during a run lets a second runner lock a new one, but not past this
  record while the recorded process lives (checked before the second one opens the store
  read-write, and again in the transaction that would record it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from runner.store import queries
from runner.store.database import Store, StoreError
from runner.store.forensics import connect_readonly

RUNNER_META = "runner"
_TIME_SLACK = 0.05  # seconds between psutil's create_time readings of one process


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + ".lock")


def _flock_exclusive(fd: int) -> bool:
    for attempt in range(20):  # `status` may hold a shared lock for an instant
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if attempt < 19:
                time.sleep(0.1)
    return False


def _same_file(fd: int, path: Path) -> bool:
    try:
        now = os.stat(path)
    except OSError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


class EventLock:
    """The event's lock, held: :meth:`check` the opened store for another live runner, and
    :meth:`claim` it (record this run) once the run is known to go ahead."""

    def __init__(self, database: Path):
        self.database = database
        self.token = os.urandom(16).hex()  # the run's: 32 hex digits, as uuid4().hex
        self.claimed = False

    def check(self, store: Store) -> None:
        """Refuse (StoreError) when another live runner is recorded in the database: its
        lock file was deleted or replaced. Writes nothing (a refused run changes nothing)."""
        other = _live(store.meta(RUNNER_META))
        if other and other.get("run") != self.token:
            raise StoreError(_other_runner_message(store.path, other))

    def claim(self, store: Store) -> None:
        """Record this runner in the database, checked again in the same transaction."""
        with store.transaction():
            self.check(store)
            queries.put_meta(store.conn, RUNNER_META, json.dumps(self._record()))
        self.claimed = True

    def _record(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "created": psutil.Process().create_time(),
                "host": socket.gethostname(), "run": self.token}


_runs_here: set[str] = set()  # the tokens of the runs this process is driving now


@contextlib.contextmanager
def event_lock(database: Path) -> Iterator[EventLock]:
    """Exclusive lock so two runners never drive the same event at once: taken before the
    store is opened (then :meth:`EventLock.check` it, and :meth:`EventLock.claim` it before
    the event is played), on the lock file only."""
    path = lock_path(database)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{path.parent}: cannot create the state directory: {exc.strerror}") from None
    fd, created = _lock_file(path, database)
    lock = EventLock(database)
    try:
        other = _recorded(database)
        if other:
            raise StoreError(_other_runner_message(database, other))
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode("ascii"), 0)
        _runs_here.add(lock.token)
        try:
            yield lock
        finally:
            _runs_here.discard(lock.token)
    finally:
        if created and not lock.claimed and _same_file(fd, path):
            with contextlib.suppress(OSError):  # a refused run leaves no lock file of its own
                path.unlink()
        os.close(fd)  # releases the flock


def _lock_file(path: Path, database: Path) -> tuple[int, bool]:
    """The lock file, open and flocked (StoreError when another runner holds it), and
    whether it was created here. A file deleted or replaced between its opening and its
    locking is not the lock any more: the one now at ``path`` is opened instead."""
    for _ in range(100):
        created = True
        try:
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            except FileExistsError:
                created = False
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # deleted between the two opens
        except OSError as exc:
            if not os.access(path.parent, os.W_OK | os.X_OK):
                raise StoreError(f"{path.parent}: the state directory is not writable (the "
                                 f"runner needs to create {path.name} and {database.name} "
                                 "there)") from None
            raise StoreError(f"{path}: cannot create the event's lock file: {exc.strerror}") from None
        if not _flock_exclusive(fd):
            owner = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            raise StoreError(f"{database}: another swiss-runner (pid {owner}) is running this "
                             "event; use `swiss-runner status` to watch it")
        if _same_file(fd, path):
            return fd, created
        os.close(fd)  # deleted or replaced before we locked it: lock the file now there
    raise StoreError(f"{path}: the lock file keeps being replaced; is another program "
                     "deleting it?")


def _live(text: str | None) -> dict[str, Any] | None:
    """The recorded runner when it is alive on this host, else None."""
    try:
        record = json.loads(text or "")
        pid, created, host = int(record["pid"]), float(record["created"]), record["host"]
    except (ValueError, TypeError, KeyError):
        return None
    if host != socket.gethostname():
        return None  # cannot tell: the lock file alone guards runners on several hosts
    if pid == os.getpid():  # this process: alive while that run is
        return record if record.get("run") in _runs_here else None
    try:
        alive = abs(psutil.Process(pid).create_time() - created) <= _TIME_SLACK
    except psutil.Error:
        return None
    return record if alive else None


def _other_runner_message(database: Path, record: dict[str, Any]) -> str:
    return (f"{database}: another swiss-runner (pid {record['pid']}) is running this event "
            f"(it is recorded in the database; its lock file {lock_path(database)} was deleted "
            "or replaced); use `swiss-runner status` to watch it")


def _recorded(database: Path) -> dict[str, Any] | None:
    """The live runner recorded in the database (read-only; None: none or cannot tell)."""
    if not database.exists():
        return None
    try:
        conn = connect_readonly(database)
    except sqlite3.Error:
        return None
    try:
        value = queries.meta_value(conn, RUNNER_META)
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return _live(value) if value else None


def _held(path: Path) -> bool | None:
    """Does another process hold an flock on ``path``? (None: cannot tell.) Never blocks."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def runner_alive(database: Path) -> bool | None:
    """Is a runner driving this event right now? (None: cannot tell.) Never blocks it.

    The lock file answers; the runner's record in the database answers when the lock file
    was deleted or replaced.
    """
    held = _held(lock_path(database))
    if held:
        return True
    if _recorded(database):
        return True
    return held
