"""What an engine start costs the event loop that times every other game's moves.

A ticker task wakes every 1 ms and records how late each wake-up is; the largest lateness
seen while one engine starts (process, UCI handshake, options) is that start's stall of the
loop. Each way of starting is measured on both event loops, alternately:

- ``spawn``: runner.play.spawn (Popen on the engine-spawner thread, pidfd exit watch), what
  ``start_engine`` uses where the system gives pidfds;
- ``subprocess_exec``: the event loop's own ``loop.subprocess_exec`` (asyncio 3.11: a waitpid
  thread per child; uvloop: libuv forks the runner), the fallback.

    python bench/bench_spawn.py [--starts 60] [--engine /usr/games/stockfish]

The default engine is a shell script answering ``uci`` / ``isready`` (little CPU of its own,
so the figures are the runner's); ``--engine`` measures a real one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHELL_ENGINE = """#!/bin/sh
while read -r line; do
  case "$line" in
    uci) echo "id name sh"; echo "option name Hash type spin default 16 min 1 max 1024"; echo uciok;;
    isready) echo readyok;;
    quit) exit 0;;
  esac
done
"""


async def measure(command: str, starts: int) -> tuple[list[float], list[float]]:
    """(start wall times, largest loop lateness during each start), in seconds."""
    from runner.config.typed import EngineConfig
    from runner.play.engines import start_engine

    late: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            due = time.perf_counter() + 0.001
            await asyncio.sleep(0.001)  # libuv's timers count whole ms
            late.append(time.perf_counter() - due)

    tick = asyncio.ensure_future(ticker())
    engine = EngineConfig(name="e", command=command, options={"Hash": 16})
    walls, stalls = [], []
    for _ in range(starts):
        await asyncio.sleep(0.02)
        late.clear()
        t0 = time.perf_counter()
        proc = await start_engine(engine)
        walls.append(time.perf_counter() - t0)
        stalls.append(max(late, default=0.0))
        await proc.close()
    stop = True
    await tick
    return walls, stalls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=60)
    ap.add_argument("--engine", help="an engine command (default: a shell-script UCI engine)")
    ap.add_argument("--rounds", type=int, default=2, help="each combination this many times")
    args = ap.parse_args()
    from runner.play import eventloop, spawn

    with tempfile.TemporaryDirectory() as tmp:
        command = args.engine
        if command is None:
            command = os.path.join(tmp, "engine.sh")
            Path(command).write_text(SHELL_ENGINE)
            os.chmod(command, 0o755)
        loops = ["asyncio"] + (["uvloop"] if eventloop.loop_choice() == "uvloop" else [])
        print(f"{args.starts} starts of {args.engine or 'a shell-script UCI engine'}; load "
              + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        print(f"{'loop':<8} {'start':<16} {'wall p50 ms':>11} {'stall p50':>9} {'p90':>6} "
              f"{'max ms':>7}")
        for _ in range(args.rounds):
            for loop in loops:
                for way in ("spawn", "subprocess_exec"):
                    spawn._available = way == "spawn" and None  # None: checked again
                    os.environ[eventloop.LOOP_ENV] = loop
                    walls, stalls = eventloop.run(measure(command, args.starts))
                    stalls.sort()
                    print(f"{loop:<8} {way:<16} {statistics.median(walls) * 1e3:>11.2f} "
                          f"{statistics.median(stalls) * 1e3:>9.2f} "
                          f"{stalls[int(0.9 * (len(stalls) - 1))] * 1e3:>6.2f} "
                          f"{stalls[-1] * 1e3:>7.2f}")


if __name__ == "__main__":
    main()
