"""The event's writes outside a game's own events: a round's pairing, a TD decision's effect,
a metadata value. While the event runs they go to the store's one writer thread
(runner.store.writer), in order with the games' writes; before and after, at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from runner.errors import print_error as err
from runner.service.views.storesink import StoreSink
from runner.store.database import Store
from runner.store.writer import DiskFull

StoreJob = Callable[[Store], Any]


class EventWrites:
    """The one way the service layer writes to the store: through ``sink``, the record on
    the store's writer thread, while the event runs (runner.service.assembly builds that
    one); without it (before the run: opening the event, a pairing from a tool) at once."""

    def __init__(self, store: Store, sink: StoreSink | None = None) -> None:
        self.store = store
        self.sink = sink
        self._writes: list[concurrent.futures.Future[Any]] = []

    @property
    def queued(self) -> bool:
        """Is the writer thread running (writes are queued, not made at once)?"""
        return self.sink is not None and self.sink.store_writer.running

    def submit(self, job: StoreJob) -> concurrent.futures.Future[Any]:
        """Queue ``job(writer store)`` on the writer thread."""
        assert self.sink is not None
        writer = self.sink.thread_store
        return self.sink.store_writer.submit(lambda conn: job(writer))

    async def run(self, job: StoreJob) -> Any:
        """Run ``job`` on the writer thread; its result, its exception raised here."""
        return await asyncio.wrap_future(self.submit(job))

    def write(self, job: StoreJob) -> None:
        """A write of the loop's own (a round's pairing), in order with the games' writes
        (a full disk is waited out there); at once when no writer runs. :meth:`written`
        waits for it."""
        if self.sink is not None and self.sink.store_writer.gave_up:
            raise DiskFull(f"{self.store.path}: not written, the disk is full")
        if not self.queued:
            job(self.store)
            return
        self._writes.append(self.submit(job))

    async def written(self) -> list[Any]:
        """Wait for the loop's writes (their results, in order); the loop's connection then
        reads them."""
        writes, self._writes = self._writes, []
        return [await asyncio.wrap_future(f) for f in writes]

    def set_meta(self, key: str, value: str) -> None:
        """Store a metadata value: through the writer while the event runs (a failure is
        reported, as a view's), else at once."""
        if not self.queued:
            self.store.set_meta(key, value)
            return
        future = self.submit(lambda writer: writer.set_meta(key, value))
        future.add_done_callback(lambda f: f.exception() is None or err(
            f"{self.store.path}: cannot store {key} ({f.exception()}); the games are not "
            "affected"))

    async def settled(self, game_id: int) -> None:
        """The game's writes are committed (RecordError when its record could not be)."""
        if self.sink is not None:
            await self.sink.settled(game_id)

    async def flush_moves(self) -> None:
        """The move log written up to now."""
        if self.sink is not None:
            await asyncio.to_thread(self.sink.store_writer.flush)

    async def drain(self) -> str | None:
        """Every write enqueued so far done (runner.service.views.storesink.StoreSink.drain)."""
        return None if self.sink is None else await self.sink.drain()

    def record_process(self, pid: int, create_time: float, game_id: int | None) -> Any:
        """An engine process to sweep if the runner dies: the future of its row (at once
        without the writer thread)."""
        if self.sink is not None:
            return self.sink.record_process(pid, create_time, game_id)
        self.store.record_process(pid, create_time, game_id)
        return None

    def give_up_waiting(self) -> None:
        """The run stops: a writer waiting for disk space gives up (what it holds is lost)."""
        if self.sink is not None and self.sink.store_writer.waiting is not None:
            self.sink.store_writer.give_up()

    async def close(self) -> None:
        """Write what is queued and stop the writer thread (the end of the run)."""
        if self.sink is not None:
            await asyncio.to_thread(self.sink.store_writer.close)


__all__ = ["EventWrites", "StoreJob"]
