"""Process lifetime, in one place: how the runner starts, pins, owns, kills and sweeps the
processes it runs (engines of the referee and of the kept-engine pool, cutechess-cli and the
engines it starts, engines run over ssh, the cluster worker's slot processes).

- Start: without a shell, in its own session (process group), with a Linux parent-death
  signal (util-linux ``setpriv --pdeathsig KILL`` in the command line, else a preexec_fn),
  pinned before its exec where Affinity asks (``taskset``). Engines start on the one
  spawner thread and their exit is read from a pidfd (runner.play.spawn): the event loop
  neither forks nor starts a thread per process, and the process is reaped by its own
  transport when its pidfd says it ended.
- Ownership: every process the runner starts gets an owner token in its environment
  (``SWISS_RUNNER_OWNER=<runner pid>:<runner create time>:<n>``), which its own children
  inherit. A process is only ever killed by a plain pid/pgid signal while its leader has not
  been reaped; afterwards (and in the sweep) only processes that carry the token, or match a
  recorded pid AND create time, are killed, so a pid or process-group id reused by an
  unrelated process is never hit.
- Kill: :func:`kill_tree` is the one function that kills a tree (the group, the
  descendants, what carries the token, what was recorded); it reads /proc and may wait, so
  it runs on the spawner thread (:func:`kill_tree_off_loop`), never on the event loop. The
  only signal sent from the loop is the one ``killpg`` of a leader not reaped yet
  (:func:`signal_group`), since the loop is where the leader is reaped.
- Sweep: :func:`sweep_orphans` removes what a runner that died left behind (PIDs recorded
  by the orchestrator, matched on pid AND create time); it runs before the event's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ctypes
import functools
import itertools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import psutil

from runner.play import spawn
from runner.play.affinity import pin_tree, pinned_to

_PR_SET_PDEATHSIG = 1
try:  # resolved once here: the forked child must not dlopen/dlsym (locks held by other threads)
    _PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
except (OSError, AttributeError):
    _PRCTL = None


def die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """preexec_fn: ask the kernel to SIGKILL this child when the runner dies (Linux only).

    The signal fires when the thread that started the engine exits, i.e. the runner's
    engine-spawner thread (runner.play.spawn), which lives as long as the runner's process
    (or its event-loop thread where engines start through ``loop.subprocess_exec``). It reaches only this
    child, not the processes it starts itself: those are found by their owner token
    (:func:`sweep_orphans`).
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)



# --------------------------------------------------------------------------- ownership

OWNER_ENV = "SWISS_RUNNER_OWNER"
_TIME_SLACK = 0.01  # psutil create times are rounded to clock ticks
_owner_counter = itertools.count(1)
_runner_mark: str | None = None


def _this_runner() -> str:
    global _runner_mark
    if _runner_mark is None or not _runner_mark.startswith(f"{os.getpid()}:"):  # after a fork
        _runner_mark = f"{os.getpid()}:{psutil.Process().create_time():.3f}"
    return _runner_mark


def new_owner_token() -> str:
    """A token naming this runner (pid and create time) and one process it starts."""
    return f"{_this_runner()}:{next(_owner_counter)}"


def owned_env(token: str) -> dict[bytes, bytes]:
    """The environment for a child process: the runner's own, plus the owner token.

    As bytes (``os.environb``): ``os.environ`` would decode and re-encode every variable
    for every engine started."""
    return {**os.environb, OWNER_ENV.encode(): token.encode()}


# util-linux's setpriv (Debian: essential) sets the parent-death signal and then execs the
# command in the same process. Starting it needs no Python code in the child, so the engine
# is started with vfork/posix_spawn (0.1 ms of the runner's CPU) instead of a fork of the
# whole runner for a preexec_fn (3 ms here, growing with the runner's memory).
_SETPRIV = shutil.which("setpriv", path="/usr/bin:/bin") if _PRCTL is not None else None
TASKSET = shutil.which("taskset", path="/usr/bin:/bin")  # Affinity, util-linux like setpriv


def child_argv(argv: list[str]) -> list[str]:
    """The command line that starts ``argv`` with the parent-death signal (see below)."""
    if _SETPRIV is None:
        return argv
    return [_SETPRIV, "--pdeathsig", "KILL", "--", *argv]


def child_popen_args(token: str) -> dict[str, Any]:
    """Popen arguments for every process the runner starts: own session, owner token in the
    environment, and (on Linux) SIGKILL when the runner dies: through :func:`child_argv`
    where setpriv exists, else a preexec_fn."""
    args: dict[str, Any] = {"start_new_session": True, "env": owned_env(token)}
    if _PRCTL is not None and _SETPRIV is None:
        args["preexec_fn"] = die_with_parent
    return args


def _owner_of(proc: psutil.Process) -> str | None:
    try:
        return proc.environ().get(OWNER_ENV)
    except (psutil.Error, OSError):
        return None  # gone, or not ours to read


def _runner_alive(token: str) -> bool:
    """Whether the runner named by ``token`` ("pid:create time:n") is still running."""
    try:
        pid_text, created_text, _ = token.split(":", 2)
        proc = psutil.Process(int(pid_text))
        return abs(proc.create_time() - float(created_text)) <= _TIME_SLACK
    except (ValueError, psutil.Error):
        return False


def _group_members(pgid: int) -> list[psutil.Process]:
    members: list[psutil.Process] = []
    if pgid <= 0:
        return members
    for proc in psutil.process_iter():
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            if os.getpgid(proc.pid) == pgid:
                members.append(proc)
    return members


_NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def last_pid() -> int | None:
    """The pid the kernel handed out last in this pid namespace (threads included), or None
    where it cannot be read."""
    try:
        fd = os.open(_NS_LAST_PID, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return int(os.read(fd, 32))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)


def may_carry(pid: int, since: int | None, last: int | None) -> bool:
    """Whether process ``pid``, seen in a walk of /proc before ``last`` (:func:`last_pid`, None:
    unknown) was read, can have been started after the process with pid ``since`` (None: any).

    Pids are handed out in increasing order and wrap around at pid_max: without a wrap since
    ``since`` they lie in (since, last]; after one (``last`` below ``since``) above ``since``
    or at most ``last``. A process older than ``since`` (another user's, on a machine whose
    pids wrapped) is then never read."""
    if since is None:
        return True
    if last is None:
        return pid > since
    if last >= since:
        return since < pid <= last
    return pid > since or pid <= last


def _environ(pid: int) -> bytes | None:
    """Process ``pid``'s environment as /proc gives it (None: gone, or not ours to read)."""
    try:
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _owned_processes(tokens: Mapping[str, int | None]) -> list[psutil.Process]:
    """Every running process whose environment carries exactly one of these owner tokens,
    found in one walk of /proc (the engines of a game that ended are looked for together).

    The environments are read straight from /proc (a process of another user is not
    readable and cannot be ours). Each token's ``since_pid``: its first process had this
    pid, so only processes started after it can carry it (:func:`may_carry`; None: any),
    and only their environments are read. After more than one wrap-around of the pids a
    process that escaped is still found by the sweep of the next start
    (:func:`sweep_orphans`).
    """
    found: list[psutil.Process] = []
    if not tokens:
        return found
    me = os.getpid()
    # entries are NUL-terminated "NAME=value"; the whole entry must match
    needles = [(b"\0" + f"{OWNER_ENV}={token}".encode() + b"\0", since)
               for token, since in tokens.items()]
    pids = psutil.pids()
    last = last_pid()  # read after the walk: every pid it saw was handed out by then
    for pid in pids:
        if pid == me:
            continue
        wanted = [needle for needle, since in needles if may_carry(pid, since, last)]
        if not wanted:
            continue
        raw = _environ(pid)
        if raw is None:
            continue
        environ = b"\0" + raw.rstrip(b"\0") + b"\0"
        if any(needle in environ for needle in wanted):
            with contextlib.suppress(psutil.Error):
                found.append(psutil.Process(pid))
    return found


def kill_owned(pid: int, token: str | None, *, handle: psutil.Process | None,
               reaped: bool, since_pid: int | None = None) -> None:
    """SIGKILL process ``pid`` (started by the runner with ``token``) and its process group.

    While the leader has not been reaped (``reaped`` False) its pid and its process-group
    id are still ours, so the group is signalled directly. After that only processes that
    can be proven ours are killed: the leader through ``handle`` (a psutil.Process that
    checks the create time) and every process carrying ``token`` in its environment.
    """
    if not reaped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    if handle is not None:
        with contextlib.suppress(psutil.Error):
            handle.kill()
    if token is not None:
        for proc in _owned_processes({token: since_pid}):
            with contextlib.suppress(psutil.Error):
                proc.kill()


def pinned_argv(argv: list[str], cpus: Sequence[int] | None) -> list[str]:
    """``argv`` run through ``taskset`` on ``cpus`` (pinned before the engine's exec, so every
    thread it creates inherits the mask, without a fork for a preexec_fn); unchanged when
    there are no cpus or no taskset (then :func:`_popen_args` pins in a preexec_fn)."""
    if not cpus or TASKSET is None:
        return argv
    return [TASKSET, "--cpu-list", ",".join(map(str, sorted(cpus))), *argv]


def kill_process_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (engines run in their own session).

    Only for a ``pid`` the caller knows is not reaped yet (a running or zombie child, or a
    process matched on pid and create time): the group id cannot have been reused then.
    There is deliberately no fallback to ``kill(pid)``: a failing ``killpg`` means the
    group is gone, and the pid may already belong to someone else.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _orphaned_group(pgid: int, leader_created: float) -> list[psutil.Process]:
    """Members of process group ``pgid`` that a dead runner left behind.

    The recorded leader is gone, so the group id alone proves nothing (the leader's pid can
    be reused once its group is empty). A member is taken only when it was created no
    earlier than the recorded leader and carries the owner token of a runner that is no
    longer running: a process started by someone else has no token, and one of a live
    runner is that runner's business.
    """
    victims: list[psutil.Process] = []
    for proc in _group_members(pgid):
        try:
            if proc.create_time() + _TIME_SLACK < leader_created:
                continue
        except psutil.Error:
            continue
        token = _owner_of(proc)
        if token is not None and not _runner_alive(token):
            victims.append(proc)
    return victims


def sweep_orphans(records: Iterable[tuple[int, float]]) -> int:
    """Kill leftover processes of a dead runner; returns how many records still had some.

    A record is ``(pid, create time)`` of an engine (or cutechess-cli) the previous run
    started. When a live process matches pid AND create time, it and its process group are
    killed (the create time guards against a reused pid). When the recorded process is
    gone or a zombie, the processes it started may live on in its process group (the
    parent-death signal reached only the leader): those are killed when they carry the
    owner token of a runner that is no longer running (see :func:`_orphaned_group`).
    """
    killed = 0
    for pid, create_time in records:
        try:
            proc: psutil.Process | None = psutil.Process(pid)
        except psutil.NoSuchProcess:
            proc = None
        except psutil.Error:
            continue
        try:
            if proc is not None and abs(proc.create_time() - create_time) > _TIME_SLACK:
                continue  # the pid was reused: our group was empty, nothing of ours is left
            zombie = proc is not None and proc.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            proc, zombie = None, False
        except psutil.Error:
            continue
        if proc is None:
            victims = _orphaned_group(pid, create_time)
        else:  # matched on pid and create time: it and its group (the id is still held) are ours
            victims = [m for m in _group_members(pid) if m.pid != pid]
            with contextlib.suppress(psutil.Error):
                victims += [c for c in proc.children(recursive=True) if c not in victims]
            if not zombie:
                victims.append(proc)
            kill_process_group(pid)
        for victim in victims:
            with contextlib.suppress(psutil.Error):
                victim.kill()
        killed += bool(victims)
    return killed


def signal_group(pid: int, reaped: bool) -> None:
    """SIGKILL the process group of leader ``pid`` at once, if the leader is not reaped yet
    (its pid and group id are still ours); one system call, safe on the event loop."""
    if not reaped:
        kill_process_group(pid)


def kill_tree(pid: int, token: str | None, *, handle: psutil.Process | None = None,
              known: dict[int, float] | None = None, since_pid: int | None = None,
              reaped: bool = True, wait: float = 0.0, descendants: bool = True) -> None:
    """Kill process ``pid`` (started by the runner with owner ``token``) and everything it
    started: its process group while the leader is not reaped, its descendants (through
    ``handle``, a psutil.Process that checks the create time), the processes ``known`` by pid
    and create time (recorded while it ran: they may have left the group), and every
    process carrying ``token``. ``wait``: then wait up to that many seconds for them to end.
    ``descendants`` False: no walk of its descendants (what left its group carries its
    token: an engine's tree is its group plus its token).

    The one function that kills a tree. It reads /proc: call it off the event loop
    (:func:`kill_tree_off_loop`)."""
    victims: list[psutil.Process] = []
    if handle is not None and descendants:
        with contextlib.suppress(psutil.Error):
            if handle.is_running():
                victims = handle.children(recursive=True)
    for child_pid, created in (known or {}).items():
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(child_pid)
            if abs(proc.create_time() - created) < _TIME_SLACK * 2 and proc not in victims:
                victims.append(proc)
    for proc in victims:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    kill_owned(pid, token, handle=handle, reaped=reaped, since_pid=since_pid)
    if wait > 0 and victims:
        psutil.wait_procs(victims, timeout=wait)


def kill_tree_off_loop(pid: int, token: str | None, **kwargs: Any
                       ) -> concurrent.futures.Future[None]:
    """:func:`kill_tree` on the spawner thread; the future says when it is done (awaitable
    from the loop with ``asyncio.wrap_future``; nothing needs to wait for it)."""
    return spawn.off_loop(functools.partial(kill_tree, pid, token, **kwargs))


def kill_trees(trees: Sequence[tuple[int, str | None, dict[str, Any]]]) -> None:
    """:func:`kill_tree` for each ``(pid, token, kwargs)`` of ``trees`` (the engines of a
    game that ended), with one walk of /proc for all their owner tokens instead of one each
    (``kwargs`` without ``wait``)."""
    tokens: dict[str, int | None] = {}
    for pid, token, kwargs in trees:
        kill_tree(pid, None, **kwargs)  # its group, leader, descendants, known processes
        if token is not None:
            tokens[token] = kwargs.get("since_pid")
    for proc in _owned_processes(tokens):
        with contextlib.suppress(psutil.Error):
            proc.kill()


def kill_trees_off_loop(trees: Sequence[tuple[int, str | None, dict[str, Any]]]
                        ) -> concurrent.futures.Future[None]:
    """:func:`kill_trees` on the spawner thread (as :func:`kill_tree_off_loop`)."""
    return spawn.off_loop(functools.partial(kill_trees, list(trees)))


async def pin_off_loop(pid: int, cpus: Sequence[int], *, unless_pinned: bool = False) -> None:
    """Pin ``pid``, every thread of it and its children to ``cpus`` on the spawner thread (a
    walk of /proc must not stall the loop). ``unless_pinned``: not when the kernel's mask of
    the process (``os.sched_getaffinity``) is ``cpus`` already."""
    wanted = tuple(sorted(cpus))

    def pin() -> None:
        if not unless_pinned or pinned_to(pid) != wanted:
            pin_tree(pid, wanted)

    await asyncio.wrap_future(spawn.off_loop(pin))


class _Piped(asyncio.SubprocessProtocol):
    """A started process's stdout into a StreamReader; its exit into a future."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.stdout = asyncio.StreamReader(loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.stdout.feed_data(data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.stdout.feed_eof()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class Process:
    """A process started by :func:`start_process`: its pid, create time and psutil handle
    (read when it started), owner token, output (``stdout``, stderr merged into it) and exit."""

    def __init__(self, transport: asyncio.SubprocessTransport, piped: _Piped, token: str,
                 handle: psutil.Process | None, create_time: float) -> None:
        self.transport = transport
        self.pid = transport.get_pid()
        self.token = token
        self.handle = handle
        self.create_time = create_time
        self.stdout = piped.stdout
        self.exited = piped.exited

    @property
    def returncode(self) -> int | None:
        return self.transport.get_returncode()

    async def wait(self) -> int | None:
        """Its exit code, once it has exited and been reaped."""
        await asyncio.shield(self.exited)
        return self.returncode

    def kill_tree(self, known: dict[int, float] | None = None
                  ) -> concurrent.futures.Future[None]:
        """Kill it and everything it started (:func:`kill_tree`), off the loop but for the
        one signal to its process group while it is not reaped."""
        signal_group(self.pid, reaped=self.returncode is not None)
        return kill_tree_off_loop(self.pid, self.token, handle=self.handle, known=known, wait=2)

    def terminate(self) -> None:
        """SIGTERM, unless its exit was seen (its pid may be another's by then)."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.transport.send_signal(signal.SIGTERM)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.transport.close()


async def start_process(argv: Sequence[str], token: str | None = None, *,
                        capture: bool = True, session: bool = True) -> Process:
    """Start ``argv`` as the runner starts every process (parent-death signal, owner token
    ``token`` or a new one), its stdin at end of file: on the spawner thread with a pidfd for
    its exit where the system has them (runner.play.spawn), else with
    ``loop.subprocess_exec``. ``capture``: its stdout and stderr are read into
    ``Process.stdout`` (else both are the runner's). ``session``: in a session (process
    group) of its own (else in the runner's, where a terminal's Ctrl-C reaches it too)."""
    loop = asyncio.get_running_loop()
    token = token or new_owner_token()
    argv = child_argv(list(argv))
    args = child_popen_args(token)
    args["start_new_session"] = session
    output = {"stdout": subprocess.PIPE if capture else None,
              "stderr": subprocess.STDOUT if capture else None}
    piped = _Piped(loop)
    if not capture:
        piped.stdout.feed_eof()
    handle: psutil.Process | None = None
    created = 0.0
    if spawn.available():
        transport, _ = await spawn.spawn(lambda: piped, argv, **output, **args)
        handle, created = transport.handle, transport.create_time
        stdin = transport.get_pipe_transport(0)
        if stdin is not None:
            stdin.close()  # end of file, as /dev/null would give
    else:
        transport, _ = await loop.subprocess_exec(lambda: piped, *argv,
                                                  stdin=subprocess.DEVNULL, **output, **args)
        if transport.get_returncode() is None:
            with contextlib.suppress(psutil.Error):
                handle = psutil.Process(transport.get_pid())
                created = handle.create_time()
    return Process(transport, piped, token, handle, created)
