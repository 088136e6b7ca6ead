"""`swiss-runner worker SCHEDULER [--slots N] [--name NAME]`: one machine's game slots.

Starts a Dask worker in this process with the resource ``game=N`` (N games at once, one
thread each) and the engine-probe plugin. A Dask worker shuts down when it loses its
scheduler; this command then starts a fresh one that waits for the scheduler to come back,
until SIGINT/SIGTERM (or ``--wait`` seconds without a scheduler). Engines started for a game
get the parent-death signal: a worker killed with -9 takes its engines with it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import sys
import time

from runner.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK


def say(text: str) -> None:
    print(f"swiss-runner worker: {text}", file=sys.stderr, flush=True)


def cli_worker(args: argparse.Namespace) -> int:
    try:
        import distributed  # noqa: F401
    except ImportError:
        say("the 'distributed' package is not installed: pip install 'swiss-runner[cluster]'")
        return EXIT_BAD_INPUT
    from runner.cli.common import referee_refused

    refused = referee_refused(say)  # its loop, and the python-chess internals it reads
    if refused is not None:
        return refused
    if args.slots < 1:
        say("--slots must be at least 1")
        return EXIT_BAD_INPUT
    engines: dict[str, str] = {}
    for item in args.engine or ():
        engine, sep, command = item.partition("=")
        if not sep or not engine or not command:
            say(f"--engine {item!r}: expected NAME=COMMAND (the engine's name in the event)")
            return EXIT_BAD_INPUT
        engines[engine] = command
    name = args.name or socket.gethostname()
    from runner.play import eventloop

    return eventloop.run(serve(args.scheduler, slots=args.slots, name=name, wait_s=args.wait,
                             engines=engines))


async def serve(scheduler: str, *, slots: int, name: str, wait_s: float = 0.0,
                engines: dict[str, str] | None = None) -> int:
    from distributed import Worker

    from runner.cluster import RESOURCE
    from runner.cluster.task import EngineProbes

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    lost_since: float | None = None
    code = EXIT_OK
    while not stop.is_set():
        worker = Worker(scheduler, name=name, nthreads=slots, resources={RESOURCE: slots},
                        plugins=(EngineProbes(engines),), memory_limit=0, dashboard=False,
                        death_timeout=30 if wait_s == 0 else max(1.0, wait_s))
        try:
            await worker
        except Exception as exc:  # noqa: BLE001 - no scheduler yet: try again
            with contextlib.suppress(Exception):
                await worker.close()
            lost_since = lost_since or time.monotonic()
            if wait_s and time.monotonic() - lost_since > wait_s:
                say(f"no scheduler at {scheduler} for {wait_s:g} s ({exc}); giving up")
                code = EXIT_FAIL
                break
            say(f"waiting for the scheduler at {scheduler} ({type(exc).__name__})")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 2.0)
            continue
        lost_since = None
        say(f"{name} joined {scheduler} with {slots} game slot(s) as {worker.address}")
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
