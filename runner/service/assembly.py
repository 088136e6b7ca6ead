"""The composition root of a run: :func:`build_run` makes every part of the running event,
in order, and hands each its parts through its constructor (nothing is wired afterwards):
the store's writer thread and the record, the writer, the schedule, the GPU pool, the views
and their router, the recorder, the per-game resources, the Director, one game's life and
the run loop. Nothing else builds them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.config.typed import Config
from runner.domain.models import Opening
from runner.errors import print_error as err
from runner.play.backend import Backend
from runner.play.gpus import local_pool
from runner.service.gamelife import GameLife
from runner.service.recording import Recorder, RestartTags
from runner.service.resources import GameResources
from runner.service.runloop import RunLoop
from runner.service.running import RunFlags, RunningGames
from runner.service.schedule import Schedule
from runner.service.td.director import Director
from runner.service.views.alerts import Alerter
from runner.service.views.console import ConsoleOut
from runner.service.views.router import EventRouter
from runner.service.views.runviews import EventViews, StartViews, moves_written, running_snapshots
from runner.service.views.storesink import StoreSink
from runner.service.writes import EventWrites
from runner.store import decisions
from runner.store.database import Store
from runner.store.writer import DiskFull, StoreWriter


@dataclass(frozen=True)
class Prepared:
    """What opening the event found (runner.service.tournament.Tournament.prepare): the
    book's lines, the engines' allowed builds, and the views checked against the store."""

    start: StartViews
    book: list[Opening] = field(default_factory=list)
    builds: dict[str, str] = field(default_factory=dict)  # engine -> allowed build digest


@dataclass(frozen=True)
class RunSettings:
    """How the run goes: the console, the alerts, the backend, --finish-games."""

    console: ConsoleOut
    alerts: Alerter
    backend: Backend
    finish_games: bool = False


def build_run(config: Config, store: Store, prepared: Prepared, settings: RunSettings,
              flags: RunFlags) -> RunLoop:
    """Every part of the running event, built once (in the event loop: the writer thread
    tells the views of moves written through it); the run loop holds them."""
    loop = asyncio.get_running_loop()
    console, alerts = settings.console, settings.alerts
    running = RunningGames()
    snapshot, live = running_snapshots(config, prepared.start)
    store_writer = StoreWriter(store.path, on_flush=moves_written(loop, snapshot, live),
                               on_error=_log_failed(store), on_wait=err,
                               on_space=_said_soon(loop, console)).start()
    record = StoreSink(store, store_writer)
    writes = EventWrites(store, record)
    # the event's GPUs here (None without Gpus or on a cluster), less the TD's `gpu off`
    gpus = local_pool(config, decisions.offline_gpus(store.conn))
    schedule = Schedule(config, store, writes, console.say, book=prepared.book,
                        builds=prepared.builds, gpus=gpus)
    views = EventViews(config, store, console, schedule, alerts, prepared.start, snapshot, live)
    recorder = Recorder(EventRouter(record, views.sinks(), views.errors),
                        RestartTags(store))
    views.started()
    backend = settings.backend
    resources = GameResources(config, backend.engine_resources,
                              record=lambda pid, created: writes.record_process(pid, created,
                                                                                None))
    director = Director(config, store, writes, running, flags, views, schedule.spec_for,
                        recorder, alerts, gpus=gpus, resumes=backend.can_resume)
    games = GameLife(config, store, schedule, writes, running, console.say, backend,
                     recorder, resources, gpus)
    return RunLoop(config, store, console, flags, running, writes, schedule, views, director,
                   games, backend, resources, alerts, settings.finish_games)


def _log_failed(store: Store) -> Callable[[BaseException], None]:
    """What the writer thread reports when it cannot write the move log."""
    def log_failed(exc: BaseException) -> None:
        if isinstance(exc, DiskFull):  # stopped while waiting for space
            err(f"{store.path}: {exc}")
            return
        err(f"{store.path}: cannot write the move log ({exc}); finished games are "
            "still recorded, the moves are kept in memory and written when possible")
    return log_failed


def _said_soon(loop: asyncio.AbstractEventLoop, console: ConsoleOut) -> Callable[[str], None]:
    """A line said on the console from the writer thread (the disk has space again)."""
    def say(text: str) -> None:
        loop.call_soon_threadsafe(lambda: console.say(text, always=True))
    return say


__all__ = ["Prepared", "RunSettings", "build_run"]
