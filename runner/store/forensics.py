"""Reading a database file before and beside SQLite: what an existing file is (ours, the
empty file of a first start, or something to refuse), its header, a hot rollback journal,
read-only connections, and, during a run, whether the database is still the file at its
path (and a copy of what the run recorded when it is not).

POSIX drops every fcntl lock a process holds on a file when the process closes any
descriptor of that file, and SQLite's locks are fcntl locks: reading the database with
open() while a connection of this process is open would let another process's SQLite
believe it is the last connection and delete the live WAL. So every connection made here
(:func:`connect`) is counted per file, and the file is never opened outside SQLite while
one is (:func:`read_header` says nothing then: an open connection proves it is SQLite).
"""

from __future__ import annotations

import collections
import os
import sqlite3
import threading
import time
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.store.dbformat import StoreError, check_identity, check_integrity
from runner.store.files import file_identity

_open_here: collections.Counter[tuple[int, int]] = collections.Counter()
_guard = threading.Lock()


class _Count:
    """One connection's place in ``_open_here``, given back once (closed or collected)."""

    def __init__(self, identity: tuple[int, int]):
        self.identity: tuple[int, int] | None = identity
        with _guard:
            _open_here[identity] += 1

    def release(self) -> None:
        with _guard:
            identity, self.identity = self.identity, None
            if identity is not None:
                _open_here[identity] -= 1
                if _open_here[identity] <= 0:
                    del _open_here[identity]


class _Counted(sqlite3.Connection):
    """A connection counted in ``_open_here`` until it is closed (or garbage collected)."""

    count: _Count | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.count is not None:
                self.count.release()


def connect(target: str | Path, path: Path, **kwargs: Any) -> sqlite3.Connection:
    """``sqlite3.connect(target, **kwargs)`` to the database file ``path``, counted so that
    nothing in this process opens ``path`` outside SQLite while it is open."""
    conn = sqlite3.connect(target, factory=_Counted, **kwargs)
    identity = file_identity(path)
    if identity is not None:
        conn.count = _Count(identity)
        weakref.finalize(conn, conn.count.release)
    return conn


def opened_here(path: Path) -> bool:
    """Does this process have an SQLite connection open on ``path``'s file?"""
    identity = file_identity(path)
    with _guard:
        return identity is not None and identity in _open_here


def read_header(path: Path) -> bytes | None:
    """The first 100 bytes of the file (fewer if it is shorter); None when this process has
    a connection open on it (reading it would drop that connection's locks) or it cannot be
    read."""
    if opened_here(path):
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read(100)
    except OSError:
        return None


def check_header(path: Path) -> None:
    """Refuse files that are clearly not SQLite before SQLite gets a chance to touch them."""
    if opened_here(path):
        return  # SQLite has it open in this process: it is a database (see the module)
    try:
        with open(path, "rb") as handle:
            head = handle.read(100)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the state database: {exc.strerror}") from None
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        raise StoreError(f"{path}: not an SQLite database (truncated or overwritten: "
                         f"{len(head)} byte header); it was left untouched: restore it from a "
                         "backup or move it away to start a new event")


def connect_readonly(path: Path, *, threads: bool = False) -> sqlite3.Connection:
    """A connection that writes nothing. In a directory this user cannot write (read-only
    mount, another user's event) SQLite can still share a live WAL when its side files
    exist (they are readable by whoever can read the database); when they do not, it is
    given a private in-memory copy of the database, taken while the file did not change
    (:func:`private_copy`), never an ``immutable=1`` view that a writer starting meanwhile
    would corrupt (docs/state.md)."""
    uri = path.resolve().as_uri()
    for attempt in range(COPY_TRIES):
        conn = connect(f"{uri}?mode=ro", path, uri=True, isolation_level=None, timeout=10.0,
                       check_same_thread=not threads)
        if os.access(path.parent, os.W_OK):
            return conn  # SQLite can create what it needs (errors surface at the first query)
        try:
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            code = getattr(exc, "sqlite_errorcode", 0) or 0
            if code == sqlite3.SQLITE_READONLY_ROLLBACK or \
                    code & 0xFF not in (sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY):
                raise
        try:
            copy = private_copy(path, threads=threads)
        except OSError as exc:  # deleted or unreadable meanwhile
            raise sqlite3.OperationalError(f"{path}: {exc.strerror or exc}") from None
        if copy is not None:
            return copy
        time.sleep(COPY_PAUSE_S * (attempt + 1))  # a writer is starting: share its WAL
    raise sqlite3.OperationalError(f"{path}: the database kept changing while it was read "
                                   "from a directory this user cannot write; try again")


COPY_TRIES = 20  # attempts at a stable read of the database file (a writer may be starting)
COPY_PAUSE_S = 0.05


def _stamp(path: Path) -> tuple[int, int, int, bool]:
    """What changes when anything writes the database: its inode, size, modification time,
    and whether a WAL is beside it."""
    st = os.stat(path)
    return st.st_ino, st.st_size, st.st_mtime_ns, path.with_name(path.name + "-wal").exists()


def private_copy(path: Path, *, threads: bool = False) -> sqlite3.Connection | None:
    """An in-memory copy of the database (SQLite's backup of an immutable view), or None
    when a writer touched the file or has a WAL beside it while it was copied. A copy
    taken with no WAL before nor after and the file unchanged is a committed state."""
    before = _stamp(path)
    if before[3]:
        return None
    uri = path.resolve().as_uri()
    copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=not threads)
    try:
        view = connect(f"{uri}?mode=ro&immutable=1", path, uri=True, isolation_level=None)
        try:
            view.backup(copy)
        finally:
            view.close()
        if _stamp(path) != before:
            raise sqlite3.DatabaseError("changed while it was copied")
        copy.execute("PRAGMA query_only=1")
        return copy
    except sqlite3.DatabaseError:  # torn by a writer (malformed, changed): read it again
        copy.close()
        return None


def examine(path: Path, *, integrity: bool, recover: bool) -> str:
    """What an existing database file is, read-only: "ours" or "empty"; else StoreError.

    "empty" is what a first start leaves when it dies before committing the schema: a
    0-byte file (killed right after the file was created) or an SQLite file with no table,
    application_id 0 and user_version 0 (killed during or after the switch to WAL). Nothing
    of value is in such a file, so it is taken as a new database. Everything else that is
    not ours is refused and left as it was.

    A kill during the switch to WAL also leaves a hot rollback journal, which a read-only
    connection cannot roll back. With ``recover`` (``run``) it is rolled back first, as any
    SQLite client opening the file would do (that restores the file's last committed
    state); without (``status``), the header tells whether the file can hold an event.
    """
    try:
        empty_file = path.stat().st_size == 0
    except OSError as exc:
        raise StoreError(f"{path}: cannot read the state database: {exc.strerror}") from None
    journal = path.with_name(path.name + "-journal")
    hot_journal = journal.exists() and journal.stat().st_size > 0
    if not empty_file and not hot_journal:  # with a journal, the file may be torn: ask SQLite
        check_header(path)
    damaged = (f"{path}: the state database is damaged ({{}}); it was left untouched: restore "
               "it from a backup or move it away to start a new event")
    for attempt in range(2):
        try:
            conn = connect_readonly(path)
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open the state database: {exc}") from None
        try:
            app = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
            if app == 0 and version == 0 and tables == 0:
                return "empty"
            check_identity(conn, path)
            if integrity:
                check_integrity(conn, path)
            return "ours"
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_READONLY_ROLLBACK or attempt:
                raise StoreError(damaged.format(exc)) from None
        except sqlite3.DatabaseError as exc:
            raise StoreError(damaged.format(exc)) from None
        finally:
            conn.close()
        # a hot rollback journal beside the file
        if not recover:
            if _journal_initial_pages(journal) == 0:
                return "empty"  # the journal says: nothing was ever committed to the file
            raise StoreError(f"{path}: a crash left a rollback journal beside the database; "
                             "`swiss-runner run` recovers it")
        try:
            writer = connect(path, path, isolation_level=None, timeout=30.0)
            try:
                writer.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # rolls back
            finally:
                writer.close()
        except sqlite3.Error as exc:
            raise StoreError(damaged.format(exc)) from None
    raise AssertionError("unreachable")


_JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")


def _journal_initial_pages(journal: Path) -> int | None:
    """Size in pages of the database before the journal's transaction (None: unreadable)."""
    try:
        with open(journal, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return None
    if len(head) < 20 or not head.startswith(_JOURNAL_MAGIC):
        return None
    return int.from_bytes(head[16:20], "big")


# --------------------------------------------------------------------------- during a run


class FileWatch:
    """Which files the database and its WAL are, to notice them being deleted or replaced
    under a live run: every later commit would go to a file nobody will read again, so the
    run must stop at once."""

    def __init__(self, path: Path):
        self.known = {p: file_identity(p) for p in (path, path.with_name(path.name + "-wal"))}

    def problem(self) -> str | None:
        """Why the database this run writes is no longer the file at its path, or None."""
        for path, before in self.known.items():
            now = file_identity(path)
            if before is None:
                self.known[path] = now  # the WAL appears with the first write
            elif now != before:
                what = "was deleted" if now is None else "was replaced by another file"
                return (f"{path} {what} while this run was using it: the games recorded from now "
                        "on would be lost, so the run stops here. ")
        return None


def save_copy(conn: sqlite3.Connection, path: Path) -> str:
    """Copy what ``conn`` still sees (the old file, through its open descriptors) beside
    ``path``, so the recorded games can be restored; the sentence that says where."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.{stamp}.recovered")
    try:
        copy = sqlite3.connect(target)
        try:
            conn.backup(copy)
        finally:
            copy.close()
    except (sqlite3.Error, OSError) as exc:
        return f"Saving a copy of the recorded games failed ({exc}); restore {path} from a backup."
    return (f"Everything this run recorded was saved to {target}: move it to {path} "
            "(with nothing else running) and run the same command again to resume.")
