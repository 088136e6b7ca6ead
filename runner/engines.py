"""Engine processes: starting, probing, restarting and killing them (the one place for it).

Every engine is started without a shell, in its own session (process group), with a Linux
parent-death signal so it dies with the runner even when the runner is killed with
``kill -9``. The referee starts one fresh process per engine per game (so an engine that
crashed is "restarted" simply by the next game) and kills the whole process group when the
game ends. ``sweep_orphans`` removes processes left over by a runner that died anyway
(PIDs recorded by the orchestrator, matched on pid AND create time).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import chess.engine
import psutil

from runner.config import EngineConfig

LOG = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
try:  # resolved once here: the forked child must not dlopen/dlsym (locks held by other threads)
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _PRCTL = None


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """preexec_fn: ask the kernel to SIGKILL this child when the runner dies (Linux only).

    The signal fires when the thread that started the engine exits, i.e. the runner's
    event-loop thread (the main thread for ``swiss-runner run``).
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _popen_args(engine: EngineConfig) -> dict[str, Any]:
    args: dict[str, Any] = {"start_new_session": True, "stderr": asyncio.subprocess.DEVNULL}
    if _PRCTL is not None:
        args["preexec_fn"] = _die_with_parent
    if engine.working_dir:
        args["cwd"] = engine.working_dir
    return args


class _Timed:
    """Mixin: timestamps of the last ``go`` sent and the last move received, and its text.

    The referee's clock is wall time from sending ``go`` to receiving the move, measured
    here at the protocol level so handshakes, ``isready`` and ``ping`` are not charged.
    """

    move_token = "bestmove"
    go_sent: float | None = None
    move_received: float | None = None
    last_move_text: str | None = None

    def send_line(self, line: str) -> None:
        if line == "go" or line.startswith("go "):
            self.go_sent = time.monotonic()
            self.move_received = None
            self.last_move_text = None
        super().send_line(line)  # type: ignore[misc]

    def _line_received(self, line: str) -> None:
        tokens = line.split()
        if tokens and tokens[0] == self.move_token and self.move_received is None:
            self.move_received = time.monotonic()
            self.last_move_text = tokens[1] if len(tokens) > 1 else ""
        super()._line_received(line)  # type: ignore[misc]


class TimedUciProtocol(_Timed, chess.engine.UciProtocol):
    move_token = "bestmove"


class TimedXBoardProtocol(_Timed, chess.engine.XBoardProtocol):
    """XBoard protocol that also accepts engines without ``setboard`` (e.g. Fairy-Max).

    python-chess refuses such engines; they are fine for games from the standard start
    position (moves are sent one by one), so ``setboard=0`` is accepted here and
    ``no_setboard`` lets the referee refuse FEN starts for them.
    """

    move_token = "move"
    no_setboard = False

    def _line_received(self, line: str) -> None:
        if line.startswith("feature") and "setboard=0" in line:
            self.no_setboard = True
            line = line.replace("setboard=0", "setboard=1")
        super()._line_received(line)


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

    @property
    def alive(self) -> bool:
        return not self.killed and self.transport.get_returncode() is None

    async def close(self, quit_timeout: float = 1.0) -> None:
        """Ask the engine to quit, then kill its whole process group whatever happened."""
        if self.alive:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.protocol.quit(), quit_timeout)
        kill_process_group(self.pid)
        with contextlib.suppress(Exception):
            self.transport.close()

    def kill(self) -> None:
        """Synchronous hard kill (hung engine, cancelled task)."""
        self.killed = True
        kill_process_group(self.pid)
        with contextlib.suppress(Exception):
            self.transport.close()


class EngineStartError(Exception):
    """The engine could not be started or did not finish its handshake."""

    def __init__(self, message: str, *, stalled: bool = False):
        super().__init__(message)
        self.stalled = stalled  # True: no handshake within the timeout; False: crashed/missing


async def start_engine(
    engine: EngineConfig,
    *,
    timeout: float = 30.0,
    on_process: Callable[[int, float], None] | None = None,
) -> EngineProcess:
    """Start ``engine``, finish the UCI/XBoard handshake and apply its configured Options.

    Options the engine does not have are skipped with a warning (``validate --probe``
    reports them as errors before an event).
    """
    command = [engine.command, *engine.args]
    cls = TimedUciProtocol if engine.protocol == "uci" else TimedXBoardProtocol
    try:
        transport, protocol = await cls.popen(command, **_popen_args(engine))
    except OSError as exc:
        raise EngineStartError(f"cannot start {engine.name} ({engine.command}): {exc}") from None
    pid = transport.get_pid()
    try:
        create_time = psutil.Process(pid).create_time()
    except psutil.Error:
        create_time = 0.0
    if on_process is not None:
        on_process(pid, create_time)
    proc = EngineProcess(engine, transport, protocol, pid, create_time)
    try:
        await asyncio.wait_for(protocol.initialize(), timeout)
        known = {name.lower(): name for name in protocol.options}
        options: dict[str, Any] = {}
        for name, value in engine.options.items():
            real = known.get(name.lower())
            if real is None:
                proc.skipped_options.append(name)
                LOG.warning("%s: engine has no option %r; skipped", engine.name, name)
            elif not protocol.options[real].is_managed():
                options[real] = value
        if options:
            await asyncio.wait_for(protocol.configure(options), timeout)
    except TimeoutError:
        proc.kill()
        raise EngineStartError(f"{engine.name}: no {engine.protocol} handshake within {timeout:g} s",
                               stalled=True) from None
    except (chess.engine.EngineError, chess.engine.EngineTerminatedError, OSError) as exc:
        proc.kill()
        raise EngineStartError(f"{engine.name}: {exc}") from None
    except BaseException:
        proc.kill()
        raise
    return proc


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


def kill_process_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (engines run in their own session)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def sweep_orphans(records: Iterable[tuple[int, float]]) -> int:
    """Kill leftover engine processes whose pid AND create time match a record.

    The create time guards against killing an unrelated process that reuses the pid.
    Children in the engine's process group are killed too. Returns how many matched.
    """
    killed = 0
    for pid, create_time in records:
        try:
            proc = psutil.Process(pid)
            if abs(proc.create_time() - create_time) > 0.01:
                continue
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            children = proc.children(recursive=True)
            kill_process_group(pid)
            for child in children:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            with contextlib.suppress(psutil.Error):
                proc.kill()
            killed += 1
        except psutil.Error:
            continue
    return killed


# --------------------------------------------------------------------------- probing


@dataclass
class ProbeResult:
    id_name: str = ""
    unknown_options: list[str] = field(default_factory=list)
    error: str = ""


async def _probe(engine: EngineConfig, timeout: float) -> ProbeResult:
    try:
        proc = await start_engine(engine, timeout=timeout)
    except EngineStartError as exc:
        if exc.stalled:
            return ProbeResult(error=f"no {engine.protocol} handshake within {timeout:g} s")
        return ProbeResult(error=f"cannot start {engine.command!r}: {exc}")
    try:
        return ProbeResult(id_name=proc.protocol.id.get("name", "?"),
                           unknown_options=list(proc.skipped_options),
                           error=limit_problem(engine, proc.protocol) or "")
    finally:
        await proc.close()


def probe_engine(engine: EngineConfig, timeout: float = 10.0) -> ProbeResult:
    """Start the engine, finish the handshake, report its name and unknown configured options."""
    return asyncio.run(_probe(engine, timeout))
