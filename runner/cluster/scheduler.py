"""`swiss-runner scheduler [--listen [tls://]HOST[:PORT]] [--insecure] [--dashboard HOST:PORT]`:
Dask's scheduler, started the safe way (docs/cluster.md, "Security").

Plain `dask scheduler` listens on every interface, serves its dashboard on every interface
at port 8787, and speaks plain tcp:// unless told otherwise; whoever reaches it can run
programs on every worker. This command starts the same ``distributed.Scheduler`` with the
rules of `swiss-runner worker` and `run`: it listens on one address (default
127.0.0.1:8786); plain tcp:// beyond loopback is refused unless ``--insecure`` (then one
warning); ``tls://`` takes its certificates from the Dask configuration (DASK_CONFIG, the
``distributed.comm.tls`` keys), as the workers and the runner do; the dashboard is off
unless ``--dashboard HOST:PORT`` asks for it, and Dask's HTTP server (on the scheduler's
own address only) then answers ``/health`` and nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys

from runner.cluster import network
from runner.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED


def say(text: str) -> None:
    print(f"swiss-runner scheduler: {text}", file=sys.stderr, flush=True)


def cli_scheduler(args: argparse.Namespace) -> int:
    # late: the command loads distributed and the loop only once its arguments are checked
    from runner.cluster.worker import distributed_missing

    missing = distributed_missing(say)
    if missing is not None:
        return missing
    from distributed.security import Security

    security = Security()  # the Dask configuration: distributed.comm.tls.*
    try:
        scheme, host, port = network.split_address(args.listen, network.DEFAULT_PORT)
    except ValueError as exc:
        say(f"--listen {args.listen}: {exc}")
        return EXIT_BAD_INPUT
    if scheme not in ("", "tcp", "tls") or not host:
        say(f"--listen {args.listen}: expected [tcp://|tls://]HOST[:PORT]")
        return EXIT_BAD_INPUT
    scheme = scheme or ("tls" if security.tls_scheduler_cert else "tcp")
    if scheme == "tls" and not (security.tls_scheduler_cert and security.tls_ca_file):
        say(f"--listen {args.listen}: tls:// needs the scheduler's certificate and the CA in the "
            "Dask configuration (distributed.comm.tls.ca-file and .scheduler.cert/.key, read "
            "from DASK_CONFIG: docs/cluster.md, \"Security\")")
        return EXIT_BAD_INPUT
    address = f"{scheme}://{host if ':' not in host else '[' + host + ']'}:{port}"
    problem = network.plain_problem(address, args.insecure, "--insecure")
    if problem:
        say(problem)
        return EXIT_BAD_INPUT
    if args.insecure and network.plain_problem(address, False, ""):
        say(network.plain_warning(address))
    # late: the command loads distributed and the loop only once its arguments are checked
    from runner.play import eventloop

    return eventloop.run(serve(address, security, args.dashboard))


async def serve(address: str, security: object, dashboard: str | None) -> int:
    import dask
    from distributed import Scheduler

    scheme, host, port = network.split_address(address)
    shown = f"[{host}]" if ":" in host else host
    if dashboard is None:  # Dask's HTTP server still runs: it answers /health only
        dask.config.set({"distributed.scheduler.http.routes": ["distributed.http.health"]})
    # no dashboard: the HTTP server on the scheduler's own host (None: its host, for IPv6)
    scheduler = Scheduler(host=shown, port=port, protocol=scheme, security=security,
                          dashboard=dashboard is not None,
                          dashboard_address=dashboard or (None if ":" in host else f"{host}:0"))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await scheduler
    say(f"listening on {scheduler.address}" + (f"; dashboard at {dashboard}" if dashboard
                                               else " (no dashboard)"))
    finished = asyncio.ensure_future(scheduler.finished())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({finished, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not finished.done():
        finished.cancel()
        with contextlib.suppress(Exception):
            await scheduler.close()
    return EXIT_INTERRUPTED if stop.is_set() else 0
