"""A file derived from the store, rewritten by a sink at every game start and end and at most every
``interval`` seconds while moves come in: the JSON snapshot (snapshot.py) and the live PGN
(livepgn.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from runner.domain.events import GameEvent, GameFinished, GameStarted
from runner.service.views.sink import ViewErrors


class RewriteSink:
    """Rewrites a file through ``write`` (run in a thread) at every game start and end, and at
    most every ``interval`` seconds while moves come in; ``what`` names it in an error.

    A start or end is written within ``settle`` seconds (0.1), so that a game's end and the
    next game's start, a few milliseconds apart, make one write and not two; an end within
    ``end_settle`` seconds (``settle`` here; the JSON snapshot waits longer), or sooner when
    a game starts or a periodic write falls due meanwhile. With ``event_gap`` (0 here; the
    JSON snapshot's is its ``interval``) a start or end is written no sooner than that after
    the last write that showed one: games shorter than it (fast play) make one write per
    ``event_gap``, not one per game.
    """

    settle = 0.1
    end_settle = 0.1
    what = "the file"
    moves = False
    event_gap = 0.0

    def __init__(self, write: Callable[[], bool | None], interval: float,
                 errors: ViewErrors | None = None):
        self.write = write
        self.interval = interval
        self.errors = errors or ViewErrors("the database")
        self.failed = False  # the last write failed: written again, at the latest at the end
        self._task: asyncio.Task[None] | None = None
        self._again = False
        self._last = 0.0
        self._last_event = -interval  # the last write that showed a start or end
        self._event = False  # a start or end is waiting for its write
        self._timer: asyncio.TimerHandle | None = None

    def handle(self, event: GameEvent) -> None:
        if isinstance(event, GameStarted):
            self.request(now=True)
        elif isinstance(event, GameFinished):
            self.request(now=True, settle=self.end_settle)

    def request(self, now: bool = False, settle: float | None = None, *,
                gap: bool = True) -> None:
        """Ask for a rewrite: at once (``now``: within ``settle``, default ``self.settle``,
        and with ``gap`` no sooner than ``event_gap`` after the last such write), else no
        sooner than ``interval`` after the last one; requests during a write are coalesced
        into one more write."""
        loop = asyncio.get_running_loop()
        if now:
            wait = self.settle if settle is None else settle
            if gap:
                self._event = True
                wait = max(wait, self._last_event + self.event_gap - time.monotonic())
        else:
            wait = self._last + self.interval - time.monotonic()
        if wait > 0:
            if self._timer is not None and now and self._timer.when() > loop.time() + wait:
                self._timer.cancel()  # a start or end comes sooner than the next periodic write
                self._timer = None
            if self._timer is None:
                self._timer = loop.call_later(wait, self._fire)
            return
        self._fire()

    def due(self) -> bool:
        """Is a rewrite waiting for its time (a timer armed)? It reads the database when it
        runs, so anything committed before this answered True is in it: a request now would
        change nothing (may be asked from another thread)."""
        return self._timer is not None

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
            if self._event:
                self._event, self._last_event = False, self._last
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
            self.errors.report(self.what, exc)
            return True
