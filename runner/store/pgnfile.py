"""The PGN file (``PgnOut``): a view of the recorded games, appended game by game and
rebuilt from the database whenever it does not hold exactly the recorded games."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from runner.store.files import atomic_write, keep_aside


def pgn_block(pgn: str) -> str:
    """A game's PGN as it is stored and appended: stripped, one blank line after it."""
    return pgn.strip() + "\n\n"


def append_pgn(path: Path, pgn: str) -> None:
    """Append one game's block. Not synced to disk: the PGN is a view of the database, and
    a file a power cut left short or torn is rebuilt from it (:func:`pgn_matches`)."""
    block = pgn_block(pgn)
    try:
        _append(path, block)
    except FileNotFoundError:  # its directory is not there (any more): made again
        path.parent.mkdir(parents=True, exist_ok=True)
        _append(path, block)


def _append(path: Path, text: str) -> None:
    """``text`` at the end of the file (made if missing) in three system calls: open, write,
    close (a text file's ``open`` adds five more, once per game on the event loop)."""
    data = memoryview(text.encode("utf-8"))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o666)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def count_pgn_games(path: Path) -> int | None:
    """Games in a PGN file written by us (None when it looks cut short or unreadable)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if not text:
        return 0
    if not text.endswith("\n\n"):
        return None
    return sum(1 for line in text.splitlines() if line.startswith("[Event "))


def rebuild_pgn(path: Path, blocks: Sequence[str]) -> Path | None:
    """Rewrite ``path`` with exactly ``blocks`` (the recorded games' stored PGN blocks).

    A file we did not write is never destroyed: when ``path`` holds text that is not the
    start of the recorded games' PGN (another event's games, an unrelated file), it is
    kept as ``<name>.<UTC time>.bak`` beside it and that path is returned (else None).
    A file that is a prefix of ours (cut short by a crash) is simply completed.
    """
    expected = "".join(blocks).encode("utf-8")
    backup = None
    if not _is_prefix_of(path, expected):
        backup = keep_aside(path)
    atomic_write(path, expected.decode("utf-8"))
    return backup


def pgn_matches(path: Path, blocks: Sequence[str], size: int) -> bool:
    """True when the PGN file holds exactly ``blocks`` (``size`` bytes), byte for byte.

    Each recorded game is appended as its stored block, so the file must be all blocks
    together: a crash between commit and append, or mid-append, leaves it shorter, and
    an edit (even one that keeps the size) changes its content hash.
    """
    expected = hashlib.sha256("".join(blocks).encode("utf-8"))
    try:
        if not stat.S_ISREG(path.stat().st_mode) or path.stat().st_size != size:
            return False
    except FileNotFoundError:
        return size == 0
    actual = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            actual.update(block)
    return actual.digest() == expected.digest()


def _is_prefix_of(path: Path, expected: bytes) -> bool:
    """True when the file is missing, empty or a prefix of ``expected`` (what we write).

    A prefix followed by NUL bytes only counts too: a power cut during an append can leave
    the file's new size on disk without its data, which then reads as zeros (our own file
    cut short, not someone else's)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(len(expected) + 1)
            if expected.startswith(data):
                return True
            head = data.rstrip(b"\0")
            if len(head) == len(data) or not expected.startswith(head):
                return False
            return all(not block.strip(b"\0") for block in iter(lambda: handle.read(1 << 20), b""))
    except FileNotFoundError:
        return True


