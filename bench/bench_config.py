"""How long `swiss-runner validate` and `status` take on the shipped configs, before and after
the config's schema library (issue #42), and what loading a config costs in-process.

    .venv/bin/python bench/bench_config.py [--runs N] [--base COMMIT|DIR|none] [--now DIR]
                                           [--commands validate,status] [--instructions]

``--base`` is the code compared with: a commit (its ``runner`` package is unpacked with
``git archive COMMIT runner`` into a temporary directory), a directory holding a ``runner``
package, or ``none`` (measure ``--now`` alone). The default, ba3cd0b, is the last commit
before the schema work (the hand-written checker). ``--now``: the checkout measured (default:
this one). Both packages are byte-compiled first (the shell may set PYTHONDONTWRITEBYTECODE),
and both run on this checkout's configs with this interpreter and its site-packages.

Each run starts fresh processes, the base's and the current one's in turn (alternating
which goes first), so a machine loaded by others slows both alike; each is ``python -m
runner COMMAND CONFIG``, as the console script runs it. Reported: the median
CPU time of the whole process (user + system: what such a machine blurs least) over N runs
of each, its minimum, the median wall time, and the median of the paired differences
(now minus base, run by run). `status` runs on configs without an event: it loads and
validates the config, then says there is none. ``--instructions`` also counts the
instructions of one run of each under ``valgrind --tool=callgrind`` (PYTHONHASHSEED=0): a
number the machine's load does not change, slow (seconds a run). Measurements:
docs/performance.md.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
BASE_COMMIT = "ba3cd0b"  # the hand-written checker, before msgspec


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str], pythonpath: Path) -> tuple[float, float, int]:
    """(wall, CPU) seconds and exit status of one fresh process running ``pythonpath``'s
    runner."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run([sys.executable, "-m", "runner", *argv], env=env, cwd="/",
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, _cpu() - cpu, done.returncode


def _instructions(argv: list[str], pythonpath: Path) -> int:
    """Instructions executed by one ``python -m runner`` process (callgrind's Ir)."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "PYTHONHASHSEED": "0"}
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           sys.executable, "-m", "runner", *argv], env=env, cwd="/",
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          check=False)
    counted = re.search(r"Collected : (\d+)", done.stderr)
    if counted is None:
        sys.exit(f"valgrind counted nothing: {done.stderr.strip()[-500:]}")
    return int(counted[1])


def _in_process(pythonpath: Path) -> str:
    code = ("import time; t = time.process_time(); from runner.config import load_config; "
            "a = time.process_time(); load_config(%r); b = time.process_time(); "
            "load_config(%r); c = time.process_time(); import sys; "
            "print(f'import {(a - t) * 1000:.1f} ms, first load {(b - a) * 1000:.1f} ms, "
            "next load {(c - b) * 1000:.1f} ms (CPU); msgspec imported: "
            "{\"msgspec\" in sys.modules}, python-chess imported: {\"chess\" in sys.modules}')"
            ) % ((str(CONFIGS[0]),) * 2)
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ,
                         "PYTHONPATH": str(pythonpath)}, cwd="/", capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def _checkout(base: str, workdir: Path) -> Path:
    """The directory holding the base's ``runner`` package."""
    if Path(base, "runner").is_dir():
        return Path(base).resolve()
    target = workdir / "base"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", base, "runner"],
                             capture_output=True, check=False)
    if archive.returncode:
        sys.exit(f"--base {base}: neither a directory with a runner package nor a commit "
                 f"of {REPO}: {archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:5.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15, help="runs of each (default 15)")
    parser.add_argument("--base", default=BASE_COMMIT,
                        help=f"commit or directory compared with, or none (default {BASE_COMMIT})")
    parser.add_argument("--now", default=str(REPO), help="the checkout measured (default: this one)")
    parser.add_argument("--commands", default="validate,status",
                        help="commands measured, comma-separated (default validate,status)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each one's instructions under valgrind (slow)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench_config.") as tmp:
        trees = {"now": Path(args.now).resolve()}
        if args.base != "none":
            trees = {"base": _checkout(args.base, Path(tmp)), **trees}
        for tree in trees.values():
            compileall.compile_dir(tree / "runner", quiet=1)
        print(f"median of {args.runs} runs each, CPU and wall ms of the whole process; "
              + ", ".join(f"{name}: {path}" for name, path in trees.items()))
        print(f"{'':26}" + "".join(f"{name + ' CPU':>10} {'(min)':>6} {'wall':>6}  "
                                    for name in trees)
              + ("now-base (paired)" if len(trees) == 2 else ""))
        for command in args.commands.split(","):
            for config in CONFIGS:
                runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in trees}
                for i in range(args.runs):
                    for name in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
                        runs[name].append(_run([command, str(config)], trees[name]))
                line = f"{command:9} {config.name:16}"
                for name in trees:
                    cpu = [r[1] for r in runs[name]]
                    status = {r[2] for r in runs[name]}
                    line += (f" {_ms(cpu):>9} {min(cpu) * 1000:6.0f} {_ms([r[0] for r in runs[name]])}"
                             + ("  " if status <= {0, 1} else f"! exit {sorted(status)}"))
                if len(trees) == 2:
                    diff = [n[1] - b[1] for b, n in zip(runs["base"], runs["now"], strict=True)]
                    base = statistics.median(r[1] for r in runs["base"])
                    line += (f" {statistics.median(diff) * 1000:+5.0f} ms "
                             f"({statistics.median(diff) / base:+.0%})")
                print(line, flush=True)
        for name, tree in trees.items():
            print(f"in-process ({name}):", _in_process(tree))
        if args.instructions:
            print("instructions (callgrind Ir, one run each, millions)")
            for command in args.commands.split(","):
                for config in CONFIGS:
                    counts = {name: _instructions([command, str(config)], tree)
                              for name, tree in trees.items()}
                    line = f"{command:9} {config.name:16}" + "".join(
                        f" {name} {count / 1e6:7.1f}" for name, count in counts.items())
                    if len(counts) == 2:
                        line += f"  {counts['now'] / counts['base'] - 1:+.1%}"
                    print(line, flush=True)


if __name__ == "__main__":
    main()
