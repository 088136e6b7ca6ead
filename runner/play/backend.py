"""What a backend is: the one contract between the service and whatever plays a game (the
built-in referee, cutechess-cli, a Dask cluster, a test's scripted player).

A backend is called once per attempt of a game and emits the game as events while it plays
it (``GameStarted``, a ``MovePlayed`` per ply, ``GameFinished`` last; one that emits none of
them still returns the record, and the service publishes what it left out). What it can do
is declared as attributes of the backend, read by the service, never guessed from its type
or from the config's ``Backend`` string.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from runner.domain.events import GameEvent, ResumePoint
from runner.domain.models import GameRecord, GameSpec

Emit = Callable[[GameEvent], None]
# An Emit may carry ``move``: a callable that takes a MovePlayed as the Emit itself would
# (recording.GameEmit's: the router's move path), which a backend may call instead for its
# moves (the referee does: one call and one type test fewer per ply).
# an engine process started for the game: (pid, create_time); what it returns is awaited
# by the referee when it is a future (the row committed before the engine plays)
OnProcess = Callable[[int, float], Any]


@runtime_checkable
class Backend(Protocol):
    """Plays one game: ``await backend(spec, emit=..., on_process=..., attempt=...,
    [resume=...], **resources) -> GameRecord`` (crashes and time losses are results; an
    exception means the game could not be played at all)."""

    can_resume: bool
    """It continues a game from a logged position (TCEC rule 7.c.v: ``resume=``); else an
    interrupted game is played again from its start."""

    local_engines: bool
    """It starts the engines on this machine: their builds are checked here before each
    game (rule 8), and ``on_process`` names every engine process it starts."""

    engine_resources: bool
    """It takes this machine's per-game resources: ``engine_log=`` (EngineLogs) and
    ``engines=`` (the pool of kept engines, ``Restart: off``); ``cpus=`` (Affinity) every
    local backend takes."""

    def __call__(self, spec: GameSpec, *, emit: Emit, on_process: OnProcess,
                 attempt: int, **more: Any) -> Awaitable[GameRecord]: ...

    async def aclose(self) -> None:
        """Release what the backend holds for the whole run (a cluster's connection)."""


@dataclass
class FunctionBackend:
    """A play-game function as a :class:`Backend` with its abilities declared (a test's
    scripted player, a measuring wrapper in a benchmark): by default none."""

    play: Callable[..., Awaitable[GameRecord]]
    can_resume: bool = False
    local_engines: bool = False
    engine_resources: bool = False

    def __call__(self, spec: GameSpec, *, emit: Emit, on_process: OnProcess, attempt: int,
                 resume: ResumePoint | None = None, **more: Any) -> Awaitable[GameRecord]:
        if resume is not None:
            more["resume"] = resume
        return self.play(spec, emit=emit, on_process=on_process, attempt=attempt, **more)

    async def aclose(self) -> None:
        return None


def as_backend(play: Backend | Callable[..., Awaitable[GameRecord]]) -> Backend:
    """``play`` when it declares the contract, else the function with no ability declared."""
    return play if isinstance(play, Backend) else FunctionBackend(play)


__all__ = ["Backend", "Emit", "FunctionBackend", "OnProcess", "as_backend"]
