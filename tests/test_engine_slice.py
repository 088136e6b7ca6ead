"""The engines' time slice (runner.play.timeslice, docs/operators.md "How the runner's own
process is scheduled"): every thread of an engine the runner starts has the short slice of
the thread that started it, where the kernel gives custom slices; under
SWISS_RUNNER_ENGINE_SLICE=off the kernel's default; another value is refused before any game.
Policy and nice value stay the runner's own either way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from runner.play import timeslice

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STOCKFISH = shutil.which("stockfish", path="/usr/games")

#: starts Stockfish with two search threads as the referee does, plays a move, then prints
#: every engine thread's policy, nice value and slice (/proc), and the runner's main thread's
PROBE = """
import asyncio, json, os, sys
import chess, chess.engine
from runner.config import EngineConfig
from runner.play.engines import start_engine

def thread(base):
    fields = {k.strip(): v for k, v in (line.split(":", 1) for line in open(base + "/sched")
                                        if ":" in line)}
    tid = int(base.rsplit("/", 1)[1])
    return {"policy": os.sched_getscheduler(tid) & ~os.SCHED_RESET_ON_FORK,
            "nice": os.getpriority(os.PRIO_PROCESS, tid),
            "slice": int(fields["se.slice"]) if "se.slice" in fields else None}

async def main():
    proc = await start_engine(EngineConfig(name="SF", command=sys.argv[1],
                                           options={"Threads": 2}))
    try:
        await proc.protocol.play(chess.Board(), chess.engine.Limit(nodes=2000))
        pid = proc.transport.get_pid()
        engine = [thread(f"/proc/{pid}/task/{t}") for t in os.listdir(f"/proc/{pid}/task")]
        return {"engine": engine, "main": thread(f"/proc/self/task/{os.getpid()}")}
    finally:
        await proc.close()

print(json.dumps(asyncio.run(main())))
"""


def probe(**env: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PROBE, str(STOCKFISH)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env},
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kernel_problem() -> str:
    """Why this machine gives a thread no custom slice ("" when it does), asked in a
    throwaway thread (timeslice.ask itself: its refusal is what the runner would meet)."""
    if sys.platform != "linux" or os.uname().machine not in timeslice.SCHED_ATTR_CALLS:
        return f"no sched_setattr here ({sys.platform}, {os.uname().machine})"
    if "se.slice" not in Path("/proc/self/sched").read_text():
        return f"Linux {os.uname().release} has no custom slices (6.12+ has them)"
    took: list[bool] = []
    thread = threading.Thread(target=lambda: took.append(
        timeslice.ask(timeslice.SHORT_SLICE_NS, inherited=False)))
    thread.start()
    thread.join()
    return "" if took[0] else f"Linux {os.uname().release} refuses a custom slice here"


@pytest.fixture
def engine_probe() -> Any:
    """:func:`probe`, on a machine with Stockfish whose kernel gives custom slices (else the
    test is skipped, saying why)."""
    if STOCKFISH is None:
        pytest.skip("Debian's stockfish is needed")
    problem = kernel_problem()
    if problem:
        pytest.skip(problem)
    return probe


@pytest.mark.engines
def test_every_thread_of_an_engine_has_the_short_slice_and_the_runners_priority(
        engine_probe: Any) -> None:
    seen = engine_probe(**{timeslice.ENGINE_ENV: "auto"})
    assert len(seen["engine"]) >= 3, seen  # the main thread and two search threads at least
    for thread in seen["engine"]:
        assert thread["slice"] == timeslice.SHORT_SLICE_NS, seen
        assert thread["policy"] == os.SCHED_OTHER and thread["nice"] == seen["main"]["nice"], seen
    # the runner's own main thread was not given it (only the starting thread asks)
    assert seen["main"]["slice"] != timeslice.SHORT_SLICE_NS, seen


@pytest.mark.engines
def test_off_leaves_the_engines_the_kernels_default_slice(engine_probe: Any) -> None:
    seen = engine_probe(**{timeslice.ENGINE_ENV: "off"})
    for thread in seen["engine"]:
        assert thread["slice"] == seen["main"]["slice"] != timeslice.SHORT_SLICE_NS, seen


def test_the_switch_is_read_and_a_bad_value_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(timeslice.ENGINE_ENV, raising=False)
    assert timeslice.engine_slice_wanted()
    monkeypatch.setenv(timeslice.ENGINE_ENV, " OFF ")
    assert not timeslice.engine_slice_wanted()
    monkeypatch.setenv(timeslice.ENGINE_ENV, "short")
    with pytest.raises(timeslice.SliceChoiceError,
                       match="SWISS_RUNNER_ENGINE_SLICE: got 'short', expected auto | off"):
        timeslice.engine_slice_wanted()


def test_a_bad_slice_switch_is_refused_before_any_game() -> None:
    """``swiss-runner play`` with SWISS_RUNNER_ENGINE_SLICE naming no choice: its one line,
    exit 2, no engine started, no traceback."""
    done = subprocess.run([sys.executable, "-m", "runner", "play",
                           str(REPO / "configs" / "demo.yaml"), "--white", "Stockfish",
                           "--black", "Ethereal"], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ, timeslice.ENGINE_ENV: "short"},
                          check=False)
    assert done.returncode == 2, done.stderr
    assert "SWISS_RUNNER_ENGINE_SLICE: got 'short', expected auto | off" in done.stderr
    assert "Traceback" not in done.stderr
