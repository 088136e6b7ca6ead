"""Per game: a CPU slot (Affinity), an engine log (EngineLogs) and the engines kept between
games (Restart: off), handed to the backend (docs/operators.md)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator
from typing import Any

from runner.config.typed import Config
from runner.play.affinity import SlotPool
from runner.play.enginelog import GameLog, log_name
from runner.play.keep import EnginePool


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


__all__ = ["GameResources"]
