"""The GPU keys of a config (docs/gpus.md): the top-level ``Gpus`` (device indices or
``auto``), each engine's ``Gpus`` (how many it needs) and ``GpuDevices`` (pinned). Problems go
to the loader's checker, naming the key; none of them changes the event's fingerprint."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from runner.config.typed import Config, EngineConfig
from runner.errors import GpuDetectError

# this machine's GPUs (index -> name), raising GpuDetectError: runner.play.gpudetect.detect,
# handed in by the command line (the config runs no process)
DetectGpus = Callable[[], dict[int, str]]


def _event_gpus(c: Any, value: Any, detect: DetectGpus | None) -> tuple[int, ...] | None:
    """The top-level ``Gpus`` as device indices (None: absent, or reported bad); ``auto``:
    the devices ``detect`` lists (None: this command does not look for GPUs)."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        try:
            if detect is None:
                raise GpuDetectError("this command does not look for GPUs")
            return tuple(sorted(detect()))
        except GpuDetectError as exc:
            c.bad("Gpus", value, f"a list of GPU indices: auto needs nvidia-smi ({exc})")
            return None
    if not isinstance(value, list) or not value or any(
            isinstance(d, bool) or not isinstance(d, int) for d in value):
        c.bad("Gpus", value, "a non-empty list of GPU indices ([0, 1]) or auto")
        return None
    if any(d < 0 for d in value):
        c.bad("Gpus", value, "GPU indices of 0 or more (a negative index names no device)")
        return None
    twice = sorted({d for d in value if value.count(d) > 1})
    if twice:
        c.bad("Gpus", value, f"each device once ({', '.join(map(str, twice))} listed twice)")
        return None
    return tuple(value)


def _engine_gpus(c: Any, key: str, own: Any, engine: EngineConfig,
                 devices: tuple[int, ...] | None, elsewhere: bool) -> EngineConfig:
    """``engine`` with its Gpus and GpuDevices, checked against the event's devices (None:
    none here; ``elsewhere``: the devices are the cluster workers', not checked here)."""
    need, pinned = own.Gpus, tuple(own.GpuDevices or ())
    if pinned:
        if len(set(pinned)) != len(pinned):
            c.bad(f"{key}.GpuDevices", list(pinned), "each device once")
            return engine
        if need and need != len(pinned):
            c.bad(f"{key}.Gpus", need, f"{len(pinned)}, as many as its GpuDevices "
                  f"{list(pinned)} (or leave Gpus out)")
            return engine
        need = len(pinned)
        if devices is not None and not set(pinned) <= set(devices):
            c.bad(f"{key}.GpuDevices", list(pinned), f"devices of the event's Gpus "
                  f"{list(devices)}")
            return engine
    if not need:
        return engine
    if devices is None and not elsewhere:
        c.bad(f"{key}.Gpus", need, "0: the event has no Gpus (add the top-level Gpus: a list "
              "of device indices, or auto)")
        return engine
    if devices is not None and need > len(devices):
        c.bad(f"{key}.Gpus", need, f"at most {len(devices)}, the devices the event has "
              f"(Gpus: {list(devices)})")
        return engine
    return replace(engine, gpus=need, gpu_devices=tuple(sorted(pinned)))


def _pairs_fit(c: Any, engines: list[tuple[str, EngineConfig]],
               devices: tuple[int, ...]) -> None:
    """Any two engines may meet: their devices together must exist, and their pins not
    overlap (else their game could never start)."""
    for i, (key_a, a) in enumerate(engines):
        for key_b, b in engines[i + 1:]:
            if set(a.gpu_devices) & set(b.gpu_devices):
                c.bad(f"{key_b}.GpuDevices", list(b.gpu_devices), f"devices apart from "
                      f"{key_a}'s {list(a.gpu_devices)}: the two engines could never play "
                      "each other")
            elif a.gpus + b.gpus > len(devices):
                c.bad(f"{key_b}.Gpus", b.gpus, f"at most {len(devices) - a.gpus}: with "
                      f"{key_a}'s {a.gpus} their game needs more devices than Gpus "
                      f"{list(devices)} has")
                return


def apply_gpus(c: Any, top: dict[str, Any], keys: Any, index: list[int],
               config: Config, detect: DetectGpus | None = None) -> Config:
    """``config`` with the GPU keys (validated by the schema in ``keys``; ``index``: the
    place of each of ``keys.Engines`` in the merged list) applied and checked; ``detect``:
    this machine's GPUs, for ``Gpus: auto``."""
    devices = _event_gpus(c, top.get("Gpus"), detect)
    unknown = "Gpus" in top and devices is None  # reported: the needs are not checked again
    own_by_name = {str(e.Name).strip(): (i, e) for i, e in zip(index, keys.Engines or (),
                                                               strict=True)}
    engines, needing = [], []
    for engine in config.engines:
        i, own = own_by_name.get(engine.name, (None, None))
        if own is not None:
            engine = _engine_gpus(c, f"Engines[{i}]", own, engine, devices,
                                  unknown or config.cluster is not None)
            if engine.gpus:
                needing.append((f"Engines[{i}]", engine))
        engines.append(engine)
    if needing and config.backend != "python-chess":
        c.bad(f"{needing[0][0]}.Gpus", needing[0][1].gpus, "0 with Backend: cutechess "
              "(cutechess-cli starts both engines itself, in one environment); GPU engines "
              "need the built-in referee (Backend: python-chess)")
    if devices:
        _pairs_fit(c, needing, devices)
    return replace(config, engines=tuple(engines), gpus=devices or None)


__all__ = ["DetectGpus", "apply_gpus"]
