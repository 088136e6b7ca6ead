"""One move's path through the runner, by part: the loop thread's CPU in each step of a ply.

Runs ``swiss-runner run`` in this process on bench_vs_peers.py's games (Stockfish vs
Ethereal at a fixed node count, the first ``--pairs`` lines of books/default.pgn each played
twice, one game at a time, the move log and the JSON state on), with each step of a ply
wrapped to add the thread CPU time it took (``time.thread_time``: the loop thread's own CPU,
not the wall time a loaded machine adds). Printed per part: calls, microseconds per call, and
microseconds per engine ply; then the loop thread's whole CPU: what the parts leave is the
event loop itself, the coroutines' switches, the timers, the garbage collector and start-up.
The other threads (the store's writer, the snapshot, the engines' reader threads of
runner.play.pipes) are in bench_vs_peers.py's whole-process figures.

Run it twice with different ``--pairs`` (the difference is what more moves cost, start-up
cancelling out), and with ``SWISS_RUNNER_PIPES=python`` for the pure-Python path.

    PATH=$PATH:/usr/games python bench/bench_move_parts.py [--pairs 8] [--restart off]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_vs_peers as peers_bench  # noqa: E402

from runner.domain import adjudication  # noqa: E402
from runner.play import engines, pipes, referee, relay, uci  # noqa: E402
from runner.service import recording  # noqa: E402
from runner.store import writer  # noqa: E402

CPU: collections.Counter[str] = collections.Counter()
CALLS: collections.Counter[str] = collections.Counter()

PARTS: list[tuple[Any, str, str]] = [
    (relay.MoveRelay, "_woken", "relayed: the loop woken, the moves taken (made in C: text, "
                                "info, score, PV, Move)"),
    (referee, "relay_reply", "relayed: the move's text, info and Move handed over"),
    (relay.MoveRelay, "start", "relayed: position + go written by the loop (the relay's chain broken)"),
    (relay.MoveRelay, "ack", "relayed: the relay told the move was taken"),
    (pipes.NativeOutput, "_woken", "compiled path: the loop woken, the move read (bestmove, info parsed)"),
    (engines._Timed, "pipe_data_received", "Python path: every read of the engine's output"),
    (uci, "parse_info", "  of which: the score line parsed"),
    (uci.UciMove, "end", "  of which: the move's end (timer, reader handed back)"),
    (uci.UciMove, "__init__", "the move's exchange made (UciMove)"),
    (uci.UciMove, "start", "position + go written (the clock starts)"),
    (referee, "_played", "the reply as python-chess's PlayResult"),
    (referee, "_plainly_pseudo_legal", "the move's legality: the quick yes from the bitboards"),
    (referee, "_refused", "a refused move's end (resigned, none, not pseudo-legal)"),
    (referee, "_pv", "the PV checked on a board"),
    (referee, "_push", "SAN, the move pushed, its king left safe (the rest of its legality)"),
    (referee, "_comment", "the PGN comment"),
    (referee, "_moves_left", "the moves left told by the SAN, a pawn's push or a free king step"),
    (referee, "natural_end", "mate, stalemate, repetition, fifty moves"),
    (adjudication.Adjudicator, "update", "adjudication (TCEC rules, Syzygy)"),
    (referee, "_move_event", "the MovePlayed event (FEN, clocks)"),
    (recording.GameEmit, "__call__", "the events' sinks but the moves' (store, console, live views)"),
    (writer.StoreWriter, "append", "a move queued for the store's writer (no move views here)"),
]


def _wrap(owner: Any, name: str, label: str) -> None:
    real: Callable[..., Any] = getattr(owner, name)
    clock = time.thread_time

    @functools.wraps(real)
    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = clock()
        try:
            return real(*args, **kwargs)
        finally:
            CPU[label] += clock() - t0
            CALLS[label] += 1

    setattr(owner, name, timed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--restart", choices=("on", "off"), default="off")
    args = ap.parse_args()
    for owner, name, label in PARTS:
        _wrap(owner, name, label)
    from runner.cli import main as cli  # late: after the wrapping, as a user's run imports it
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        book = peers_bench.book_lines(args.pairs, work)
        config = work / "event.yaml"
        config.write_text(yaml.safe_dump({
            "Event": "bench", "TimeControl": "inf", "Concurrency": 1, "Restart": args.restart,
            "SwissOptions": {"GamesPerMatch": 2, "Rounds": args.pairs, "Seeding": "listed",
                             "RandomOpenings": False, "StatePath": str(work / "state.json")},
            "Openings": {"File": str(book), "Format": "pgn", "Order": "sequential"},
            "Adjudication": {"MaxMoves": 150},
            "Engines": [{"Name": n, "Command": c, "Nodes": args.nodes,
                         "Options": {"Hash": 16, "Threads": 1}} for n, c in peers_bench.ENGINES],
        }))
        os.chdir(work)
        with contextlib.suppress(SystemExit):
            cli(["run", str(config), "--quiet"])
        loop_cpu = time.thread_time()
        _, plies = peers_bench.engine_plies(work / "games.pgn")
    parts = sum(CPU.values())
    print(f"\n{args.pairs * 2} games, restart {args.restart}, {plies} engine plies, engine pipes: "
          f"{pipes.path_name()}, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| part | calls | us/call | us/ply |")
    print("|---|---|---|---|")
    for _, _, label in PARTS:
        if CALLS[label]:
            print(f"| {label} | {CALLS[label]} | {1e6 * CPU[label] / CALLS[label]:.1f} | "
                  f"{1e6 * CPU[label] / plies:.1f} |")
    print(f"| the parts above | | | {1e6 * parts / plies:.1f} |")
    print(f"| the loop thread, all (start-up included) | | | {1e6 * loop_cpu / plies:.1f} |")


if __name__ == "__main__":
    main()
