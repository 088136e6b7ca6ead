"""A GPU that fails (docs/gpus.md): an alert ``gpu_failed`` naming the device when a GPU
engine's game ends by its crash and its engine log shows a CUDA / ROCm error, or
`nvidia-smi -L` no longer lists the device (or says it is lost)."""

from __future__ import annotations

import concurrent.futures
import re
from pathlib import Path
from typing import Any

from runner.domain.endings import GameEnd, classify_end
from runner.domain.events import GameEvent, GameFinished, GameStarted
from runner.domain.gpus import gpu_failure, tag_devices
from runner.play.enginelog import LOG_TAG
from runner.play.gpudetect import GpuDetectError, detect
from runner.service.views.alerts import Alerter

_LOG_TAG = re.compile(r'^\[' + LOG_TAG + r' "(.*)"\]$', re.MULTILINE)


def failed_sides(log_text: str) -> dict[str, str]:
    """Side ("white" / "black") -> its first line in an engine log reporting a GPU failure."""
    found: dict[str, str] = {}
    for line in log_text.splitlines():
        for side in ("white", "black"):
            if f"({side}) " in line and side not in found and gpu_failure(line):
                found[side] = line.split(" < ", 1)[-1].strip()
    return found


def lost_devices(devices: set[int]) -> set[int]:
    """The ``devices`` `nvidia-smi -L` no longer lists or calls lost (none without it)."""
    try:
        listed = detect()
    except GpuDetectError:
        return set()
    return {d for d in devices if d not in listed or gpu_failure(listed[d])}


class GpuFailureSink:
    """A view of the game stream: a GPU engine's crash is looked into on a thread of its own
    (its engine log, nvidia-smi), and each failing device alerts once per game."""

    moves = False

    def __init__(self, alerter: Alerter):
        self.alerter = alerter
        self.devices: dict[int, dict[str, tuple[int, ...]]] = {}  # game -> side -> devices
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None

    def handle(self, event: GameEvent) -> None:
        if isinstance(event, GameStarted):
            spec = event.spec or {}
            held = {side: tag_devices(spec.get(f"{side}_gpus", "")) for side in ("white", "black")}
            if any(held.values()):
                self.devices[event.game_id] = held
            return
        if not isinstance(event, GameFinished):
            return
        held = self.devices.pop(event.game_id, None)
        r = event.record
        if held is None or classify_end(r.result, r.termination, r.termination_details,
                                        r.reason) is not GameEnd.DISCONNECT:
            return
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gpu")
        self._thread.submit(self._look, event.game_id, r.white, r.black, r.pgn, held)

    def _look(self, game_id: int, white: str, black: str, pgn: str,
              held: dict[str, tuple[int, ...]]) -> None:
        try:
            match = _LOG_TAG.search(pgn)
            text = Path(match.group(1)).read_text(errors="replace") if match else ""
        except OSError:
            text = ""
        engines = {"white": white, "black": black}
        reasons: dict[int, tuple[str, str]] = {}
        for side, line in failed_sides(text).items():
            for d in held.get(side, ()):
                reasons[d] = (engines[side], f"its engine log: {line}")
        every = {d: side for side, ds in held.items() for d in ds}
        for d in lost_devices(set(every)):
            reasons.setdefault(d, (engines[every[d]], "nvidia-smi reports the device lost"))
        for device, (engine, reason) in sorted(reasons.items()):
            self.alerter.emit("gpu_failed", device=device, game_id=game_id, engine=engine,
                              reason=reason)

    def close(self) -> None:
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None


def gpu_sinks(config: Any, alerter: Alerter) -> list[GpuFailureSink]:
    """The failure view where the event has GPU engines and alerts (else none)."""
    if not alerter.enabled or not any(e.gpus for e in config.engines):
        return []
    return [GpuFailureSink(alerter)]


__all__ = ["GpuFailureSink", "failed_sides", "gpu_sinks", "lost_devices"]
