"""The GPUs of this machine (docs/gpus.md): found with ``nvidia-smi``, their NUMA nodes read
from sysfs, and the pool that gives each GPU engine devices of its own for a game.

:class:`GpuPool` holds the event's devices: a game takes the devices of both its engines at
once (:meth:`GpuPool.take`, by the rule of runner.domain.gpus) or none, and gives them back
when it ends (:meth:`GpuPool.give_back`). Devices the TD took out of rotation
(:meth:`GpuPool.set_offline`) are given to no new game.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from runner.config.typed import Config, EngineConfig
from runner.domain.gpus import (
    choose_devices,
    hand_over,
    sysfs_bus_id,
    tag_text,
)
from runner.domain.models import GameSpec
from runner.play.engines import ProbeResult, probe_engines
from runner.play.gpudetect import GpuDetectError, detect, device_names, run_smi

SYSFS = Path("/sys")
T = TypeVar("T")


def numa_cores(devices: Iterable[int], sysfs: Path = SYSFS) -> set[int]:
    """The cores of the NUMA nodes of ``devices`` (their PCI bus ids from nvidia-smi, the
    nodes from ``sysfs``/bus/pci/devices/ID/numa_node); empty where either does not say."""
    wanted = set(devices)
    try:
        text = run_smi("--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    except GpuDetectError:
        return set()
    cores: set[int] = set()
    for line in text.splitlines():
        index, _, bus = line.partition(",")
        if not index.strip().isdigit() or int(index) not in wanted:
            continue
        try:
            node = int((sysfs / "bus/pci/devices" / sysfs_bus_id(bus) / "numa_node")
                       .read_text().strip())
            if node < 0:  # -1: the machine does not say
                continue
            cpulist = (sysfs / f"devices/system/node/node{node}/cpulist").read_text()
        except (OSError, ValueError):
            continue
        cores |= parse_cpulist(cpulist)
    return cores


def parse_cpulist(text: str) -> set[int]:
    """A kernel cpulist (``0-3,8,10-11``) as a set of cores."""
    cores: set[int] = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if lo.strip().isdigit():
            cores.update(range(int(lo), int(hi if hi.strip().isdigit() else lo) + 1))
    return cores


@dataclass
class GameGpus:
    """The devices a game holds: each side's (() for a CPU engine)."""

    white: tuple[int, ...]
    black: tuple[int, ...]

    @property
    def devices(self) -> tuple[int, ...]:
        return self.white + self.black


@dataclass
class GpuPool:
    """The event's devices and which game holds which (one event loop)."""

    devices: tuple[int, ...]
    names: dict[int, str] = field(default_factory=dict)
    offline: set[int] = field(default_factory=set)
    held: dict[int, GameGpus] = field(default_factory=dict)  # game id -> its devices
    holders: dict[int, str] = field(default_factory=dict)  # device -> the engine holding it
    uses: dict[int, int] = field(default_factory=dict)  # device -> games it was given to
    previous: dict[str, tuple[int, ...]] = field(default_factory=dict)  # engine -> last devices
    pins: frozenset[int] = frozenset()
    sysfs: Path = SYSFS  # where the NUMA nodes are read (a test's own tree)
    _numa: dict[tuple[int, ...], set[int]] = field(default_factory=dict)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def free(self) -> set[int]:
        busy = {d for g in self.held.values() for d in g.devices}
        return set(self.devices) - busy - self.offline

    def _pick(self, engine: EngineConfig, free: set[int]) -> tuple[int, ...] | None:
        return choose_devices(free, engine.gpus, pinned=engine.gpu_devices,
                              previous=self.previous.get(engine.name, ()), uses=self.uses,
                              reserved=self.pins)

    def take(self, game_id: int, white: EngineConfig, black: EngineConfig) -> GameGpus | None:
        """Both engines' devices for ``game_id`` (held until :meth:`give_back`), or None when
        they are not free now (nothing is held then)."""
        if game_id in self.held:
            return self.held[game_id]
        free = self.free()
        mine = self._pick(white, free)
        if mine is None:
            return None
        theirs = self._pick(black, free - set(mine))
        if theirs is None:
            return None
        gpus = GameGpus(mine, theirs)
        self.held[game_id] = gpus
        for engine, devices in ((white, mine), (black, theirs)):
            if devices:
                self.previous[engine.name] = devices
            for d in devices:
                self.uses[d] = self.uses.get(d, 0) + 1
                self.holders[d] = engine.name
        return gpus

    def give_back(self, game_id: int) -> None:
        """``game_id`` ended (or was not started): its devices are free again."""
        gpus = self.held.pop(game_id, None)
        if gpus is not None:
            for d in gpus.devices:
                self.holders.pop(d, None)
            self.changed.set()

    def numa_cores(self, game_id: int) -> set[int]:
        """The cores of the NUMA nodes of the devices ``game_id`` holds (empty: none known)."""
        gpus = self.held.get(game_id)
        if gpus is None or not gpus.devices:
            return set()
        key = tuple(sorted(gpus.devices))
        if key not in self._numa:
            self._numa[key] = numa_cores(key, self.sysfs)
        return self._numa[key]

    def set_offline(self, device: int, offline: bool) -> None:
        """The TD took ``device`` out of rotation (or back): no new game gets it."""
        (self.offline.add if offline else self.offline.discard)(device)
        self.changed.set()

    def hand_over(self, spec: GameSpec) -> GameSpec:
        """``spec`` with the devices its game holds handed to both engines and named in
        its record (no devices held: every engine gets none)."""
        gpus = self.held.get(spec.game_id, GameGpus((), ()))
        return with_devices(spec, gpus, self.names)

    async def next_game(self, queue: list[T], needs: Callable[[T], tuple[EngineConfig, ...]],
                        game_id: Callable[[T], int], stopping: Callable[[], bool],
                        say: Callable[[str], None] | None = None) -> T | None:
        """The first game of ``queue`` whose devices are free now, taken out of ``queue``
        with its devices held; waits until a game gives some back (None: ``stopping``).
        ``say``: told once when no game holds a device to give back (only the TD's
        ``gpu on`` can end the wait)."""
        told = False
        while not stopping():
            self.changed.clear()
            for i, game in enumerate(queue):
                white, black = needs(game)
                if self.take(game_id(game), white, black) is not None:
                    return queue.pop(i)
            if not queue:
                return None
            if not told and say is not None and not any(g.devices for g in self.held.values()):
                told = True
                say(f"game {game_id(queue[0])} waits for GPUs: the devices its engines need "
                    f"are out of rotation ({', '.join(map(str, sorted(self.offline)))}); "
                    "`swiss-runner td CONFIG gpu on INDEX` gives one back")
            with contextlib.suppress(TimeoutError):  # (a stop is seen within this time)
                await asyncio.wait_for(self.changed.wait(), 0.5)
        return None


def with_devices(spec: GameSpec, gpus: GameGpus, names: dict[int, str]) -> GameSpec:
    """``spec`` with ``gpus`` handed over (runner.domain.gpus.hand_over) and in its record."""
    return replace(spec, white=hand_over(spec.white, gpus.white),
                   black=hand_over(spec.black, gpus.black),
                   white_gpus=tag_text(gpus.white, names), black_gpus=tag_text(gpus.black, names))


def pool_for(devices: Sequence[int], engines: Sequence[EngineConfig]) -> GpuPool:
    """A pool of ``devices``, with the names nvidia-smi gives (if it is there)."""
    return GpuPool(tuple(devices), names=device_names(),
                   pins=frozenset(d for e in engines for d in e.gpu_devices))


def probe_on_devices(config: Config, timeout: float | None = None, *,
                     default: float = 10.0) -> list[ProbeResult]:
    """runner.play.engines.probe_engines for ``config.engines`` (results in their order),
    each engine on devices of its own when the event has Gpus: the CPU engines together
    with none, each GPU engine alone on its first (or pinned) devices."""
    if not config.gpus:
        return probe_engines(config.engines, timeout, default=default)
    results: dict[int, ProbeResult] = {}
    cpu = [i for i, e in enumerate(config.engines) if not e.gpus]
    cpu_results = probe_engines([hand_over(config.engines[i], ()) for i in cpu], timeout,
                                default=default) if cpu else []
    results.update(zip(cpu, cpu_results, strict=True))
    for i, engine in enumerate(config.engines):
        if engine.gpus:
            devices = engine.gpu_devices or config.gpus[:engine.gpus]
            results[i] = probe_engines([hand_over(engine, devices)], timeout,
                                       default=default)[0]
    return [results[i] for i in range(len(config.engines))]


GPU_RESOURCE = "GPU"  # the Dask worker resource of its devices (swiss-runner worker --gpus)


def game_resources(spec: GameSpec) -> dict[str, float]:
    """The Dask resources a game needs beyond its slot: its engines' devices (none: {})."""
    need = spec.white.gpus + spec.black.gpus
    return {GPU_RESOURCE: need} if need else {}


def gpu_workers(workers: dict[str, dict[str, Any]] | None, spec: GameSpec
                ) -> dict[str, dict[str, Any]] | None:
    """The workers (the scheduler's identity) that advertise enough GPUs for ``spec``."""
    need = game_resources(spec).get(GPU_RESOURCE, 0)
    if not need or workers is None:
        return workers
    return {a: w for a, w in workers.items()
            if w.get("resources", {}).get(GPU_RESOURCE, 0) >= need}


def gpu_need_text(spec: GameSpec) -> str:
    """"with N GPUs " for a game that needs some ("" else)."""
    need = game_resources(spec).get(GPU_RESOURCE, 0)
    return f"with {need:g} GPUs (swiss-runner worker --gpus) " if need else ""


def parse_worker_gpus(text: str) -> tuple[int, ...]:
    """``--gpus 0,1`` or ``auto`` (nvidia-smi -L); raises ValueError saying what is wrong."""
    if text.strip().lower() == "auto":
        try:
            return tuple(sorted(detect()))
        except GpuDetectError as exc:
            raise ValueError(f"auto needs nvidia-smi: {exc}") from None
    parts = [p.strip() for p in text.split(",")]
    if not parts or not all(p.isdigit() for p in parts):
        raise ValueError("expected device indices of 0 or more, comma-separated (0,1), or auto")
    devices = tuple(int(p) for p in parts)
    if len(set(devices)) != len(devices):
        raise ValueError("each device once")
    return devices


def split_devices(devices: Sequence[int], slots: int) -> list[tuple[int, ...]]:
    """``devices`` shared out among ``slots`` slot processes, in contiguous runs."""
    share, extra = divmod(len(devices), slots)
    out, start = [], 0
    for k in range(slots):
        size = share + (1 if k < extra else 0)
        out.append(tuple(devices[start:start + size]))
        start += size
    return out


class WorkerGpus:
    """A worker's devices, shared by its game threads (each with an event loop of its own):
    Dask's resources let a game start only when enough devices are free; this gives it
    which ones (the rule of runner.domain.gpus)."""

    def __init__(self, devices: Sequence[int]):
        self.pool = pool_for(devices, ())
        self.lock = threading.Lock()

    def hand_over(self, spec: GameSpec, wanted: Callable[[], bool]) -> GameSpec | None:
        """``spec`` on devices held for its game (None: no longer ``wanted`` while its
        pinned devices were busy)."""
        while True:
            with self.lock:
                if self.pool.take(spec.game_id, spec.white, spec.black) is not None:
                    return self.pool.hand_over(spec)
            if not wanted():
                return None
            time.sleep(0.2)

    def give_back(self, game_id: int) -> None:
        with self.lock:
            self.pool.give_back(game_id)


def local_pool(config: Config, offline: Iterable[int] = ()) -> GpuPool | None:
    """The event's pool on this machine, without the ``offline`` devices: None without
    ``Gpus`` or with a Cluster (each worker allocates its own: runner.cluster.worker)."""
    if not config.gpus or config.cluster is not None:
        return None
    pool = pool_for(config.gpus, config.engines)
    pool.offline.update(offline)
    return pool


__all__ = ["GameGpus", "GpuDetectError", "GpuPool", "detect", "device_names", "numa_cores",
           "GPU_RESOURCE", "WorkerGpus", "game_resources", "local_pool", "parse_cpulist",
           "parse_worker_gpus", "pool_for", "probe_on_devices", "split_devices", "with_devices"]
