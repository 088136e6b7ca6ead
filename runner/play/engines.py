"""Engines: starting one, its client (the UCI and XBoard protocols), probing and closing it.

The referee starts one fresh process per engine per game (so an engine that crashed is
"restarted" simply by the next game) and kills its whole tree when the game ends; engines
kept between games (``Restart: off``) are runner.play.keep's. How processes are started,
owned, pinned, killed and swept is runner.play.processes (the one place for it).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import functools
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import chess.engine
import psutil

from runner.config.problems import did_you_mean
from runner.config.typed import EngineConfig
from runner.domain.text import printable
from runner.play import spawn
from runner.play.affinity import pin_self
from runner.play.clientstate import GONE, IDLE, PONDERING, STOPPING, THINKING  # noqa: F401 - also the client's API
from runner.play.engine960 import chess960_problem
from runner.play.processes import (  # noqa: F401 - the process API, also used from here
    OWNER_ENV,
    TASKSET,
    child_argv,
    child_popen_args,
    die_with_parent,
    kill_process_group,
    kill_tree_off_loop,
    kill_trees_off_loop,
    new_owner_token,
    owned_env,
    pin_off_loop,
    pinned_argv,
    signal_group,
    sweep_orphans,
)
from runner.play.uci import NotReady, UciMove, go_line
from runner.play.ucistart import UciStart

LOG = logging.getLogger(__name__)


def _popen_args(engine: EngineConfig, token: str,
                cpus: Sequence[int] | None = None, stderr: Any = None) -> dict[str, Any]:
    args = child_popen_args(token)
    if engine.env:  # its GPUs (runner.domain.gpus.hand_over)
        args["env"] = {**args["env"], **{k.encode(): v.encode() for k, v in engine.env}}
    if cpus and TASKSET is None:  # pinned before exec: every thread inherits the mask
        steps = [args.get("preexec_fn"), pin_self(cpus)]

        def preexec() -> None:  # pragma: no cover - runs in the forked child
            for step in steps:
                if step is not None:
                    step()

        args["preexec_fn"] = preexec
    args["stderr"] = asyncio.subprocess.DEVNULL if stderr is None else stderr
    if engine.working_dir:
        args["cwd"] = engine.working_dir
    return args


class _Timed:
    """Mixin: the runner's side of an engine client, over python-chess's public protocol API.

    One line reader (:meth:`pipe_data_received`) reads every byte the engine writes, stamps
    its arrival (``read_at``, taken before any other work), logs each line (``io_log``) and
    keeps what the referee needs: the time and text of the last move (``move_received``,
    ``last_move_text``), the last PV line and the first other lines (what a failing engine
    said). While a UCI move is on (``searching``: a runner.play.uci.UciMove) the bytes are
    that move's; otherwise the whole lines are handed to python-chess's protocol (the
    handshake, options, XBoard moves, quit), which never sees a partial line.

    The referee's clock is wall time from sending ``go`` to receiving the move, measured
    here so handshakes, ``isready`` and ``ping`` are not charged.
    """

    move_token = "bestmove"

    def __init__(self, io_log: Callable[[str, str], None] | None = None) -> None:
        super().__init__()  # python-chess's Protocol
        self.io_log = io_log  # EngineLogs: (">" / "<", line)
        self.state = IDLE
        self.stray: str | None = None  # a move line that came in no search (not kept)
        self.go_sent: float | None = None
        self.move_received: float | None = None
        self.last_move_text: str | None = None
        self.last_pv_line: str | None = None  # the last search line with a PV, as sent
        self.other_lines: list[str] = []  # the first lines that are neither moves nor PVs
        self.searching: Any = None  # the UCI move being played (runner.play.uci.UciMove)
        self.ponder_told = False  # "setoption name Ponder value true" sent
        self.partial = b""  # the start of a line not complete yet
        self.read_at = 0.0  # when the data being read came
        self.pipes: asyncio.SubprocessTransport | None = None
        self.exit_code: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.go_future: asyncio.Future[float] | None = None

    # -- asyncio's protocol callbacks (python-chess's are called after ours)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.pipes = transport  # type: ignore[assignment]
        super().connection_made(transport)  # type: ignore[misc]

    def connection_lost(self, exc: Exception | None) -> None:
        self.state = GONE
        if not self.exit_code.done():
            code = self.pipes.get_returncode() if self.pipes is not None else None
            self.exit_code.set_result(-1 if code is None else code)
        super().connection_lost(exc)  # type: ignore[misc]

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        read_at = time.monotonic()  # a move in it came now, whatever is done before
        if fd != 1 or isinstance(data, str):
            super().pipe_data_received(fd, data)  # type: ignore[misc]
            return
        self.bytes_read(data, read_at)

    def move_read(self, line: bytes, read_at: float, score: bytes | None, bound: bytes | None,
                  pv: bytes | None) -> None:
        """A UCI move's ``bestmove`` line as the compiled reader found it (runner.play.pipes),
        read at ``read_at``, with the search's last score, bound and PV lines."""
        self.read_at = read_at
        move = self.searching
        if move is not None and move.gone:
            move.answered(line, read_at, score, bound, pv)
            return
        self.bytes_read(line + b"\n", read_at)  # no move of ours is on: a line like any

    def bytes_read(self, data: bytes, read_at: float) -> None:
        """What the engine wrote on its stdout, read at ``read_at`` (monotonic)."""
        self.read_at = read_at
        move = self.searching
        if move is not None:
            data = move.feed(data, read_at)  # what the engine wrote after its bestmove
            if not data:
                return
        text = self.partial + data if self.partial else data
        end = text.rfind(b"\n")
        if end < 0:
            self.partial = text
            return
        self.partial = text[end + 1:]
        whole = text[:end + 1]
        for raw in whole.split(b"\n")[:-1]:
            self.line_read(raw.decode("utf-8", errors="replace").rstrip("\r"))
        super().pipe_data_received(1, self.handed_on(whole))  # type: ignore[misc]

    # -- the lines

    def handed_on(self, whole: bytes) -> bytes:
        """What python-chess's protocol gets of these whole lines."""
        return whole

    def line_read(self, line: str) -> None:
        """One line the engine wrote, outside a UCI move (the handshake, XBoard, idle)."""
        if self.io_log is not None:
            self.io_log("<", line)
        if line.startswith(self.move_token):
            tokens = line.split()
            if tokens[0] == self.move_token:
                if self.state != THINKING and self.stray is None:  # nobody asked for it (a
                    self.stray = line  # stop answered too late included): never kept
                if self.move_received is None:
                    self.move_received = self.read_at
                    self.last_move_text = tokens[1] if len(tokens) > 1 else ""
                if self.state == THINKING:
                    self.state = IDLE
        elif self._is_pv_line(line):
            self.last_pv_line = line
        elif len(self.other_lines) < 20:
            self.other_lines.append(line)  # what a failing engine said (probe, preflight)

    def _is_pv_line(self, line: str) -> bool:
        return line.startswith("info ") and " pv " in line

    def take_pv_line(self) -> str | None:
        """The last line with a PV since the previous call (kept raw: parsing every info
        line's PV on a board would cost more than the rest of the move)."""
        line, self.last_pv_line = self.last_pv_line, None
        return line

    def expect_go(self) -> asyncio.Future[float]:
        """A future resolved with the (monotonic) time the next ``go`` is sent.

        Lets the referee start a move's deadline when the clock starts, not when the
        ``ucinewgame``/``isready`` (``new``/``ping``) exchange before it starts.
        """
        self.go_sent = None
        self.go_future = asyncio.get_running_loop().create_future()
        return self.go_future

    def send_line(self, line: str) -> None:
        """python-chess's public ``send_line``: every line it sends passes here."""
        if line == "go" or line.startswith("go "):
            self.go_sent = time.monotonic()
            self.move_received = None
            self.last_move_text = None
            self.state = THINKING
            if self.go_future is not None and not self.go_future.done():
                self.go_future.set_result(self.go_sent)
        if self.io_log is not None:
            self.io_log(">", line)
        super().send_line(line)  # type: ignore[misc]

    def write_lines(self, *lines: str) -> None:
        """Lines sent by the runner itself (a UCI move), in one write."""
        if self.io_log is not None:
            for line in lines:
                self.io_log(">", line)
        assert self.pipes is not None
        self.pipes.get_pipe_transport(0).write(("\n".join(lines) + "\n").encode("utf-8"))

    @property
    def sound(self) -> bool:
        """Idle, and never sent a move nobody asked for: fit for another game."""
        return self.state == IDLE and self.stray is None


class TimedUciProtocol(_Timed, chess.engine.UciProtocol):
    """UCI: started by runner.play.ucistart (``starting`` while it is on: the lines of the
    start are its own, not python-chess's), moves by runner.play.uci."""

    move_token = "bestmove"

    def __init__(self, io_log: Callable[[str, str], None] | None = None) -> None:
        super().__init__(io_log)
        self.starting: UciStart | None = None

    def bytes_read(self, data: bytes, read_at: float) -> None:
        starting = self.starting
        if starting is None or self.searching is not None:
            super().bytes_read(data, read_at)
            return
        # the start's: whole lines decoded at once, each the start's or any other line (no
        # python-chess command is on: nothing is handed to it)
        self.read_at = read_at
        text = self.partial + data if self.partial else data
        end = text.rfind(b"\n")
        self.partial = text[end + 1:]
        if end < 0:
            return
        log = self.io_log
        for line in text[:end].decode("utf-8", errors="replace").split("\n"):
            line = line.rstrip("\r")
            if not starting.take(line):
                self.line_read(line)
            elif log is not None:
                log("<", line)


class TimedXBoardProtocol(_Timed, chess.engine.XBoardProtocol):
    """XBoard protocol that also accepts engines without ``setboard`` (e.g. Fairy-Max).

    python-chess refuses such engines; they are fine for games from the standard start
    position (moves are sent one by one), so ``setboard=0`` is handed on as ``setboard=1``
    and ``no_setboard`` lets the referee refuse FEN starts for them.
    """

    move_token = "move"

    def __init__(self, io_log: Callable[[str, str], None] | None = None) -> None:
        super().__init__(io_log)
        self.no_setboard = False

    def _is_pv_line(self, line: str) -> bool:
        # thinking output: "ply score time nodes [seldepth nps tbhits] pv..."
        return line[:1].isdigit()

    def line_read(self, line: str) -> None:
        if line.startswith("feature") and "setboard=0" in line:
            self.no_setboard = True
        elif self.state == THINKING and (line.strip() == "resign"
                                         or line.startswith(("1-0", "0-1", "1/2-1/2"))):
            self.state = IDLE  # it answered its go with a result, not a move
        super().line_read(line)

    def handed_on(self, whole: bytes) -> bytes:
        if b"setboard=0" not in whole:
            return whole
        return b"\n".join(raw.replace(b"setboard=0", b"setboard=1")
                          if raw.startswith(b"feature") else raw for raw in whole.split(b"\n"))


@dataclass
class EngineProcess:
    """A running engine: python-chess protocol plus what is needed to kill it for sure."""

    config: EngineConfig
    transport: asyncio.SubprocessTransport
    protocol: TimedUciProtocol | TimedXBoardProtocol
    pid: int
    create_time: float
    skipped_options: list[str] = field(default_factory=list)
    killed: bool = False
    token: str | None = None  # owner token in the engine's environment
    handle: psutil.Process | None = None  # created at start: checks the create time

    @property
    def alive(self) -> bool:
        return not self.killed and self.transport.get_returncode() is None

    @property
    def sound(self) -> bool:
        """Alive, idle and never sent a move nobody asked for (runner.play.keep)."""
        return self.alive and self.protocol.sound

    def _stop(self) -> concurrent.futures.Future[None]:
        """Kill its whole tree (runner.play.processes): the process group at once from the
        loop (where the leader is reaped, so its pid is still its own), the rest (what
        left the group, what carries its owner token: a walk of /proc) on the spawner
        thread, off the loop."""
        return kill_trees_off_loop([self._let_go()])

    def _let_go(self) -> tuple[int, str | None, dict[str, Any]]:
        """From the loop: signal its process group (while the leader is not reaped) and
        close its pipes; what :func:`runner.play.processes.kill_trees` is handed for the
        rest of its tree. A leader its transport reaped already (it quit) is not looked up
        again: its pid is no longer its own."""
        reaped = self.transport.get_returncode() is not None
        signal_group(self.pid, reaped=reaped)
        with contextlib.suppress(Exception):
            self.transport.close()
        return self.pid, self.token, {"handle": None if reaped else self.handle,
                                      "since_pid": self.pid, "descendants": self.token is None}

    async def quit(self, quit_timeout: float = 1.0) -> None:
        """Ask the engine to quit and wait up to ``quit_timeout`` for it to exit (whatever
        happens: it is killed next, :meth:`close`)."""
        exit_code = self.ask_to_quit()
        if exit_code is not None:
            await asyncio.wait((exit_code,), timeout=quit_timeout)

    def ask_to_quit(self) -> asyncio.Future[int] | None:
        """Send ``quit`` (as python-chess's ``quit`` does, for both protocols) if it is
        alive: the future of its exit code to wait for, or None."""
        if not self.alive:
            return None
        with contextlib.suppress(Exception):  # a pipe closed meanwhile: it is killed next
            self.protocol.send_line("quit")
        return self.protocol.exit_code

    async def close(self, quit_timeout: float = 1.0) -> None:
        """Ask the engine to quit, then kill its whole tree whatever happened (a
        cancellation or a stop signal while it quits included), and wait for that."""
        await close_engines([self], quit_timeout)

    def kill(self) -> None:
        """Hard kill (hung engine, cancelled task); nothing of it runs on the loop but the
        one signal to its process group."""
        self.killed = True
        self._stop()


async def close_engines(procs: Sequence[EngineProcess], quit_timeout: float = 1.0) -> None:
    """Close engines that end together (a game's two, when engines are not kept): each is
    asked to quit at once, then their trees are killed whatever happened (a cancellation or
    a stop signal while they quit included) with one walk of /proc for them all, and that
    is waited for."""
    try:
        exits = [code for code in (proc.ask_to_quit() for proc in procs) if code is not None]
        if exits:  # no task per engine: one wait for all their exits
            await asyncio.wait(exits, timeout=quit_timeout)
    finally:  # done even if this await is cancelled
        await asyncio.wrap_future(kill_trees_off_loop([proc._let_go() for proc in procs]))


class EngineStartError(Exception):
    """The engine could not be started or did not finish its handshake."""

    def __init__(self, message: str, *, stalled: bool = False, printed: str = ""):
        super().__init__(message)
        self.stalled = stalled  # True: no handshake within the timeout; False: crashed/missing
        self.printed = printed  # "; it printed: ..." (what it said instead of the handshake)


_HANDSHAKE_LINES = ("id ", "option ", "uciok", "readyok", "feature ", "pong")


def _printed(protocol: Any, limit: int = 300) -> str:
    """"; it printed: LINE | LINE" (its first lines that were no move or search line, cut
    short and made printable), or "" when it printed none."""
    lines = [line for line in getattr(protocol, "other_lines", None) or []
             if not line.startswith(_HANDSHAKE_LINES)]
    if not lines:
        return ""
    text = printable(" | ".join(lines[:5]))
    return "; it printed: " + (text if len(text) <= limit else text[:limit] + "...")


class _DirectPipe(spawn.Delivery):
    """Output straight to the protocol (:class:`runner.play.spawn.Delivery`) on asyncio's own
    subprocess transport (where engines start through ``loop.subprocess_exec``). The end of
    the pipe still goes through asyncio's own pipe protocol (``inner``), after all the data,
    so python-chess sees the engine's exit as before.
    """

    def __init__(self, inner: Any, protocol: Any, fd: int, loop: asyncio.AbstractEventLoop):
        super().__init__(loop, protocol, fd)
        self.inner = inner

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


def _lean_pipes(transport: Any, protocol: Any) -> None:
    """Small reads and direct delivery (:class:`_DirectPipe`) for an engine's output pipes."""
    loop = asyncio.get_running_loop()
    for fd in (1, 2):
        pipe = transport.get_pipe_transport(fd)
        if pipe is None:
            continue
        if hasattr(pipe, "max_size"):
            pipe.max_size = spawn.PIPE_READ_SIZE
        inner = pipe.get_protocol()
        if isinstance(inner, asyncio.Protocol) and hasattr(inner, "fd"):
            pipe.set_protocol(_DirectPipe(inner, protocol, fd, loop))


async def start_engine(
    engine: EngineConfig,
    *,
    timeout: float = 30.0,
    on_process: Callable[[int, float], object] | None = None,
    cpus: Sequence[int] | None = None,
    io_log: Callable[[str, str], None] | None = None,
    stderr: Any = None,
    confirm: bool = False,
) -> EngineProcess:
    """Start ``engine``, finish the UCI/XBoard handshake and apply its configured Options.

    Options the engine does not have are skipped with a warning (``validate --probe``
    reports them as errors before an event). ``cpus``: pin the engine (every thread, its
    children too) to these cores. ``io_log``: called with every line sent (``">"``) and
    received (``"<"``), from the first line on. ``confirm``: then ask whether it is ready
    (isready/ping), so that an engine that dies of an option's value is found here (the
    engine check before an event) and not in its first game.
    """
    command = [engine.command, *engine.args]
    cls: Any = TimedUciProtocol if engine.protocol == "uci" else TimedXBoardProtocol
    factory = functools.partial(cls, io_log)  # logged from the first line on
    token = new_owner_token()
    transport, protocol = await _spawn(engine, command, factory, token, cpus, stderr)
    pid = transport.get_pid()
    handle, create_time = _process_of(transport, pid)
    recorded = on_process(pid, create_time) if on_process is not None else None
    proc = EngineProcess(engine, transport, protocol, pid, create_time, token=token, handle=handle)
    try:
        await _handshake(proc, timeout, confirm)
        if isinstance(recorded, concurrent.futures.Future):  # its row for the orphan sweep,
            await _committed(recorded)  # committed off the loop meanwhile: before it plays
        if cpus:  # again, on every thread: the engine may have set its own mask meanwhile
            await pin_off_loop(pid, cpus)
    except TimeoutError:
        proc.kill()
        said = _printed(protocol)
        raise EngineStartError(f"{engine.name}: no {engine.protocol} handshake within "
                               f"{timeout:g} s{said}", stalled=True, printed=said) from None
    except (chess.engine.EngineError, chess.engine.EngineTerminatedError, OSError,
            RuntimeError) as exc:  # RuntimeError: asyncio writing to the pipe of an engine
        proc.kill()               # that exited at once ("the handler is closed")
        said = _printed(protocol)
        raise EngineStartError(f"{engine.name}: {exc}{said}", printed=said) from None
    except BaseException:
        proc.kill()
        raise
    return proc


async def _spawn(engine: EngineConfig, command: list[str], factory: Callable[[], Any], token: str,
                 cpus: Sequence[int] | None, stderr: Any) -> tuple[Any, Any]:
    """The engine's process started (transport, protocol); EngineStartError when it cannot be."""
    refused = exec_precheck(engine.command)
    if refused is not None:  # what exec would say; through setpriv it would be an early exit
        raise EngineStartError(f"cannot start {engine.name} ({engine.command}): "
                               f"{exec_problem(engine.command, refused)}")
    try:
        argv = child_argv(pinned_argv(command, cpus))
        if spawn.available():  # no thread or fork in the loop thread per engine
            return await spawn.spawn(factory, argv, compiled_reader=True,
                                     **_popen_args(engine, token, cpus, stderr))
        transport, protocol = await asyncio.get_running_loop().subprocess_exec(
            factory, *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            **_popen_args(engine, token, cpus, stderr))
        _lean_pipes(transport, protocol)
        return transport, protocol
    except OSError as exc:
        raise EngineStartError(f"cannot start {engine.name} ({engine.command}): "
                               f"{exec_problem(engine.command, exc)}") from None


async def _committed(future: concurrent.futures.Future[Any]) -> None:
    """Wait for a write of the store's writer thread; one done already (as a started
    engine's row is by the end of its handshake) costs the loop no wake."""
    if future.done():
        future.result()  # its error, if it failed
    else:
        await asyncio.wrap_future(future)


def _process_of(transport: Any, pid: int) -> tuple[psutil.Process | None, float]:
    """(the engine's process, its creation time), (None, 0.0) when it is already gone."""
    if isinstance(transport, spawn.EngineTransport):  # read on the spawner thread
        return transport.handle, transport.create_time
    if transport.get_returncode() is None:  # not reaped yet: the pid is still this engine
        with contextlib.suppress(psutil.Error):
            handle = psutil.Process(pid)
            return handle, handle.create_time()
    return None, 0.0


async def _handshake(proc: EngineProcess, timeout: float, confirm: bool) -> None:
    """The protocol's handshake, then the configured Options the engine has (the others
    skipped with a warning); ``confirm``: then ask whether it is ready, naming the Options
    if it died of them. UCI: runner.play.ucistart; XBoard: python-chess's own commands."""
    protocol = proc.protocol
    start = UciStart(protocol, timeout) if isinstance(protocol, TimedUciProtocol) else None
    if start is not None:
        await start.handshake()
    else:
        await asyncio.wait_for(protocol.initialize(), timeout)
    options = _wanted_options(proc)
    if start is None and options:
        await asyncio.wait_for(protocol.configure(options), timeout)
    try:
        if start is not None:
            await start.configure(options, confirm)
        elif confirm:
            await asyncio.wait_for(protocol.ping(), timeout)
    except chess.engine.EngineTerminatedError as exc:
        if not confirm:
            raise
        set_ = ", ".join(f"{k}={v}" for k, v in options.items())
        raise chess.engine.EngineTerminatedError(
            f"it exited once its Options were set ({set_}): {exc}" if options
            else str(exc)) from None


def _wanted_options(proc: EngineProcess) -> dict[str, Any]:
    """The configured Options to set, by the engine's own names; those it does not have
    are skipped (in ``proc.skipped_options``, with a warning), managed ones left alone."""
    engine, protocol = proc.config, proc.protocol
    known = {name.lower(): name for name in protocol.options}
    options: dict[str, Any] = {}
    for name, value in engine.options.items():
        real = known.get(name.lower())
        if real is None:
            proc.skipped_options.append(name)
            LOG.warning("%s: engine has no option %r; skipped", engine.name, name)
        elif not protocol.options[real].is_managed():
            options[real] = value
    return options


def limit_problem(engine: EngineConfig, protocol: chess.engine.Protocol) -> str | None:
    """Why the engine cannot honour its configured per-move limit, or None.

    XBoard has no plain node limit: it needs the engine's ``nps`` feature, which most
    XBoard engines (Fairy-Max, Phalanx, ...) do not declare.
    """
    if engine.protocol == "xboard" and engine.nodes is not None:
        features = getattr(protocol, "features", {})
        if not features.get("nps"):
            return (f"engine {engine.name!r}: Nodes is set, but this XBoard engine does not declare "
                    "node-limit support (feature nps=1); use Depth or MoveTime for it")
    return None


# --------------------------------------------------------------------------- probing


#: Engine programs found runnable ELF binaries, by path: the file's identity then (device,
#: inode, mode, owner, size, modification time). A fresh engine every game (Restart: on) is
#: then checked with one stat instead of a stat, an access check and a read of its head.
_RUNNABLE: dict[str, tuple[int, ...]] = {}


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns)


def exec_precheck(command: str) -> OSError | None:
    """The error execve would give for ``command`` (None: it looks runnable).

    Engines are started through setpriv (see :func:`child_argv`), whose exec failure is only
    an early exit, and whose execvp would run a script without a ``#!`` line through
    /bin/sh: what subprocess's execve refuses is refused here first, with the same errno.
    An ELF binary found runnable is not read again while its file is unchanged
    (``_RUNNABLE``); a script always is (its interpreter may change).
    """
    def error(code: int) -> OSError:
        return OSError(code, os.strerror(code), command)

    try:
        st = os.stat(command)
    except (OSError, ValueError):
        return error(errno.ENOENT)
    if _RUNNABLE.get(command) == _identity(st):
        return None
    if os.path.isdir(command) or not os.access(command, os.X_OK):
        return error(errno.EACCES)
    try:
        with open(command, "rb") as handle:
            head = handle.readline(256)
    except OSError:
        return None  # executable but unreadable: let exec decide
    if head.startswith(b"\x7fELF"):
        _RUNNABLE[command] = _identity(st)
        return None
    if head.startswith(b"#!"):
        words = head[2:].decode("utf-8", "replace").split()
        if not words or not os.path.exists(words[0]):
            return error(errno.ENOENT)
        return None
    return error(errno.ENOEXEC)


def exec_problem(command: str, exc: OSError) -> str:
    """What an exec failure means for an engine command, in words."""
    if exc.errno == errno.ENOEXEC:
        return (f"{exc.strerror}: the file is not a program this system can run (a script "
                "needs a first line like '#!/usr/bin/env python3')")
    if exc.errno == errno.ENOENT and os.path.exists(command):
        try:
            with open(command, "rb") as handle:
                first = handle.readline(256)
        except OSError:
            first = b""
        if first.startswith(b"#!"):
            interpreter = first[2:].decode("utf-8", "replace").strip()
            return f"its interpreter {interpreter!r} (first line of the script) does not exist"
    if exc.errno == errno.EACCES:
        return f"{exc.strerror}: the file is not executable"
    return str(exc.strerror or exc)


@dataclass
class ProbeResult:
    id_name: str = ""
    unknown_options: list[str] = field(default_factory=list)
    option_names: list[str] = field(default_factory=list)  # the options the engine declared
    error: str = ""
    output: str = ""  # what the engine wrote to stderr (the first lines)
    limit_ignored: str = ""  # the small node/depth search it did not end (see _limit_ignored)
    no_chess960: str = ""  # why it cannot play Chess960 (runner.play.engine960), "" if it can


#: The probe's check that a UCI engine stops at its node or depth limit: ``go nodes`` with at
#: most this many nodes (``go depth 1`` for a depth limit) must be answered within
#: LIMIT_PROBE_S seconds (generous: a neural-network engine on CPU may search only a few
#: hundred nodes a second). Some engines (Debian's toga2) ignore ``go nodes`` and search
#: until ``stop``: with time control ``inf`` every game of theirs would stall.
LIMIT_PROBE_NODES = 100
LIMIT_PROBE_S = 10.0


def unknown_option_text(option: str, result: ProbeResult) -> str:
    """Why a configured option is refused, with the closest of the engine's real options."""
    return f"the engine has no option {option!r}{did_you_mean(option, result.option_names)}"


def ignored_limit_text(engine: EngineConfig, go: str) -> str:
    """What :attr:`ProbeResult.limit_ignored` means, in words."""
    kind = "node" if engine.nodes is not None else "depth"
    return (f"the engine does not stop at its {kind} limit: it was still searching "
            f"{LIMIT_PROBE_S:g} s after '{go}' from the start position")


async def _limit_ignored(proc: EngineProcess, ready_timeout: float) -> str:
    """The ``go`` line of a small search the engine did not end by itself ("" if it did,
    or when it has no node/depth limit, has a move time, or is not UCI)."""
    engine = proc.config
    if engine.protocol != "uci" or engine.movetime_ms is not None or (
            engine.nodes is None and engine.depth is None):
        return ""
    go = go_line(chess.engine.Limit(
        nodes=None if engine.nodes is None else min(engine.nodes, LIMIT_PROBE_NODES),
        depth=None if engine.depth is None else 1))
    move = UciMove(proc.protocol, "position startpos", go, True, chess.WHITE,
                   timeout=LIMIT_PROBE_S, ready_timeout=ready_timeout)
    try:
        await move.start()
    except TimeoutError:
        return go
    except (NotReady, chess.engine.EngineError):
        return ""  # not this check's business: the game's own start reports it
    return ""


async def _probe(engine: EngineConfig, timeout: float) -> ProbeResult:
    with tempfile.TemporaryFile() as errors:
        try:
            proc = await start_engine(engine, timeout=timeout, stderr=errors, confirm=True)
        except EngineStartError as exc:
            errors.seek(0)
            output = errors.read(4096).decode("utf-8", "replace").strip()
            if exc.stalled:
                return ProbeResult(error=f"no {engine.protocol} handshake within {timeout:g} s"
                                         f"{exc.printed}", output=output)
            return ProbeResult(error=f"cannot start {engine.command!r}: {exc}", output=output)
        try:
            return ProbeResult(id_name=proc.protocol.id.get("name", "?"),
                               unknown_options=list(proc.skipped_options),
                               option_names=list(proc.protocol.options),
                               error=limit_problem(engine, proc.protocol) or "",
                               limit_ignored=await _limit_ignored(proc, timeout),
                               no_chess960=chess960_problem(engine, proc.protocol) or "")
        finally:
            await proc.close()


async def _probe_all(engines: Sequence[EngineConfig], timeout: float | None,
                     default: float) -> list[ProbeResult]:
    slots = asyncio.Semaphore(max(2, min(8, os.cpu_count() or 2)))

    async def one(engine: EngineConfig) -> ProbeResult:
        async with slots:  # no timeout given: the engine's StartupTimeoutS, else the default
            return await _probe(engine, timeout or engine.startup_timeout_s or default)

    results = await asyncio.gather(*(one(e) for e in engines))
    await asyncio.sleep(0)  # let the closed transports finish inside the loop
    return list(results)


def probe_engines(engines: Sequence[EngineConfig], timeout: float | None = None, *,
                  default: float = 10.0) -> list[ProbeResult]:
    """Start every engine (a few at a time), finish the handshake and apply its options;
    one event loop for all, so no transport outlives it. ``timeout`` None: each engine's
    StartupTimeoutS, else 10 s."""
    if timeout is not None and timeout <= 0:
        raise ValueError("the probe timeout must be positive")
    level = LOG.level
    LOG.setLevel(logging.ERROR)  # skipped options are in the result, not warnings
    try:
        with asyncio.Runner() as runner:
            runner.get_loop().set_exception_handler(_quiet_on_stop)
            return runner.run(_probe_all(engines, timeout, default))
    finally:
        LOG.setLevel(level)


def _quiet_on_stop(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The probe loop's exception handler: a stop signal (`run`'s KeyboardInterrupt,
    runner.service.setup.stop_signals) that lands in a task's step ends that task with it,
    and nobody asks for its result: asyncio would log "Task exception was never retrieved"
    to the user when the task is freed. The stop itself propagates as usual."""
    if not isinstance(context.get("exception"), KeyboardInterrupt):
        loop.default_exception_handler(context)


def probe_engine(engine: EngineConfig, timeout: float | None = None) -> ProbeResult:
    """Start the engine, finish the handshake, report its name and unknown configured options."""
    return probe_engines([engine], timeout)[0]
