"""Engines started off the loop's back (runner.play.spawn): Popen + pidfd, no thread per engine.

Real processes: Debian's Stockfish, the fake UCI engine and plain shell commands, on both
event loops the runner can run on.
"""

from __future__ import annotations

import asyncio
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
from runner.play import eventloop, spawn
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


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_start_cancelled_while_the_spawner_works_leaves_no_process(loop_name,
                                                                     monkeypatch) -> None:
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
        await asyncio.sleep(0)  # submitted to the spawner thread, not yet back
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
