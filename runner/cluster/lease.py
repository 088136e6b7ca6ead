"""Cut-off workers: the runner's lease on its games, and the workers it gave up as cut off.

A worker that is frozen or cut off keeps its TCP connections open, so Dask notices only
after ``worker-ttl``; the runner gives its game up after the mover's clock plus
``Cluster.OverdueS`` and continues it elsewhere (TCEC rule 7.c). So that the cut-off
machine never plays on meanwhile:

- the runner renews a **lease** on the scheduler every second (:class:`LeaseKeeper`: a
  counter in the scheduler's metadata under its epoch);
- a game on a worker reads it every second and stops (its engines killed) when it has not
  seen it change for ``Cluster.LeaseS`` (:class:`Lease`), which is below ``OverdueS``: a
  worker that hears nothing from the runner stops before the runner gives its game up;
- the runner sends no game to a worker it gave up as cut off until the scheduler has heard
  that worker again (:class:`Suspects`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from typing import Any

LEASE_KEY = "swiss-runner-lease"  # scheduler metadata: [LEASE_KEY, epoch] -> a counter
RENEW_S = 1.0  # how often the runner renews its lease (and a worker reads it)
ASK_TIMEOUT_S = 10.0  # a renewal that takes longer is given up (and made again)


def default_lease_s(overdue_s: float) -> float:
    """Cluster.LeaseS when the config gives none: three quarters of Cluster.OverdueS."""
    return round(overdue_s * 0.75, 3)


class LeaseKeeper:
    """The runner's side: renews its lease on the scheduler while the event runs."""

    def __init__(self, epoch: str) -> None:
        self.epoch = epoch
        self.renewals = 0
        self._task: asyncio.Task[None] | None = None

    def start(self, client: Any) -> None:
        """Renew through ``client`` (the latest Client: a new one replaces the old)."""
        self.client = client
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._renew())

    async def _renew(self) -> None:
        while True:
            with contextlib.suppress(Exception):  # scheduler away: the lease lapses
                await asyncio.wait_for(
                    self.client.set_metadata([LEASE_KEY, self.epoch], self.renewals + 1),
                    ASK_TIMEOUT_S)
                self.renewals += 1
            await asyncio.sleep(RENEW_S)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
            self._task = None


class Lease:
    """A worker's side, for one game: expired when the runner's lease was not seen renewed
    for ``lease_s`` seconds. The worker asks every second (asks overlap on a slow link); a
    renewal counts from when it was asked for, so an answer held up by the network renews
    nothing past the cut. ``lease_s`` 0: never expires."""

    def __init__(self, worker: Any, epoch: str, lease_s: float) -> None:
        self.worker = worker
        self.epoch = epoch
        self.lease_s = lease_s
        self.heard = time.monotonic()  # the task just came from the scheduler
        self.value: Any = None
        self.asked = 0.0
        self.pending: list[tuple[float, concurrent.futures.Future[Any]]] = []

    def expired(self) -> bool:
        """Checked from the game's thread; asks the scheduler on the worker's event loop."""
        if not self.lease_s:
            return False
        now = time.monotonic()
        for asked, future in [p for p in self.pending if p[1].done()]:
            self.pending.remove((asked, future))
            value = None if future.cancelled() else future.result()
            if value is not None and value != self.value:
                self.value = value
                self.heard = max(self.heard, asked)
        if now - self.asked >= RENEW_S and len(self.pending) <= self.lease_s / RENEW_S:
            self.asked = now
            self.pending.append((now, asyncio.run_coroutine_threadsafe(
                self._ask(), self.worker.loop.asyncio_loop)))
        return now - self.heard > self.lease_s

    async def _ask(self) -> Any:
        """The lease's counter, or None when the scheduler did not answer within the lease.

        Never raises: :meth:`close` may cancel the future that would have read an error
        (the worker's connections closing at its end), and asyncio would then report the
        error as never retrieved."""
        try:
            # an answer later than the lease renews nothing: the lease has lapsed meanwhile
            return await asyncio.wait_for(self.worker.scheduler.get_metadata(
                keys=[LEASE_KEY, self.epoch], default=None), self.lease_s)
        except Exception:  # noqa: BLE001 - scheduler away, link cut, worker closing
            return None

    def close(self) -> None:
        for _, future in self.pending:
            future.cancel()


class Suspects:
    """Workers the runner gave up as cut off: no game goes to one until the scheduler has
    heard it again (its ``last_seen`` moved on), so a continued game never waits on it."""

    def __init__(self) -> None:
        self.last_seen: dict[str, float | None] = {}  # address -> its last_seen when barred

    def add(self, address: str) -> None:
        self.last_seen.setdefault(address, None)

    def barred(self, workers: dict[str, dict[str, Any]]) -> set[str]:
        """The suspects among ``workers`` (the scheduler's identity of each) still silent."""
        for address, since in list(self.last_seen.items()):
            seen = workers.get(address, {}).get("last_seen")
            if address not in workers or seen is None:
                continue
            if since is None:
                self.last_seen[address] = float(seen)
            elif float(seen) > since:
                del self.last_seen[address]
        return {a for a in self.last_seen if a in workers}
