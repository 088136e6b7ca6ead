"""One runner per event: an exclusive lock beside the database and on the database file
itself, and a way to ask whether a runner holds it (for `status` and the dashboard, never
blocking the runner).

The lock file names the runner's pid; deleting it during a run must not let a second runner
in, so the runner also holds an ``flock`` on the database file (which SQLite never uses: its
own locks are fcntl byte-range locks, independent of flock on Linux)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from runner.store.database import StoreError


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


@contextlib.contextmanager
def _database_lock(database: Path) -> Iterator[None]:
    """flock the database file for the whole run (nothing happens if it does not exist)."""
    try:
        fd = os.open(database, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        yield
        return
    try:
        if not _flock_exclusive(fd):
            raise StoreError(f"{database}: another swiss-runner is running this event (it holds "
                             f"a lock on the database itself; its lock file {lock_path(database)} "
                             "was deleted or replaced); use `swiss-runner status` to watch it")
        yield
    finally:
        os.close(fd)  # releases the flock


@contextlib.contextmanager
def event_lock(database: Path) -> Iterator[None]:
    """Exclusive lock so two runners never drive the same event at once."""
    handle = open(lock_path(database), "a+")  # noqa: SIM115 - held for the whole run
    try:
        if not _flock_exclusive(handle.fileno()):
            handle.seek(0)
            owner = handle.read().strip() or "?"
            raise StoreError(f"{database}: another swiss-runner (pid {owner}) is running this "
                             "event; use `swiss-runner status` to watch it") from None
        with _database_lock(database):
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            yield
    finally:
        handle.close()


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

    The lock file answers; the database's own lock answers when the lock file was deleted.
    """
    held = _held(lock_path(database))
    if held:
        return True
    on_database = _flocked(database)  # never opened here: closing it would drop SQLite's locks
    return True if on_database else (held if held is None else on_database)


def _flocked(path: Path) -> bool | None:
    """Does any process hold an flock on ``path``? Read from /proc/locks (Linux), so the
    file is not opened (None: cannot tell)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return None
    wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            return any(len(f := line.split()) > 5 and f[1] == "FLOCK" and f[5] == wanted
                       for line in handle)
    except OSError:
        return None
