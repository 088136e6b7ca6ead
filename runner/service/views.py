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
from runner.errors import print_error as err
from runner.service.alerts import Alerter, brief_standings
from runner.service.gpualerts import GpuFailureSink, gpu_sinks
from runner.service.livesink import LivePgnSink
from runner.service.operations import RunViews, run_views
from runner.service.schedule import Schedule
from runner.service.sinks import (
    ConsoleOut,
    PgnSink,
    Sink,
    SnapshotSink,
    ThreadReader,
    ViewErrors,
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


class StartViews:
    """The views the event is checked against before it runs (the PGN file, the JSON
    snapshot), and the report of every view's errors; the run's views go on from them."""

    def __init__(self, config: Config, store: Store, console: ConsoleOut) -> None:
        self.errors = ViewErrors(store.path)  # each view's error reported once
        self.pgn = PgnSink(config.pgn_out, store, console.say)
        self.snapshots = SnapshotWriter(config, store, self.errors)


class EventViews:
    """Every view of one run (the router that feeds them after the store is built beside
    them: runner.service.assembly)."""

    def __init__(self, config: Config, store: Store, console: ConsoleOut, schedule: Schedule,
                 alerts: Alerter, start: StartViews, snapshot: SnapshotSink,
                 live: LivePgnSink | None) -> None:
        self.config, self.store, self.console = config, store, console
        self.schedule = schedule
        self.alerts = alerts
        self.errors, self.pgn, self.snapshots = start.errors, start.pgn, start.snapshots
        self.snapshot = snapshot
        self.live = live
        self.run: RunViews = run_views(console, config, store, schedule.total_games, alerts)
        # a failing GPU alerts (docs/gpus.md)
        self.gpu_failures: list[GpuFailureSink] = gpu_sinks(config, alerts)

    def sinks(self) -> list[Sink]:
        """The views of the game stream, in the order they are handed each event."""
        return [*self.run.sinks(), *self.gpu_failures, self.pgn, self.snapshot,
                *([self.live] if self.live else [])]

    def started(self) -> None:
        """The run starts: the live PGN shows the round so far, before its next game starts."""
        if self.live is not None:
            self.live.request(now=True)

    def refresh(self) -> None:
        """The snapshot at once (a TD decision changed what it shows)."""
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
        self.run.close()
        for view in self.gpu_failures:  # its last look-ups' alerts
            view.close()

    async def close(self) -> None:
        """Every other view's last write (after the store's writer closed)."""
        await self.snapshot.flush()
        await self.pgn.flush()
        self.snapshots.close()
        if self.live is not None:
            await self.live.flush()
            self.live.close()


def running_snapshots(config: Config, start: StartViews) -> tuple[SnapshotSink,
                                                                   LivePgnSink | None]:
    """The JSON snapshot's and the live PGN's sinks of a run (told of moves written by the
    store's writer thread: :func:`moves_written`)."""
    snapshot = SnapshotSink(start.snapshots.in_thread, config.snapshot_interval_s, start.errors)
    live = LivePgnSink(config, config.live_pgn, errors=start.errors) if config.live_pgn \
        else None
    return snapshot, live


def moves_written(loop: asyncio.AbstractEventLoop, snapshot: SnapshotSink,
                  live: LivePgnSink | None) -> Callable[[], None]:
    """What the move log's thread calls after each flush: the snapshot and live PGN."""
    def written() -> None:
        loop.call_soon_threadsafe(snapshot.request)
        if live is not None:
            loop.call_soon_threadsafe(live.request)
    return written


__all__ = ["EventViews", "SnapshotWriter", "StartViews", "moves_written", "running_snapshots"]
