"""CPU affinity: each concurrent game slot owns a set of cores (``Affinity`` in the config).

Both engines of a game run on their slot's cores and take turns there (neither ponders), as
fastchess does; no two slots share a core. An engine is pinned before its ``exec`` (through
``taskset`` in its command line, runner.play.engines.pinned_argv, else in a preexec_fn), so
every thread it ever creates inherits the mask, and once more after its options are set, on every thread of it and of its children, in case it changed the mask
itself.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Iterator, Sequence

import psutil


def pin_self(cpus: Sequence[int]) -> Callable[[], None]:
    """A preexec step for the forked child: restrict it to ``cpus`` before ``exec``."""
    mask = frozenset(cpus)

    def pin() -> None:  # pragma: no cover - runs in the forked child
        os.sched_setaffinity(0, mask)

    return pin


def pin_tree(pid: int, cpus: Sequence[int]) -> int:
    """Pin process ``pid``, every thread of it and every descendant to ``cpus``.

    Returns the number of threads pinned (processes that are gone are skipped).
    """
    mask = set(cpus)
    pinned = 0
    try:
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
    except psutil.Error:
        return 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            for thread in proc.threads():
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(thread.id, mask)
                    pinned += 1
    return pinned


def pinned_to(pid: int) -> tuple[int, ...] | None:
    """The cores process ``pid`` may run on now, as the kernel has it (None: gone)."""
    try:
        return tuple(sorted(os.sched_getaffinity(pid)))
    except OSError:
        return None


class SlotPool:
    """The game slots' core sets; a game holds one while it is played."""

    def __init__(self, slots: Sequence[Sequence[int]]):
        self.free = [tuple(s) for s in slots]

    @contextlib.contextmanager
    def take(self, prefer: Collection[int] = ()) -> Iterator[tuple[int, ...]]:
        """A free slot: the first with the most cores in ``prefer`` (a GPU's NUMA node)."""
        if not self.free:  # cannot happen while games <= Concurrency <= slots
            raise RuntimeError("no free CPU slot: more games at once than Affinity slots")
        near = set(prefer)
        best = max(range(len(self.free)), key=lambda i: (len(near.intersection(self.free[i])), -i))
        cpus = self.free.pop(best)
        try:
            yield cpus
        finally:
            self.free.append(cpus)
            self.free.sort()


__all__ = ["SlotPool", "pin_self", "pin_tree", "pinned_to"]
