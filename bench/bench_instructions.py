"""The runner's instructions per engine ply, counted: what CPU seconds on a shared machine
cannot show (there, a run's CPU moves 10-25% from one minute to the next; this count moved
0.4% between two runs under like load, but up to 3.5% between loads: the store's writer and
the snapshot run on timers, and a game under callgrind spans more of their turns on a busier
machine. Compare two checkouts measured side by side, at the same time).

Plays bench_vs_peers.py's games (Stockfish vs Ethereal at ``--nodes``, one round per opening
of books/default.pgn, each opening with colours reversed) as a swiss-runner event in a
process of its own under valgrind's callgrind, twice: with ``--pairs`` openings and with
``--steady``. callgrind counts the user-space instructions every thread of the runner's
process executes (the event loop, the compiled readers, the store's writer, the snapshot);
the engines, its children, are not traced, and the kernel's work for the runner (pipe reads
and writes, wakes, fsyncs: about a quarter of its CPU per ply here) is not counted. The
marginal count per ply is (the long run's - the short run's) / (the long run's plies - the
short run's), as bench_threads.py and bench_vs_peers.py take theirs: start-up cancels out,
the book's reading (one opening more per pair) does not. ``--pythonpath`` counts another
checkout the same way (its compiled parts as it built them). The runner is about 50 times
slower under callgrind: the two default runs take about 1.5 minutes. Needs valgrind
(Debian's package).

    PATH=$PATH:/usr/games python bench/bench_instructions.py [--pairs 32] [--steady 8]
        [--restart off|on] [--nodes 3000] [--repeat 1] [--pythonpath OTHER_CHECKOUT]
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_vs_peers as peers  # noqa: E402 - the same games, books and PGN count

COLLECTED = re.compile(r"^==\d+== Collected : (\d+)$", re.MULTILINE)


def counted(argv: list[str], cwd: Path, env: dict[str, str]) -> int:
    """The instructions ``argv`` executed, every thread, under callgrind (its children not)."""
    out = cwd / "callgrind.out"
    proc = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
                          cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, errors="replace")
    found = COLLECTED.search(proc.stderr)
    if proc.returncode != 0 or found is None:
        raise RuntimeError(f"swiss-runner under callgrind exited {proc.returncode}: "
                           f"{proc.stderr[-400:]}")
    return int(found.group(1))


def run(repo: Path, pairs: int, nodes: int, restart: str) -> tuple[int, int]:
    """One event of ``pairs`` openings played by the checkout ``repo``: instructions, plies."""
    return peers.measured_event(repo, pairs, nodes, restart, counted)


def main() -> None:
    args = peers.measured_event_args(__doc__.split("\n\n")[0], repeat=1)
    if shutil.which("valgrind") is None:
        sys.exit("bench_instructions: valgrind is not on PATH (Debian: apt install valgrind)")
    repo = args.pythonpath.resolve()
    # compiled first, as an installed package is (with PYTHONDONTWRITEBYTECODE set, every
    # start would compile every module again, and that would be counted)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "runner")], check=True)
    start = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    rows = []
    for _ in range(args.repeat):
        long_count, long_plies = run(repo, args.pairs, args.nodes, args.restart)
        short_count, short_plies = run(repo, args.steady, args.nodes, args.restart)
        rows.append((long_count, long_plies, short_count, short_plies,
                     (long_count - short_count) / (long_plies - short_plies)))
    print(f"{repo}: {args.pairs} openings minus {args.steady}, Restart: {args.restart}, "
          f"nodes {args.nodes}, {args.repeat} run(s) of each; start {start}\n")
    print("| run | long: instructions, plies | short: instructions, plies | whole long run per "
          "ply | marginal per ply |")
    print("|---|---|---|---|---|")
    for i, (lc, lp, sc, sp, marginal) in enumerate(rows, 1):
        print(f"| {i} | {lc:,}, {lp} | {sc:,}, {sp} | {lc / lp:,.0f} | {marginal:,.0f} |")
    margins = [r[4] for r in rows]
    print(f"\nmarginal instructions per engine ply: {statistics.median(margins):,.0f} "
          f"[{min(margins):,.0f}, {max(margins):,.0f}]")


if __name__ == "__main__":
    main()
