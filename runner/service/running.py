"""The games in progress: one asyncio task each, owned by the run loop, and one control
channel each: a TD decision stops a game through :meth:`RunningGames.stop`, an order the
game's own task takes (runner.service.gamelife): it stops its backend call and runs the
decision's effect. No game task is cancelled for it.
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


@dataclass(frozen=True)
class RoundChange:
    """What a TD decision changes for the run loop, which keeps it (runner.service.runloop):
    the rounds are read again (``rewound``: a rewind, a withdrawal), or a game not started
    yet is left to the end of its round (``deferred``: a restart --end-of-round)."""

    rewound: bool = False
    deferred: int | None = None


class RunningGames:
    """game_id -> its task, and each game's control channel: the order a TD decision left
    for it (an effect its own task runs once its backend call is stopped)."""

    def __init__(self) -> None:
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.orders: dict[int, asyncio.Future[Effect]] = {}  # taken by GameLife.play

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
        self.orders.pop(game_id, None)

    def cancel_all(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()

    def orders_for(self, game_id: int) -> asyncio.Future[Effect]:
        """The game's control channel: done when a TD decision left it an order (an order
        given before the game listened is there already)."""
        order = self.orders.get(game_id)
        if order is None:
            order = self.orders[game_id] = asyncio.get_running_loop().create_future()
        return order

    def taken(self, game_id: int) -> None:
        """The game took its order: its next attempt listens on a new channel."""
        self.orders.pop(game_id, None)

    async def stop(self, game_id: int, effect: Effect) -> None:
        """Order the game, if it runs here, to stop and run ``effect`` (in the game's task,
        which plays the game again at once when it returns True); else run it here."""
        task = self.tasks.get(game_id)
        order = self.orders_for(game_id) if task is not None and not task.done() else None
        if task is None or order is None or order.done():
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

        order.set_result(hook)
        await asyncio.wait({task, done}, return_when=asyncio.FIRST_COMPLETED)
        if done.done():
            done.result()
            return
        # the game ended without taking the order (its record came first): run it here
        self.orders.pop(game_id, None)
        await effect()


__all__ = ["Effect", "RoundChange", "RunFlags", "RunningGames"]
