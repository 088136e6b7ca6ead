"""The fixed CPU cost of a run: what `swiss-runner run` spends once, whatever its games.

Each row is a process started afresh, its CPU time (user + system, every thread of it,
engines excluded) read by the process itself at its exit (``time.process_time`` in an
``atexit`` hook: nanoseconds, where /proc's counters tick every 10 ms), in ms:

- ``python -c pass``: the interpreter and its site (the installed package's path hooks);
- ``imports of run``: the modules `run` imports before it plays (``runner.cli``,
  ``runner.cli.run`` and what they import);
- ``run, event complete``: ``python -m runner run`` of an event whose every game is recorded:
  config, store, fingerprint (the engines' binaries hashed), the final standings;
- ``run, 1 opening`` and ``run, 4 openings``: a new event of bench_vs_peers.py's games
  (Stockfish vs Ethereal at 3000 nodes, one game at a time, each opening played twice;
  ``--restart``: kept engines or fresh ones), its rounds, PGN and snapshot included.

``per game`` is (4 openings - 1 opening) / 6 games, and ``once per run`` the 1-opening run
less two such games: what a run costs before and after its games.

``--base DIR``: the same rows for another checkout of the runner (a ``git worktree`` of an
older commit, its compiled parts built or copied), the two in turn in every repeat, so that
a change is measured before and after in the same minutes.

    PATH=$PATH:/usr/games python bench/bench_startup.py [--repeat 5] [--restart off|on]
                                                        [--base DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import peers  # bench/peers.py
from bench_vs_peers import book_lines, event_config

REPO = Path(__file__).resolve().parents[1]
# this process's CPU so far, written to the file $CPU_OUT
REPORT = "open(__import__('os').environ['CPU_OUT'], 'w').write(str(__import__('time').process_time()))"
# `python -m runner ARGS`, its CPU written at exit
TIMED = ("import atexit, runpy, sys\n"
         f"atexit.register(lambda: {REPORT})\n"
         "sys.argv = ['runner', *sys.argv[1:]]\n"
         "runpy.run_module('runner', run_name='__main__', alter_sys=True)\n")
ROWS = ("python -c pass", "imports of run", "run, event complete", "run, 1 opening",
        "run, 4 openings")


def event(work: Path, pairs: int, restart: str) -> Path:
    """A new event of ``pairs`` openings (each played twice) in ``work``: its config."""
    work.mkdir(parents=True)
    return event_config(work, pairs, 3000, book_lines(pairs, work), restart)


def cpu_ms(repo: Path, argv: list[str], cwd: Path) -> float:
    """The CPU of ``python ARGV`` (with ``repo`` first on the path), in ms, as it wrote it
    itself (:data:`REPORT`)."""
    out = cwd / "cpu.txt"
    proc = subprocess.run([sys.executable, *argv], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(repo), "CPU_OUT": str(out)})
    if proc.returncode != 0:
        raise RuntimeError(f"{argv}: exited {proc.returncode}: {proc.stderr[-500:]}")
    return float(out.read_text()) * 1000


def one_repeat(repo: Path, restart: str, base: Path) -> dict[str, float]:
    """Every row once for the runner in ``repo``."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "runner")], check=True)
    got = {"python -c pass": cpu_ms(repo, ["-c", REPORT], base),
           "imports of run": cpu_ms(repo, ["-c", f"import runner.cli, runner.cli.run; {REPORT}"],
                                    base)}
    one = event(base / "one", 1, restart)
    got["run, 1 opening"] = cpu_ms(repo, ["-c", TIMED, "run", str(one), "--quiet"], one.parent)
    got["run, event complete"] = cpu_ms(repo, ["-c", TIMED, "run", str(one), "--quiet"],
                                        one.parent)
    four = event(base / "four", 4, restart)
    got["run, 4 openings"] = cpu_ms(repo, ["-c", TIMED, "run", str(four), "--quiet"],
                                    four.parent)
    return got


def derived(runs: list[dict[str, float]]) -> dict[str, list[float]]:
    """Each row's values over the repeats, with ``per game`` and ``once per run``."""
    rows = {row: [r[row] for r in runs] for row in ROWS}
    rows["per game"] = [(r["run, 4 openings"] - r["run, 1 opening"]) / 6 for r in runs]
    rows["once per run"] = [r["run, 1 opening"] - 2 * g
                            for r, g in zip(runs, rows["per game"], strict=True)]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="every row R times (default 5)")
    ap.add_argument("--restart", choices=("off", "on"), default="off",
                    help="kept engines (off, the default) or fresh ones every game (on)")
    ap.add_argument("--base", type=Path, help="another checkout, measured in turn with this one")
    args = ap.parse_args()
    repos = {"this": REPO, **({"base": args.base.resolve()} if args.base else {})}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in repos}
    start = peers.stamp()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for k in range(args.repeat):
            for name, repo in repos.items():
                work = Path(tmp) / f"{name}-{k}"
                work.mkdir()
                runs[name].append(one_repeat(repo, args.restart, work))
    print(f"restart {args.restart}, {args.repeat} repeat(s), the checkouts in turn; start "
          f"{start}; end {peers.stamp()}; CPU ms, median [lowest, highest]\n")
    table = {name: derived(r) for name, r in runs.items()}
    head = " | ".join(f"{name} ({repos[name]})" for name in repos)
    print(f"| row | {head} |" + (" difference of the medians |" if args.base else ""))
    print("|---|" + "---|" * len(repos) + ("---|" if args.base else ""))
    for row in table["this"]:
        cells = " | ".join(peers.spread(table[name][row], 1) for name in repos)
        diff = (f" {statistics.median(table['this'][row]) - statistics.median(table['base'][row]):+.1f} |"
                if args.base else "")
        print(f"| {row} | {cells} |{diff}")


if __name__ == "__main__":
    main()
