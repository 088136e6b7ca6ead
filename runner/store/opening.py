"""Opening an event's database file: created with the schema when new, examined read-only
before anything is written to an existing one, refused (StoreError) when it is not ours."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from runner.store.dbformat import (
    APPLICATION_ID,
    SCHEMA,
    SCHEMA_VERSION,
    StoreError,
    check_identity,
)
from runner.store.forensics import connect, connect_readonly, examine


def open_event_file(path: Path) -> sqlite3.Connection:
    """A read-write connection (WAL, synchronous=FULL) to the event's database at ``path``.

    An existing file is examined through a read-only connection first: nothing is written to
    it (not even the switch to WAL) until it is known to be our database, or the empty file a
    first start left when it died before the schema was committed. The caller migrates it.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{path.parent}: cannot create the state directory: {exc.strerror}") from None
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise StoreError(f"{path.parent}: the state directory is not writable "
                         f"(the runner needs to create {path.name} and its journal there)")
    fresh = True
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise StoreError(f"{path}: the state database is not readable and writable")
        fresh = examine(path, integrity=True, recover=True) == "empty"
    try:
        conn = connect(path, path, isolation_level=None, timeout=30.0)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the state database: {exc}") from None
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        if not (fresh and _create(conn)):
            check_identity(conn, path)  # examine() ran the integrity check
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise damaged_file(path, exc) from None
    except StoreError:
        conn.close()
        raise
    return conn


def damaged_file(path: Path, exc: sqlite3.DatabaseError) -> StoreError:
    """The error for a database SQLite cannot read as it opens or migrates it."""
    return StoreError(f"{path}: the state database is damaged ({exc}); it was left untouched: "
                      "restore it from a backup or move it away to start a new event")


def open_event_readonly(path: Path, *, threads: bool = False) -> sqlite3.Connection | None:
    """A read-only connection to the event's database (runner.store.forensics
    .connect_readonly), checked to be ours; None when there is no event yet: no file, or the
    empty file of a first start that died before creating the schema."""
    if not path.exists():
        return None
    if examine(path, integrity=False, recover=False) == "empty":
        return None
    try:
        conn = connect_readonly(path, threads=threads)
        try:
            check_identity(conn, path)
        except BaseException:
            conn.close()
            raise
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot read the state database: {exc}") from None
    return conn


def _create(conn: sqlite3.Connection) -> bool:
    """Create the schema in an empty database (False: another runner just created it)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]:
            conn.execute("ROLLBACK")
            return False
        for statement in SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return True


__all__ = ["damaged_file", "open_event_file", "open_event_readonly"]
