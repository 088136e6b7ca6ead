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
    another's is kept aside first: runner.store.pgnfile.rebuild_pgn).

    A game that ends while a rebuild runs is appended once the rebuild is done, unless the
    rebuild's read already had it: games that end faster than a rebuild takes make one
    rebuild, not one each."""

    moves = False

    def __init__(self, path: Path, store: Store, say: Callable[..., None]):
        self.path = path
        self.store = store
        self.say = say
        self.dirty = False
        self.reported = False  # the current failure was reported
        self._task: asyncio.Task[None] | None = None
        self._written: tuple[int, int, int] | None = None  # the file as we last left it
        # the games the last sync found in or wrote to the file, until a game after them is
        # appended (events come in commit order: every later one is after that read too)
        self._in_file: frozenset[int] = frozenset()
        self._pending: list[GameFinished] = []  # ended while a rebuild runs

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
            synced = reader.sync_pgn(self.path)
        except OSError as exc:
            return self._failed(f"cannot write the PGN ({exc.strerror or exc})")
        finally:
            reader.close()
        self.reported = False
        self._written = self._identity()
        self._in_file = synced.games
        if not synced.rebuilt:
            return True
        if synced.backup is not None:
            self.say(f"{self.path} held games that are not this event's; kept it as "
                     f"{synced.backup}", always=True)
        self.say(f"Rebuilt {self.path} from the database ({len(synced.games)} games)")
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
        if self._task is not None and not self._task.done():
            self._pending.append(event)  # after the rebuild, unless its read had it
        elif self.dirty or self._changed():
            self.dirty = True  # in the next rebuild (with this game: it is committed)
            self._task = asyncio.get_running_loop().create_task(self._rebuilding())
        else:
            self._append(event)

    def _append(self, event: GameFinished) -> bool:
        """Append the game's block (not when the last sync's read had it); False when the
        write failed (the file is rebuilt at the next game's end or at the end)."""
        if event.game_id in self._in_file:
            return True
        try:
            append_pgn(self.path, event.record.pgn)
        except OSError as exc:
            return self._failed(f"cannot append game {event.game_id} ({exc.strerror or exc})")
        self._written = self._identity()
        self._in_file = frozenset()
        return True

    async def _rebuilding(self) -> None:
        """Rebuild, then append the games that ended meanwhile; again while the file was
        changed under it."""
        while self.dirty:
            while self.dirty:
                self.dirty = False
                if not await asyncio.to_thread(self.sync):
                    self._pending.clear()  # committed: in the rebuild tried at the next
                    return  # game's end, or at flush
            pending, self._pending = self._pending, []
            for event in pending:
                if self._changed():
                    self.dirty = True  # this game and the rest: in the next rebuild
                    break
                if not self._append(event):
                    return

    async def flush(self) -> None:
        """At the end of the run: the file holds every recorded game, if it can be written."""
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._task)
        if self.dirty or self._changed():
            await asyncio.to_thread(self.sync)
