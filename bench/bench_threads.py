"""Where the runner's CPU per engine ply goes, by thread: the event loop's, the compiled
readers', the others (the store's writer, the snapshot, the engine spawner).

Plays bench_vs_peers.py's games (Stockfish vs Ethereal at ``--nodes``, one round per opening
of books/default.pgn, each opening with colours reversed) as a swiss-runner event in a process
of its own, twice: with ``--pairs`` openings and with ``--steady``. Each thread's CPU
(user + system) is read from /proc/PID/task every 20 ms while the run lasts (a thread's last
reading stands for it: up to 20 ms of a thread that ends before the run are lost): its time
on a CPU in nanoseconds (``schedstat``), or where the kernel keeps no schedstat its user and
system times, which count in scheduler ticks (10 ms here: 6 us per ply of the difference).
The marginal CPU per ply of each group is (the long run's - the short run's) / (the long
run's plies - the short run's), so the start-up cancels out. ``--repeat`` runs each size
that many times, in turn; the table gives the median with [lowest, highest] and the load
averages. ``--pythonpath`` measures another checkout the
same way (its compiled parts as it built them). Linux only (/proc).

    PATH=$PATH:/usr/games python bench/bench_threads.py [--pairs 32] [--steady 8]
        [--restart off|on] [--nodes 3000] [--repeat 3] [--pythonpath OTHER_CHECKOUT]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_vs_peers as peers  # noqa: E402 - the same games, books and PGN count

GROUPS = ("event loop (main thread)", "compiled readers (engine-reader)", "other threads")


def thread_cpu(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """Seconds of CPU per group of the process's threads, sampled until it exits."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    tick = os.sysconf("SC_CLK_TCK")
    last: dict[int, tuple[str, float]] = {}
    while proc.poll() is None:
        try:
            tids = os.listdir(f"/proc/{proc.pid}/task")
        except OSError:
            break
        for tid in tids:
            try:
                stat = Path(f"/proc/{proc.pid}/task/{tid}/stat").read_text()
            except OSError:
                continue
            try:  # its time on a CPU, in ns
                on_cpu = int(Path(f"/proc/{proc.pid}/task/{tid}/schedstat").read_text()
                             .split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                on_cpu = None  # no schedstat: user + system, in ticks
            fields = stat[stat.rindex(")") + 2:].split()
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            last[int(tid)] = (name, on_cpu if on_cpu is not None
                              else (int(fields[11]) + int(fields[12])) / tick)
        time.sleep(0.02)
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"swiss-runner exited {proc.returncode}: {err.decode()[-400:]}")
    groups = dict.fromkeys(GROUPS, 0.0)
    for tid, (name, seconds) in last.items():
        group = GROUPS[0] if tid == proc.pid else GROUPS[1] if name == "engine-reader" \
            else GROUPS[2]
        groups[group] += seconds
    return groups


def run(repo: Path, pairs: int, nodes: int, restart: str) -> tuple[dict[str, float], int]:
    """One event of ``pairs`` openings played by the checkout ``repo``: CPU per group, plies."""
    return peers.measured_event(repo, pairs, nodes, restart, thread_cpu)


def main() -> None:
    args = peers.measured_event_args(__doc__.split("\n\n")[0], repeat=3)
    repo = args.pythonpath.resolve()
    # compiled first, as an installed package is (with PYTHONDONTWRITEBYTECODE set, every
    # start would compile every module again)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "runner")], check=True)
    start, load0 = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), os.getloadavg()
    marginal: dict[str, list[float]] = {g: [] for g in (*GROUPS, "all")}
    for _ in range(args.repeat):
        long_cpu, long_plies = run(repo, args.pairs, args.nodes, args.restart)
        short_cpu, short_plies = run(repo, args.steady, args.nodes, args.restart)
        plies = long_plies - short_plies
        for group in GROUPS:
            marginal[group].append(1e6 * (long_cpu[group] - short_cpu[group]) / plies)
        marginal["all"].append(1e6 * (sum(long_cpu.values()) - sum(short_cpu.values())) / plies)
    load1 = os.getloadavg()
    print(f"{repo}: {args.pairs} openings minus {args.steady}, Restart: {args.restart}, "
          f"nodes {args.nodes}, {args.repeat} run(s) each in turn; start {start}, load "
          f"{load0[0]:.2f}; end load {load1[0]:.2f}\n")
    print("| thread(s) | marginal CPU per engine ply, us (median [lowest, highest]) |")
    print("|---|---|")
    for group, values in marginal.items():
        print(f"| {group} | {statistics.median(values):.0f} [{min(values):.0f}, "
              f"{max(values):.0f}] |")


if __name__ == "__main__":
    main()
