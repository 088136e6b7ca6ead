"""Clock accuracy of the built-in referee: per move, the time charged minus the time the
engine really took.

The engines are UCI test engines (written to a temporary directory) that think exactly
``--think`` ms per move: they sleep, using no CPU, and log (CLOCK_MONOTONIC, which every
process on the machine shares) when they read ``go`` (when the ``read()`` that brought it
returned) and when they wrote ``bestmove`` (just before its one ``write()``). The
runner plays a whole event in this process (``swiss-runner run``), with ``--concurrency``
games at once (default 2 x the cores) and short games (``--max-moves``), so that games start
and end all the time; the referee's move function is wrapped to record each move's ``go``
sent and ``bestmove`` read times (what the clock is charged from). Reported, over every
engine move: p50 / p99 / max of

- ``charged - taken``: (bestmove read - go sent) - (bestmove written - go read);
- ``in``: go read by the engine - go sent; ``out``: bestmove read - bestmove written.

Every runner move's excess is also split into its parts (bench/clocktrace.py): our ``go``
stamp to the end of the write, the engine's wait for a CPU to read ``go`` (its run-queue
time over that read, Linux schedstat) and the rest of ``in``; the engine's wait for a CPU in
its ``bestmove`` write, the reading thread's wait for a CPU and the rest of ``out``; the
mean, p99 and max of each. ``--explain MS`` (Linux) adds the reading thread's wait (the
compiled reader's schedstat, read at each ``go`` and move; on the Python path the loop's, at
each read) and, for every move charged more than MS ms over the engine's own time, the part
that took most of it, whether an engine was starting meanwhile (fresh engines), how many
tasks the machine was running and whether the engine read ``go`` on the core the loop wrote
it on. For every tool, the table also has the excess's p99 less the engine's own waits for
a CPU (to read ``go``, in its ``bestmove`` write: the machine's part, charged by every
referee): what is left is the referee's own (the peers' in whole ms, as their PGN has it).

``--tc 1+0.01 --think 0`` is the short-clock check: the engines then think 1/30 of their
remaining time plus half the increment (never more than they have), so a time forfeit is the
runner's, unless the engine's own log shows it took longer than its clock.

One invocation plays every tool in both modes, like for like: swiss-runner, cutechess-cli
and fastchess (``--tools``), each with fresh engines every game and with kept ones
(``--restart both``, the default; ``on`` or ``off`` for one), each cell in a process of its
own (this script again, with ``--cell``), the cells in turn, ``--repeat`` times; then one
markdown table (median over the repeats, [lowest, highest] after it) with the time and the
load averages at the start and the end: the machine may be shared, so only tools measured in
the same run compare. Every tool plays the same games: the ``2 x --concurrency`` engines
each meet each other twice (colours reversed), as many times over as make about ``--games``
(the runner as ``engines - 1`` Swiss rounds per round robin; 64 or 60 games at 4 at once
make one: 56 games).

    PATH=$PATH:/usr/games python bench/bench_clock.py [--think 30] [--concurrency N] [--games 64]
                                [--max-moves 8] [--restart on|off|both] [--tools T1,T2]
                                [--repeat R] [--loop asyncio|uvloop] [--tc 60+1]
                                [--backend builtin|cutechess] [--explain MS] [--ponder]
                                [--fastchess BINARY] [--cutechess BINARY]

The peers are on no package registry (build them by hand, docs/performance.md): the
binaries are ``--fastchess`` / ``--cutechess``, else FASTCHESS / CUTECHESS_CLI, else
fastchess / cutechess-cli on PATH; a missing one is a row that says so. They play the same
games (same engines, time control, concurrency, game length; ``-each restart=``): the time
charged is what their PGN says for each move (in ms), matched to the engines' logs on the
moves played. ``--ponder`` and ``--explain`` are for swiss-runner alone (the default
``--tools`` then).

``--backend cutechess`` runs the event with swiss-runner's ``Backend: cutechess`` (one
cutechess-cli process per game; CUTECHESS_CLI or cutechess-cli on PATH). For every runner
run the time charged is also read back as recorded (the move log's ``time_ms``, whole ms as
the PGN shows it), matched to the engines' logs the same way: for the cutechess backend that
is the only figure, for the built-in referee it shows what rounding to ms does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import clocktrace  # bench/clocktrace.py
import peers  # bench/peers.py
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ENGINE = '''#!{python}
import os, random, sys, time
import chess
think = {think} / 1000
ponder = {ponder}
log = []
board = chess.Board()
rng = random.Random(os.getpid())
inp, out = sys.stdin.buffer, sys.stdout
pondering = None  # the go tokens of a go ponder search, until ponderhit or stop


def run_queue_ns():
    # this thread's time spent waiting for a CPU so far (Linux schedstat), None elsewhere
    try:
        with open("/proc/thread-self/schedstat", "rb") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def cpu_now():
    # the core this thread runs on (Linux: /proc/thread-self/stat's "processor"), -1 elsewhere
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return -1


def choose(board):
    legal = sorted(board.legal_moves, key=lambda m: m.uci())
    # pondering: mostly the first legal move, which is what the opponent expects
    return legal[0] if ponder and rng.random() < 0.7 else rng.choice(legal)


def answer(tokens, t0, read_wait, cpu):
    mine = "wtime" if board.turn else "btime"
    inc = "winc" if board.turn else "binc"
    left = int(tokens[tokens.index(mine) + 1]) / 1000 if mine in tokens else None
    plus = int(tokens[tokens.index(inc) + 1]) / 1000 if inc in tokens else 0.0
    budget = think if think > 0 or left is None else min(left / 30 + plus / 2, left * 0.5)
    if not any(board.legal_moves):  # a go past the game's end (a relayed move that mated):
        out.write("bestmove (none)\\n"); out.flush()  # as real engines answer, not logged
        return
    move = choose(board)
    time.sleep(max(0.0, budget - (time.monotonic() - t0)))
    guess = ""
    if ponder:
        board.push(move)
        replies = sorted(board.legal_moves, key=lambda m: m.uci())
        board.pop()
        guess = f" ponder {{replies[0].uci()}}" if replies else ""
    text = f"info depth 1 score cp 0 pv {{move.uci()}}\\nbestmove {{move.uci()}}{{guess}}\\n"
    out.flush()
    # stamped just before the one write: a referee woken by it (and taking this core at
    # once) cannot make the move look longer than it was
    queued = run_queue_ns()
    t1 = time.monotonic()
    os.write(out.fileno(), text.encode())
    after = run_queue_ns()
    # how long it waited for a CPU between that stamp and the end of its write (-1: unknown)
    waited = (after - queued) / 1e9 if queued is not None and after is not None else -1
    played = " ".join(m.uci() for m in board.move_stack) or "-"
    log.append(f"{{t0:.6f}} {{t1:.6f}} {{left if left is not None else -1}} {{waited:.6f}}"
               f" {{read_wait:.6f}} {{cpu}}\\t{{played}}\\t{{move.uci()}}")


def lines():
    # each line with the time the read() that brought its end returned: when the engine read
    # it (``position`` and ``go`` come in one write: the go is read before position is parsed),
    # and how long it waited for a CPU during that read (woken by the write; -1: unknown)
    rest = b""
    while True:
        queued = run_queue_ns()
        chunk = os.read(inp.fileno(), 65536)
        if not chunk:
            return
        t = time.monotonic()
        after = run_queue_ns()
        waited = (after - queued) / 1e9 if queued is not None and after is not None else -1
        cpu = cpu_now()  # where it was woken (the runner's --explain: the loop's core?)
        *complete, rest = (rest + chunk).split(b"\\n")
        for raw in complete:
            yield raw, t, waited, cpu


for raw, t0, read_wait, cpu in lines():
    line = raw.decode().strip()
    if line == "uci":
        option = "option name Ponder type check default false\\n" if ponder else ""
        out.write(f"id name Sleeper\\n{{option}}uciok\\n"); out.flush()
    elif line == "isready":
        out.write("readyok\\n"); out.flush()
    elif line.startswith("position"):
        tokens = line.split()
        board = chess.Board() if tokens[1] == "startpos" else chess.Board(" ".join(tokens[2:8]))
        if "moves" in tokens:
            for m in tokens[tokens.index("moves") + 1:]:
                board.push_uci(m)
    elif line.startswith("go") and "ponder" in line.split():
        pondering = line.split()  # its clock starts at ponderhit
    elif line == "ponderhit" and pondering is not None:
        tokens, pondering = pondering, None
        answer(tokens, t0, read_wait, cpu)
    elif line == "stop" and pondering is not None:
        pondering = None  # not a move of the game: answered at once, not logged
        best = choose(board).uci() if any(board.legal_moves) else "(none)"
        out.write(f"bestmove {{best}}\\n"); out.flush()
    elif line.startswith("go"):
        answer(line.split(), t0, read_wait, cpu)
    elif line == "quit":
        break
with open(os.path.join({logdir!r}, f"{{os.getpid()}}.log"), "w") as f:
    f.write("\\n".join(log) + "\\n")
'''

def quantiles(values: list[float]) -> dict[str, float]:
    """p50, p99, max and mean of ``values`` (seconds), in ms; {} for no values."""
    if not values:
        return {}
    values = sorted(values)
    p = lambda q: values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]  # noqa: E731
    return {"p50": p(0.5) * 1000, "p99": p(0.99) * 1000, "max": values[-1] * 1000,
            "mean": statistics.fmean(values) * 1000}


def percentiles(values: list[float]) -> str:
    if not values:
        return "no moves"
    q = quantiles(values)
    return (f"p50 {q['p50']:7.3f}  p99 {q['p99']:7.3f}  max {q['max']:7.3f}"
            f"  mean {q['mean']:7.3f} ms")


def round_robins(args: argparse.Namespace, engines_n: int) -> int:
    """How many double round robins of the engines (``-games 2``) make about ``--games``: every
    tool plays that many, the runner as (engines - 1) Swiss rounds each (the same games)."""
    return max(1, round(args.games / (engines_n * (engines_n - 1))))


def emit(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """A cell's result for the driver (``--json PATH``)."""
    if args.json:
        Path(args.json).write_text(json.dumps(result))


def read_logs(logdir: Path) -> tuple[dict[int, list[tuple[float, ...]]],
                                      dict[tuple[str, str], float],
                                      dict[tuple[str, str], float]]:
    """The test engines' logs: per pid, (go read, bestmove written, clock left, its wait for
    a CPU between that stamp and the end of its write, its wait for a CPU in its read of
    go, the core it read go on) per move; the time taken per (moves before, move played);
    and the engine's two waits for a CPU per (moves before, move played)."""
    logs: dict[int, list[tuple[float, ...]]] = {}
    taken: dict[tuple[str, str], float] = {}
    waits: dict[tuple[str, str], float] = {}
    for path in logdir.iterdir():
        rows = logs[int(path.stem)] = []
        for line in path.read_text().split("\n"):
            if line:
                times, before, move = line.split("\t")
                row = tuple(map(float, times.split()))
                rows.append(row)
                taken[(before, move)] = row[1] - row[0]
                waits[(before, move)] = sum(max(0.0, w) for w in row[3:5])
    return logs, taken, waits


def taken_minus(charged: list[tuple[list[str], str, float]],
                taken: dict[tuple[str, str], float],
                waits: dict[tuple[str, str], float] | None = None) -> list[float]:
    """charged - taken per engine move: ``charged`` holds (moves before, move, seconds);
    with ``waits``, less the engine's own waits for a CPU (to read go, in its write of
    bestmove): what is left of the excess is the referee's and the pipes'."""
    over = []
    for before, move, seconds in charged:
        key = (" ".join(before) or "-", move)
        took = taken.get(key)
        if took is not None:
            over.append(seconds - took - (waits.get(key, 0.0) if waits is not None else 0.0))
    return over


def peer(tool: str, args: argparse.Namespace, binary: str, engine: Path, work: Path,
         engines_n: int) -> None:
    """The same games with fastchess or cutechess-cli: time charged from its PGN (ms: its
    comments' resolution), time taken from the engines' logs, matched on the moves played."""
    import chess.pgn

    pgn = work / f"{tool}.pgn"
    argv = [binary]
    for i in range(engines_n):
        argv += ["-engine", f"name=S{i}", f"cmd={engine}"]
    argv += ["-each", "proto=uci", f"tc={args.tc}", f"restart={args.restart}",
             "-rounds", str(round_robins(args, engines_n)), "-games", "2",
             "-repeat", "-maxmoves", str(args.max_moves), "-concurrency", str(args.concurrency)]
    if tool == "fastchess":
        argv += ["-force-concurrency", "-pgnout", f"file={pgn}"]
    else:
        argv += ["-pgnout", str(pgn)]
    load = os.getloadavg()
    t0 = time.monotonic()
    code = subprocess.run(argv, cwd=work, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode
    wall = time.monotonic() - t0
    _, taken, waits = read_logs(work / "logs")
    charged: list[tuple[list[str], str, float]] = []
    forfeits = games = 0
    with open(pgn, encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games += 1
            forfeits += "time" in game.headers.get("Termination", "")
            before: list[str] = []
            for node in game.mainline():
                move = node.move.uci()
                seconds = re.search(r"([0-9.]+)s\b", node.comment)
                if seconds:
                    charged.append((list(before), move, float(seconds.group(1))))
                before.append(move)
    over = taken_minus(charged, taken)
    own = taken_minus(charged, taken, waits)
    print(f"{tool} restart={args.restart}: exit {code}, {games} games, {len(over)} engine "
          f"moves, Concurrency {args.concurrency}, think {args.think:g} ms, TC {args.tc}, "
          f"MaxMoves {args.max_moves}, {wall:.1f} s; load before "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  charged - taken  {percentiles(over)} (charged in ms, as its PGN has it)")
    print(f"  less the engine's own waits for a CPU {percentiles(own)}")
    print(f"  time forfeits: {forfeits}")
    emit(args, {"games": games, "moves": len(over), "exit": code, "forfeits": forfeits,
                "load": load[0], "wall": wall, **quantiles(over),
                "own_p99": quantiles(own).get("p99")})


def recorded(conn: sqlite3.Connection) -> list[tuple[list[str], str, float]]:
    """(moves before, move, seconds charged) of every engine move in the move log."""
    import json

    out: list[tuple[list[str], str, float]] = []
    before: list[str] = []
    current = None
    for game_id, data in conn.execute("SELECT game_id, data FROM moves ORDER BY game_id, ply"):
        if game_id != current:
            current, before = game_id, []
        move = json.loads(data)
        if not move.get("book"):
            out.append((list(before), move["uci"], move.get("time_ms", 0) / 1000))
        before.append(move["uci"])
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--think", type=float, default=30.0, help="ms per move (0: from the clock)")
    ap.add_argument("--concurrency", type=int, default=2 * (os.cpu_count() or 1))
    ap.add_argument("--games", type=int, default=64)
    ap.add_argument("--max-moves", type=int, default=8, help="full moves per game (adjudicated)")
    ap.add_argument("--tc", default="60+1")
    ap.add_argument("--restart", choices=("on", "off", "both"), default="both",
                    help="fresh engines every game (on), kept ones (off) or both in turn (default)")
    ap.add_argument("--tools", default=None,
                    help="comma-separated, of swiss-runner, cutechess-cli, fastchess (default: "
                         "all three; swiss-runner alone with --ponder or --explain)")
    ap.add_argument("--repeat", type=int, default=1, help="every cell R times, in turn (default 1)")
    ap.add_argument("--cell", choices=TOOLS, help=argparse.SUPPRESS)  # one run, for the driver
    ap.add_argument("--json", help=argparse.SUPPRESS)
    ap.add_argument("--ponder", action="store_true",
                    help="Ponder: true (the test engines ponder; about 70%% of them hit)")
    ap.add_argument("--loop", choices=("asyncio", "uvloop"), default=None,
                    help="SWISS_RUNNER_LOOP for the run (default: the runner's own choice)")
    ap.add_argument("--backend", choices=("builtin", "cutechess"), default="builtin",
                    help="the runner's Backend (cutechess: CUTECHESS_CLI or cutechess-cli)")
    ap.add_argument("--explain", type=float, default=None, metavar="MS",
                    help="say where each move charged more than MS ms over its time went "
                         "(Linux; reads the reading thread's schedstat at each go and move)")
    ap.add_argument("--fastchess", metavar="BINARY",
                    default=peers.find("fastchess"),
                    help="the fastchess binary (default: FASTCHESS, or fastchess on PATH)")
    ap.add_argument("--cutechess", metavar="BINARY",
                    default=peers.find("cutechess-cli"),
                    help="the cutechess-cli binary (default: CUTECHESS_CLI, or "
                         "cutechess-cli on PATH)")
    return ap


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    if args.cell is None:
        drive(ap, args)
        return
    if args.loop:
        os.environ["SWISS_RUNNER_LOOP"] = args.loop
    engines_n = max(2, 2 * args.concurrency)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        logdir = work / "logs"
        logdir.mkdir()
        engine = work / "sleeper.py"
        engine.write_text(ENGINE.format(python=sys.executable, think=args.think,
                                        ponder=args.ponder, logdir=str(logdir)))
        engine.chmod(0o755)
        if args.cell != "swiss-runner":
            binary = args.cutechess if args.cell == "cutechess-cli" else args.fastchess
            peer(args.cell, args, binary, engine, work, engines_n)
            return
        runner_cell(args, engine, work, engines_n)


def event_config(args: argparse.Namespace, engine: Path, work: Path, engines_n: int) -> Path:
    """The runner's event: ``engines_n`` test engines, the games the peers play too."""
    backend: dict[str, Any] = {}
    if args.backend == "cutechess":
        if args.cutechess is None:
            sys.exit("--backend cutechess: no cutechess-cli on PATH (or CUTECHESS_CLI)")
        backend = {"Backend": "cutechess", "CutechessPath": args.cutechess}
    config = work / "event.yaml"
    config.write_text(yaml.safe_dump({
        "Event": "clock", "TimeControl": args.tc, "Concurrency": args.concurrency,
        "Restart": args.restart, **backend,
        # pondering engines think two at a time: no core to pin each to here
        **({"Ponder": True, "Affinity": "off"} if args.ponder else {}),
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": round_robins(args, engines_n)
                         * (engines_n - 1), "Seeding": "listed",
                         "StatePath": str(work / "state.json")},
        "Adjudication": {"MaxMoves": args.max_moves},
        "Engines": [{"Name": f"S{i}", "Command": str(engine)} for i in range(engines_n)],
    }, sort_keys=False))
    return config


def runner_cell(args: argparse.Namespace, engine: Path, work: Path, engines_n: int) -> None:
    """The event played by swiss-runner in this process, every move traced
    (bench/clocktrace.py), then its excess, split, and what was recorded."""
    from runner.cli import main as cli
    from runner.play import pipes

    python_path = pipes.path_name() == "python"
    trace = clocktrace.Trace(detail=args.explain is not None)
    trace.install(python_path)
    config = event_config(args, engine, work, engines_n)
    load = os.getloadavg()
    t0 = time.monotonic()
    code = cli(["run", str(config), "--quiet"])
    wall = time.monotonic() - t0
    logs, taken, _ = read_logs(work / "logs")
    conn = sqlite3.connect(work / "state.sqlite3")
    ends = conn.execute("SELECT reason, COUNT(*) FROM games GROUP BY reason").fetchall()
    forfeits = conn.execute("SELECT COUNT(*) FROM games WHERE termination='time forfeit'"
                            ).fetchone()[0]
    as_recorded = taken_minus(recorded(conn), taken)
    conn.close()
    moves = clocktrace.split(trace, logs, python_path)
    over = [m.excess for m in moves]
    engine_late = sum(1 for rows in logs.values() for row in rows
                      if row[2] >= 0 and row[1] - row[0] > row[2])
    print(f"swiss-runner {'Backend: cutechess, ' if args.backend == 'cutechess' else ''}"
          f"{'Restart: ' + args.restart}{', Ponder' if args.ponder else ''}, loop "
          f"{os.environ.get('SWISS_RUNNER_LOOP', 'default')}, pipes {pipes.path_name()}, "
          f"reader priority {reader_priority(python_path)}: exit {code}, {len(over)} engine moves of "
          f"{len(trace.moves)}, Concurrency {args.concurrency}, {engines_n} engines, think "
          f"{args.think:g} ms, TC {args.tc}, MaxMoves {args.max_moves}, {wall:.1f} s; load "
          f"before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  charged - taken  {percentiles(over)}"
          + (f" ({trace.hits} moves after a ponderhit)" if args.ponder else ""))
    own = [m.excess - m.engine_waits for m in moves]
    print(f"  less the engine's own waits for a CPU {percentiles(own)}")
    print(f"  as recorded      {percentiles(as_recorded)} (whole ms, as the PGN has it)")
    print(f"  go -> engine     {percentiles([m.into for m in moves])}")
    print(f"  bestmove -> read {percentiles([m.out for m in moves])}")
    print(f"  time forfeits: {forfeits} (engine over its own clock: {engine_late}); ends: "
          + ", ".join(f"{r} x{n}" for r, n in ends))
    clocktrace.report(moves, args.explain)
    # the cutechess backend's moves are not the referee's: what it recorded is the figure
    figure = as_recorded if args.backend == "cutechess" else over
    emit(args, {"games": sum(n for _, n in ends), "moves": len(figure), "exit": code,
                "forfeits": forfeits, "load": load[0], "wall": wall, **quantiles(figure),
                "recorded_p99": quantiles(as_recorded).get("p99"),
                "in_p99": quantiles([m.into for m in moves]).get("p99"),
                "out_p99": quantiles([m.out for m in moves]).get("p99"),
                "own_p99": quantiles(own).get("p99")})


def reader_priority(python_path: bool) -> str:
    """What the compiled reader threads asked for: (realtime, nice, slice ns), from
    SWISS_RUNNER_READER_PRIORITY."""
    from runner.play import pipes

    choose = getattr(pipes, "reader_priority", None)
    if python_path:
        return "- (no reader threads: the loop reads)"
    return "- (not in this runner)" if choose is None else str(choose())


TOOLS = ("swiss-runner", "cutechess-cli", "fastchess")


def drive(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Every tool in both modes (or those asked for), each cell in a process of its own (this
    script with ``--cell``), in turn, ``--repeat`` times; then one markdown table."""
    solo = args.ponder or args.explain is not None
    tools = args.tools.split(",") if args.tools else ["swiss-runner"] if solo else list(TOOLS)
    for tool in tools:
        if tool not in TOOLS:
            ap.error(f"--tools: got {tool!r}, expected some of {', '.join(TOOLS)}")
        if tool != "swiss-runner" and solo:
            ap.error(f"--tools {tool}: --ponder and --explain are for swiss-runner only")
    modes = ("on", "off") if args.restart == "both" else (args.restart,)
    binaries = {"cutechess-cli": args.cutechess, "fastchess": args.fastchess}
    results: dict[tuple[str, str], list[dict[str, Any] | str]] = {}
    start = peers.stamp()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.repeat):
            for mode in modes:
                for tool in tools:
                    if tool != "swiss-runner" and binaries[tool] is None:
                        results.setdefault((mode, tool), []).append(
                            "not found (PATH, CUTECHESS_CLI / FASTCHESS, --cutechess / "
                            "--fastchess)")
                        continue
                    out = Path(tmp) / "cell.json"
                    out.unlink(missing_ok=True)
                    # the options given, then this cell's: the last of each wins
                    subprocess.run([sys.executable, __file__, *sys.argv[1:], "--cell", tool,
                                    "--restart", mode, "--json", str(out)], check=False)
                    results.setdefault((mode, tool), []).append(
                        json.loads(out.read_text()) if out.exists() else "failed (see above)")
    print_table(args, tools, modes, results, binaries, start)


def print_table(args: argparse.Namespace, tools: list[str], modes: tuple[str, ...],
                results: dict[tuple[str, str], list[dict[str, Any] | str]],
                binaries: dict[str, str | None], start: str) -> None:
    """One markdown table: a row per mode and tool; medians over the repeats."""
    engines_n = max(2, 2 * args.concurrency)
    games = round_robins(args, engines_n) * engines_n * (engines_n - 1)
    print(f"\n{games} games per cell ({engines_n} engines, each pair twice), {args.concurrency} at "
          f"once, think {args.think:g} ms, TC {args.tc}, MaxMoves {args.max_moves}, "
          f"{args.repeat} run(s) per cell, in turn; start {start}; end {peers.stamp()}\n")
    print("| mode | tool | games | engine moves | p50 ms | p99 ms | max ms "
          "| p99 - cutechess-cli's | time forfeits | load before | p99 less the engine's "
          "waits for a CPU | p99 go -> engine, bestmove -> read |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode in modes:
        label = "fresh engines (restart on)" if mode == "on" else "kept engines (restart off)"
        base = [r["p99"] for r in results.get((mode, "cutechess-cli"), [])
                if isinstance(r, dict) and "p99" in r]
        for tool in tools:
            runs = results[(mode, tool)]
            done = [r for r in runs if isinstance(r, dict) and "p99" in r]
            if not done:
                why = runs[0] if isinstance(runs[0], str) else "no moves"
                print(f"| {label} | {tool} | {why} |" + " |" * 9)
                continue
            name = peers.version(tool, binaries.get(tool))
            if tool == "swiss-runner":
                name += ", Backend: cutechess" if args.backend == "cutechess" else ""
                recorded_p99 = [r["recorded_p99"] for r in done
                                if r.get("recorded_p99") is not None]
                if recorded_p99:
                    name += f" (whole ms as recorded: p99 {peers.spread(recorded_p99)})"
            p99 = [r["p99"] for r in done]
            gap = f"{statistics.median(p99) - statistics.median(base):+.2f}" if base else "-"
            print(f"| {label} | {name} | {'/'.join(str(r['games']) for r in done)} | "
                  f"{'/'.join(str(r['moves']) for r in done)} | "
                  f"{peers.spread([r['p50'] for r in done])} | {peers.spread(p99)} | "
                  f"{peers.spread([r['max'] for r in done])} | {gap} | "
                  f"{sum(r['forfeits'] for r in done)} | "
                  f"{'/'.join(format(r['load'], '.1f') for r in done)} | "
                  f"{peers.spread([r['own_p99'] for r in done if r.get('own_p99') is not None])}"
                  f" | {split_p99(done)} |")


def split_p99(done: list[dict[str, Any]]) -> str:
    """The p99 of the two halves of the excess (swiss-runner: its own stamps), "-" for a
    peer (its ``go`` is not stamped where the bench can see it)."""
    into = [r["in_p99"] for r in done if r.get("in_p99") is not None]
    out = [r["out_p99"] for r in done if r.get("out_p99") is not None]
    return f"{peers.spread(into)}, {peers.spread(out)}" if into and out else "-"

if __name__ == "__main__":
    main()
