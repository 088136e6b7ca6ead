"""Hostile input through the config file and the command line (the review of issue 12's
rule: a clear error naming the file, the key, the bad value and what was expected, a
non-zero exit, nothing recorded altered and never a Python traceback).

Every test here failed on the code before its fix.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
FAKE_UCI = REPO / "tests" / "fakes" / "fake_uci.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
ENV.pop("SWISS_RUNNER_TRACEBACK", None)


def fake(name: str, *extra: str) -> dict:
    return {"Name": name, "Command": sys.executable, "Args": [str(FAKE_UCI), *extra]}


def config(tmp_path: Path, **top: object) -> Path:
    data: dict = {
        "SwissOptions": {"Rounds": 1, "GamesPerMatch": 1, "StatePath": "state/s.json"},
        "TimeControl": "10+0.1",
        "Adjudication": {"MaxMoves": 3},
        "Engines": [fake("P1"), fake("P2")],
    }
    data.update(top)
    path = tmp_path / "event.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def cli(*argv: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGV`` as a user runs it: its own process, no pytest logging."""
    return subprocess.run([sys.executable, "-m", "runner", *argv], capture_output=True,
                          text=True, env=ENV, cwd=cwd or REPO, timeout=timeout)


# ------------------------------------------------------------- tracebacks from libraries


def test_an_engine_option_python_chess_cannot_parse_prints_no_traceback(tmp_path: Path) -> None:
    """python-chess logs a malformed ``option`` line with LOGGER.exception: without a
    handler of ours its traceback went to stderr (validate --probe and every game of run)."""
    cfg = config(tmp_path, Engines=[fake("P1", "--bad-option"), fake("P2")])
    probe = cli("validate", "--probe", str(cfg))
    assert probe.returncode == 0, probe.stderr
    assert "Traceback" not in probe.stderr + probe.stdout
    assert "warning: chess.engine: Exception parsing option min (ValueError: " in probe.stderr
    run = cli("run", "--quiet", str(cfg))
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    assert "Exception parsing option min" in run.stderr


def test_an_engine_printing_garbage_does_not_flood_validate_probe(tmp_path: Path) -> None:
    """``validate --probe`` showed python-chess's warning for every garbage line an engine
    printed (hundreds of kilobytes for one that writes binary data); run already hid them."""
    garbage = tmp_path / "garbage.py"
    garbage.write_text("import sys\nfor _ in range(300):\n"
                       "    sys.stdout.buffer.write(bytes(range(128, 256)) + b'\\n')\n")
    cfg = config(tmp_path, Engines=[{"Name": "G", "Command": sys.executable,
                                     "Args": [str(garbage)], "StartupTimeoutS": 5}, fake("P2")])
    probe = cli("validate", "--probe", str(cfg))
    assert probe.returncode == 1
    assert "FAIL G:" in probe.stdout
    assert "Traceback" not in probe.stderr
    assert len(probe.stderr) < 2000, probe.stderr[:500]
