"""Sinks of the game event stream: the store, the console, the PGN file, the JSON state.

The loop hands every event a backend emits to :class:`EventRouter.publish`. The store comes
first and must succeed (a finished game that cannot be committed stops the event); the other
sinks are views that report their own failures and never lose a game (compare fastchess's
``IOutput`` and cutechess's signals, which the CLI and GUI both watch).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import json
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, TextIO

from runner.domain.events import GameEvent, GameFinished, GameStarted, MovePlayed, event_to_json
from runner.errors import RecordInvalid, StopEvent, ViewError
from runner.errors import print_error as err
from runner.store.database import Store, StoreError, append_pgn
from runner.store.decisions import AlreadyDone
from runner.store.writer import StoreWriter


class Console:
    """The console lines of a run (a view): a write that fails (stdout redirected to a full
    disk, a pipe whose reader went away) drops that line and is reported once on stderr;
    the next lines are tried again."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.failing = False

    def say(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except (OSError, ValueError) as exc:
            gone = isinstance(exc, BrokenPipeError)
            if gone:  # nobody reads it any more: its lines (and the final flush) go nowhere
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
            if not self.failing:
                self.failing = True
                err(f"the console (standard output) cannot be written ({exc}); its lines are "
                    + ("dropped from now on" if gone else "dropped until it can be")
                    + ", the event goes on and the record is intact (reported once)")
        else:
            self.failing = False


class LiveOut(io.TextIOBase):
    """A stream for the plain lines while a live bar is shown: each line is written above
    the bar (tqdm's external write mode), so lines and bar never mix."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        from tqdm import tqdm

        self._partial += text
        if "\n" in self._partial:
            lines, self._partial = self._partial.rsplit("\n", 1)
            with tqdm.external_write_mode(file=self.stream):
                self.stream.write(lines + "\n")
                self.stream.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return True


class ConsoleOut:
    """The console: lines on ``out`` (all of them, or with ``quiet`` only those said
    ``always``)."""

    def __init__(self, out: TextIO | None = None, quiet: bool = False) -> None:
        self.out: TextIO = out if out is not None else sys.stdout
        self.quiet = quiet
        self._console: Console | None = None

    def below_a_bar(self) -> TextIO | None:
        """On a terminal (and not quiet): the terminal, for a live progress bar; the lines
        said from now on go above it (:class:`LiveOut`). None otherwise."""
        stream = self.out
        if self.quiet or not getattr(stream, "isatty", lambda: False)():
            return None
        self.out = LiveOut(stream)
        return stream

    def say(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            if self._console is None or self._console.stream is not self.out:
                self._console = Console(self.out)
            self._console.say(text)


class ThreadReader:
    """A view's own read-only connection to the database, opened on first use (in the
    view's thread) and kept between its reads; :meth:`close` after a failed read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._store: Store | None = None

    def get(self) -> Store | None:
        """The connection (None: the database does not exist yet)."""
        if self._store is None:
            self._store = Store.open_readonly(self.path, threads=True)
        return self._store

    def close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(sqlite3.Error):
                store.close()


class ViewErrors:
    """Reports the errors of the views: each distinct one once (a view that fails at every
    game would otherwise print the same lines all event long), saying what failed and that
    the record is intact. The view is tried again at its next update; it never ends the run."""

    def __init__(self, record: Path | str):
        self.record = record
        self.seen: set[tuple[str, str, str]] = set()

    def report(self, what: str, exc: BaseException) -> None:
        cause = exc.cause if isinstance(exc, ViewError) else exc
        key = (what, type(cause).__name__, str(cause))
        if key in self.seen:
            return
        self.seen.add(key)
        bug = ("" if isinstance(cause, OSError | sqlite3.Error | RecordInvalid)
               else "this is a bug in swiss-runner (please report it), not damage: ")
        err(f"{what} failed: {type(cause).__name__}: {cause}; {bug}the record in {self.record} "
            "is intact, the event goes on and this view is tried again at its next update "
            "(reported once)")

    @contextlib.contextmanager
    def guard(self, what: str, store_errors: bool = False) -> Iterator[None]:
        """Run a view's update; report (not raise) its error. The store's own errors
        (RecordError: a game could not be committed) still stop the event, and with
        ``store_errors`` so does everything but a :class:`ViewError` (at start-up: errors
        of reading the record, reported by the caller as damage)."""
        try:
            yield
        except (StopEvent, KeyboardInterrupt, SystemExit, asyncio.CancelledError):
            raise
        except Exception as exc:  # noqa: BLE001 - a view never costs the event
            if store_errors and not isinstance(exc, ViewError):
                raise  # at start-up: reading the record (its damage is reported as such)
            self.report(what, exc)


class Sink(Protocol):
    """A view of the event stream. One whose class sets ``moves = False`` is not handed the
    MovePlayed events (one every ply: most views only show game starts and ends)."""

    def handle(self, event: GameEvent) -> None: ...


# what runs in a game record's transaction (a TD decision's mark: runner.store.decisions)
Then = Callable[[sqlite3.Connection], None]


class RecordError(StopEvent):
    """A finished game could not be committed (disk full, I/O error)."""


class StoreSink:
    """The record: game starts, the per-move log, and each finished game in one transaction.

    Every write goes to the store's one writer thread (runner.store.writer): the loop only
    enqueues. A game's writes are awaited (:meth:`settled`) before the loop acts on them;
    a record that could not be committed then stops the event (RecordError)."""

    def __init__(self, store: Store, store_writer: StoreWriter):
        self.store = store
        self.store_writer = store_writer
        assert store_writer.conn is not None, "start the writer first"
        self.writer = Store.writer(store_writer.conn, store.path, store_writer.on_writer)
        self.pending: dict[int, list[concurrent.futures.Future[Any]]] = {}
        self.records: dict[int, concurrent.futures.Future[Any]] = {}

    def handle(self, event: GameEvent, then: Then | None = None
               ) -> concurrent.futures.Future[Any] | None:
        """Enqueue the event's write; for a GameFinished, the future of its record
        (``then(connection)`` runs in the record's transaction: a TD decision's mark)."""
        if isinstance(event, MovePlayed):
            self.store_writer.append(event)
            return None
        if isinstance(event, GameStarted):
            self.check_files()
            gid, attempt, keep = event.game_id, event.attempt, event.resumed_from_ply
            writer = self.writer

            def start(conn: sqlite3.Connection) -> Any:  # its JSON made on the writer thread
                started = json.dumps(event_to_json(event), separators=(",", ":"))
                return writer.start_game(gid, attempt, started, keep_plies=keep)

            self.pending.setdefault(gid, []).append(self.store_writer.restart(gid, attempt, start))
            return None
        if isinstance(event, GameFinished):
            gid, record, writer = event.game_id, event.record, self.writer
            future = self.store_writer.settle(
                gid, (lambda conn, rows: writer.record_game(gid, record, moves=rows))
                if then is None else
                (lambda conn, rows: writer.record_game(gid, record, moves=rows, then=then)))
            self.records[gid] = future
            return future
        return None

    def record_process(self, pid: int, create_time: float,
                       game_id: int | None) -> concurrent.futures.Future[Any]:
        """Enqueue an engine process to sweep; the future says when it is committed."""
        writer = self.writer
        return self.store_writer.submit(lambda conn: writer.record_process(pid, create_time, game_id))

    async def settled(self, game_id: int) -> None:
        """Wait for the game's writes: its start (an error as it came), then its record
        (RecordError if it could not be committed)."""
        for future in self.pending.pop(game_id, ()):
            await asyncio.wrap_future(future)
        future = self.records.pop(game_id, None)
        if future is None:
            return
        try:
            await asyncio.wrap_future(future)
        except AlreadyDone:
            raise  # a TD decision applied already (by an earlier run): nothing was written
        except Exception as exc:  # noqa: BLE001 - disk full, I/O error, integrity: stop cleanly
            raise self.record_error(game_id, exc) from exc
        self.check_files()

    async def drain(self) -> str | None:
        """Wait until every write enqueued so far is done (the loop's own connection then
        reads them); the error of a record nobody waited for (a game cancelled after it
        finished), else None."""
        await asyncio.wrap_future(self.store_writer.submit(lambda conn: None))
        self.pending.clear()
        records, self.records = self.records, {}
        for gid, future in records.items():
            exc = future.exception()
            if exc is not None:
                return str(self.record_error(gid, exc))
        return None

    def record_error(self, gid: int, exc: BaseException) -> RecordError:
        return RecordError(f"{self.store.path}: could not record game {gid} ({exc}); "
                           f"everything recorded before it is intact and game {gid} "
                           "will be played again when you run the same command again "
                           "(free disk space first if the disk is full)")

    def check_files(self) -> None:
        """Stop the event when the database or its WAL was deleted or replaced under it."""
        problem = self.store.files_problem()
        if problem:
            raise RecordError(problem)


class ConsoleSink:
    """cutechess-style lines: ``Started game 3 of 18 (A vs B)``, ``Finished game 3 (...)``."""

    moves = False

    def __init__(self, say: Callable[[str], None], total_games: Callable[[], int]):
        self.say = say
        self.total_games = total_games

    def handle(self, event: GameEvent) -> None:
        if isinstance(event, GameStarted):
            resumed = f", resumed from ply {event.resumed_from_ply}" if event.resumed_from_ply else ""
            where = f" on {event.worker}" if event.worker else ""
            self.say(f"Started game {event.game_id} of {self.total_games()} "
                     f"({event.white} vs {event.black}){resumed}{where}")
        elif isinstance(event, GameFinished):
            r = event.record
            self.say(f"Finished game {event.game_id} ({r.white} vs {r.black}): "
                     f"{r.result} {{{r.reason}}}")


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


class SnapshotSink:
    """Rewrites the JSON state document (StatePath) at every game start and end, and at most
    every ``interval`` seconds while moves come in (see runner.service.state).

    A start or end is written within ``settle`` seconds (0.1), so that a game's end and the
    next game's start, a few milliseconds apart, make one write and not two.
    """

    settle = 0.1
    moves = False

    def __init__(self, write: Callable[[], bool | None], interval: float,
                 errors: ViewErrors | None = None):
        self.write = write
        self.interval = interval
        self.errors = errors or ViewErrors("the database")
        self.failed = False  # the last write failed: written again, at the latest at the end
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._last = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def handle(self, event: GameEvent) -> None:
        if isinstance(event, GameStarted | GameFinished):
            self.request(now=True)

    def request(self, now: bool = False) -> None:
        """Ask for a rewrite: at once (``now``), else no sooner than ``interval`` after the
        last one; requests during a write are coalesced into one more write."""
        loop = asyncio.get_running_loop()
        wait = self.settle if now else self._last + self.interval - time.monotonic()
        if wait > 0:
            if self._timer is not None and now and self._timer.when() > loop.time() + wait:
                self._timer.cancel()  # a start or end comes sooner than the next periodic write
                self._timer = None
            if self._timer is None:
                self._timer = loop.call_later(wait, self._fire)
            return
        self._fire()

    def _fire(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._worker())

    async def _worker(self) -> None:
        while True:
            self._again = False
            self._last = time.monotonic()
            self.failed = await self._write()
            if self.failed and not self._again and self._timer is None:  # disk full? try later
                self._timer = asyncio.get_running_loop().call_later(self.interval, self._fire)
            if not self._again:
                return

    async def flush(self) -> None:
        """Write what is pending, and once more if the last write failed (the final state
        must not stay behind because one write hit a full disk)."""
        if self._timer is not None:
            self._fire()
        if self._task is not None:
            await asyncio.shield(self._task)
        if self.failed:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self.failed = await self._write()

    async def _write(self) -> bool:
        """One write in a thread; True when it failed (an error of the view is reported,
        once, and never leaves the task with an exception nobody retrieves)."""
        try:
            return await asyncio.to_thread(self.write) is False
        except Exception as exc:  # noqa: BLE001 - a view never costs the event
            self.errors.report("the JSON snapshot (StatePath)", exc)
            return True


class EventRouter:
    """Hands each event to the store first, then to the views."""

    def __init__(self, store: StoreSink, views: Sequence[Sink], errors: ViewErrors | None = None):
        self.store = store
        self.views = list(views)
        self.errors = errors or ViewErrors(store.store.path)
        self.move_views = [v for v in self.views if getattr(v, "moves", True)]

    def publish(self, event: GameEvent, then: Then | None = None) -> None:
        """A finished game reaches the views once its record is committed (never, if it
        could not be: the game's task learns that from StoreSink.settled); ``then``: see
        :meth:`StoreSink.handle`."""
        record = self.store.handle(event, then)  # RecordError propagates: the event must stop
        if record is None:
            self.show(event)
            return
        loop = asyncio.get_running_loop()

        def committed(future: concurrent.futures.Future[Any]) -> None:
            if future.exception() is None:
                with contextlib.suppress(RuntimeError):  # the loop is closed: run over
                    loop.call_soon_threadsafe(self.show, event)

        record.add_done_callback(committed)

    def show(self, event: GameEvent) -> None:
        for view in self.move_views if isinstance(event, MovePlayed) else self.views:
            with self.errors.guard(type(view).__name__):
                view.handle(event)
