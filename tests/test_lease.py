"""The worker's side of the runner's lease (runner.cluster.lease.Lease), on a real event
loop in a thread as a Dask worker has, with a stand-in for the scheduler's metadata."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from runner.cluster.lease import Lease


class Scheduler:
    """The scheduler's metadata as a worker asks it: a counter, or an error to raise."""

    def __init__(self) -> None:
        self.value: Any = 1
        self.error: Exception | None = None
        self.asked = 0

    async def get_metadata(self, keys: list[str], default: Any = None) -> Any:
        self.asked += 1
        if self.error is not None:
            time.sleep(0.1)  # a pool closing: the worker's loop busy; a cancel waits
            raise self.error
        await asyncio.sleep(0.01)
        return self.value


@pytest.fixture
def worker() -> Iterator[SimpleNamespace]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield SimpleNamespace(loop=SimpleNamespace(asyncio_loop=loop), scheduler=Scheduler())
    finally:
        # As a worker's loop ends (and asyncio.run does): the tasks still in flight are
        # cancelled and awaited, so each one's outcome is retrieved before the loop closes.
        asyncio.run_coroutine_threadsafe(_drain(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


async def _drain() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _poll(lease: Lease, seconds: float) -> bool:
    """What ``expired`` says after being asked every 50 ms for ``seconds``."""
    end = time.monotonic() + seconds
    expired = lease.expired()
    while time.monotonic() < end:
        time.sleep(0.05)
        expired = lease.expired()
    return expired


def test_a_lease_seen_renewed_does_not_expire(worker: SimpleNamespace) -> None:
    lease = Lease(worker, "epoch", lease_s=1.5)
    renew = threading.Event()

    def renewer() -> None:
        while not renew.wait(0.3):
            worker.scheduler.value += 1

    thread = threading.Thread(target=renewer, daemon=True)
    thread.start()
    try:
        assert _poll(lease, 3.0) is False
        assert worker.scheduler.asked >= 2
    finally:
        renew.set()
        thread.join()
        lease.close()


def test_a_lease_not_renewed_expires_after_lease_s(worker: SimpleNamespace) -> None:
    lease = Lease(worker, "epoch", lease_s=1.0)
    try:
        assert _poll(lease, 2.5) is True  # the same counter: never seen renewed
    finally:
        lease.close()


def test_a_scheduler_that_errors_renews_nothing_and_leaves_no_lost_error(
        worker: SimpleNamespace) -> None:
    """The worker's connections closing at its end ('ConnectionPool is closed'): the asks
    in flight are cancelled by close(), and none leaves an error nobody retrieved (the
    autouse no_lost_exceptions fixture fails the test if one does)."""
    worker.scheduler.error = RuntimeError("ConnectionPool is closed")
    lease = Lease(worker, "epoch", lease_s=1.0)
    assert _poll(lease, 2.5) is True
    for _ in range(20):  # close while asks are in flight, as a game ending does
        lease.asked = 0.0
        lease.expired()
        lease.close()
    time.sleep(0.3)  # the cancelled asks finish on the worker's loop
    gc.collect()
    assert worker.scheduler.asked >= 3
