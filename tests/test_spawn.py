"""Engines started off the loop's back (runner.play.spawn): Popen + pidfd, no thread per engine.

Real processes: Debian's Stockfish, the fake UCI engine and plain shell commands, on both
event loops the runner can run on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import chess
import chess.engine
import psutil
import pytest

from runner.config import EngineConfig
from runner.play import eventloop, processes, spawn
from runner.play.engines import start_engine

HERE = Path(__file__).resolve().parent
FAKE = HERE / "fakes" / "fake_uci.py"
STOCKFISH = shutil.which("stockfish") or shutil.which("stockfish", path="/usr/games")

pytestmark = pytest.mark.skipif(not spawn.available(), reason="this kernel gives no pidfds "
                                "(os.pidfd_open): engines start through loop.subprocess_exec")

LOOPS = ["asyncio"] + (["uvloop"] if eventloop.loop_choice() == "uvloop" else [])


def run_on(loop_name: str, main, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(eventloop.LOOP_ENV, loop_name)
    return eventloop.run(main())


class Recorder(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.events: list[tuple] = []
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport) -> None:
        self.events.append(("made",))

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.events.append(("data", fd, data))

    def process_exited(self) -> None:
        self.events.append(("exited",))

    def connection_lost(self, exc) -> None:
        self.events.append(("lost",))
        self.lost.set_result(None)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_process_is_reported_in_asyncio_order_with_its_output_and_exit_code(
        loop_name, monkeypatch) -> None:
    async def main():
        transport, proto = await spawn.spawn(
            Recorder, ["/bin/sh", "-c", "echo out; echo err >&2; sleep 0.2; echo more; exit 3"],
            stderr=asyncio.subprocess.PIPE)
        assert isinstance(transport, spawn.EngineTransport)
        assert transport.get_returncode() is None and psutil.pid_exists(transport.get_pid())
        await asyncio.wait_for(proto.lost, 10)
        return transport, proto

    transport, proto = run_on(loop_name, main, monkeypatch)
    kinds = [e[0] for e in proto.events]
    assert kinds[0] == "made" and kinds[-1] == "lost"
    assert kinds.index("exited") < kinds.index("lost")
    out = b"".join(e[2] for e in proto.events if e[0] == "data" and e[1] == 1)
    err = b"".join(e[2] for e in proto.events if e[0] == "data" and e[1] == 2)
    assert out == b"out\nmore\n" and err == b"err\n"
    assert transport.get_returncode() == 3
    assert transport.proc.returncode == 3  # reaped: Popen neither warns nor keeps it
    assert not psutil.pid_exists(transport.get_pid()) or \
        psutil.Process(transport.get_pid()).status() != psutil.STATUS_ZOMBIE


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_killed_process_ends_its_transport(loop_name, monkeypatch) -> None:
    async def main():
        transport, proto = await spawn.spawn(Recorder, ["/bin/sleep", "60"],
                                             stderr=asyncio.subprocess.DEVNULL)
        transport.kill()
        await asyncio.wait_for(proto.lost, 10)
        transport.close()
        transport.kill()  # after the exit: nothing to do, nothing raised
        return transport

    transport = run_on(loop_name, main, monkeypatch)
    assert transport.get_returncode() == -9


def test_a_command_that_cannot_run_raises_as_subprocess_exec_would(monkeypatch) -> None:
    async def main():
        with pytest.raises(FileNotFoundError):
            await spawn.spawn(Recorder, ["/nonexistent/engine"])

    run_on("asyncio", main, monkeypatch)


@pytest.mark.slow
@pytest.mark.skipif(STOCKFISH is None, reason="Debian's stockfish is not installed")
@pytest.mark.parametrize("loop_name", LOOPS)
def test_real_engines_start_play_and_quit_without_a_thread_per_engine(loop_name,
                                                                      monkeypatch) -> None:
    """asyncio's own subprocess_exec starts a waitpid thread for every child (Python 3.11's
    default child watcher) and uvloop forks the runner: neither may happen per engine. One
    spawner thread starts them all."""
    def threads() -> list[str]:
        return sorted(t.name for t in threading.enumerate())

    async def main():
        first = await start_engine(EngineConfig(name="sf", command=STOCKFISH))
        before = threads()
        engines = [first, *await asyncio.gather(*(start_engine(EngineConfig(
            name=f"sf{i}", command=STOCKFISH)) for i in range(4)))]
        during = threads()
        board = chess.Board()
        moves = []
        for proc in engines:
            assert isinstance(proc.transport, spawn.EngineTransport)
            result = await proc.protocol.play(board, chess.engine.Limit(nodes=2000))
            moves.append(result.move)
        pids = [proc.pid for proc in engines]
        for proc in engines:
            await proc.close()
        codes = [proc.transport.get_returncode() for proc in engines]
        return before, during, moves, pids, codes

    before, during, moves, pids, codes = run_on(loop_name, main, monkeypatch)
    assert during == before, f"threads {before} became {during} for 4 more engines"
    assert sum(name.startswith("engine-spawner") for name in during) == 1
    assert all(m in chess.Board().legal_moves for m in moves)
    assert all(code is not None for code in codes)  # each quit was seen
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in pids)


@pytest.mark.parametrize("loop_name", LOOPS)
def test_an_engine_crash_in_a_search_ends_it_with_its_exit_code(loop_name, monkeypatch) -> None:
    async def main():
        proc = await start_engine(EngineConfig(name="crash", command=sys.executable,
                                               args=(str(FAKE), "--crash-on-go", "1")))
        with pytest.raises(chess.engine.EngineTerminatedError):
            await proc.protocol.play(chess.Board(), chess.engine.Limit(nodes=10))
        code = await asyncio.wait_for(proc.protocol.returncode, 10)
        alive = proc.alive
        await proc.close()
        return code, alive

    code, alive = run_on(loop_name, main, monkeypatch)
    assert code == 1 and not alive


def test_without_pidfds_engines_start_through_subprocess_exec(monkeypatch) -> None:
    monkeypatch.setattr(spawn, "_available", False)

    async def main():
        proc = await start_engine(EngineConfig(name="fake", command=sys.executable,
                                               args=(str(FAKE),)))
        kind = type(proc.transport)
        result = await proc.protocol.play(chess.Board(), chess.engine.Limit(nodes=10))
        await proc.close()
        return kind, result.move

    kind, move = run_on("asyncio", main, monkeypatch)
    assert not issubclass(kind, spawn.EngineTransport)
    assert move in chess.Board().legal_moves


@pytest.mark.parametrize("turns", [1, 2, 3])
@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_start_cancelled_while_the_spawner_works_leaves_no_process(loop_name, turns,
                                                                     monkeypatch) -> None:
    """Cancelled before its order went to the spawner thread (1 turn of the loop), while
    the spawner starts it (2), or once the process runs (3: delivered or about to be): no
    process is left."""
    marker = "61.4142"  # sleep's argument: finds the process if it were left behind

    def left() -> list[psutil.Process]:
        found = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            if proc.info["cmdline"] == ["/bin/sleep", marker] and \
                    proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc)
        return found

    async def main():
        task = asyncio.ensure_future(spawn.spawn(Recorder, ["/bin/sleep", marker]))
        for _ in range(turns):
            await asyncio.sleep(0)
        while turns == 3 and not left() and not task.done():
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        spawn._spawner_pool().submit(lambda: None).result()  # the start and its discard ran
        for _ in range(100):
            if not left():
                break
            await asyncio.sleep(0.05)

    run_on(loop_name, main, monkeypatch)
    assert left() == []


@pytest.mark.parametrize("loop_name", LOOPS)
def test_an_exit_reaped_by_a_signal_keeps_its_exit_code(loop_name, monkeypatch) -> None:
    """Popen's send_signal polls (and reaps) before it signals: a process that exited before
    the loop saw its pidfd still reports its own exit code, not a lost one."""
    async def main():
        transport, proto = await spawn.spawn(Recorder, ["/bin/sh", "-c", "exit 7"],
                                             stderr=asyncio.subprocess.DEVNULL)
        while psutil.Process(transport.get_pid()).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.01)  # exited, and the loop has not run since: its exit is unseen
        transport.kill()
        transport.close()
        await asyncio.wait_for(proto.lost, 10)
        return transport

    assert run_on(loop_name, main, monkeypatch).get_returncode() == 7


def _open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_a_pipe_end_closes_its_descriptor_once_and_never_one_that_took_its_number() -> None:
    read, write = os.pipe()
    end = spawn.PipeEnd(read)
    assert end.fileno() == read and not end.closed
    end.close()
    with pytest.raises(OSError):
        os.fstat(read)  # closed: its own descriptor
    other_read, other_write = os.pipe()  # the lowest free number: the one just closed
    try:
        assert other_read == read
        end.close()  # a second close must not close the other pipe that took the number
        os.fstat(other_read)
        with pytest.raises(ValueError):
            end.fileno()
        # the loop (libuv) closed the number and another thread took it before close()
        read2, write2 = os.pipe()
        late = spawn.PipeEnd(read2)
        os.dup2(other_read, read2)  # closes read2 and puts another pipe on its number
        late.close()
        assert os.fstat(read2).st_ino == os.fstat(other_read).st_ino  # still the other's
        os.close(read2)
        os.close(write2)
    finally:
        os.close(other_read)
        os.close(other_write)
        os.close(write)


@pytest.mark.slow
@pytest.mark.parametrize("loop_name", LOOPS)
def test_the_loop_closing_a_pipe_never_closes_another_games_descriptor(loop_name,
                                                                       monkeypatch) -> None:
    """The EBADF of a cutechess game beside other games (Concurrency 2): uvloop closes each
    pipe's descriptor in libuv and then the object it was given (MagicStack/uvloop#763).
    Between the two, another thread of the runner (the spawner starting another game's
    process, a /proc walk) may be given the number. Here that thread is simulated at the
    worst moment: when the loop calls ``close()`` on a pipe end whose number is already
    free, a new pipe takes the number; it must still be open after the close. The processes
    are a cutechess-like process (runner.play.processes.start_process), an engine of the
    referee (start_engine) and a bare spawn; every descriptor they had is closed after."""
    real_close = spawn.PipeEnd.close
    squatted: list[bool] = []  # per number taken by the stand-in thread: did it survive?

    def close(self: spawn.PipeEnd) -> None:
        fd = self.fd
        squatter = None
        if fd >= 0:
            try:
                os.fstat(fd)
            except OSError:  # freed by the loop already: another thread gets the number now
                squatter = os.pipe()  # the lowest free number: mostly this very one (no
                if fd not in squatter:  # dup2 onto it: a real thread may hold it by now)
                    os.close(squatter[0])
                    os.close(squatter[1])
                    squatter = None
        real_close(self)
        if squatter is not None:
            try:
                squatted.append(os.fstat(fd).st_ino == os.fstat(squatter[0]).st_ino)
            except OSError:
                squatted.append(False)  # closed under the thread that owned it: EBADF there
            for number in {fd, *squatter}:
                with contextlib.suppress(OSError):
                    os.close(number)

    monkeypatch.setattr(spawn.PipeEnd, "close", close)

    async def play_all():
        cutechess = await processes.start_process(
            [sys.executable, "-c", "print('Finished game 1 (a vs b): 1-0 {White mates}')"])
        engine = await start_engine(EngineConfig(name="fake", command=sys.executable,
                                                 args=(str(FAKE),)))
        transport, proto = await spawn.spawn(
            Recorder, ["/bin/sh", "-c", "echo out; echo err >&2"], stderr=asyncio.subprocess.PIPE)
        result = await engine.protocol.play(chess.Board(), chess.engine.Limit(nodes=10))
        output = await cutechess.stdout.read()
        assert await asyncio.wait_for(cutechess.wait(), 10) == 0
        await asyncio.wait_for(proto.lost, 10)
        await engine.close()
        cutechess.close()
        transport.close()
        for _ in range(20):  # libuv's closes end on a later turn of the loop
            await asyncio.sleep(0.01)
        return output, result.move

    async def main():
        await play_all()  # the first opens what the loop and libraries keep (/dev/null)
        before = _open_fds()
        output, move = await play_all()
        return before, _open_fds(), output, move

    before, after, output, move = run_on(loop_name, main, monkeypatch)
    assert b"Finished game 1" in output and move in chess.Board().legal_moves
    assert all(squatted), f"{squatted.count(False)} closes hit a descriptor another thread took"
    assert after <= before, f"descriptors left open: {sorted(after - before)}"
    if loop_name == "uvloop":  # libuv closes first: the race was exercised (uvloop 0.23)
        assert squatted, "uvloop no longer closes the pipe before the object: see PipeEnd"


@pytest.mark.parametrize("loop_name", LOOPS)
def test_starts_asked_for_in_one_turn_of_the_loop_are_one_job_of_the_spawner(
        loop_name, monkeypatch) -> None:
    """A game's two engines are asked for together: they are started by one job of the
    spawner thread, and the loop is woken once for both (issue #52), each still its own
    process and transport; a start that fails fails only its own caller."""
    jobs: list[object] = []
    pool = spawn._spawner_pool()

    class Counting:
        def submit(self, fn, *args):  # noqa: ANN001, ANN002, ANN202
            jobs.append(fn)
            return pool.submit(fn, *args)

    monkeypatch.setattr(spawn, "_spawner_pool", lambda: Counting())

    async def main():
        results = await asyncio.gather(
            spawn.spawn(Recorder, ["/bin/sh", "-c", "exit 3"], stderr=asyncio.subprocess.DEVNULL),
            spawn.spawn(Recorder, ["/bin/sh", "-c", "exit 4"], stderr=asyncio.subprocess.DEVNULL),
            spawn.spawn(Recorder, ["/no/such/program"]), return_exceptions=True)
        starts = len(jobs)
        (first, proto1), (second, proto2), missing = results
        await asyncio.wait_for(asyncio.gather(proto1.lost, proto2.lost), 10)
        return starts, first.get_pid() != second.get_pid(), \
            (first.get_returncode(), second.get_returncode()), missing

    starts, distinct, codes, missing = run_on(loop_name, main, monkeypatch)
    assert starts == 1 and distinct and codes == (3, 4)
    assert isinstance(missing, FileNotFoundError)
