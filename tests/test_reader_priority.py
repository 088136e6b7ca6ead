"""The compiled readers' priority (runner.play.pipes.reader_priority, docs/referee.md "The
engine's pipes"): each reader thread takes the highest priority the kernel permits it
(SCHED_FIFO, else a lower nice value with a short slice, else the slice alone), for itself
only, silently keeps what it has where refused, and keeps the process's own under
SWISS_RUNNER_READER_PRIORITY=off; the engines keep theirs either way."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import chess
import chess.engine
import pytest

from runner.config import EngineConfig
from runner.play import pipes
from runner.play.engines import start_engine

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STOCKFISH = shutil.which("stockfish", path="/usr/games")

pytestmark = [
    pytest.mark.engines,
    pytest.mark.skipif(sys.platform != "linux", reason="thread priorities are Linux's here"),
    pytest.mark.skipif(pipes._load() is None, reason="the compiled pipes are not built"),
    pytest.mark.skipif(STOCKFISH is None, reason="Debian's stockfish is needed"),
]

#: plays one move with Stockfish on the native path, then prints what its reader thread got
#: and what the kernel says of that thread and of the engine's threads (run as a script)
PROBE = """
import asyncio, json, os, sys
import chess, chess.engine
from runner.config import EngineConfig
from runner.play.engines import start_engine

def thread(tid, pid=None):
    base = f"/proc/{pid}/task/{tid}" if pid else f"/proc/self/task/{tid}"
    policy = os.sched_getscheduler(tid) & ~os.SCHED_RESET_ON_FORK
    fields = {k.strip(): v for k, v in (line.split(":", 1) for line in open(base + "/sched")
                                        if ":" in line)}
    slice_ns = int(fields["se.slice"]) if "se.slice" in fields else None
    return {"policy": policy, "rt": os.sched_getparam(tid).sched_priority,
            "nice": os.getpriority(os.PRIO_PROCESS, tid), "slice": slice_ns}

async def main():
    proc = await start_engine(EngineConfig(name="SF", command=sys.argv[1]))
    try:
        move = await proc.protocol.play(chess.Board(), chess.engine.Limit(nodes=200))
        reader = proc.transport.get_pipe_transport(1).reader
        pid = proc.transport.get_pid()
        engine = [thread(int(t), pid) for t in os.listdir(f"/proc/{pid}/task")]
        return {"move": move.move.uci(), "priority": reader.priority,
                "reader": thread(reader.native_id), "main": thread(os.getpid()),
                "engine": engine, "nice": os.getpriority(os.PRIO_PROCESS, 0)}
    finally:
        await proc.close()

print(json.dumps(asyncio.run(main())))
"""

#: the probe in a process that cannot raise a thread's priority: no real-time priority and no
#: lower nice value by its limits, and no CAP_SYS_NICE (root's outranks the limits) in any of
#: its sets, dropped before any thread exists (threads copy their creator's)
UNPRIVILEGED = """
import ctypes, resource
resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))
resource.setrlimit(resource.RLIMIT_NICE, (0, 0))
libc = ctypes.CDLL(None, use_errno=True)
head = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
sets = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; twice (bits 0-31, 32-63)
assert libc.capget(head, sets) == 0
for i in range(3):
    sets[i] &= ~(1 << 23)  # CAP_SYS_NICE
assert libc.capset(head, sets) == 0
"""


def probe(*, unprivileged: bool = False, **env: str) -> dict[str, Any]:
    import json

    script = (UNPRIVILEGED if unprivileged else "") + PROBE
    done = subprocess.run([sys.executable, "-c", script, str(STOCKFISH)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO), pipes.ENV: "native",
                               **env},
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr  # silently, whatever it got
    return json.loads(done.stdout)


def realtime_permitted() -> bool:
    """Whether a thread of a process like this one may take SCHED_FIFO (asked of a child)."""
    return subprocess.run([sys.executable, "-c", "import os; os.sched_setscheduler(0, "
                           "os.SCHED_FIFO, os.sched_param(1))"], check=False,
                          capture_output=True).returncode == 0


def assert_engine_untouched(seen: dict[str, Any]) -> None:
    """Every thread of the engine, and the runner's main thread, at the normal policy and
    the runner's nice value: the reader's priority went nowhere else."""
    for who in (*seen["engine"], seen["main"]):
        assert who["policy"] == os.SCHED_OTHER and who["rt"] == 0, seen
        assert who["nice"] == seen["nice"], seen


def assert_as_named(seen: dict[str, Any]) -> None:
    """The reader thread is what its ``priority`` says, by the kernel's own account."""
    reader, got = seen["reader"], seen["priority"]
    if got == "realtime":
        assert reader["policy"] == os.SCHED_FIFO and reader["rt"] == pipes.READER_REALTIME
        return
    assert reader["policy"] == os.SCHED_OTHER and reader["rt"] == 0, seen
    nice = pipes.READER_NICE if "nice" in got else seen["nice"]
    assert reader["nice"] == nice, seen
    if "slice" in got and reader["slice"] is not None:
        assert reader["slice"] == pipes.READER_SLICE_NS, seen


def test_the_reader_takes_the_highest_priority_permitted_and_the_engine_keeps_its_own() -> None:
    seen = probe()
    assert seen["move"] in {m.uci() for m in chess.Board().legal_moves}
    assert_as_named(seen)
    if realtime_permitted():  # root, CAP_SYS_NICE or RLIMIT_RTPRIO
        assert seen["priority"] == "realtime", seen
    else:
        assert seen["priority"] in ("nice+slice", "slice", "normal"), seen
    assert_engine_untouched(seen)


def test_where_the_kernel_refuses_the_reader_keeps_normal_priority_silently() -> None:
    """A process that may neither take SCHED_FIFO nor lower a nice value: the reader asks,
    is refused, says nothing and reads the move as always (a short slice needs no privilege:
    Linux 6.12+ gives it, older kernels ignore it)."""
    seen = probe(unprivileged=True)
    assert seen["move"] in {m.uci() for m in chess.Board().legal_moves}
    assert seen["priority"] in ("slice", "normal"), seen
    assert_as_named(seen)
    assert seen["reader"]["nice"] == seen["nice"]
    assert_engine_untouched(seen)


def test_the_switch_off_keeps_the_readers_at_the_process_priority() -> None:
    seen = probe(**{pipes.PRIORITY_ENV: "off"})
    assert seen["priority"] == "normal", seen
    reader = seen["reader"]
    assert reader["policy"] == os.SCHED_OTHER and reader["nice"] == seen["nice"], seen
    if reader["slice"] is not None:
        assert reader["slice"] != pipes.READER_SLICE_NS, seen
    assert_engine_untouched(seen)


def test_the_switch_is_read_per_engine_and_a_bad_value_is_named(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pipes.PRIORITY_ENV, raising=False)
    assert pipes.reader_priority() == (pipes.READER_REALTIME, pipes.READER_NICE,
                                       pipes.READER_SLICE_NS)
    monkeypatch.setenv(pipes.PRIORITY_ENV, " OFF ")
    assert pipes.reader_priority() == (0, 0, 0)
    monkeypatch.setenv(pipes.PRIORITY_ENV, "high")
    with pytest.raises(pipes.PipesChoiceError,
                       match="SWISS_RUNNER_READER_PRIORITY: got 'high', expected auto | off"):
        pipes.reader_priority()


def test_a_bad_priority_switch_is_refused_before_any_game() -> None:
    """``swiss-runner play`` with SWISS_RUNNER_READER_PRIORITY naming no choice: its one
    line, exit 2, no engine started."""
    done = subprocess.run([sys.executable, "-m", "runner", "play",
                           str(REPO / "configs" / "demo.yaml"), "--white", "Stockfish",
                           "--black", "Ethereal"], capture_output=True, text=True, timeout=60,
                          cwd=REPO, env={**os.environ, pipes.PRIORITY_ENV: "high"}, check=False)
    assert done.returncode == 2, done.stderr
    assert "SWISS_RUNNER_READER_PRIORITY: got 'high', expected auto | off" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_reader_says_which_thread_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """``native_id`` is the reader thread's own id (a thread of this process named
    engine-reader), in this process too, with the priority the switch asked for."""
    monkeypatch.setenv(pipes.ENV, "native")
    monkeypatch.setenv(pipes.PRIORITY_ENV, "off")

    async def main() -> tuple[int, str, str]:
        proc = await start_engine(EngineConfig(name="SF", command=str(STOCKFISH)))
        try:
            await proc.protocol.play(chess.Board(), chess.engine.Limit(nodes=100))
            reader = proc.transport.get_pipe_transport(1).reader
            tid = reader.native_id
            return tid, Path(f"/proc/self/task/{tid}/comm").read_text().strip(), reader.priority
        finally:
            await proc.close()

    tid, name, priority = asyncio.run(main())
    assert tid != os.getpid() and name == "engine-reader"
    assert priority == "normal"
