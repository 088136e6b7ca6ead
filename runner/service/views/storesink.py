"""The record, first of the sinks: game starts, the per-move log, and each finished game in
one transaction, through the store's one writer thread (runner.store.writer)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import sqlite3
from collections.abc import Callable
from typing import Any

from runner.domain.events import GameEvent, GameFinished, GameStarted, MovePlayed, event_to_json
from runner.service.views.sink import RecordError, Then
from runner.store.database import Store
from runner.store.decisions import AlreadyDone
from runner.store.writer import StoreWriter


async def _outcome(future: concurrent.futures.Future[Any]) -> Any:
    """A write's result (or its exception): at once when it is done already (a game's start,
    written long before its end: no wake of the loop through its self-pipe, no extra pass
    of the loop), else awaited."""
    if future.done() and not future.cancelled():
        return future.result()
    return await asyncio.wrap_future(future)


class StoreSink:
    """The record: game starts, the per-move log, and each finished game in one transaction.

    Every write goes to the store's one writer thread (runner.store.writer): the loop only
    enqueues. A game's writes are awaited (:meth:`settled`) before the loop acts on them;
    a record that could not be committed then stops the event (RecordError)."""

    def __init__(self, store: Store, store_writer: StoreWriter):
        self.store = store
        self.store_writer = store_writer
        assert store_writer.conn is not None, "start the writer first"
        self.thread_store = Store.on_writer_thread(store_writer.conn, store.path, store_writer.on_writer)
        self.pending: dict[int, list[concurrent.futures.Future[Any]]] = {}
        # a game's record: its write's future, and the loop's future woken once it is done
        self.records: dict[int, tuple[concurrent.futures.Future[Any], asyncio.Future[None]]] = {}
        self.move = store_writer.append  # a MovePlayed: queued for the writer thread

    def handle(self, event: GameEvent, then: Then | None = None,
               shown: Callable[[], None] | None = None) -> concurrent.futures.Future[Any] | None:
        """Enqueue the event's write; for a GameFinished, the future of its record
        (``then(connection)`` runs in the record's transaction: a TD decision's mark;
        ``shown()`` runs on the loop once it is committed, before :meth:`settled` returns:
        :meth:`_woken`)."""
        if isinstance(event, MovePlayed):
            self.move(event)
            return None
        if isinstance(event, GameStarted):
            self.check_files()
            gid, attempt, keep = event.game_id, event.attempt, event.resumed_from_ply
            writer = self.thread_store

            def start(conn: sqlite3.Connection) -> Any:  # its JSON made on the writer thread
                started = json.dumps(event_to_json(event), separators=(",", ":"))
                return writer.start_game(gid, attempt, started, keep_plies=keep)

            self.pending.setdefault(gid, []).append(self.store_writer.restart(gid, attempt, start))
            return None
        if isinstance(event, GameFinished):
            gid, record, writer = event.game_id, event.record, self.thread_store
            future = self.store_writer.settle(
                gid, (lambda conn, rows: writer.record_game(gid, record, moves=rows))
                if then is None else
                (lambda conn, rows: writer.record_game(gid, record, moves=rows, then=then)))
            self.records[gid] = (future, self._woken(future, shown))
            return future
        return None

    @staticmethod
    def _woken(future: concurrent.futures.Future[Any], shown: Callable[[], None] | None
               ) -> asyncio.Future[None]:
        """The loop's future done once the record's write is: one wake of the loop (one
        callback from the writer thread), which runs ``shown`` (the views, when it was
        committed) and then wakes the game's task waiting in :meth:`settled`."""
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()

        def on_loop() -> None:
            try:
                if shown is not None and future.exception() is None:
                    shown()
            finally:
                if not woken.done():  # (cancelled: its game's task was)
                    woken.set_result(None)

        def done(_: concurrent.futures.Future[Any]) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
                loop.call_soon_threadsafe(on_loop)

        future.add_done_callback(done)
        return woken

    def record_process(self, pid: int, create_time: float,
                       game_id: int | None) -> concurrent.futures.Future[Any]:
        """Enqueue an engine process to sweep; the future says when it is committed."""
        writer = self.thread_store
        return self.store_writer.submit(lambda conn: writer.record_process(pid, create_time, game_id))

    async def settled(self, game_id: int) -> None:
        """Wait for the game's writes: its start (an error as it came), then its record
        (RecordError if it could not be committed)."""
        for future in self.pending.pop(game_id, ()):
            await _outcome(future)
        record = self.records.pop(game_id, None)
        if record is None:
            return
        future, woken = record
        try:
            if not future.done():
                await woken
            future.result()
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
        for gid, (future, _) in records.items():
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
