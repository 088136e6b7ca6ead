"""The games in progress: one asyncio task each, owned by the run loop; a TD decision stops
one through :meth:`RunningGames.stop`, which runs the decision's effect in the game's task
(runner.service.gamelife) once its backend call was cancelled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

# A TD decision's effect on a stopped game: True when the game is to be played again at once
Effect = Callable[[], Awaitable[bool]]


@dataclass
class RunFlags:
    """How the run stands: stopping (no new game starts), interrupted by a signal, and the
    failure that stops it (None: none)."""

    stopping: bool = False
    interrupted: bool = False
    failure: str | None = None


class RunningGames:
    """game_id -> its task, and the effects waiting for a game to stop."""

    def __init__(self) -> None:
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.stops: dict[int, Effect] = {}  # run by the game's own task (GameLife.play)

    def __len__(self) -> int:
        return len(self.tasks)

    def __contains__(self, game_id: object) -> bool:
        return game_id in self.tasks

    def ids(self) -> list[int]:
        return sorted(self.tasks)

    def add(self, game_id: int, task: asyncio.Task[None]) -> None:
        self.tasks[game_id] = task

    def remove(self, game_id: int) -> None:
        self.tasks.pop(game_id, None)

    def cancel_all(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()

    def take_stop(self, game_id: int) -> Effect | None:
        """The effect a TD decision left for this game's cancelled task (None: none)."""
        return self.stops.pop(game_id, None)

    async def stop(self, game_id: int, effect: Effect) -> None:
        """Stop the game if it runs here, then run ``effect`` (in the game's task, which
        plays the game again at once when it returns True); else run it here."""
        task = self.tasks.get(game_id)
        if task is None or task.done():
            await effect()
            return
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        async def hook() -> bool:
            try:
                again = await effect()
            except BaseException as exc:
                if not done.done():
                    done.set_exception(exc)
                raise
            done.set_result(again)
            return again

        self.stops[game_id] = hook
        task.cancel()
        await asyncio.wait({task, done}, return_when=asyncio.FIRST_COMPLETED)
        if done.done():
            done.result()
            return
        # the task ended outside its backend call (the hook was not run): run it here
        self.stops.pop(game_id, None)
        await effect()


__all__ = ["Effect", "RunFlags", "RunningGames"]
