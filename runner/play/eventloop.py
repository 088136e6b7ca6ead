"""The event loop the runner, the worker and the dashboard run on: uvloop (libuv's loop, a
dependency on Linux) where it is installed, else asyncio's own.

``SWISS_RUNNER_LOOP`` chooses: ``auto`` (the default: uvloop when importable), ``uvloop``
(an error when it is not installed) or ``asyncio`` (the pure asyncio loop: the fallback, and
what one CI run forces so that both stay tested).
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from runner.errors import EXIT_BAD_INPUT, print_error
from runner.play import pipes, timeslice

LOOP_ENV = "SWISS_RUNNER_LOOP"
CHOICES = ("auto", "uvloop", "asyncio")
T = TypeVar("T")


class LoopChoiceError(Exception):
    """SWISS_RUNNER_LOOP names no loop, or uvloop is asked for and not installed."""


def loop_choice() -> str:
    """``uvloop`` or ``asyncio``: what :func:`run` uses (LoopChoiceError if it cannot)."""
    wanted = os.environ.get(LOOP_ENV, "auto").strip().lower() or "auto"
    if wanted not in CHOICES:
        raise LoopChoiceError(f"{LOOP_ENV}: got {wanted!r}, expected {' | '.join(CHOICES)}")
    if wanted == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        if wanted == "uvloop":
            raise LoopChoiceError(f"{LOOP_ENV}=uvloop, but uvloop is not installed "
                                  "(pip install uvloop)") from None
        return "asyncio"
    return "uvloop"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """A factory of the chosen loop for asyncio.Runner (None: asyncio's default)."""
    if loop_choice() == "asyncio":
        return None
    import uvloop

    return uvloop.new_event_loop


FULL_COLLECTION_S = 3600.0  # the whole heap at most this often (and at the first call)
_full_at: list[float] = []  # when the whole heap was last collected


def collect_garbage() -> None:
    """Collect Python's cyclic garbage now, then freeze what is left.

    Call it where no engine's clock runs in this process (before a round). The collector's
    own passes during games then scan only objects newer than that: a pass over the whole
    heap (3.6-6.7 ms of CPU for the 28,000 objects of a runner that has just started, more
    as a long event's heap grows) never pauses the loop while an engine is on the clock.
    Frozen objects are still freed as soon as nothing refers to them; cycles among them are
    collected by the next whole-heap collection, which this makes at its first call (in
    `run`: the start-up's freeze stands for it, :func:`resume_collection`) and then at most
    once every ``FULL_COLLECTION_S`` (a whole heap at every round would cost the runner CPU
    per game in short rounds).
    """
    now = time.monotonic()
    if not _full_at or now - _full_at[0] >= FULL_COLLECTION_S:
        gc.unfreeze()
        _full_at[:] = [now]
    gc.collect()
    gc.freeze()


_deferred: list[bool] = []  # [True] from defer_collection to resume_collection


def defer_collection() -> None:
    """A `run` process starts: the collector's automatic passes are off until its event loop
    starts (:func:`resume_collection`, called by :func:`run`). Start-up (the command's
    imports, the config, the engine check, the store) builds about 34,000 objects that live
    as long as the process, and makes a few hundred garbage cycles: the passes over them and
    the whole-heap pass at the first round cost 15-25 ms of CPU per run for nothing."""
    gc.disable()
    _deferred[:] = [True]


def resume_collection() -> None:
    """Start-up is over: what it built is frozen without a pass and the collector turned
    on again; this freeze counts as :func:`collect_garbage`'s whole-heap pass, the next
    one comes ``FULL_COLLECTION_S`` later (start-up's few garbage cycles wait for it).
    Nothing unless :func:`defer_collection` was called."""
    if _deferred:
        _deferred.clear()
        gc.freeze()
        _full_at[:] = [time.monotonic()]
        gc.enable()


LOOP_SLICE_NS = timeslice.SHORT_SLICE_NS  # 0.1 ms


def short_slice() -> bool:
    """Ask Linux (6.12+, EEVDF) for a short time slice for the calling thread, the loop's.

    Woken by an engine's output while every core runs something else (engines starting or
    exiting on a busy machine), a thread with a shorter slice than the running task's
    preempts it at once, instead of waiting up to a scheduler tick (4 ms at HZ=250) to read
    the move, whose time runs meanwhile. The thread gets no more CPU for it: it runs sooner,
    for shorter turns. Allowed without privileges; children and new threads do not inherit
    it (SCHED_FLAG_RESET_ON_FORK; the engines get theirs from the thread that starts them,
    runner.play.timeslice). True when the kernel took it (older kernels ignore the request,
    refused ones change nothing: the default slice; an operator's chrt stays).
    """
    return timeslice.ask(LOOP_SLICE_NS, inherited=False)


# How long a thread holding the GIL keeps it while another thread waits for it (Python's
# default: 5 ms). The loop shares the interpreter with threads that compute (the JSON
# snapshot, the live PGN, a PGN rebuild, the Syzygy probes): woken by an engine's output
# while one of them computes, the loop waits this long for the GIL before it can read the
# move, and that wait is charged to the engine's clock. 0.5 ms bounds it; threads that
# compute then take turns more often, which costs them a few microseconds per turn.
SWITCH_INTERVAL_S = 0.0005


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on the chosen loop; the GIL is handed on within
    :data:`SWITCH_INTERVAL_S` and the loop's thread asks for a short slice
    (:func:`short_slice`)."""
    try:
        factory = loop_factory()
    except BaseException:
        main.close()  # never awaited: no "coroutine was never awaited" warning
        raise
    resume_collection()
    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))
    short_slice()
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)


__all__ = ["LOOP_ENV", "SWITCH_INTERVAL_S", "LoopChoiceError", "collect_garbage", "defer_collection", "loop_choice", "loop_factory", "referee_refused", "resume_collection", "run"]


def referee_refused(say: Callable[[str], None] | None = None) -> int | None:
    """An exit code (after saying why) when the built-in referee cannot run here, else None:
    SWISS_RUNNER_LOOP names no loop it can use (runner.play.eventloop), SWISS_RUNNER_PIPES
    no engine pipes it can read with, SWISS_RUNNER_READER_PRIORITY (runner.play.pipes) or
    SWISS_RUNNER_ENGINE_SLICE (runner.play.timeslice) no choice it knows; exit 2. Any python-chess of the
    supported range (pyproject.toml) carries it: the referee uses only its public API
    (docs/referee.md, "The engine client")."""
    try:
        loop_choice()
        pipes.native()
        pipes.reader_priority()
        timeslice.engine_slice_wanted()
    except (LoopChoiceError, pipes.PipesChoiceError, timeslice.SliceChoiceError) as exc:
        (say or print_error)(str(exc))
        return EXIT_BAD_INPUT
    return None
