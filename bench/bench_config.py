"""How long `swiss-runner validate` and `status` take on the shipped configs, and what
loading a config costs in-process (the schema's share: pydantic's import and the models).

    .venv/bin/python bench/bench_config.py [--runs N] [--pythonpath DIR]

``--pythonpath DIR`` runs another checkout's ``runner`` package (e.g. an older commit
unpacked with ``git archive COMMIT runner | tar -x -C DIR``) for a before/after comparison.
Results are medians of N fresh processes, wall and CPU time (CPU time is what a machine
loaded by others blurs least); `status` runs on configs without an event (it loads and
validates the config, then says there is none). Measurements: docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one fresh process; CPU time is what a loaded machine blurs least."""
    start, cpu = time.perf_counter(), _cpu()
    subprocess.run([sys.executable, "-c", "import sys; from runner.cli import main; "
                    "sys.exit(main(sys.argv[1:]))", *argv], env=env, cwd="/",
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start, _cpu() - cpu


def _in_process(env: dict[str, str]) -> str:
    code = ("import time; t = time.perf_counter(); from runner.config import load_config; "
            "a = time.perf_counter(); load_config(%r); b = time.perf_counter(); "
            "load_config(%r); c = time.perf_counter(); import sys; "
            "print(f'import {a - t:.3f} s, first load {b - a:.3f} s, next load {c - b:.3f} s, "
            "msgspec imported: {\"msgspec\" in sys.modules}, python-chess imported: {\"chess\" in sys.modules}')") % ((str(CONFIGS[0]),) * 2)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd="/", capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pythonpath", help="run this checkout's runner package instead")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    print(f"runner from {args.pythonpath or REPO}; median of {args.runs} runs")
    for command in ("validate", "status"):
        for config in CONFIGS:
            runs = [_run([command, str(config)], env) for _ in range(args.runs)]
            wall, cpu = [r[0] for r in runs], [r[1] for r in runs]
            print(f"{command:9} {config.name:16} wall {statistics.median(wall) * 1000:5.0f} ms "
                  f"(min {min(wall) * 1000:4.0f}), CPU {statistics.median(cpu) * 1000:5.0f} ms "
                  f"(min {min(cpu) * 1000:4.0f})")
    print("in-process:", _in_process(env))


if __name__ == "__main__":
    main()
