"""The PGN file sink: each finished game appended to PgnOut."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from runner.domain.events import GameEvent, GameFinished
from runner.errors import print_error as err
from runner.store.database import Store, StoreError, append_pgn


class PgnSink:
    """Appends each finished game to PgnOut; rebuilds the file from the store when needed.

    A rebuild (every recorded game read back, the file rewritten and synced) runs in a
    worker thread on a read-only connection of its own, never on the event loop; a game
    that finishes meanwhile is in the next rebuild. A write that fails (a full disk, a
    directory removed) is reported once and the file is rebuilt at the next game's end or
    at the end of the run. A file deleted, moved away, replaced or written by someone else
    since the sink last wrote it is rebuilt, not appended to (a file that holds text of
    another's is kept aside first: runner.store.pgnfile.rebuild_pgn)."""

    moves = False

    def __init__(self, path: Path, store: Store, say: Callable[..., None]):
        self.path = path
        self.store = store
        self.say = say
        self.dirty = False
        self.reported = False  # the current failure was reported
        self._task: asyncio.Task[None] | None = None
        self._written: tuple[int, int, int] | None = None  # the file as we last left it

    def _identity(self) -> tuple[int, int, int] | None:
        """(device, inode, size) of the file now; None when it is not there."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino, st.st_size)

    def _changed(self) -> bool:
        """Was the file deleted, replaced, moved away or written by someone else since we
        last wrote it? (Appending to it then would leave a file without the earlier games.)"""
        return self._written is not None and self._identity() != self._written

    def sync(self) -> bool:
        """Make the file hold exactly the recorded games (rebuilt from the database if not);
        False when it could not be written. Any thread: it reads through its own
        connection. A game that ends while it runs sets ``dirty`` again: it may be missing
        from what this call read, and is in the next rebuild."""
        self.dirty = False
        try:
            reader = Store.open_readonly(self.store.path, threads=True)
        except (StoreError, sqlite3.Error) as exc:
            return self._failed(f"cannot read the recorded games ({exc})")
        if reader is None:
            return True
        try:
            if reader.pgn_matches(self.path):
                self.reported = False
                self._written = self._identity()
                return True
            backup = reader.rebuild_pgn(self.path)
            count = reader.counts().get("finished", 0)
        except OSError as exc:
            return self._failed(f"cannot write the PGN ({exc.strerror or exc})")
        finally:
            reader.close()
        self.reported = False
        self._written = self._identity()
        if backup is not None:
            self.say(f"{self.path} held games that are not this event's; kept it as {backup}",
                     always=True)
        self.say(f"Rebuilt {self.path} from the database ({count} games)")
        return True

    def _failed(self, what: str) -> bool:
        self.dirty = True
        if not self.reported:
            self.reported = True
            err(f"{self.path}: {what}; the games are safe in {self.store.path} and the PGN "
                "will be rebuilt from there (reported once)")
        return False

    def handle(self, event: GameEvent) -> None:
        if not isinstance(event, GameFinished):
            return
        if self.dirty or (self._task is not None and not self._task.done()) or self._changed():
            self.dirty = True  # in the next rebuild (with this game: it is committed)
            self._rebuild()
            return
        try:
            append_pgn(self.path, event.record.pgn)
        except OSError as exc:
            self._failed(f"cannot append game {event.game_id} ({exc.strerror or exc})")
        else:
            self._written = self._identity()

    def _rebuild(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._rebuilding())

    async def _rebuilding(self) -> None:
        while self.dirty:
            self.dirty = False
            if not await asyncio.to_thread(self.sync):
                return  # tried again at the next game's end, or at flush

    async def flush(self) -> None:
        """At the end of the run: the file holds every recorded game, if it can be written."""
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._task)
        if self.dirty or self._changed():
            await asyncio.to_thread(self.sync)
