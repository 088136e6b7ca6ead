"""What the operator keys add to a run: a CPU slot and an engine log for each game, the EPD
file, progress with an ETA and the live view (docs/operators.md)."""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any, TextIO

from runner.config.typed import Config
from runner.domain.events import GameEvent, GameFinished
from runner.domain.variant import board_at
from runner.errors import print_error as err
from runner.play.affinity import SlotPool
from runner.play.enginelog import GameLog, log_name
from runner.play.keep import EnginePool
from runner.service.alerts import Alerter
from runner.service.progress import (
    LiveView,
    Progress,
    ProgressConsoleSink,
    event_pace,
    recorded_durations,
)
from runner.service.sinks import ConsoleOut, Sink
from runner.store.database import Store


def final_fen(start_fen: str | None, moves: list[str]) -> str:
    board = board_at(start_fen)
    for uci in moves:
        board.push_uci(uci)
    return board.fen()


class EpdSink:
    """``EpdOut``: the final position of every finished game, one FEN a line, appended as
    each game ends (cutechess-cli's ``-epdout``). The position (the game replayed) and the
    write are made on a thread of the sink's own, in the order the games ended, never on
    the event loop; :meth:`close` waits for them."""

    moves = False

    def __init__(self, path: Path):
        self.path = path
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None

    def handle(self, event: GameEvent) -> None:
        if not isinstance(event, GameFinished):
            return
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="epd")
        r = event.record
        self._thread.submit(self._append, event.game_id, r.start_fen, list(r.moves))

    def _append(self, game_id: int, start_fen: str | None, moves: list[str]) -> None:
        try:
            position = final_fen(start_fen, moves)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(position + "\n")
        except OSError as exc:
            err(f"{self.path}: cannot append the final position of game {game_id} "
                f"({exc.strerror}); the game is recorded")
        except Exception as exc:  # noqa: BLE001 - a view never costs the event
            err(f"{self.path}: the final position of game {game_id} was not written "
                f"({type(exc).__name__}: {exc}); the game is recorded")

    def close(self) -> None:
        """Wait for the positions still to be written."""
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None


class GameResources:
    """Per game: a CPU slot (Affinity) and an engine log (EngineLogs), as backend kwargs."""

    def __init__(self, config: Config, builtin_referee: bool,
                 record: Callable[[int, float], None] | None = None):
        self.config = config
        self.pool = SlotPool(config.affinity.slots) if config.affinity else None
        self.logs = config.engine_logs if builtin_referee else None
        self.engines = None  # engines kept between games (Restart: off), runner.play.keep
        if builtin_referee and any(not e.restart for e in config.engines):
            self.engines = EnginePool(2 * config.concurrency, record)

    @contextlib.contextmanager
    def for_game(self, game_id: int, attempt: int, title: str,
                 near: Collection[int] = ()) -> Iterator[dict[str, Any]]:
        """``near``: cores the game's slot should be on (its GPUs' NUMA node)."""
        kwargs: dict[str, Any] = {}
        with self.pool.take(near) if self.pool else contextlib.nullcontext() as cpus:
            if cpus:
                kwargs["cpus"] = cpus
            if self.engines is not None:
                kwargs["engines"] = self.engines
            log = None
            if self.logs is not None:
                log = GameLog(self.logs.dir / log_name(game_id, attempt), self.logs.keep, title)
                kwargs["engine_log"] = log
            try:
                yield kwargs
            finally:
                if log is not None:
                    log.discard()  # no-op when the referee closed it

    async def aclose(self) -> None:
        """Close the engines kept between games (the run is over)."""
        if self.engines is not None:
            await self.engines.aclose()


class RunViews:
    """The console sink with progress, the EPD sink, (on a terminal) the live view and the
    alerts' sink (engine crashes, stalls, forfeits: runner.service.alerts)."""

    def __init__(self, config: Config, say: Callable[[str], None], total: Callable[[], int],
                 done: int, durations: list[float], live_stream: TextIO | None,
                 alerts: Sink | None = None):
        self.progress = Progress(durations, done, total, **event_pace(config))
        self.console = ProgressConsoleSink(say, total, self.progress)
        self.live = LiveView(live_stream, self.progress) if live_stream is not None else None
        self.epd = EpdSink(config.epd_out) if config.epd_out is not None else None
        self.alerts = alerts

    def sinks(self) -> list[Sink]:
        return [s for s in (self.console, self.live, self.epd, self.alerts) if s is not None]

    def close(self) -> None:
        if self.live is not None:
            self.live.close()
        if self.epd is not None:
            self.epd.close()


def run_views(console: ConsoleOut, config: Config, store: Store, total: Callable[[], int],
              alerts: Alerter) -> RunViews:
    """Build the run's progress views; on a terminal (and not --quiet) the console's output
    goes above a live progress bar from now on."""
    return RunViews(config, console.say, total, store.counts().get("finished", 0),
                    recorded_durations(store.conn), console.below_a_bar(), alerts.sink())


__all__ = ["EpdSink", "GameResources", "RunViews", "final_fen", "run_views"]
