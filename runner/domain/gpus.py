"""GPU rules without I/O (docs/gpus.md): which free devices an engine gets for a game, how
they are handed to the engine (environment, ``{gpus}`` in Args and Options), how the record
names them, and what `nvidia-smi` and an engine's failure text say.

The allocation rule (:func:`choose_devices`), for an engine that needs N devices:
1. pinned (``GpuDevices``): exactly those devices, when all of them are free; else it waits;
2. else the devices it had in its previous game, when all of them are still free (a kept
   engine keeps its process; the same engine plays on the same hardware);
3. else the N free devices used least so far in the event (fewest games), lowest index first
   on a tie; devices pinned to some engine are taken last.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from runner.config.typed import EngineConfig

GPU_ENV = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")
PLACEHOLDER = "{gpus}"

# what CUDA / ROCm runtimes print when a device fails (an engine's stderr, its log, its reason)
_FAILURE = re.compile(
    r"CUDA error|cudaError|CUDA_ERROR|CUBLAS_STATUS|CUDNN_STATUS|out of memory on device|"
    r"GPU is lost|fallen off the bus|device-side assert|hipError|HIP error|Xid", re.IGNORECASE)
_SMI_LINE = re.compile(r"^\s*GPU\s+(\d+)\s*:\s*(.*?)\s*(?:\(UUID:[^)]*\))?\s*$")


def device_list(devices: Sequence[int]) -> str:
    """The devices as the environment and ``{gpus}`` give them: ``"0,1"`` ("" for none)."""
    return ",".join(str(d) for d in devices)


def tag_text(devices: Sequence[int], names: Mapping[int, str]) -> str:
    """PGN WhiteGpus / BlackGpus: ``"0 (NVIDIA A100), 1 (NVIDIA A100)"``, an index alone where
    no name is known."""
    return ", ".join(f"{d} ({names[d]})" if names.get(d) else str(d) for d in devices)


def tag_devices(text: str) -> tuple[int, ...]:
    """The indices of a :func:`tag_text` (what a game held, read back from its record)."""
    out = []
    for part in text.split(","):
        head = part.strip().split(" ", 1)[0]
        if head.isdigit():
            out.append(int(head))
    return tuple(out)


def spec_gpus(spec: Mapping[str, Any]) -> dict[str, str] | None:
    """The devices of a game's spec (its JSON) for the state document, None for none."""
    if not (spec.get("white_gpus") or spec.get("black_gpus")):
        return None
    return {"white": spec.get("white_gpus", ""), "black": spec.get("black_gpus", "")}


def gpu_table(devices: Sequence[int] | None, rounds: Sequence[Mapping[str, Any]],
              offline: Mapping[int, str]) -> dict[str, Any] | None:
    """The state document's ``gpus``: the event's devices, which the games in progress
    hold (device, game, engine) and which the TD took out of rotation (device -> reason);
    None when the event has none and none is out of rotation."""
    busy = []
    for rd in rounds:
        for pair in rd["pairs"]:
            for g in pair["games"]:
                if g["status"] != "running" or not g.get("gpus"):
                    continue
                for side in ("white", "black"):
                    busy += [{"device": d, "game_id": g["game_id"], "engine": g[side]}
                             for d in tag_devices(g["gpus"][side])]
    if devices is None and not busy and not offline:
        return None
    return {"devices": list(devices or ()), "busy": sorted(busy, key=lambda b: b["device"]),
            "offline": [{"device": d, "reason": r} for d, r in sorted(offline.items())]}


def gpu_status_lines(table: Mapping[str, Any] | None) -> list[str]:
    """`status`: one line per device of the event (busy with which game, free, or out of
    rotation), nothing without GPUs."""
    if not table:
        return []
    busy = {b["device"]: b for b in table["busy"]}
    offline = {o["device"]: o["reason"] for o in table["offline"]}
    lines = ["GPUs:"]
    for d in sorted(set(table["devices"]) | set(busy) | set(offline)):
        text = f"busy: game {busy[d]['game_id']}, {busy[d]['engine']}" if d in busy else "free"
        if d in offline:
            text += f"; out of rotation ({offline[d]})"
        lines.append(f"  {d}: {text}")
    return lines


def gpu_command_problem(devices: Sequence[int] | None, offline: Mapping[int, str],
                        args: dict[str, Any]) -> str | None:
    """Why ``td gpu off|on DEVICE`` cannot apply (None: it can); ``args["device"]`` is made
    an int in place."""
    state, device = args.get("state"), args.get("device")
    if state not in ("off", "on"):
        return f"gpu: {state!r}, expected off or on"
    try:
        args["device"] = device = int(str(device))
    except ValueError:
        return f"gpu: device {device!r}, expected a GPU index"
    if not devices or device not in devices:
        return (f"gpu: device {device} is not one of the event's Gpus "
                f"({', '.join(map(str, devices)) if devices else 'none'})")
    if state == "off" and device in offline:
        return f"gpu: device {device} is out of rotation already"
    if state == "on" and device not in offline:
        return f"gpu: device {device} is not out of rotation"
    return None


def parse_smi_list(text: str) -> dict[int, str]:
    """``nvidia-smi -L`` output: index -> device name (lines of other shapes are skipped)."""
    found: dict[int, str] = {}
    for line in text.splitlines():
        match = _SMI_LINE.match(line)
        if match:
            found[int(match.group(1))] = match.group(2).strip()
    return found


def sysfs_bus_id(bus_id: str) -> str:
    """nvidia-smi's PCI bus id (``00000000:3B:00.0``) as /sys/bus/pci/devices names it
    (``0000:3b:00.0``)."""
    bus_id = bus_id.strip().lower()
    domain, _, rest = bus_id.partition(":")
    return f"{domain[-4:].rjust(4, '0')}:{rest}" if rest else bus_id


def gpu_failure(text: str) -> bool:
    """Whether ``text`` (an engine's output, a game's reason) reports a failing GPU."""
    return bool(_FAILURE.search(text or ""))


def env_devices(engine: EngineConfig) -> set[str]:
    """The devices ``engine``'s environment gives it (CUDA_VISIBLE_DEVICES)."""
    value = dict(engine.env).get(GPU_ENV[0], "")
    return {d for d in value.split(",") if d}


def _substituted(value: Any, devices: str) -> Any:
    return value.replace(PLACEHOLDER, devices) if isinstance(value, str) else value


def hand_over(engine: EngineConfig, devices: Sequence[int]) -> EngineConfig:
    """``engine`` as it runs on ``devices`` (none: no GPU at all): CUDA_VISIBLE_DEVICES and
    HIP_VISIBLE_DEVICES set to them, ``{gpus}`` in its Args and Options values replaced."""
    text = device_list(devices)
    env = tuple((k, v) for k, v in engine.env if k not in GPU_ENV) + tuple(
        (name, text) for name in GPU_ENV)
    return replace(engine, env=env, args=tuple(_substituted(a, text) for a in engine.args),
                   options={k: _substituted(v, text) for k, v in engine.options.items()})


def choose_devices(free: Iterable[int], need: int, *, pinned: Sequence[int] = (),
                   previous: Sequence[int] = (), uses: Mapping[int, int] | None = None,
                   reserved: Iterable[int] = ()) -> tuple[int, ...] | None:
    """The devices an engine needing ``need`` gets from ``free`` by the rule of this module
    (None: not enough free now; () when it needs none). ``reserved``: devices pinned to
    some engine (taken last)."""
    if need <= 0:
        return ()
    free_set = set(free)
    if pinned:
        return tuple(sorted(pinned)) if set(pinned) <= free_set else None
    if len(previous) == need and set(previous) <= free_set:
        return tuple(sorted(previous))
    if len(free_set) < need:
        return None
    uses = uses or {}
    pins = set(reserved)
    ranked = sorted(free_set, key=lambda d: (d in pins, uses.get(d, 0), d))
    return tuple(sorted(ranked[:need]))


__all__ = ["GPU_ENV", "PLACEHOLDER", "choose_devices", "device_list", "gpu_failure",
           "env_devices", "gpu_command_problem", "gpu_status_lines", "gpu_table", "hand_over", "spec_gpus", "parse_smi_list", "sysfs_bus_id", "tag_devices", "tag_text"]
