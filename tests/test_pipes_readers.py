"""The compiled reader threads (runner.play._pipes.Reader) as the engine's lines reach them:
a real-time reader follows its engine's CPU, so that the engine's lines wake it where they
are written (docs/referee.md "The engine's pipes")."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import pytest
from test_reader_priority import realtime_permitted

from runner.play import pipes

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="the compiled readers are Linux's"),
    pytest.mark.skipif(pipes._load() is None, reason="the compiled pipes are not built"),
]

#: a UCI-like engine: for each line it reads, eight search lines written while it computes
#: (its thread running, on the CPU it is bound to), then its move
BUSY_ENGINE = """
import os, sys, time
for line in sys.stdin:
    if line.strip() == "quit":
        break
    for depth in range(1, 9):
        until = time.monotonic() + 0.003
        while time.monotonic() < until:
            pass
        os.write(1, b"info depth %d score cp 10 pv e2e4\\n" % depth)
    os.write(1, b"bestmove e2e4\\n")
"""


def take_move(reader) -> tuple:  # noqa: ANN001
    """The reader's next move event (kind MOVE), within 10 s."""
    module = pipes._load()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        select.select([reader.fileno()], [], [], 0.1)
        for event in reader.take():
            if event[0] == module.MOVE:
                return event
    raise AssertionError("no move came")


def play_moves(cpus: list[int], priority: tuple[int, int, int], *, pid: bool = True
               ) -> list[int | None]:
    """One move of the busy engine per CPU in cpus, the engine bound to that CPU for it: the
    CPU its reader was bound to after each move."""
    module = pipes._load()
    engine = subprocess.Popen([sys.executable, "-c", BUSY_ENGINE], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    fd = os.dup(engine.stdout.fileno())
    engine.stdout.close()
    reader = module.Reader(fd, *priority, engine.pid if pid else 0)
    seen = []
    try:
        for cpu in cpus:
            os.sched_setaffinity(engine.pid, {cpu})
            reader.begin_move(b"")
            engine.stdin.write(b"go\n")
            engine.stdin.flush()
            assert take_move(reader)[1] == b"bestmove e2e4"
            seen.append(reader.cpu)
            if reader.cpu is not None:  # the kernel's own account of the thread
                assert os.sched_getaffinity(reader.native_id) == {reader.cpu}
    finally:
        reader.stop()
        engine.stdin.close()
        engine.kill()
        engine.wait()
    return seen


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nowhere to follow")
@pytest.mark.skipif(not realtime_permitted(), reason="SCHED_FIFO is not permitted here")
def test_a_realtime_reader_follows_its_engine_from_cpu_to_cpu() -> None:
    first, second = sorted(os.sched_getaffinity(0))[:2]
    assert play_moves([first, second, first], pipes.reader_priority()) == [first, second, first]


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nowhere to follow")
def test_a_reader_without_its_engine_or_realtime_stays_where_the_kernel_puts_it() -> None:
    """No engine pid, or a reader at the process's own priority (which a bound reader could
    leave waiting behind its engine): never bound."""
    cpu = sorted(os.sched_getaffinity(0))[1]
    assert play_moves([cpu], pipes.reader_priority(), pid=False) == [None]
    assert play_moves([cpu], (0, 0, 0)) == [None]


def thread_state(tid: int) -> str:
    """A thread of this process's state letter, as the kernel has it (R, S, ...)."""
    with open(f"/proc/self/task/{tid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def thread_alive(tid: int) -> bool:
    return os.path.exists(f"/proc/self/task/{tid}")


def started_reader(fd: int):  # noqa: ANN201
    """A compiled Reader on fd, its thread running (its id known) and asleep in its read."""
    reader = pipes._load().Reader(fd, *pipes.reader_priority())
    deadline = time.monotonic() + 5
    while reader.native_id is None or thread_state(reader.native_id) != "S":
        assert time.monotonic() < deadline, "the reader thread never waited for input"
        time.sleep(0.01)
    return reader


def gone_within(tid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while thread_alive(tid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_stop_ends_a_reader_asleep_in_its_read_at_once() -> None:
    """stop(): the thread ends though the engine writes nothing, closing the engine's stdout
    (its writer then gets EPIPE) and queueing no EOF; a second stop() is harmless."""
    r, w = os.pipe()
    reader = started_reader(r)
    tid = reader.native_id
    reader.stop()
    assert gone_within(tid, 2.0)
    with pytest.raises(BrokenPipeError):
        os.write(w, b"info depth 1\n")
    os.close(w)
    reader.stop()
    assert reader.take() == []


def test_stop_ends_a_reader_busy_with_a_stream_of_lines() -> None:
    """stop() while the engine writes without a pause (in move mode, a log on): the thread
    ends at its next read, whatever it was doing, and its writer gets EPIPE."""
    import threading

    module = pipes._load()
    r, w = os.pipe()
    reader = started_reader(r)
    tid = reader.native_id
    log = module.LogFile(os.open(os.devnull, os.O_WRONLY))
    reader.begin_move(b"", log, b" E < ", time.monotonic())
    broken = threading.Event()

    def stream() -> None:
        try:
            while True:
                os.write(w, b"info depth 12 score cp 31 nodes 99 pv e2e4 e7e5\n" * 50)
        except BrokenPipeError:
            broken.set()

    writer = threading.Thread(target=stream, daemon=True)
    writer.start()
    time.sleep(0.2)
    reader.stop()
    assert gone_within(tid, 2.0)
    assert broken.wait(5)
    writer.join(5)
    os.close(w)
    log.close()


def test_stop_after_the_engine_is_gone_leaves_the_ended_thread_alone() -> None:
    """EOF: the EOF event is queued and the thread ends by itself; stop() afterwards (and
    the reader's deletion) touch nothing of it."""
    r, w = os.pipe()
    reader = started_reader(r)
    tid = reader.native_id
    os.write(w, b"readyok\n")
    os.close(w)
    assert gone_within(tid, 2.0)
    module = pipes._load()
    events = reader.take()
    assert [e[0] for e in events] == [module.DATA, module.EOF] and events[1][1] == 0
    reader.stop()
    del reader


def test_a_line_split_across_reads_and_a_line_longer_than_a_read_are_whole(tmp_path) -> None:  # noqa: ANN001
    """In move mode a line is taken when its newline comes, however many reads it took: the
    move's score and PV lines are the engine's lines whole, and the engine log has every
    line whole, in order."""
    module = pipes._load()
    r, w = os.pipe()
    reader = started_reader(r)
    log_fd = os.open(tmp_path / "log", os.O_WRONLY | os.O_CREAT, 0o644)
    log = module.LogFile(log_fd)
    reader.begin_move(b"info dep", log, b" E < ", time.monotonic())
    huge = b"info depth 30 score cp 7 pv " + b" ".join([b"e2e4 e7e5 g1f3 b8c6"] * 20000)
    lines = [b"info depth 1 score cp 5 pv e2e4", b"info string a split line", huge,
             b"info depth 31 nodes 5", b"bestmove e2e4 ponder e7e5"]
    parts = [b"th 1 score cp 5 pv e2e4\ninfo str", b"ing a split", b" line\n" + huge[:9000],
             huge[9000:] + b"\ninfo depth 31 nodes 5\nbestm", b"ove e2e4 ponder e7e5\n"]
    for part in parts:  # each its own read: the reader waits in between
        for at in range(0, len(part), 60000):
            os.write(w, part[at:at + 60000])
        time.sleep(0.05)
    kind, line, _stamp, score, bound, pv = take_move(reader)
    assert (line, score, bound, pv) == (lines[-1], huge, None, huge)
    log.close()
    logged = [row.split(b" E < ", 1)[1] for row in (tmp_path / "log").read_bytes().splitlines()]
    assert logged == lines
    reader.stop()
    os.close(w)
