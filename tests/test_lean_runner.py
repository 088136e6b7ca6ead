"""The runner's process stays lean while it times engines (issue "A fair clock and a lean
referee"): `run` imports neither numpy nor scipy, and its snapshot leaves the ratings to
its readers (docs/state.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import REPO, loop_config

from runner.cli import main

HEAVY = ("numpy", "scipy")


@pytest.mark.slow
def test_run_imports_neither_numpy_nor_scipy(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = loop_config(tmp_path, players=4, Rounds=2)  # rounds complete: ratings were due
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "runner", "run",
                          str(config)], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Event complete" in run.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()
                if line.startswith("import time:")]
    assert "runner.service.tournament" in imported  # the hook saw the runner's imports
    heavy = [m for m in imported if m.split(".")[0] in HEAVY or m == "runner.domain.ratings"]
    assert not heavy, heavy[:5]
    state = json.loads((tmp_path / "state" / "swiss.json").read_text())
    assert state["rounds_complete"] == 2 and state["ratings"] is None
    # its readers compute them from the same database
    assert main(["status", str(config), "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["ratings"]["format"] == "swiss-runner-ratings"
    assert status["ratings"]["model"]["simulations"] == 0
