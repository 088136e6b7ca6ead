"""The event loop's longest stall at each kind of moment of a running event.

Every engine's move time is stamped when the loop reads its pipe, so anything that holds the
loop is charged to every engine thinking in another game. This bench runs a real event
(real engines, the real referee, Syzygy adjudication on every ply of 4-man endgames) with a
ticker task that wakes every ``--tick`` ms and records how late each wake-up is, and marks
the moments that used to stall the loop:

- ``game start``: a game's task begins (engines started, handshake, its start written);
- ``game end``: its record is handed to the store and the views (PGN, snapshot);
- ``kill``: an engine process is closed (quit, kill, the sweep of what it started);
- ``adjudication``: a ply's adjudication (a Syzygy probe reads table files).

A wake-up's lateness is charged to every kind marked during it (the wake-up was due at most a
tick before); the table gives, per kind, how often it happened, its longest lateness, and the
loop thread's own CPU time over that wake-up's interval (``time.thread_time``): lateness
with little CPU is the loop waiting for a core (two cores shared with four engines), CPU is
the loop's own work, what the runner can remove. ``between rounds`` is the work done when
every game of a round has ended and no engine is on the clock: the garbage collection the loop
runs on purpose then, the round's summary and standings, the next round's pairing.

    python bench/bench_stalls.py [--games 16] [--concurrency 2] [--tick 1] [--spin] [--top N]

``--spin`` measures the stall itself: the ticker is a callback that puts itself back on the
loop's ready queue (``call_soon``), so it runs once in every iteration of the loop and each
gap between two of its runs is one iteration: the longest time an engine's pipe, readable
during it, waits before the loop reads it. The loop thread's CPU over the gap is the runner's
own work; the rest of the gap is the thread waiting for a core. The loop then never sleeps
(it uses a core all the time: the engines get the other one), so the event runs slower; the
rows keep only iterations of over 0.05 ms of CPU.

Run it on a quiet machine: another process's load shows up as lateness too (the ``other``
row: wake-ups late with no marked moment in them).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

POSITIONS = [  # 4 men each: every ply is probed (3-4-man tables, from python-chess's sdist)
    "8/8/8/4k3/8/8/3PK3/7R w - - 0 1", "8/8/3k4/8/8/2N5/3BK3/8 w - - 0 1",
    "8/8/8/3k4/8/8/1Q2K3/6q1 w - - 0 1", "8/5k2/8/8/2R5/8/4K3/6r1 w - - 0 1",
    "8/8/8/2k5/8/8/4KP2/6n1 w - - 0 1", "8/8/8/4k3/8/1B6/4K3/2b5 w - - 0 1",
    "8/8/3k4/8/8/8/2PPK3/8 w - - 0 1", "8/8/8/3k4/8/6B1/4K3/5N2 w - - 0 1"]


def syzygy_dir() -> Path:
    path = REPO / ".cache" / "syzygy"
    if not any(path.glob("*.rtbw")):
        sys.exit(f"{path}: no Syzygy tables (python scripts/get_syzygy.py)")
    return path


def write_event(directory: Path, games: int, concurrency: int) -> Path:
    import yaml

    (directory / "book.epd").write_text("".join(f"{p}\n" for p in POSITIONS))
    engines = [{"Name": n, "Command": c, "Nodes": 4000, "Options": o} for n, c, o in (
        ("Stockfish", "/usr/games/stockfish", {"Hash": 1}),
        ("Ethereal", "/usr/games/ethereal-chess", {"Hash": 2}),
        ("Fairy", "/usr/games/fairy-stockfish", {"Hash": 1}),
        ("Stockfish2", "/usr/games/stockfish", {"Hash": 2}))]
    rounds = max(1, games // 4)
    data = {"Event": "stalls", "TimeControl": "30+0.3", "Concurrency": concurrency,
            "SwissOptions": {"GamesPerMatch": 2, "Rounds": rounds, "Seeding": "listed",
                             "StatePath": str(directory / "state" / "s.json")},
            "Openings": {"File": "book.epd", "Order": "sequential"},
            "Adjudication": {"MaxMoves": 40, "Tablebases": {"Paths": [str(syzygy_dir())],
                                                        "MaxPieces": 4}},
            "Engines": engines}
    path = directory / "event.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=16, help="games to play (default 16)")
    parser.add_argument("--concurrency", type=int, default=2, help="games at once (default 2)")
    parser.add_argument("--tick", type=float, default=1.0,
                        help="ticker period in ms (1: libuv counts whole ms)")
    parser.add_argument("--top", type=int, default=0,
                        help="also list the N wake-ups (iterations) with the most loop CPU")
    parser.add_argument("--spin", action="store_true",
                        help="a ticker in every loop iteration: the stall of each iteration")
    args = parser.parse_args()

    from runner.config import load_config
    from runner.domain import adjudication
    from runner.play import engines, keep
    from runner.service.gamelife import GameLife
    from runner.service.schedule import Schedule
    from runner.service.tournament import Tournament
    from runner.service.views import router as sinks
    from runner.service.views.runviews import EventViews
    from runner.store.database import Store

    marks: list[tuple[float, str]] = []

    def marked(kind: str, fn, *, coroutine: bool = False):
        if coroutine:
            async def wrapped_async(*a, **k):
                marks.append((time.perf_counter(), kind))
                try:
                    return await fn(*a, **k)
                finally:
                    marks.append((time.perf_counter(), kind))
            return wrapped_async

        def wrapped(*a, **k):
            marks.append((time.perf_counter(), kind))
            try:
                return fn(*a, **k)
            finally:
                marks.append((time.perf_counter(), kind))
        return wrapped

    adjudication.Adjudicator.update = marked("adjudication", adjudication.Adjudicator.update)
    engines.EngineProcess.kill = marked("kill", engines.EngineProcess.kill)
    engines.EngineProcess.close = marked("kill", engines.EngineProcess.close, coroutine=True)
    # a game's engines not kept are closed together by the pool (EnginePool.release)
    keep.close_engines = marked("kill", keep.close_engines, coroutine=True)
    router_publish = sinks.EventRouter.publish

    def publish(self, event, then=None):
        kind = {"started": "game start", "finished": "game end"}.get(event.kind)
        if kind:
            marks.append((time.perf_counter(), kind))
        router_publish(self, event, then)
        if kind:
            marks.append((time.perf_counter(), kind))

    sinks.EventRouter.publish = publish
    play_one = GameLife.play

    async def play_one_marked(self, game):
        marks.append((time.perf_counter(), "game start"))
        await play_one(self, game)
        marks.append((time.perf_counter(), "game end"))

    GameLife.play = play_one_marked
    from runner.play import eventloop as loops

    loops.collect_garbage = marked("between rounds", loops.collect_garbage)
    Schedule.pair = marked("between rounds", Schedule.pair)
    for name in ("round_summary", "show_standings"):
        setattr(EventViews, name, marked("between rounds", getattr(EventViews, name)))

    tick = args.tick / 1000
    late: list[tuple[float, float, float, float]] = []  # (due, woke, lateness, loop CPU)

    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(write_event(Path(tmp), args.games, args.concurrency))
        store = Store.open(config.database)
        tour = Tournament(config, store, quiet=True)

        async def run() -> int:
            stop = False

            async def ticker() -> None:
                cpu = time.thread_time()
                while not stop:
                    due = time.perf_counter() + tick
                    await asyncio.sleep(tick)
                    now, was, cpu = time.perf_counter(), cpu, time.thread_time()
                    late.append((due, now, now - due, cpu - was))

            def spin(was: list[float]) -> None:
                now, cpu = time.perf_counter(), time.thread_time()
                if cpu - was[1] > 0.00005:
                    late.append((was[0], now, now - was[0], cpu - was[1]))
                if not stop:
                    was[0], was[1] = time.perf_counter(), time.thread_time()
                    loop.call_soon(spin, was)

            loop = asyncio.get_running_loop()
            if args.spin:
                spin([time.perf_counter(), time.thread_time()])
                task = asyncio.ensure_future(asyncio.sleep(0))
            else:
                task = asyncio.ensure_future(ticker())
            code = tour.prepare()
            if code is None:
                code = await tour.run()
            stop = True
            await task
            return code

        from runner.play import eventloop

        started = time.perf_counter()
        code = eventloop.run(run())
        wall = time.perf_counter() - started
        store.close()

    marks.sort()
    times = [t for t, _ in marks]
    import bisect

    worst: dict[str, list[float]] = {}
    busy: dict[str, list[float]] = {}
    other = other_busy = 0.0
    tops: list[tuple[float, float, float, list[str]]] = []
    for due, woke, lateness, cpu in late:
        lo = bisect.bisect_left(times, due - (0 if args.spin else tick))
        hi = bisect.bisect_right(times, woke)
        kinds = {marks[i][1] for i in range(lo, hi)}
        tops.append((cpu, lateness, due - started, sorted(kinds)))
        if not kinds:
            other, other_busy = max(other, lateness), max(other_busy, cpu - (0 if args.spin else tick))
        for kind in kinds:
            worst.setdefault(kind, []).append(lateness)
            busy.setdefault(kind, []).append(max(0.0, cpu))
    counts: dict[str, int] = {}
    for _, kind in marks:
        counts[kind] = counts.get(kind, 0) + 1
    print(f"exit {code}; {wall:.1f} s; loop {eventloop.loop_choice()}; "
          + (f"{len(late)} loop iterations of over 0.05 ms of CPU" if args.spin else
             f"{len(late)} wake-ups every {args.tick} ms"))
    print(f"{'moment':<14} {'marks':>6} {'max late ms':>12} {'p99 late':>9} "
          f"{'max loop CPU ms':>16} {'p99 CPU':>8}")
    for kind in ("between rounds", "game start", "game end", "kill", "adjudication"):
        values = sorted(worst.get(kind, [0.0]))
        cpu = sorted(busy.get(kind, [0.0]))
        print(f"{kind:<14} {counts.get(kind, 0) // 2:>6} {values[-1] * 1000:>12.2f} "
              f"{values[int(0.99 * (len(values) - 1))] * 1000:>9.2f} {cpu[-1] * 1000:>16.2f} "
              f"{cpu[int(0.99 * (len(cpu) - 1))] * 1000:>8.2f}")
    for cpu, lateness, at, kinds in sorted(tops, reverse=True)[:args.top]:
        print(f"  at {at:8.3f} s: loop CPU {cpu * 1000:6.2f} ms, late {lateness * 1000:6.2f} ms: "
              f"{', '.join(kinds) or '-'}")
    print(f"{'other':<14} {'':>6} {other * 1000:>12.2f} {'':>9} {other_busy * 1000:>16.2f}")


if __name__ == "__main__":
    main()
