"""A thread's time slice, asked of Linux (6.12+, EEVDF) through ``sched_setattr(2)``.

A normal thread woken while every core runs something else takes a core at once when its
slice is shorter than the running task's; with the kernel's default it may wait for the
running task's turn to end. The slice gives no more CPU, only shorter turns sooner.
Asking needs no privilege; older kernels ignore it and a refusal changes nothing.

Two threads of the runner ask (docs/operators.md, "How the runner's own process is
scheduled"): the event loop's, for itself only (runner.play.eventloop), and the thread that
starts the engines (runner.play.spawn), for the engines it starts: a process and its
threads inherit the slice of the thread that started them, so an engine woken by its ``go``
reads it when it is written instead of after another task's turn, on its clock.
``SWISS_RUNNER_ENGINE_SLICE=off`` leaves the engines the kernel's default.
"""

from __future__ import annotations

import os
import sys

# sched_setattr(2) and sched_getattr(2) numbers per machine (Linux); elsewhere nothing is asked
SCHED_ATTR_CALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}
SHORT_SLICE_NS = 100_000  # 0.1 ms: the shortest time slice Linux gives a normal thread
ATTR = "IIQiIQQQII"  # struct sched_attr (56 bytes): size, policy, flags, nice, priority,
# runtime (a normal thread's slice), deadline, period, util min, util max
RESET_ON_FORK = 1  # SCHED_FLAG_RESET_ON_FORK: what the thread starts keeps the default

ENGINE_ENV = "SWISS_RUNNER_ENGINE_SLICE"
ENGINE_CHOICES = ("auto", "off")


class SliceChoiceError(Exception):
    """SWISS_RUNNER_ENGINE_SLICE names no choice."""


def ask(slice_ns: int, *, inherited: bool) -> bool:
    """Ask for ``slice_ns`` for the calling thread; ``inherited``: the processes and threads
    it starts from then on get it too. True when the kernel took it. A thread under another
    policy than SCHED_OTHER (an operator's ``chrt``) is left as it is."""
    calls = SCHED_ATTR_CALLS.get(os.uname().machine) if sys.platform == "linux" else None
    if calls is None or os.sched_getscheduler(0) != os.SCHED_OTHER:
        return False
    import ctypes
    import struct

    flags = 0 if inherited else RESET_ON_FORK
    attr = struct.pack(ATTR, 56, os.SCHED_OTHER, flags, os.getpriority(os.PRIO_PROCESS, 0),
                       0, slice_ns, 0, 0, 0, 0)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.syscall(calls[0], 0, ctypes.c_char_p(attr), 0) != 0:
            return False
        now = ctypes.create_string_buffer(56)
        if libc.syscall(calls[1], 0, now, 56, 0) != 0:
            return False
        return struct.unpack(ATTR, now.raw)[5] == slice_ns
    except (OSError, AttributeError):
        return False


def engine_slice_wanted() -> bool:
    """Whether engines are to start with the short slice: SWISS_RUNNER_ENGINE_SLICE unset or
    ``auto`` (where the kernel allows it), not with ``off``; SliceChoiceError otherwise."""
    choice = (os.environ.get(ENGINE_ENV) or "auto").strip().lower()
    if choice not in ENGINE_CHOICES:
        raise SliceChoiceError(f"{ENGINE_ENV}: got {os.environ.get(ENGINE_ENV)!r}, "
                               f"expected {' | '.join(ENGINE_CHOICES)}")
    return choice == "auto"


def for_engines() -> bool:
    """On the thread that starts the engines: the short slice asked for, inherited by every
    process it starts, unless SWISS_RUNNER_ENGINE_SLICE says ``off`` (an unknown choice is
    refused before any game: runner.play.eventloop.referee_refused). True when taken."""
    try:
        wanted = engine_slice_wanted()
    except SliceChoiceError:
        return False
    return wanted and ask(SHORT_SLICE_NS, inherited=True)
