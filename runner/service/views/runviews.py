"""The views of the event: the console, the PGN file, the JSON snapshot, the live PGN, the
progress line, the EPD file and the alerts, each a sink of the game-event stream behind the
store (runner.service.views.router.EventRouter). A view's error is reported once; it never costs the
event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TextIO

from runner.config.typed import Config
from runner.domain.models import EventResults
from runner.service.schedule import Schedule
from runner.service.views.alerts import Alerter, brief_standings
from runner.service.views.console import ConsoleOut
from runner.service.views.epd import EpdSink
from runner.service.views.gpualerts import GpuFailureSink, gpu_sinks
from runner.service.views.livepgn import LivePgnSink
from runner.service.views.pgnfile import PgnSink
from runner.service.views.progress import (
    Progress,
    ProgressBar,
    ProgressConsoleSink,
    event_pace,
    recorded_durations,
)
from runner.service.views.roundstandings import RoundStandings
from runner.service.views.sink import Sink, ViewErrors
from runner.service.views.snapshot import SnapshotFile, SnapshotSink
from runner.store.database import Store


class StartViews:
    """The views the event is checked against before it runs (the PGN file, the JSON
    snapshot), and the report of every view's errors; the run's views go on from them."""

    def __init__(self, config: Config, store: Store, console: ConsoleOut) -> None:
        self.errors = ViewErrors(store.path)  # each view's error reported once
        self.pgn = PgnSink(config.pgn_out, store, console.say)
        self.snapshots = SnapshotFile(config, store, self.errors)


class EventViews:
    """Every view of one run (the router that feeds them after the store is built beside
    them: runner.service.assembly)."""

    def __init__(self, config: Config, store: Store, console: ConsoleOut, schedule: Schedule,
                 alerts: Alerter, start: StartViews, snapshot: SnapshotSink,
                 live_pgn: LivePgnSink | None) -> None:
        self.config, self.store, self.console = config, store, console
        self.schedule = schedule
        self.alerts = alerts
        self.errors, self.pgn, self.snapshots = start.errors, start.pgn, start.snapshots
        self.snapshot = snapshot
        self.live_pgn = live_pgn
        self.run: RunViews = run_views(console, config, store, schedule.total_games, alerts)
        self.standings = RoundStandings(config, store, schedule.results)  # after each round
        # a failing GPU alerts (docs/gpus.md)
        self.gpu_failures: list[GpuFailureSink] = gpu_sinks(config, alerts)

    def sinks(self) -> list[Sink]:
        """The views of the game stream, in the order they are handed each event."""
        return [*self.run.sinks(), *self.gpu_failures, self.pgn, self.snapshot,
                *([self.live_pgn] if self.live_pgn else [])]

    def started(self) -> None:
        """The run starts: the live PGN shows the round so far, before its next game starts."""
        if self.live_pgn is not None:
            self.live_pgn.request(now=True)

    def refresh(self) -> None:
        """The snapshot at once (a TD decision changed what it shows): no gap after the last
        game start or end written."""
        with contextlib.suppress(RuntimeError):
            self.snapshot.request(now=True, gap=False)

    async def schedule_changed(self) -> None:
        """The TD changed recorded games (rewind, withdraw): counts read again, PGN synced."""
        self.schedule.changed()
        await asyncio.to_thread(self.pgn.sync)  # (reports its own failure)

    def round_summary(self, number: int, label: str = "Round") -> None:
        """The round's line and the standings after it (shown even with --quiet), and its
        ``round_ended`` alert: the results read once for all of them."""
        results = self.standings.results()
        rd = next((r for r in results.rounds if r.number == number), None) if results else None
        games = rd.games if rd is not None else ()
        counts = {"1-0": 0, "0-1": 0, "1/2-1/2": 0}
        for g in games:
            counts[g.result] = counts.get(g.result, 0) + 1
        bye_name = rd.bye if rd is not None else None
        bye = f"; bye: {bye_name}" if bye_name else ""
        line = (f"{label} {number} complete: {len(games)} games, white wins {counts['1-0']}, "
                f"black wins {counts['0-1']}, draws {counts['1/2-1/2']}{bye}")
        table = self._standings_text(lambda: results)
        # (one write for both: the same lines)
        self.console.say(line if table is None else f"{line}\n{table}", always=True)
        if self.alerts.enabled:
            self.alerts.emit("round_ended", round=number, extra=label != "Round",
                             games=len(games), white_wins=counts["1-0"],
                             black_wins=counts["0-1"], draws=counts["1/2-1/2"], bye=bye_name,
                             standings=brief_standings(self.config, self.store, results))

    def show_standings(self, results: EventResults | None = None) -> None:
        """The standings table on the console (always, even with --quiet), of ``results``
        when the caller read them."""
        table = self._standings_text(lambda: results if results is not None
                                     else self.standings.results())
        if table is not None:
            self.console.say(table, always=True)

    def _standings_text(self, results: Callable[[], EventResults | None]) -> str | None:
        """The standings table of the results ``results`` gives, as the console shows it
        (None: no results, or it failed: reported)."""
        table = None
        with self.errors.guard("the standings table"):
            table = self.standings.text(results())
        return table.rstrip("\n") if table else None

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
        if self.live_pgn is not None:
            await self.live_pgn.flush()
            self.live_pgn.close()


def running_snapshots(config: Config, start: StartViews) -> tuple[SnapshotSink,
                                                                   LivePgnSink | None]:
    """The JSON snapshot's and the live PGN's sinks of a run (told of moves written by the
    store's writer thread: :func:`moves_written`)."""
    snapshot = SnapshotSink(start.snapshots, config.snapshot_interval_s, start.errors)
    live = LivePgnSink(config, config.live_pgn, errors=start.errors) if config.live_pgn \
        else None
    return snapshot, live


def moves_written(loop: asyncio.AbstractEventLoop, snapshot: SnapshotSink,
                  live: LivePgnSink | None) -> Callable[[], None]:
    """What the move log's thread calls after each commit of moves: the snapshot and the
    live PGN asked for a rewrite, in one wake of the event loop, and none when each of them
    already has a rewrite due (:meth:`RewriteSink.due`: it reads what was just committed)."""
    sinks = [snapshot, *([live] if live is not None else [])]

    def request() -> None:
        for sink in sinks:
            sink.request()

    def written() -> None:
        if not all(sink.due() for sink in sinks):
            loop.call_soon_threadsafe(request)
    return written


class RunViews:
    """The console sink with progress, the EPD sink, (on a terminal) the progress bar and the
    alerts' sink (engine crashes, stalls, forfeits: runner.service.views.alerts). ``say``:
    None when the game lines are not shown (--quiet, no bar: no console sink at all)."""

    def __init__(self, config: Config, say: Callable[[str], None] | None,
                 total: Callable[[], int], done: int, durations: list[float],
                 bar_stream: TextIO | None, alerts: Sink | None = None):
        self.progress = Progress(durations, done, total, **event_pace(config))
        self.console = ProgressConsoleSink(say, total, self.progress) if say is not None \
            else None
        self.bar = ProgressBar(bar_stream, self.progress) if bar_stream is not None else None
        self.epd = EpdSink(config.epd_out) if config.epd_out is not None else None
        self.alerts = alerts

    def sinks(self) -> list[Sink]:
        return [s for s in (self.console, self.bar, self.epd, self.alerts) if s is not None]

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        if self.epd is not None:
            self.epd.close()


def run_views(console: ConsoleOut, config: Config, store: Store, total: Callable[[], int],
              alerts: Alerter) -> RunViews:
    """Build the run's progress views; on a terminal (and not --quiet) the console's output
    goes above a live progress bar from now on. With --quiet the game lines are not made
    (they would not be shown)."""
    return RunViews(config, None if console.quiet else console.say, total,
                    store.counts().get("finished", 0), recorded_durations(store.conn),
                    console.below_a_bar(), alerts.sink())


__all__ = ["EventViews", "RunViews", "StartViews", "moves_written", "run_views", "running_snapshots"]
