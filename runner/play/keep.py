"""Engines kept between games: ``Restart: off`` (docs/referee.md, "Restart").

With ``Restart: on`` (the default, as TCEC) the referee starts fresh engine processes for
every game. An engine with ``Restart: off`` is handed back here when its game ends normally
and given to the next game that needs the same engine (any slot: it is pinned again to the
new slot's cores under Affinity); that game starts it with ``ucinewgame`` + ``isready``
(XBoard: ``new`` + ``ping``) as it does a fresh one. An engine whose game ended by a crash,
a stall, an illegal move or a time forfeit is never kept: the next game starts a fresh one,
as does a game that finds its kept engine dead. Nor is an engine that is not idle when its
game ends (it did not answer ``stop`` in time) or that once sent a ``bestmove`` nobody asked
for (runner.play.engines, ``sound``). A kept engine is pinned to the cores the next game
wants whenever the kernel's mask of the process (``os.sched_getaffinity``, not what was
asked before) differs from them: an engine pinned to half a slot for a pondering game gets
the whole slot back. Pinning walks the process's threads and children: it runs on the
spawner thread, off the event loop.

At most ``capacity`` engine processes (2 x Concurrency: what the games in progress hold with
``Restart: on``) are alive at once: an idle engine is closed (the oldest first) before a new
one would exceed it. Idle engines are recorded for the orphan sweep like engines in play:
once, when an engine first goes idle (its row then stays while it is kept, so a game that
takes it records nothing again and the next game's end neither).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runner.config.typed import EngineConfig
from runner.domain.gpus import env_devices
from runner.play.enginelog import FAILURES
from runner.play.engines import EngineProcess, close_engines, start_engine
from runner.play.processes import pin_off_loop

LOG = logging.getLogger(__name__)


@dataclass
class _Idle:
    proc: EngineProcess
    cpus: tuple[int, ...] | None  # the cores it is pinned to (None: not pinned)


def clashing(idle: Sequence[_Idle], engine: EngineConfig) -> list[_Idle]:
    """The idle engines that hold a device ``engine`` is given (runner.domain.gpus) and
    are not the kept process it may take: closed before it starts."""
    mine = env_devices(engine)
    if not mine:  # (most engines: no device, so no clash; no look at the idle ones)
        return []
    return [entry for entry in idle if env_devices(entry.proc.config) & mine
            and (entry.proc.config.name, entry.proc.config.env) != (engine.name, engine.env)]


class EnginePool:
    """Idle engine processes by engine name, shared by every game of a run (one event loop).

    ``record``: called with (pid, create time) of an engine that goes idle for the first
    time, so that the orphan sweep of a later run finds it (the game that started it forgets
    its rows when it is recorded); a kept engine a game takes is not handed to the game's
    ``on_process`` (its row is that one already). Counters ``started`` and ``reused`` say how many games got a fresh or a kept
    engine.
    """

    def __init__(self, capacity: int, record: Callable[[int, float], None] | None = None):
        self.capacity = max(2, capacity)
        self.record = record
        self.idle: list[_Idle] = []  # oldest first
        self._busy: dict[int, EngineProcess] = {}  # the engines games hold now, by id()
        self._recorded: set[tuple[int, float]] = set()  # (pid, create time) given to record
        self.started = 0
        self.reused = 0
        self.closed = False

    def _alive_busy(self) -> int:
        for key, proc in list(self._busy.items()):
            if not proc.alive:  # killed by its game (cancelled, hung): no longer counted
                del self._busy[key]
        return len(self._busy)

    def _take_idle(self, engine: EngineConfig, cpus: tuple[int, ...] | None) -> _Idle | None:
        matches = [i for i, idle in enumerate(self.idle) if idle.proc.config.name == engine.name
                   and idle.proc.config.env == engine.env]  # the same GPUs (docs/gpus.md)
        if not matches:
            return None
        same_cores = [i for i in matches if self.idle[i].cpus == cpus]
        return self.idle.pop((same_cores or matches)[0])

    async def acquire(self, engine: EngineConfig, *, timeout: float,
                      on_process: Callable[[int, float], None] | None = None,
                      cpus: Sequence[int] | None = None,
                      io_log: Callable[[str, str], None] | None = None,
                      note: Callable[[str], None] | None = None) -> EngineProcess:
        """A kept engine for ``engine`` if one is idle and alive, else a fresh one
        (:func:`runner.play.engines.start_engine`, which raises EngineStartError)."""
        wanted = tuple(sorted(cpus)) if cpus else None
        for entry in clashing(self.idle, engine):  # GPU hook: an idle engine on its devices
            self.idle.remove(entry)
            await entry.proc.close()
        while not engine.restart:
            idle = self._take_idle(engine, wanted)
            if idle is None:
                break
            proc = idle.proc
            if not proc.alive:  # died while idle: what is left of it goes, a fresh one starts
                proc.kill()
                continue
            if wanted:  # the kernel's mask, not what was asked before (half a slot?)
                proc.protocol.io_log = io_log  # what it writes meanwhile is this game's
                await pin_off_loop(proc.pid, wanted, unless_pinned=True)
            return self._lend(proc, engine, io_log, on_process, note)
        while self.idle and len(self.idle) + self._alive_busy() >= self.capacity:
            await self.idle.pop(0).proc.close()  # the oldest idle engine makes room
        proc = await start_engine(engine, timeout=timeout, on_process=on_process, cpus=cpus,
                                  io_log=io_log)
        self._busy[id(proc)] = proc
        self.started += 1
        return proc

    def kept(self, engine: EngineConfig, *,
             on_process: Callable[[int, float], None] | None = None,
             io_log: Callable[[str, str], None] | None = None,
             note: Callable[[str], None] | None = None) -> EngineProcess | None:
        """:meth:`acquire`'s kept engine for a game that pins no cores, taken at once (no
        task, no wait) when one is idle, alive and no idle engine holds its devices; None
        when :meth:`acquire` is to be awaited instead (nothing was taken)."""
        if engine.restart or clashing(self.idle, engine):
            return None
        while (idle := self._take_idle(engine, None)) is not None:
            if idle.proc.alive:
                return self._lend(idle.proc, engine, io_log, on_process, note)
            idle.proc.kill()  # died while idle: as acquire does
        return None

    def _lend(self, proc: EngineProcess, engine: EngineConfig,
              io_log: Callable[[str, str], None] | None,
              on_process: Callable[[int, float], None] | None,
              note: Callable[[str], None] | None) -> EngineProcess:
        """A kept engine handed to a game (its log, its row for the sweep, its note)."""
        proc.protocol.io_log = io_log  # this game's engine log (None: none)
        proc.protocol.last_pv_line = None
        if on_process is not None and (proc.pid, proc.create_time) not in self._recorded:
            on_process(proc.pid, proc.create_time)
        if note is not None:
            note(f"{engine.name}: engine process {proc.pid} kept from an earlier game "
                 "(Restart: off)")
        self._busy[id(proc)] = proc
        self.reused += 1
        return proc

    def forget(self, proc: EngineProcess) -> None:
        """``proc`` was killed by its game (cancelled, failed): it is not kept."""
        self._busy.pop(id(proc), None)

    async def release(self, procs: Sequence[EngineProcess], termination: str | None,
                      cpus: Sequence[int] | None = None) -> None:
        """The game that held ``procs`` (its engines) ended with ``termination`` (PGN
        Termination): keep each engine for a later game, or close it (Restart: on, a
        failure, not alive, closed); those closed quit together (one sweep of their trees:
        runner.play.engines.close_engines)."""
        closing = []
        for proc in procs:
            self._busy.pop(id(proc), None)
            if (proc.config.restart or self.closed or not proc.sound
                    or (termination or "") in FAILURES):
                closing.append(proc)
                continue
            proc.protocol.io_log = None  # the game's log is closed: lines between games go nowhere
            self.idle.append(_Idle(proc, tuple(sorted(cpus)) if cpus else None))
            if self.record is not None and (proc.pid, proc.create_time) not in self._recorded:
                with contextlib.suppress(Exception):  # the sweep is a safety net, not the game
                    self.record(proc.pid, proc.create_time)
                    self._recorded.add((proc.pid, proc.create_time))
        if closing:
            await close_engines(closing)

    async def aclose(self) -> None:
        """Close every idle engine (the run is over); later releases close theirs."""
        self.closed = True
        idle, self.idle = self.idle, []
        for entry in idle:
            await entry.proc.close()


__all__ = ["EnginePool"]
