"""This machine's GPUs as ``nvidia-smi -L`` lists them (docs/gpus.md): for the config's
``Gpus: auto`` (handed to the loader by the command line: the config runs no process), the names in a game's record and a failing device's check."""

from __future__ import annotations

import shutil
import subprocess

from runner.domain.gpus import parse_smi_list
from runner.errors import GpuDetectError

NVIDIA_SMI = "nvidia-smi"
_SMI_TIMEOUT_S = 10.0


def run_smi(*args: str) -> str:
    """nvidia-smi ARGS's output; raises GpuDetectError (missing, failed, time-out)."""
    command = shutil.which(NVIDIA_SMI)
    if command is None:
        raise GpuDetectError(f"{NVIDIA_SMI} is not on PATH (no NVIDIA driver on this machine?)")
    try:
        done = subprocess.run([command, *args], capture_output=True, text=True,
                              timeout=_SMI_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GpuDetectError(f"{command} {' '.join(args)} failed: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise GpuDetectError(f"{command} {' '.join(args)} exited with {done.returncode}"
                             + (f": {said[0]}" if said else ""))
    return done.stdout


def detect() -> dict[int, str]:
    """This machine's GPUs (index -> name) from ``nvidia-smi -L``; raises GpuDetectError."""
    found = parse_smi_list(run_smi("-L"))
    if not found:
        raise GpuDetectError(f"{NVIDIA_SMI} -L listed no GPU")
    return found


def device_names() -> dict[int, str]:
    """The names nvidia-smi gives (empty where it is missing or fails): for the record."""
    try:
        return detect()
    except GpuDetectError:
        return {}


__all__ = ["NVIDIA_SMI", "GpuDetectError", "detect", "device_names", "run_smi"]
