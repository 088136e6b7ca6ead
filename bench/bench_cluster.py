"""Local backend vs a local Dask scheduler with 1 and 2 `swiss-runner worker` processes.

The same short event (nodes-limited Stockfish and Ethereal, MaxMoves 40) is played three
ways by an in-process Tournament: the built-in referee here (Concurrency 1), and the cluster
backend with one worker (1 slot) and two workers (1 slot each, Concurrency 2). Reported:

- dispatch: median time from the backend being asked for a game to its GameStarted event
  (engine start and handshake included: compare the rows), and the difference to local;
- move latency: from the move's arrival at the referee (MovePlayed.at_ms, same machine
  clock) to the runner's sinks (the store's per-move log buffer), p50 / p99;
- runner CPU per ply: this process's CPU time from the first GameStarted on (the one-off
  client connection and imports excluded; engines and workers are other processes) / plies;

- games per hour, from the run's start (client connection and each worker's first engine
  probes included) and from the first GameStarted on.

Usage: python bench/bench_cluster.py [--rounds 3] [--engines 6] [--nodes 20000]   (loopback only)
       [--workers 1,2,4] [--local 1,2] [--fake-ms 5]   (scaling: the fake engine, 1, 2, 4 workers)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runner.config import load_config  # noqa: E402
from runner.domain.events import GameStarted, MovePlayed  # noqa: E402
from runner.service.tournament import Tournament  # noqa: E402
from runner.store.database import Store  # noqa: E402


class Measured:
    """Wraps a backend: times dispatch (call -> GameStarted) and move latency. What it
    can do is declared (runner.play.backend.Backend), as a backend handed to `run`."""

    def __init__(self, backend: Any):
        self.backend = backend
        self.can_resume = True
        self.local_engines = False  # (as any backend a caller hands in before: no build check)
        self.engine_resources = False
        self.dispatch: list[float] = []
        self.latency: list[float] = []
        self.plies = 0
        self.cpu_from: float | None = None  # CPU clock at the first GameStarted
        self.wall_from: float | None = None  # wall clock at the first GameStarted


    async def __call__(self, spec: Any, *, emit: Any, **kwargs: Any) -> Any:
        asked = time.monotonic()

        def measure(event: Any) -> None:
            if isinstance(event, GameStarted):
                if self.cpu_from is None:  # after the one-off client connection and imports
                    self.cpu_from = time.process_time()
                    self.wall_from = time.monotonic()
                self.dispatch.append(time.monotonic() - asked)
            elif isinstance(event, MovePlayed):
                self.plies += 1
                if event.at_ms:
                    self.latency.append(time.time() * 1000 - event.at_ms)
            emit(event)

        return await self.backend(spec, emit=measure, **kwargs)

    async def aclose(self) -> None:
        close = getattr(self.backend, "aclose", None)
        if close is not None:
            await close()


FAKE = REPO / "tests" / "fakes" / "det_engine.py"
FAKE_MS = 0  # > 0: the deterministic fake engine at this many ms per move (--fake-ms)


def write_config(directory: Path, engines: int, rounds: int, concurrency: int,
                 nodes: int) -> Path:
    listed: list[dict[str, Any]] = []
    if FAKE_MS:
        listed = [{"Name": f"E{i + 1}", "Command": sys.executable, "Nodes": 1,
                   "Args": [str(FAKE), "greedy", f"s{i}", str(FAKE_MS)]} for i in range(engines)]
    where = os.pathsep.join([os.environ.get("PATH", ""), "/usr/games", "/usr/local/games"])
    sf, eth = shutil.which("stockfish", path=where), shutil.which("ethereal-chess", path=where)
    if not listed and (not sf or not eth):
        sys.exit("needs the Debian packages stockfish and ethereal-chess (or --fake-ms)")
    for i in range(engines if not listed else 0):
        command = sf if i % 2 == 0 else eth
        listed.append({"Name": f"E{i + 1}", "Command": command, "Nodes": nodes + nodes // 8 * i,
                       "Options": {"Threads": 1, "Hash": 8}})
    path = directory / "event.yaml"
    path.write_text(yaml.safe_dump({
        "Event": "bench cluster", "TimeControl": "60+1", "Concurrency": concurrency,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": rounds, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 40}, "Engines": listed}, sort_keys=False))
    return path


def play(directory: Path, backend: Any, engines: int, rounds: int, concurrency: int,
         nodes: int) -> dict[str, float]:
    config = load_config(write_config(directory, engines, rounds, concurrency, nodes))
    store = Store.open(config.database)
    measured = Measured(backend)
    try:
        tournament = Tournament(config, store, quiet=True, play_game=measured,
                                out=open(os.devnull, "w"))  # noqa: SIM115
        assert tournament.prepare() is None
        wall = time.monotonic()
        assert asyncio.run(tournament.run()) == 0
        steady = time.monotonic() - (measured.wall_from or wall)
        cpu, wall = time.process_time() - (measured.cpu_from or 0), time.monotonic() - wall
        games = store.counts().get("finished", 0)
    finally:
        store.close()
    lat = sorted(measured.latency)
    return {"games": games, "plies": measured.plies, "wall_s": wall,
            "dispatch_ms": statistics.median(measured.dispatch) * 1000,
            "p50_ms": lat[len(lat) // 2], "p99_ms": lat[min(len(lat) - 1, int(len(lat) * .99))],
            "cpu_us_per_ply": cpu / max(1, measured.plies) * 1e6,
            "games_per_hour": games / wall * 3600, "steady_per_hour": games / steady * 3600}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--engines", type=int, default=6)
    parser.add_argument("--nodes", type=int, default=20000, help="Nodes of the first engine")
    parser.add_argument("--workers", default="1,2",
                        help="cluster rows: numbers of workers (1 slot each), e.g. 1,2,4")
    parser.add_argument("--local", default="1,2", help="local rows: Concurrency values")
    parser.add_argument("--fake-ms", type=int, default=0,
                        help="play with the deterministic fake engine at this many ms per move "
                             "instead of Stockfish/Ethereal")
    args = parser.parse_args()
    global FAKE_MS
    FAKE_MS = args.fake_ms
    counts = sorted({int(n) for n in args.workers.split(",")})
    locals_ = [int(n) for n in args.local.split(",")]
    from runner.play.referee import play_game

    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for n in locals_:
            (base / f"local{n}").mkdir()
            rows[f"local (Concurrency {n})"] = play(base / f"local{n}", play_game, args.engines,
                                                    args.rounds, n, args.nodes)
        from runner.cluster.client import ClusterBackend

        port = free_port()
        address = f"tcp://127.0.0.1:{port}"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": env}
        procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                                   "--host", "127.0.0.1", "--port", str(port),
                                   "--no-dashboard"], **quiet)]
        try:
            for n in counts:
                while len(procs) - 1 < n:
                    procs.append(subprocess.Popen([sys.executable, "-m", "runner", "worker",
                                                   address, "--name", f"w{len(procs)}"], **quiet))
                time.sleep(4 + n)  # the workers join
                directory = base / f"cluster{n}"
                directory.mkdir()
                backend = ClusterBackend(address, wait_s=60, say=lambda *a, **k: None)
                rows[f"cluster, {n} worker(s)"] = play(directory, backend, args.engines,
                                                        args.rounds, n, args.nodes)
        finally:
            for proc in reversed(procs):
                proc.terminate()
                proc.wait(20)
    local = rows[f"local (Concurrency {locals_[0]})"]
    engines = (f"fake engine at {FAKE_MS} ms/move" if FAKE_MS
               else f"Stockfish/Ethereal at {args.nodes}+ nodes")
    print(f"{args.engines} engines, {args.rounds} rounds, {engines}, MaxMoves 40, loopback, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    print(f"{'backend':24} {'games':>5} {'plies':>6} {'dispatch ms':>11} {'+local':>7} "
          f"{'lat p50':>8} {'lat p99':>8} {'CPU us/ply':>10} {'vs local':>8} {'games/h':>8} "
          f"{'steady':>7}")
    for name, r in rows.items():
        print(f"{name:24} {r['games']:5.0f} {r['plies']:6.0f} {r['dispatch_ms']:11.1f} "
              f"{r['dispatch_ms'] - local['dispatch_ms']:+7.1f} {r['p50_ms']:8.1f} "
              f"{r['p99_ms']:8.1f} {r['cpu_us_per_ply']:10.0f} "
              f"{r['cpu_us_per_ply'] / local['cpu_us_per_ply'] - 1:+8.0%} "
              f"{r['games_per_hour']:8.0f} {r['steady_per_hour']:7.0f}")


if __name__ == "__main__":
    main()
