"""What a game's fresh engines (``Restart: on``) cost the runner's process once per game.

Each game starts its two engines (Stockfish and Ethereal, Hash 16, Threads 1) as the
referee does (``start_engine`` for both at once: the process on the spawner thread, the UCI
start, the options) and closes them as a game's end does (``close_engines``: ``quit``, the
exits awaited together, one walk of /proc for their trees). Measured per game, in ms, the
median of ``--games`` games after 3 unmeasured ones:

- ``loop, start`` and ``loop, close``: the event loop's own thread (``time.thread_time``);
- ``process``: every thread of the runner's process (``getrusage``), engines excluded:
  the spawner thread's starts and walk and the engines' reader threads included.

No store, moves or views: what a run adds besides (the process rows of the orphan sweep,
the snapshot written more often as the run lasts longer) is in docs/performance.md.

``--base DIR``: the same for another checkout of the runner (a ``git worktree`` of an
older commit, its compiled parts built or copied), the two in turn in every repeat.

    PATH=$PATH:/usr/games python bench/bench_fresh_game.py [--games 40] [--repeat 3]
                                                           [--base DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROWS = ("loop, start", "loop, close", "process")

# run in a child process with the checkout first on its path; prints the three medians
CHILD = """
import asyncio, resource, statistics, sys, time
from runner.config import EngineConfig
from runner.play import spawn
from runner.play.engines import close_engines, start_engine
from runner.play import eventloop

games = int(sys.argv[1])
engines = [EngineConfig(name, command, (), options={"Hash": 16, "Threads": 1})
           for name, command in (("Stockfish", "/usr/games/stockfish"),
                                 ("Ethereal", "/usr/games/ethereal-chess"))]

def process_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

async def main():
    spawn.warm_up()
    rows = ([], [], [])
    for game in range(games + 3):
        before, began = process_cpu(), time.thread_time()
        procs = await asyncio.gather(*(start_engine(e, timeout=30) for e in engines))
        started = time.thread_time()
        await close_engines(procs)
        closed = time.thread_time()
        await asyncio.sleep(0.01)  # the end's last callbacks, off the next game's account
        if game >= 3:
            for row, value in zip(rows, (started - began, closed - started,
                                         process_cpu() - before)):
                row.append(value)
    print(" ".join(f"{1000 * statistics.median(row):.3f}" for row in rows))

eventloop.run(main())  # the runner's own loop (uvloop), as `run` plays on
"""


def measure(repo: Path, games: int) -> list[float]:
    """The three medians, in ms, of ``games`` games with ``repo``'s runner."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    out = subprocess.run([sys.executable, "-c", CHILD, str(games)], env=env, cwd=repo,
                         check=True, capture_output=True, text=True).stdout
    return [float(word) for word in out.split()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--base", type=Path, help="another checkout, measured in turn")
    args = ap.parse_args()
    checkouts = {"this": REPO, **({"base": args.base.resolve()} if args.base else {})}
    results: dict[str, list[list[float]]] = {name: [] for name in checkouts}
    for repeat in range(args.repeat):
        for name, repo in checkouts.items():
            results[name].append(measure(repo, args.games))
            print(f"repeat {repeat + 1}, {name}: {results[name][-1]} "
                  f"(load {os.getloadavg()[0]:.2f})", file=sys.stderr, flush=True)
    print(f"{args.games} games a run, {args.repeat} run(s) per checkout, in turn; "
          "median [lowest, highest], ms per game")
    print()
    print("| checkout | " + " | ".join(ROWS) + " |")
    print("|---|" + "---|" * len(ROWS))
    for name, runs in results.items():
        cells = []
        for i in range(len(ROWS)):
            values = [run[i] for run in runs]
            cells.append(f"{statistics.median(values):.2f} [{min(values):.2f}, {max(values):.2f}]")
        print(f"| {name} ({checkouts[name]}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
