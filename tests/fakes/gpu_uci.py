#!/usr/bin/env python3
"""A stand-in GPU engine (docs/gpus.md tests): a UCI engine that plays its first legal move
(sorted by UCI text) after ``--think`` seconds, and reports what it was given.

It appends one JSON line per event to ``--report FILE``: ``start`` (pid, argv, its
CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES, ``clash``) and, on each ``setoption``, ``ucinewgame`` and ``go``,
``option`` / ``newgame`` / ``go`` lines with ``clash``. ``clash``: the pids of other live stand-ins writing
to the same report whose CUDA_VISIBLE_DEVICES shares a device with its own (read from
/proc/PID/environ), so a test sees two engines alive at once on one device.

  --cuda-error-on-go N   print a CUDA error on stderr and stdout and exit(1) on the Nth ``go``
"""

import argparse
import json
import os
import sys
import time

import chess

REPORT_ENV = "GPU_FAKE_REPORT"


def devices(value: str | None) -> set[str]:
    return {d for d in (value or "").split(",") if d}


def clashes(report: str, mine: set[str]) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as handle:
                raw = handle.read().split(b"\0")
        except OSError:
            continue
        env = dict(item.decode(errors="replace").partition("=")[::2] for item in raw if item)
        if env.get(REPORT_ENV) == report and devices(env.get("CUDA_VISIBLE_DEVICES")) & mine:
            found.append(int(entry))
    return found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--think", type=float, default=0.0)
    ap.add_argument("--cuda-error-on-go", type=int, default=0)
    ap.add_argument("rest", nargs="*")
    args = ap.parse_args()
    os.environ[REPORT_ENV] = args.report  # (children would see it; /proc shows the start env)
    mine = devices(os.environ.get("CUDA_VISIBLE_DEVICES"))

    def report(kind: str, **data: object) -> None:
        line = {"kind": kind, "pid": os.getpid(), "time": time.time(),
                "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "hip": os.environ.get("HIP_VISIBLE_DEVICES"), "argv": sys.argv[1:],
                "clash": clashes(args.report, mine), **data}
        with open(args.report, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    report("start")
    state = {"board": chess.Board(), "gos": 0}

    def position(tokens: list[str]) -> None:
        board = state["board"] = chess.Board()
        for move in tokens[tokens.index("moves") + 1:] if "moves" in tokens else ():
            board.push_uci(move)

    def go(_tokens: list[str]) -> None:
        state["gos"] += 1
        report("go", n=state["gos"])
        if state["gos"] == args.cuda_error_on_go:
            text = "CUDA error: an illegal memory access was encountered (cudaErrorIllegalAddress)"
            print(text, flush=True)
            print(text, file=sys.stderr, flush=True)
            os._exit(1)
        time.sleep(args.think)
        move = sorted(state["board"].legal_moves, key=lambda m: m.uci())[0]
        print(f"info depth 1 score cp 0\nbestmove {move.uci()}", flush=True)

    answers = {
        "uci": lambda _t: print("id name GpuFake\noption name BackendOptions type string "
                                "default <empty>\nuciok", flush=True),
        "isready": lambda _t: print("readyok", flush=True),
        "setoption": lambda t: report("option", text=" ".join(t)),
        "ucinewgame": lambda _t: report("newgame"),
        "position": position,
        "go": go,
    }
    for raw in sys.stdin:
        tokens = raw.split() or [""]
        if tokens[0] == "quit":
            return
        answers.get(tokens[0], lambda _t: None)(tokens)

if __name__ == "__main__":
    main()
