"""Files written beside the database: atomic replacement (temp file, fsync, rename), the
temp files a killed write leaves, a file's identity, and keeping a file aside before it is
replaced. Never used on the database itself (only SQLite opens that)."""

from __future__ import annotations

import base64
import contextlib
import os
import stat
from datetime import UTC, datetime
from pathlib import Path


def _temp_file(path: Path) -> tuple[int, str]:
    """A new temp file beside ``path`` (``.NAME.XXXXXXXX.tmp``, as mkstemp names them),
    open for writing, created with mode 0o666 less the umask as open() does (the kernel
    applies the umask: no read of /proc/self/status, no chmod per write)."""
    for _ in range(100):
        tmp = str(path.parent / f".{path.name}.{base64.b32encode(os.urandom(5)).decode().lower()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp file name beside {path}")


def atomic_write(path: Path, data: str, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data``: temp file in the same directory, fsync, rename.

    On any error the old file is untouched and the temp file removed; the error propagates.
    Without ``durable`` nothing is synced to disk: readers still see the old content or the
    new one, never a mix, but a power cut may leave the file empty or as it was (for a
    view that is rebuilt from the database, such as the JSON snapshot).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _temp_file(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):  # make the rename itself durable
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def remove_stale_temp_files(path: Path) -> list[Path]:
    """Delete the temp files a run killed inside :func:`atomic_write` of ``path`` left
    beside it (``.NAME.XXXXXXXX.tmp``, as mkstemp names them); the removed paths.

    Only for a path this runner alone writes, while it holds the event lock: after days of
    restarts a large PGN or JSON snapshot could otherwise leave many copies of itself."""
    removed = []
    prefix, suffix = f".{path.name}.", ".tmp"
    try:
        names = os.listdir(path.parent)
    except OSError:
        return removed
    for name in names:
        middle = name[len(prefix):-len(suffix)]
        if name.startswith(prefix) and name.endswith(suffix) and len(middle) == 8 and \
                all(c in _MKSTEMP_CHARS for c in middle):
            stale = path.parent / name
            with contextlib.suppress(OSError):
                if stat.S_ISREG(stale.lstat().st_mode):
                    stale.unlink()
                    removed.append(stale)
    return removed


_MKSTEMP_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of a file, None when it does not exist: the same path holding another
    file (deleted and created again, replaced by a rename) has another identity."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def keep_aside(path: Path) -> Path:
    """Hard-link ``path`` to an unused ``<name>.<UTC time>.bak`` (rename where links fail)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1000):
        backup = path.with_name(f"{path.name}.{stamp}{f'-{n}' if n else ''}.bak")
        try:
            os.link(path, backup)  # the original stays in place until it is replaced
        except FileExistsError:
            continue
        except OSError:
            if backup.exists():
                continue
            os.rename(path, backup)
        return backup
    raise FileExistsError(f"{path}: no free backup name")
