"""Engine processes started without stalling the event loop that plays the other games.

``loop.subprocess_exec`` costs the loop thread more than the start itself: asyncio's default
child watcher (Python 3.11) starts and joins a thread per child, and uvloop's libuv forks
the whole runner. Each stalls every game sharing the loop for several milliseconds (13 ms
measured on a loaded machine: docs/performance.md), on the clock of an engine whose
``bestmove`` arrives meanwhile.

:func:`spawn` starts the process with :class:`subprocess.Popen` (vfork + exec, no Python
code in the child) on one long-lived spawner thread (the starts asked for in one turn of the
loop, a game's two engines, in one job of it, handed back with one wake of the loop), hands
its pipes to the loop, and learns
of its exit from a pidfd (Linux 5.3+) watched by the loop: no thread per engine, no fork of
the runner, and the loop goes on while the child execs. The transport it
returns is what python-chess's protocols expect of a subprocess transport, and keeps
asyncio's order: ``process_exited``, then ``connection_lost`` once the process has exited
and its output pipes are closed.

Where pidfds are missing (another OS, an old kernel, a sandbox refusing the call)
:func:`available` is false and the caller uses ``loop.subprocess_exec``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from runner.play import pipes, timeslice

#: Bytes asked for by each read of an engine's stdout/stderr. asyncio asks for 256 KiB,
#: which glibc can serve with mmap/mremap/munmap on every read: up to 0.3 ms per move in a
#: bare asyncio loop reading Stockfish here (docs/performance.md). Lines longer than this
#: still arrive whole (partial lines are buffered); engines write far less per read.
PIPE_READ_SIZE = 16 * 1024

_available: bool | None = None


def available() -> bool:
    """Whether this system gives pidfds (checked once, on this process)."""
    global _available
    if _available is None:
        try:
            fd = os.pidfd_open(os.getpid())
        except (AttributeError, OSError):
            _available = False
        else:
            os.close(fd)
            _available = True
    return _available


class PipeEnd:
    """The runner's end of one of an engine's pipes, the one owner of its descriptor, as
    handed to the loop's ``connect_read_pipe`` / ``connect_write_pipe`` (which read
    ``fileno()`` and call ``close()`` when the transport ends).

    Not Popen's file object: uvloop (0.23 here) lets libuv close the descriptor number
    itself and then closes the file object it was given as well (MagicStack/uvloop#763), a
    second close of the same number. Between the two, another thread of the runner (the
    spawner starting another game's engine or cutechess, a walk of /proc) may have been
    given that number, and the second close closes its descriptor: EBADF in another game.
    asyncio's own loop closes only the file object. So :meth:`close` closes the descriptor
    at most once, and only while the number still refers to this pipe (device and inode
    from ``fstat``: another pipe or file has others; no other descriptor of the runner
    refers to this pipe), whichever loop runs. There is deliberately no finalizer: a
    transport collected unclosed is closed by libuv (uvloop) or by the transport's own
    finalizer calling :meth:`close` (asyncio).
    """

    __slots__ = ("fd", "_identity")

    def __init__(self, fd: int):
        self.fd = fd
        st = os.fstat(fd)
        self._identity = (st.st_dev, st.st_ino)

    def fileno(self) -> int:
        if self.fd < 0:
            raise ValueError("I/O operation on a closed pipe")
        return self.fd

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def detach(self) -> int:
        """The descriptor, now the caller's to close (this end no longer closes it)."""
        fd, self.fd = self.fileno(), -1
        return fd

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd < 0:
            return
        try:
            st = os.fstat(fd)
        except OSError:
            return  # closed by the loop already (libuv), and the number is free
        if (st.st_dev, st.st_ino) == self._identity:
            os.close(fd)
        # else: closed by the loop already, and the number is another's now: not ours

    def __repr__(self) -> str:
        return f"<PipeEnd fd={self.fd}>"


class Delivery(asyncio.Protocol):
    """An engine's output pipe handed straight to its protocol as it is read, without the
    extra turn of the loop (``call_soon``) that asyncio's subprocess transport takes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, protocol: Any, fd: int):
        self.loop = loop
        self.protocol = protocol
        self.fd = fd

    def data_received(self, data: bytes) -> None:
        try:
            self.protocol.pipe_data_received(self.fd, data)
        except Exception as exc:  # noqa: BLE001 - as the loop reports a failed callback
            # raised here, the pipe would be closed: report it like a failed call_soon
            self.loop.call_exception_handler({"message": "engine output handler failed",
                                              "exception": exc, "protocol": self.protocol})


class _Output(Delivery):
    """One output pipe of an :class:`EngineTransport`; its end is the transport's to count."""

    def __init__(self, owner: EngineTransport, fd: int):
        super().__init__(owner.loop, owner.protocol, fd)
        self.owner = owner

    def eof_received(self) -> bool:
        return False  # close the read transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner.pipe_closed(self.fd, exc)


class _Input(asyncio.Protocol):
    """The engine's stdin: nothing to read; its loss only ends writing."""

    def __init__(self, owner: EngineTransport):
        self.owner = owner

    def connection_lost(self, exc: Exception | None) -> None:
        with contextlib.suppress(Exception):
            self.owner.protocol.pipe_connection_lost(0, exc)


class EngineTransport(asyncio.SubprocessTransport):
    """A subprocess transport over a :class:`subprocess.Popen` child and a pidfd."""

    def __init__(self, loop: asyncio.AbstractEventLoop, proc: subprocess.Popen[bytes],
                 protocol: asyncio.SubprocessProtocol):
        super().__init__()
        self.loop = loop
        self.proc = proc
        self.protocol = protocol
        self.pipes: dict[int, asyncio.BaseTransport] = {}
        self.open_outputs: set[int] = set()
        self._returncode: int | None = None
        self.pidfd_watched: int | None = None
        self._closed = False
        self._finished = False
        self.handle: psutil.Process | None = None
        self.create_time = 0.0

    # -- what python-chess and the runner call

    def get_pid(self) -> int:
        return self.proc.pid

    def get_returncode(self) -> int | None:
        return self._returncode

    def get_pipe_transport(self, fd: int) -> Any:
        return self.pipes.get(fd)

    def is_closing(self) -> bool:
        return self._closed

    def send_signal(self, signum: int) -> None:
        """Signal the process unless its exit was seen. Popen's own ``send_signal`` polls
        first and may reap it then (its exit code is kept: :meth:`_exited`)."""
        if self._returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def close(self) -> None:
        """Close the pipes; a process still running is killed (as asyncio's transport does)."""
        if self._closed:
            return
        self._closed = True
        for pipe in self.pipes.values():
            pipe.close()
        self.kill()
        # the pidfd stays watched: the exit is reaped and reported when it comes

    # -- plumbing

    def watch_exit(self, pidfd: int) -> None:
        self.pidfd_watched = pidfd
        self.loop.add_reader(pidfd, self._exited)

    def _exited(self) -> None:
        """The pidfd is readable: the process has ended. Reap it (it is this transport's)."""
        try:
            pid, status = os.waitpid(self.proc.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already: by Popen's poll before a signal (its
            code = self.proc.returncode  # code), or by someone else (the code is lost)
            code = 255 if code is None else code
        else:
            if pid == 0:  # spurious: not ended yet
                return
            code = os.waitstatus_to_exitcode(status)
        self._stop_watching()
        self.proc.returncode = code  # Popen then neither warns nor keeps it for reaping
        self._returncode = code
        with contextlib.suppress(Exception):
            self.protocol.process_exited()
        self._try_finish()

    def _stop_watching(self) -> None:
        if self.pidfd_watched is not None:
            self.loop.remove_reader(self.pidfd_watched)
            os.close(self.pidfd_watched)
            self.pidfd_watched = None

    def pipe_closed(self, fd: int, exc: Exception | None) -> None:
        self.open_outputs.discard(fd)
        with contextlib.suppress(Exception):
            self.protocol.pipe_connection_lost(fd, exc)
        self._try_finish()

    def _try_finish(self) -> None:
        if self._finished or self._returncode is None or self.open_outputs:
            return
        self._finished = True
        stdin = self.pipes.get(0)
        if stdin is not None:
            stdin.close()
        self.loop.call_soon(self.protocol.connection_lost, None)

    def __del__(self) -> None:  # the loop is gone: do not leave a file descriptor behind
        if self.pidfd_watched is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd_watched)
            self.pidfd_watched = None


_spawner: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None


def _spawner_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The one thread that starts engines, for the life of this process (made again after a
    fork). It never exits before the process: an engine's parent-death signal fires when the
    thread that started it ends, and that must mean the runner's death, not a pool's idling.
    It asks for the short time slice its engines inherit (runner.play.timeslice)."""
    global _spawner
    if _spawner is None or _spawner[0] != os.getpid():
        _spawner = (os.getpid(), concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="engine-spawner", initializer=timeslice.for_engines))
    return _spawner[1]


def warm_up() -> None:
    """Start the spawner thread now (with its module's imports), before any engine is on
    the clock: the first game's start then costs the loop no import."""
    _spawner_pool().submit(lambda: None).result()


def off_loop(fn: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``fn`` on the spawner thread (process-table work that must not stall the loop)."""
    return _spawner_pool().submit(fn)


@dataclass
class Started:
    """A process just started, with what is read of it before the loop sees it."""

    proc: subprocess.Popen[bytes]
    pidfd: int
    handle: psutil.Process | None  # None: it had already exited
    create_time: float
    pipes: dict[int, PipeEnd]  # the runner's ends, by the child's fd (0 stdin, 1, 2)

    def close_pipes(self) -> None:
        for end in self.pipes.values():
            end.close()


def _pipes_for(streams: tuple[Any, Any, Any]) -> tuple[list[Any], dict[int, int], list[int]]:
    """The child's stdin, stdout and stderr as handed to Popen, a pipe made here for each
    asked to be one (``subprocess.PIPE``): (what Popen gets, the runner's ends by the child's
    fd, the child's ends, to close once Popen has returned). Popen's own pipes would come
    as file objects, each then duplicated and closed to leave the runner one descriptor."""
    handed: list[Any] = []
    ours: dict[int, int] = {}
    theirs: list[int] = []
    try:
        for fd, stream in enumerate(streams):
            if stream is not subprocess.PIPE:
                handed.append(stream)
                continue
            read, write = os.pipe()  # both not inheritable: Popen dup2s the child's end
            ours[fd], child = (write, read) if fd == 0 else (read, write)
            theirs.append(child)
            handed.append(child)
    except BaseException:
        for end in (*ours.values(), *theirs):
            os.close(end)
        raise
    return handed, ours, theirs


def _start(argv: list[str], stderr: Any, popen_args: dict[str, Any]) -> Started:
    """On the spawner thread: start the process and read its pidfd and create time.

    Popen waits until the vforked child has exec'd (CPython drops the GIL meanwhile), and
    reading /proc of a process in the middle of its exec waits for that exec: neither may
    stall the event loop that times the other games' moves."""
    handed, ours, theirs = _pipes_for((subprocess.PIPE, popen_args.pop("stdout", subprocess.PIPE),
                                       stderr))
    try:
        proc = subprocess.Popen(argv, stdin=handed[0], stdout=handed[1], stderr=handed[2],
                                bufsize=0, **popen_args)
    except BaseException:
        for end in ours.values():
            os.close(end)
        raise
    finally:
        for end in theirs:
            os.close(end)
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        for end in ours.values():
            os.close(end)
        proc.kill()
        proc.wait()
        raise
    try:
        pipes = {fd: PipeEnd(end) for fd, end in ours.items()}
    except BaseException:  # (an fstat failing)
        for end in ours.values():
            os.close(end)
        os.close(pidfd)
        proc.kill()
        proc.wait()
        raise
    handle, create_time = None, 0.0
    with contextlib.suppress(psutil.Error):  # not reaped (ours to reap): the pid is this one
        handle = psutil.Process(proc.pid)
        create_time = handle.create_time()
    return Started(proc, pidfd, handle, create_time, pipes)


def _discard(started: Started) -> None:
    """A start nobody takes (its caller was cancelled meanwhile): kill and reap it."""
    os.close(started.pidfd)
    started.close_pipes()
    with contextlib.suppress(ProcessLookupError):
        started.proc.kill()
    _spawner_pool().submit(started.proc.wait)


@dataclass
class _Order:
    """One process to start, for a caller on the loop awaiting ``future``."""

    argv: list[str]
    stderr: Any
    popen_args: dict[str, Any]
    future: asyncio.Future[Started]


#: The orders made in this turn of each loop, started together by one job of the spawner
#: thread (a game's two engines: one hand-over to the spawner and one wake of the loop).
_orders: dict[asyncio.AbstractEventLoop, list[_Order]] = {}


def _start_all(orders: list[_Order]) -> list[Started | BaseException]:
    """On the spawner thread: each order started, or why it could not be."""
    results: list[Started | BaseException] = []
    for order in orders:
        try:
            results.append(_start(order.argv, order.stderr, order.popen_args))
        except Exception as exc:  # noqa: BLE001 - the caller's to raise
            results.append(exc)
    return results


def _deliver(orders: list[_Order], results: list[Started | BaseException]) -> None:
    """On the loop: each result to its caller; a start whose caller is gone is discarded."""
    for order, result in zip(orders, results, strict=True):
        if order.future.done():  # cancelled meanwhile
            if isinstance(result, Started):
                _discard(result)
        elif isinstance(result, Started):
            order.future.set_result(result)
        else:
            order.future.set_exception(result)


def _send(loop: asyncio.AbstractEventLoop) -> None:
    """The loop's orders of this turn (those still awaited) to the spawner thread, as one job."""
    orders = [order for order in _orders.pop(loop, ()) if not order.future.done()]
    if not orders:
        return

    def done(job: concurrent.futures.Future[list[Started | BaseException]]) -> None:
        exc = job.exception()
        results = [exc] * len(orders) if exc is not None else job.result()
        try:
            loop.call_soon_threadsafe(_deliver, orders, results)
        except RuntimeError:  # the loop is closed: nobody will take them
            for result in results:
                if isinstance(result, Started):
                    _discard(result)

    try:
        job = _spawner_pool().submit(_start_all, orders)
    except RuntimeError as exc:  # the interpreter is shutting down
        for order in orders:
            order.future.set_exception(exc)
        return
    job.add_done_callback(done)


async def _started(argv: list[str], stderr: Any, popen_args: dict[str, Any]) -> Started:
    """``argv`` started on the spawner thread, with the other starts asked for in this turn
    of the loop (:func:`_send`); cancelled, what it started is killed and reaped."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Started] = loop.create_future()
    orders = _orders.setdefault(loop, [])
    if not orders:
        loop.call_soon(_send, loop)
    orders.append(_Order(argv, stderr, popen_args, future))
    try:
        return await future
    except asyncio.CancelledError:
        if future.done() and not future.cancelled() and future.exception() is None:
            _discard(future.result())  # delivered, but its caller was cancelled before it ran
        raise


def _native_output(transport: EngineTransport, end: PipeEnd, module: Any) -> Any:
    """The engine's stdout handed to a compiled reader thread, which owns the descriptor
    from then on (``end`` lets go of it: the runner has no other descriptor of the pipe)."""
    fd = end.detach()
    try:
        return pipes.NativeOutput(transport, fd, module)
    except BaseException:
        os.close(fd)
        raise


async def spawn(protocol_factory: Callable[[], asyncio.SubprocessProtocol], argv: list[str],
                *, compiled_reader: bool = False, **popen_args: Any) -> tuple[EngineTransport, Any]:
    """Start ``argv`` with stdin and stdout piped to ``protocol_factory()``; ``stdout`` (None:
    inherited) and ``stderr`` as in ``popen_args`` (PIPE: delivered as fd 2). Raises OSError as ``subprocess_exec`` would.

    The transport's ``handle`` and ``create_time`` are the process's psutil handle (None if it
    had already exited) and create time, read right after its start. ``compiled_reader``:
    stdout is read by runner.play.pipes' compiled reader where it is chosen, and the protocol
    then has ``bytes_read(data, read_at)`` and ``move_read(...)`` (runner.play.engines)."""
    loop = asyncio.get_running_loop()
    stderr = popen_args.pop("stderr", subprocess.PIPE)
    started = await _started(argv, stderr, popen_args)  # cancelled: nothing stays
    proc, pidfd = started.proc, started.pidfd
    protocol = protocol_factory()
    transport = EngineTransport(loop, proc, protocol)
    transport.handle, transport.create_time = started.handle, started.create_time
    protocol.connection_made(transport)  # before any output can be delivered
    try:
        outputs = [(fd, end) for fd, end in started.pipes.items() if fd != 0]
        transport.open_outputs.update(fd for fd, _ in outputs)
        compiled = pipes.native() if compiled_reader else None
        for fd, end in outputs:
            if fd == 1 and compiled is not None:  # read below Python (runner.play.pipes)
                transport.pipes[fd] = _native_output(transport, end, compiled)
                continue
            read, _ = await loop.connect_read_pipe(lambda fd=fd: _Output(transport, fd), end)
            if hasattr(read, "max_size"):
                read.max_size = PIPE_READ_SIZE
            transport.pipes[fd] = read
        write, _ = await loop.connect_write_pipe(lambda: _Input(transport), started.pipes[0])
        transport.pipes[0] = write
        transport.watch_exit(pidfd)  # an exit before now is seen at once: the fd is readable
    except BaseException:
        transport.close()  # killed; Popen reaps it later if the pidfd was not watched yet
        for fd, end in started.pipes.items():  # not handed to the loop yet (a transport
            if fd not in transport.pipes:      # closes its own: libuv may do it later)
                end.close()
        if transport.pidfd_watched is None:
            os.close(pidfd)
        raise
    return transport, protocol
