"""The views of the event: the console, the PGN file, the JSON snapshot, the live PGN, the
progress line, the EPD file and the alerts, each a sink of the game-event stream behind the
store (runner.service.sinks.EventRouter). A view's error is reported once; it never costs the
event.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable

from runner.config.typed import Config
from runner.service.alerts import Alerter, brief_standings
from runner.service.gpualerts import GpuFailureSink, gpu_sinks
from runner.service.livesink import LivePgnSink
from runner.service.operations import RunViews, run_views
from runner.service.schedule import Schedule
from runner.service.sinks import (
    ConsoleOut,
    EventRouter,
    PgnSink,
    SnapshotSink,
    StoreSink,
    ThreadReader,
    ViewErrors,
    err,
)
from runner.service.state import StateCache, standings_text, write_snapshot
from runner.store import queries
from runner.store.database import Store, StoreError


class SnapshotWriter:
    """Writes the JSON snapshot from a thread with its own read-only connection (kept open
    between snapshots, read in one transaction: a consistent view)."""

    def __init__(self, config: Config, store: Store, errors: ViewErrors) -> None:
        self.config, self.store = config, store
        self.cache = StateCache(on_view_error=lambda exc: errors.report(
            f"{exc.what} in the JSON snapshot (StatePath)", exc))
        self.reader = ThreadReader(store.path)

    def write_now(self) -> None:
        """From the loop's own connection (before the event runs)."""
        write_snapshot(self.config, self.store, self.cache)

    def in_thread(self) -> bool:
        """Write it from the reader; False when it failed (the previous one stays)."""
        try:
            reader = self.reader.get()
            if reader is None:
                return True
            with queries.read_snapshot(reader.conn):
                return write_snapshot(self.config, reader, self.cache,
                                      runner_running=True)  # this runner holds the lock
        except (StoreError, sqlite3.Error) as exc:
            self.close()
            # The snapshot is derived from the database: a failed read costs one dashboard
            # update, never the event (every game is committed through the main connection).
            safe = (f"the games are safe in {self.store.path}"
                    if self.store.files_problem(save=False) is None else
                    f"{self.store.path} is not the file this run writes any more")
            err(f"{self.config.swiss.state_path}: cannot update the JSON snapshot ({exc}); the "
                f"previous snapshot is intact and {safe}")
            return False

    def close(self) -> None:
        self.reader.close()


class EventViews:
    """Every view of one run, and the router that feeds them after the store."""

    def __init__(self, config: Config, store: Store, console: ConsoleOut,
                 schedule: Schedule, alerts: Alerter) -> None:
        self.config, self.store, self.console = config, store, console
        self.schedule = schedule
        self.alerts = alerts
        self.errors = ViewErrors(store.path)  # each view's error reported once
        self.pgn = PgnSink(config.pgn_out, store, console.say)
        self.snapshots = SnapshotWriter(config, store, self.errors)
        self.snapshot: SnapshotSink | None = None
        self.live: LivePgnSink | None = None
        self.run: RunViews | None = None
        self.gpu_failures: list[GpuFailureSink] = []  # a failing GPU alerts (docs/gpus.md)
        self.router: EventRouter | None = None

    def start(self, record: StoreSink) -> EventRouter:
        """The running views, behind ``record``: the router the games publish to."""
        self.snapshot = SnapshotSink(self.snapshots.in_thread, self.config.snapshot_interval_s,
                                     self.errors)
        if self.config.live_pgn:
            self.live = LivePgnSink(self.config, self.config.live_pgn, errors=self.errors)
        self.run = run_views(self.console, self.config, self.store, self.schedule.total_games,
                             self.alerts)
        self.gpu_failures = gpu_sinks(self.config, self.alerts)
        self.router = EventRouter(record, [*self.run.sinks(), *self.gpu_failures, self.pgn,
                                           self.snapshot, *([self.live] if self.live else [])],
                                  self.errors)
        if self.live is not None:
            self.live.request(now=True)  # the round so far, before its next game starts
        return self.router

    def moves_written(self, loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
        """What the move log's thread calls after each flush: the snapshot and live PGN."""
        def written() -> None:
            if self.snapshot is not None:
                loop.call_soon_threadsafe(self.snapshot.request)
            if self.live is not None:
                loop.call_soon_threadsafe(self.live.request)
        return written

    def refresh(self) -> None:
        """The snapshot at once (a TD decision changed what it shows)."""
        if self.snapshot is not None:
            with contextlib.suppress(RuntimeError):
                self.snapshot.request(now=True)

    async def schedule_changed(self) -> None:
        """The TD changed recorded games (rewind, withdraw): counts read again, PGN synced."""
        self.schedule.changed()
        await asyncio.to_thread(self.pgn.sync)  # (reports its own failure)

    def round_summary(self, number: int, label: str = "Round") -> None:
        games = self.schedule.played(number)
        counts = {"1-0": 0, "0-1": 0, "1/2-1/2": 0}
        for g in games:
            counts[g.result] = counts.get(g.result, 0) + 1
        rd = next(r for r in self.store.rounds() if r.number == number)
        bye = f"; bye: {rd.bye}" if rd.bye else ""
        self.console.say(f"{label} {number} complete: {len(games)} games, white wins "
                         f"{counts['1-0']}, black wins {counts['0-1']}, draws "
                         f"{counts['1/2-1/2']}{bye}", always=True)
        self.show_standings()
        if self.alerts.enabled:
            self.alerts.emit("round_ended", round=number, extra=label != "Round",
                             games=len(games), white_wins=counts["1-0"],
                             black_wins=counts["0-1"], draws=counts["1/2-1/2"], bye=rd.bye,
                             standings=brief_standings(self.config, self.store))

    def show_standings(self) -> None:
        table = None
        with self.errors.guard("the standings table"):
            table = standings_text(self.config, self.store)
        if table:
            self.console.say(table.rstrip("\n"), always=True)

    def close_progress(self) -> None:
        """The progress line, the EPD file, the GPU failure look-ups (before the store's
        writer closes)."""
        if self.run is not None:
            self.run.close()
        for view in self.gpu_failures:  # its last look-ups' alerts
            view.close()

    async def close(self) -> None:
        """Every other view's last write (after the store's writer closed)."""
        if self.snapshot is not None:
            await self.snapshot.flush()
        await self.pgn.flush()
        self.snapshots.close()
        if self.live is not None:
            await self.live.flush()
            self.live.close()


__all__ = ["EventViews", "SnapshotWriter"]
