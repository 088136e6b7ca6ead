"""The soak (bench/soak.py) in small: 6 engines, 3 double rounds (18 games) on a real local
Dask scheduler and 4 `swiss-runner worker` processes, while 20 SIGKILLs hit the runner, a
worker, the scheduler or the runner's process group at random moments, each restarted as
its deploy/ unit says. Every invariant of the soak's table must hold: no game lost,
duplicated or scored twice, each interrupted game continued from its logged position or
decided from its log, the audit clean, no engine left, the JSON state as the database.
The full 1,000-kill soak of a 42-engine event is `python bench/soak.py` (docs/cluster.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from testkit import need_distributed

REPO = Path(__file__).resolve().parent.parent

need_distributed()

pytestmark = [pytest.mark.engines, pytest.mark.slow]


def test_twenty_kills_leave_every_invariant_holding(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "bench" / "soak.py"), "--engines", "6", "--rounds", "3",
         "--kills", "20", "--gap", "0.2-1.5", "--delay-ms", "60", "--restart-scale", "0.05",
         "--seed", "7", "--dir", str(tmp_path / "soak")],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "ALL INVARIANTS HOLD" in out, out
    table = {line.split(" | ")[0].strip(): line.split(" | ")[1:]
             for line in out.splitlines() if line.count(" | ") == 2}
    assert table["kills (runner / worker / scheduler / tree)"][0].startswith("20 ("), out
    assert table["games lost"][0] == "0" and table["games duplicated (PGN)"][0] == "0"
    interrupted = table["interrupted games (attempt > 1)"]
    assert int(interrupted[0].split(":")[0]) >= 3, out  # the kills hit games being played
    assert table["engine processes left (after the event / at the end)"][0] == "0 / 0"
    assert "exit 0" in table["swiss-runner audit against the seeds"][0]
