"""What bench_vs_peers.py and bench_clock.py share about the peers (cutechess-cli, fastchess):
where their binaries are, what version they are, and how a side-by-side table is stamped."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time

ENV = {"cutechess-cli": "CUTECHESS_CLI", "fastchess": "FASTCHESS"}


def find(tool: str) -> str | None:
    """The peer's binary: its environment variable (CUTECHESS_CLI, FASTCHESS), else PATH."""
    return os.environ.get(ENV[tool]) or shutil.which(tool)


def version(tool: str, binary: str | None) -> str:
    """The first line of the peer's ``--version`` (the tool's name if it has none)."""
    if binary is None or tool not in ENV:
        return tool
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return tool
    return out.splitlines()[0].strip() if out.strip() else tool


def stamp() -> str:
    """The time (UTC) and the load averages, as ``uptime`` says them: the machine may be shared."""
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load average "
            + " ".join(f"{x:.2f}" for x in os.getloadavg()))


def spread(values: list[float], digits: int = 2) -> str:
    """The median, and [the lowest, the highest] when there is more than one value."""
    if not values:
        return "-"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} [{min(values):.{digits}f}, {max(values):.{digits}f}]"
