"""The games held after an attempt raised (one game's trouble, docs/orchestrator.md)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from runner.play.referee import EnginesNotStarted

# a held game whose error is not a start failure is tried again HOLD_TRIES times after the
# short wait, then every HOLD_SLOW_S seconds
HOLD_TRIES = 3
HOLD_SLOW_S = 600.0


@dataclass
class HeldGame:
    """Why a game is held, when it is tried again (time.monotonic()), how often it failed."""

    reason: str
    retry_at: float
    tries: int = 1


class HeldGames:
    """Held games by id; a start failure (EnginesNotStarted) is tried again after
    ``retry_s`` for as long as it lasts, any other error HOLD_TRIES times so, then every
    HOLD_SLOW_S."""

    def __init__(self, retry_s: float):
        self.retry_s = retry_s
        self.games: dict[int, HeldGame] = {}

    def __contains__(self, game_id: object) -> bool:
        return game_id in self.games

    def note(self, game_id: int, exc: Exception) -> tuple[HeldGame, float, bool]:
        """Record a failed attempt: (the hold, the wait before the next try, whether to tell
        a person: the first failure, and once when the game turns to the slow wait)."""
        before = self.games.get(game_id)
        tries = 1 if before is None else before.tries + 1
        slow = not isinstance(exc, EnginesNotStarted) and tries >= HOLD_TRIES
        wait = max(self.retry_s, HOLD_SLOW_S) if slow else self.retry_s
        held = self.games[game_id] = HeldGame(f"{type(exc).__name__}: {exc}",
                                              time.monotonic() + wait, tries)
        return held, wait, before is None or (slow and tries == HOLD_TRIES)

    def waiting(self, game_id: int) -> bool:
        """Is the game held and not due for another try yet?"""
        held = self.games.get(game_id)
        return held is not None and time.monotonic() < held.retry_at

    def due_times(self, left: set[int]) -> list[float]:
        """When each held game of ``left`` is due; a held game no longer left (recorded
        meanwhile by a TD adjudication, or voided) is forgotten."""
        for gid in [gid for gid in self.games if gid not in left]:
            del self.games[gid]
        return [self.games[gid].retry_at for gid in left if gid in self.games]


__all__ = ["HOLD_SLOW_S", "HOLD_TRIES", "HeldGame", "HeldGames"]
