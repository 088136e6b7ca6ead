"""One runner per event: an exclusive lock beside the database, and a way to ask whether a
runner holds it (for `status` and the dashboard, never blocking the runner)."""

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


@contextlib.contextmanager
def event_lock(database: Path) -> Iterator[None]:
    """Exclusive lock so two runners never drive the same event at once."""
    handle = open(lock_path(database), "a+")  # noqa: SIM115 - held for the whole run
    try:
        for attempt in range(20):  # `status` may hold a shared lock for an instant
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt < 19:
                    time.sleep(0.1)
        else:
            handle.seek(0)
            owner = handle.read().strip() or "?"
            raise StoreError(f"{database}: another swiss-runner (pid {owner}) is running this "
                             "event; use `swiss-runner status` to watch it") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


def runner_alive(database: Path) -> bool | None:
    """Is a runner driving this event right now? (None: cannot tell.) Never blocks it."""
    try:
        handle = open(lock_path(database))  # noqa: SIM115
    except FileNotFoundError:
        return False
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
