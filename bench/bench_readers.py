"""What an engine's line costs its compiled reader thread, and when its ``bestmove`` is read.

A test engine (a child process) answers each ``go`` with ``--lines`` ``info`` lines
``--gap`` ms apart, its thread running between them as a searching engine's does, then
``bestmove`` carrying its own CLOCK_MONOTONIC, taken just before its one ``write()``. A
runner.play._pipes.Reader reads it in move mode at the priority runner.play.pipes asks for,
two ways in turn (``--runs`` times ``--moves`` moves each):

- ``following``: given the engine's pid, as the runner gives it: a real-time reader binds
  itself to the engine's CPU (docs/referee.md, "The engine's pipes");
- ``not following``: no pid, the reader wakes wherever the kernel puts it.

Reported per way: the reader thread's CPU per move and per line (its schedstat), and
``bestmove`` written -> the reader's stamp (p50 / p99 / max): the following must make the
first smaller without making the second larger.

    python bench/bench_readers.py [--moves 100] [--lines 8] [--gap 1.0] [--runs 6]
"""

from __future__ import annotations

import argparse
import os
import select
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ENGINE = r"""
import os, sys, time
lines, gap = int(sys.argv[1]), float(sys.argv[2]) / 1000
for line in sys.stdin:
    for depth in range(1, lines + 1):
        until = time.monotonic() + gap
        while time.monotonic() < until:
            pass
        os.write(1, b"info depth %d seldepth %d score cp 17 nodes %d nps 250000 hashfull 3 "
                    b"tbhits 0 time 4 pv e2e4 e7e5 g1f3 b8c6 f1b5 a7a6\n" % (depth, depth, depth * 999))
    written = time.monotonic()
    os.write(1, b"bestmove e2e4 ponder e7e5 written %r\n" % written)
"""


def one_run(follow: bool, moves: int, lines: int, gap: float) -> tuple[list[float], float, str]:
    """(bestmove written -> stamp per move in ms, the reader's CPU per move in us, its
    priority) for one engine and its reader."""
    from runner.play import pipes

    module = pipes.native()
    engine = subprocess.Popen([sys.executable, "-c", ENGINE, str(lines), str(gap)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    fd = os.dup(engine.stdout.fileno())
    engine.stdout.close()
    reader = module.Reader(fd, *pipes.reader_priority(), engine.pid if follow else 0)
    late = []
    try:
        for _ in range(moves):
            reader.begin_move(b"")
            engine.stdin.write(b"go\n")
            engine.stdin.flush()
            move = None
            while move is None:
                select.select([reader.fileno()], [], [], 1.0)
                move = next((e for e in reader.take() if e[0] == module.MOVE), None)
            late.append((move[2] - float(move[1].split(b" written ")[1])) * 1000)
        with open(f"/proc/self/task/{reader.native_id}/schedstat") as stat:
            cpu_us = int(stat.read().split()[0]) / 1000 / moves
        return late, cpu_us, reader.priority
    finally:
        reader.stop()
        engine.stdin.close()
        engine.kill()
        engine.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--lines", type=int, default=8, help="info lines per move")
    parser.add_argument("--gap", type=float, default=1.0, help="ms between them")
    parser.add_argument("--runs", type=int, default=6)
    args = parser.parse_args()
    from runner.play import pipes

    if pipes.native() is None:
        sys.exit("bench_readers: runner.play._pipes is not built (scripts/install.sh)")
    late: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    priority = ""
    for _ in range(args.runs):
        for follow in (False, True):
            got, cpu_us, priority = one_run(follow, args.moves, args.lines, args.gap)
            late[follow] += got
            cpu[follow].append(cpu_us)
    print(f"{args.runs} x {args.moves} moves each way, in turn; {args.lines} info lines "
          f"{args.gap} ms apart; reader priority {priority}; load {os.getloadavg()[0]:.2f}")
    print("| reader | CPU per move us (median of runs) | per line us | bestmove -> read "
          "p50 | p99 | max ms |")
    print("|---|---|---|---|---|---|")
    for follow in (False, True):
        times = sorted(late[follow])
        per_move = statistics.median(cpu[follow])
        print(f"| {'following' if follow else 'not following'} | {per_move:.1f} | "
              f"{per_move / (args.lines + 1):.2f} | {times[len(times) // 2]:.3f} | "
              f"{times[int(len(times) * 0.99)]:.3f} | {times[-1]:.3f} |")


if __name__ == "__main__":
    main()
