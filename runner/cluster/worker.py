"""`swiss-runner worker SCHEDULER [--slots N] [--name NAME]`: one machine's game slots.

One game slot is one process: a single-threaded Dask worker with the resource ``game=1``
and the engine-probe plugin, so that games never compete for one interpreter's GIL with each
other or with another slot's heartbeats. ``--slots 1`` (the TCEC way) runs it in this
process, named NAME. ``--slots N`` makes this process a supervisor of N slot processes
(``swiss-runner worker ... --slots 1 --name NAME/k``, k = 1..N): a slot process that dies
is started again (after 1 s, then up to 30 s while it keeps dying at once; an unexpected
error in one slot, exit 1, is that slot's alone: only a slot that cannot run, exit 2, or
that gave up waiting for the scheduler stops them all); each slot
process gets the parent-death signal, so the supervisor's death takes them (and, through
their own parent-death signal, their engines) with it; SIGINT/SIGTERM stops them all.

A Dask worker shuts down when it loses its scheduler; a slot process then starts a fresh one
that waits for the scheduler to come back, until SIGINT/SIGTERM (or ``--wait`` seconds
without a scheduler). Engines started for a game get the parent-death signal: a worker
killed with -9 takes its engines with it.

Each slot listens only on ``--listen HOST[:PORT]``, by default on the local address it
reaches the scheduler from (runner.cluster.network); a plain ``tcp://`` scheduler beyond
loopback is refused unless ``--insecure``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Awaitable, Callable

from runner.cluster import network
from runner.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    TRACEBACK_ENV,
    missing_extra,
    print_error,
    unexpected_error,
)
from runner.play.eventloop import referee_refused
from runner.play.gpus import GPU_RESOURCE, parse_worker_gpus, split_devices


def say(text: str) -> None:
    print(f"swiss-runner worker: {text}", file=sys.stderr, flush=True)


def distributed_missing(say: Callable[[str], None]) -> int | None:
    """EXIT_BAD_INPUT after saying so when the cluster extra is not installed, else None."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        say(f"the 'distributed' package is not installed: {missing_extra('cluster')}")
        return EXIT_BAD_INPUT
    return None


def cli_worker(args: argparse.Namespace) -> int:
    missing = distributed_missing(say)
    if missing is not None:
        return missing
    refused = referee_refused(say)  # the event loop it names
    if refused is not None:
        return refused
    if args.slots < 1:
        say("--slots must be at least 1")
        return EXIT_BAD_INPUT
    try:  # GPU hook: --gpus 0,1 | auto, advertised as Dask resources (docs/gpus.md)
        gpus = parse_worker_gpus(args.gpus) if getattr(args, "gpus", None) else ()
    except ValueError as exc:
        say(f"--gpus {args.gpus}: {exc}")
        return EXIT_BAD_INPUT
    engines: dict[str, str] = {}
    for item in args.engine or ():
        engine, sep, command = item.partition("=")
        if not sep or not engine or not command:
            say(f"--engine {item!r}: expected NAME=COMMAND (the engine's name in the event)")
            return EXIT_BAD_INPUT
        engines[engine] = command
    name = args.name or socket.gethostname()
    insecure = getattr(args, "insecure", False)
    problem = network.plain_problem(args.scheduler, insecure, "--insecure")
    if problem:
        say(problem)
        return EXIT_BAD_INPUT
    listen = getattr(args, "listen", None)
    try:
        host, port = network.listen_host(args.scheduler, listen)
    except (ValueError, OSError) as exc:
        say(f"--listen {listen}: {exc}" if listen else
            f"{args.scheduler}: cannot find the local address that reaches it ({exc}); "
            "give it with --listen HOST")
        return EXIT_BAD_INPUT
    if args.slots > 1 and port:
        say(f"--listen {listen}: with --slots {args.slots} each slot listens on a port of its "
            "own: give the host only")
        return EXIT_BAD_INPUT
    if insecure and not getattr(args, "slot", False) and network.plain_problem(
            args.scheduler, False, ""):
        say(network.plain_warning(args.scheduler))
    # late: the command loads distributed, the loop and the engine layer only when it runs
    from runner.play import eventloop

    if args.slots > 1:
        return eventloop.run(supervise(args.scheduler, slots=args.slots, name=name,
                                       wait_s=args.wait, engines=engines, listen=host,
                                       insecure=insecure, gpus=gpus))
    return eventloop.run(failing_hard(serve(
        args.scheduler, slots=1, name=name, wait_s=args.wait, engines=engines, host=host,
        port=port, gpus=gpus, gave_up=SLOT_GAVE_UP if getattr(args, "slot", False)
        else EXIT_FAIL)))


async def failing_hard(run: Awaitable[int]) -> int:
    """``run``'s exit code; an unexpected error in it ends this process at once, exit 1,
    after its one line on stderr. A Dask worker's own close would first wait up to 30 s
    for the game in its thread: a crashed slot is started again at once instead (its
    engines die with it, by their parent-death signal) and the runner continues the game
    elsewhere (7.c)."""
    try:
        return await run
    except Exception as exc:  # noqa: BLE001 - the last resort of a worker process
        if os.environ.get(TRACEBACK_ENV):
            traceback.print_exc()
        print_error(unexpected_error("worker", exc))
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        os._exit(EXIT_FAIL)


# a slot process (--slot) that gave up waiting for the scheduler (--wait): the supervisor
# stops every slot and exits 1; any other exit but 2 is a crash of that slot alone
SLOT_GAVE_UP = 3


def slot_argv(scheduler: str, name: str, wait_s: float, engines: dict[str, str],
              listen: str | None = None, insecure: bool = False,
              gpus: tuple[int, ...] = ()) -> list[str]:
    """The command line of one slot process (this interpreter, this package)."""
    argv = [sys.executable, "-m", "runner", "worker", scheduler, "--slots", "1", "--name", name,
            "--wait", f"{wait_s:g}", "--slot"]
    if listen:
        argv += ["--listen", listen]
    if insecure:
        argv.append("--insecure")
    for engine, command in engines.items():
        argv += ["--engine", f"{engine}={command}"]
    if gpus:
        argv += ["--gpus", ",".join(map(str, gpus))]
    return argv


RESTART_S = (1.0, 30.0)  # a slot process that died is started again after 1 s, at most 30 s


async def supervise(scheduler: str, *, slots: int, name: str, wait_s: float = 0.0,
                    engines: dict[str, str] | None = None, listen: str | None = None,
                    insecure: bool = False, gpus: tuple[int, ...] = ()) -> int:
    """Run ``slots`` slot processes NAME/1..NAME/N and start again any that dies (a crash,
    exit 1, included: the other slots and their games go on), until SIGINT/SIGTERM (exit
    130) or a slot gives up (``--wait`` without a scheduler: exit 1) or cannot run at all
    (bad input: exit 2)."""
    # late: the command loads distributed, the loop and the engine layer only when it runs
    from runner.play.processes import Process, start_process

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    procs: dict[str, Process] = {}
    code = EXIT_OK
    shares = dict(zip((f"{name}/{k}" for k in range(1, slots + 1)), split_devices(gpus, slots),
                      strict=True))  # GPU hook: each slot process its own devices

    async def start(slot: str) -> None:
        # same process group (a terminal's Ctrl-C, systemd's control group reach every
        # slot), and SIGKILL when this supervisor dies (the slot's engines follow it);
        # started and reaped as every process of the runner (runner.play.processes)
        procs[slot] = await start_process(
            slot_argv(scheduler, slot, wait_s, engines or {}, listen, insecure, shares[slot]),
            capture=False, session=False)

    async def keep(slot: str) -> None:
        nonlocal code
        delay = RESTART_S[0] / 2
        while not stop.is_set():
            started = time.monotonic()
            await start(slot)
            returned = await procs[slot].wait()
            procs[slot].close()
            if stop.is_set():
                return
            if returned in (EXIT_BAD_INPUT, SLOT_GAVE_UP):  # cannot run at all, or gave up
                say(f"slot {slot} " + ("cannot run" if returned == EXIT_BAD_INPUT else
                                       "gave up waiting for the scheduler")
                    + ": stopping every slot")
                code = EXIT_BAD_INPUT if returned == EXIT_BAD_INPUT else EXIT_FAIL
                stop.set()
                return
            quick = time.monotonic() - started < 60  # dying again and again: wait longer
            delay = min(delay * 2, RESTART_S[1]) if quick else RESTART_S[0]
            say(f"slot {slot} died (exit {returned}); starting it again in {delay:g} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), delay)

    say(f"{name}: {slots} game slots, one process each ({name}/1 .. {name}/{slots})")
    keepers = [asyncio.ensure_future(keep(f"{name}/{k}")) for k in range(1, slots + 1)]
    await stop.wait()
    code = code or EXIT_INTERRUPTED
    for proc in procs.values():
        proc.terminate()
    for proc in procs.values():
        try:
            await asyncio.wait_for(proc.wait(), 30)
        except TimeoutError:
            await asyncio.wrap_future(proc.kill_tree())  # the one tree kill, off the loop
            await proc.wait()
        proc.close()
    for keeper in keepers:
        keeper.cancel()
    await asyncio.gather(*keepers, return_exceptions=True)
    return code


async def serve(scheduler: str, *, slots: int, name: str, wait_s: float = 0.0,
                engines: dict[str, str] | None = None, host: str | None = None,
                port: int | None = None, gave_up: int = EXIT_FAIL,
                gpus: tuple[int, ...] = ()) -> int:
    """One Dask worker with ``slots`` game slots in this process, listening on host:port
    (port None: any free one), started again whenever it loses the scheduler."""
    from distributed import Worker

    # late: the command loads distributed, the loop and the engine layer only when it runs
    from runner.cluster import RESOURCE
    from runner.cluster.task import EngineProbes

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    lost_since: float | None = None
    code = EXIT_OK
    while not stop.is_set():
        worker = Worker(scheduler, name=name, nthreads=slots,
                        resources={RESOURCE: slots, **({GPU_RESOURCE: len(gpus)} if gpus else {})},
                        plugins=(EngineProbes(engines, gpus),), memory_limit=0, dashboard=False,
                        host=host, port=port,
                        death_timeout=30 if wait_s == 0 else max(1.0, wait_s))
        try:
            await worker
        except Exception as exc:  # noqa: BLE001 - no scheduler yet: try again
            with contextlib.suppress(Exception):
                await worker.close()
            lost_since = lost_since or time.monotonic()
            if wait_s and time.monotonic() - lost_since > wait_s:
                say(f"no scheduler at {scheduler} for {wait_s:g} s ({exc}); giving up")
                code = gave_up
                break
            say(f"waiting for the scheduler at {scheduler} ({type(exc).__name__})")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 2.0)
            continue
        lost_since = None
        say(f"{name} joined {scheduler} with {slots} game slot(s) as {worker.address}"
            + (f" and GPUs {','.join(map(str, gpus))}" if gpus else ""))
        finished = asyncio.ensure_future(worker.finished())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({finished, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if stop.is_set():
            finished.cancel()  # awaited by nobody from here on
            code = EXIT_INTERRUPTED
            with contextlib.suppress(Exception):
                await worker.close(reason="swiss-runner worker stopped")
            break
        say(f"{name} lost the scheduler; starting a fresh worker that waits for it")
        lost_since = time.monotonic()
        await asyncio.sleep(0.5)
    return code
