"""One run of the event as `swiss-runner run` drives it: :meth:`Tournament.prepare` opens
or creates the event and checks its views against the store; :meth:`Tournament.run` builds
the running event (runner.service.assembly, the composition root) and runs its loop
(runner.service.runloop).

All tournament truth lives in the store (runner.store): every decision that must survive a
crash is committed before anything depends on it, and reused unchanged on resume.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import TextIO

from runner.config.typed import Config
from runner.domain.models import GameRecord
from runner.play import spawn
from runner.play.backend import Backend, as_backend
from runner.play.referee import RefereeBackend
from runner.service.assembly import Prepared, RunSettings, build_run
from runner.service.builds import open_builds
from runner.service.runloop import RunLoop
from runner.service.running import RunFlags
from runner.service.schedule import Schedule
from runner.service.setup import event_needs_games, open_event
from runner.service.td.rules import sync_voided_pgn, voided_pgn_path
from runner.service.views.alerts import Alerter
from runner.service.views.console import ConsoleOut
from runner.service.views.runviews import StartViews
from runner.service.views.sink import RecordError
from runner.service.views.snapshotdoc import check_snapshot
from runner.service.writes import EventWrites
from runner.store.database import Store, remove_stale_temp_files

# what `run` (and a test) may hand in as the backend: one that declares the contract of
# runner.play.backend, or a bare play-game function (it declares no ability)
PlayGame = Backend | Callable[..., Awaitable[GameRecord]]


def config_backend(config: Config) -> Backend:
    """The backend the config names: the built-in referee or cutechess-cli."""
    if config.backend == "cutechess":
        # late: cutechess-cli's driver is loaded only by the events that use it
        from runner.play.cutechess import CutechessBackend

        return CutechessBackend(config.cutechess_path)
    return RefereeBackend()


class Tournament:
    """One run of the event: prepare it, then play its rounds until it is complete, stopped
    or failed."""

    def __init__(self, config: Config, store: Store, finish_games: bool = False,
                 quiet: bool = False, out: TextIO | None = None,
                 play_game: PlayGame | None = None, accept_build: tuple[str, ...] = (),
                 build_reason: str = "", alerts: Alerter | None = None):
        self.config, self.store = config, store
        self.accept_build, self.build_reason = accept_build, build_reason
        self.console = ConsoleOut(out if out is not None else sys.stdout, quiet)
        self.flags = RunFlags()
        self.alerts = alerts if alerts is not None else Alerter(None)  # docs/alerts.md
        self.settings = RunSettings(
            self.console, self.alerts,
            as_backend(play_game) if play_game is not None else config_backend(config),
            finish_games)
        self.start = StartViews(config, store, self.console)
        self.prepared = Prepared(self.start)
        self.loop: RunLoop | None = None  # the running event (None: not running)

    # ---- what the CLI and the alerts read ------------------------------------------------

    def say(self, text: str, *, always: bool = False) -> None:
        self.console.say(text, always=always)

    @property
    def failure(self) -> str | None:
        return self.flags.failure

    @property
    def stopping(self) -> bool:
        return self.flags.stopping

    def _schedule(self) -> Schedule:
        """The running event's schedule, else one that writes at once (before the run)."""
        if self.loop is not None:
            return self.loop.schedule
        return Schedule(self.config, self.store, EventWrites(self.store), self.say,
                        book=self.prepared.book, builds=self.prepared.builds)

    def total_games(self) -> int:
        return self._schedule().total_games()

    def set_meta(self, key: str, value: str) -> None:
        """A metadata value (the cluster's workers): through the writer while running."""
        writes = self.loop.writes if self.loop is not None else EventWrites(self.store)
        writes.set_meta(key, value)

    def pair(self, number: int) -> None:
        self._schedule().pair(number)

    # ---- setup ---------------------------------------------------------------------------

    def prepare(self) -> int | None:
        """Create or check the event; sweep leftovers. Return an exit code to stop early."""
        new_event = not self.store.has_event()
        book, code = open_event(self.config, self.store, self.say, self.total_games,
                                self.settings.backend.can_resume)
        if code is not None:
            return code
        builds, code = open_builds(
            self.config, self.store, self.say, new_event=new_event, accept=self.accept_build,
            reason=self.build_reason, needs_games=lambda: event_needs_games(self.config))
        if code is not None:
            return code
        self.prepared = Prepared(self.start, book, builds)
        for path in (self.config.pgn_out, self.config.swiss.state_path,
                     *([self.config.live_pgn] if self.config.live_pgn else [])):
            remove_stale_temp_files(path)  # a kill inside their atomic rewrite left these
        views = self.start
        # the views: an error of one is reported and the event goes on (never "damaged")
        with views.errors.guard(f"the PGN file {self.config.pgn_out}", store_errors=True):
            views.pgn.sync()
        with views.errors.guard(f"the voided games' PGN {voided_pgn_path(self.config)}"):
            sync_voided_pgn(self.store, self.config)  # a TD rewind's voided games
        with views.errors.guard("the JSON snapshot (StatePath)", store_errors=True):
            if check_snapshot(self.config.swiss.state_path):
                self.say(f"{self.config.swiss.state_path}: the JSON snapshot was unreadable or "
                         f"cut short; rebuilt from {self.store.path}")
            views.snapshots.write_now()  # the run goes on from it
        if self.settings.backend.local_engines:  # the spawner thread now, not at the first
            spawn.warm_up()                      # game's start
        return None

    # ---- the run -------------------------------------------------------------------------

    async def run(self) -> int:
        """Build the running event (runner.service.assembly) and run its loop."""
        self.loop = build_run(self.config, self.store, self.prepared, self.settings,
                              self.flags)
        try:
            return await self.loop.run()
        finally:
            self.loop = None


__all__ = ["PlayGame", "RecordError", "Tournament", "config_backend"]
