"""The least CPU per ply a Python referee can cost: the floor under bench_vs_peers.py.

Plays the same games as bench/bench_vs_peers.py (Stockfish vs Ethereal at a fixed node
count, one game at a time, the first N lines of books/default.pgn each played twice with
colours reversed, fresh engines every game) with two minimal referees, each as its own
process measured as bench_vs_peers.py measures the tools (its own CPU, engines excluded,
from its start to its exit):

- ``python-chess``: python-chess's own ``engine.play`` per move (``info=INFO_NONE``: no
  search output parsed), the moves pushed on a ``chess.Board``, the game ended by
  checkmate, stalemate, insufficient material, threefold repetition, the fifty-move rule or
  150 moves. Nothing recorded, printed or adjudicated.
- ``bare asyncio``: no chess library at all. An asyncio subprocess protocol per engine,
  ``position startpos moves ...`` and ``go nodes N`` written, the output searched for
  ``bestmove``; each game is played for exactly as many plies as the python-chess referee
  played it (fixed nodes, one thread and fresh engines make the engines' moves the same).

It also measures what importing the libraries the runner needs costs once per run:
python-chess, and numpy + scipy (the ratings of the JSON state document, issue #22).

    PATH=$PATH:/usr/games python bench/bench_floor.py [--pairs 24] [--nodes 3000]

``--vs-peers`` measures a third referee, the **mandated floor** (issue #52: only what the
issue mandates, built from the runner's own parts), against fastchess and the runner:

- ``floor``: the engines started and readied by the runner's engine layer
  (runner.play.engines.start_engine, runner.play.uci.UciMove's ``ucinewgame`` + ``isready``),
  read by the compiled pipes, each bestmove relayed to the other engine below Python by
  runner.play.relay (``open_relay``, ``MoveRelay.next``/``pass_turn``/``settle``, as
  runner.play.referee's ``_relay_moves``); per ply the move checked and pushed by
  python-chess (the referee's quick pseudo-legality, ``push``, ``was_into_check``), the
  game ended by the rules (runner.domain.adjudication's ``natural_end``) or 150 moves, the
  move queued as a row for a writer thread (its own SQLite connection, WAL,
  ``synchronous=NORMAL``, commits within 0.05 s). No SAN, PGN, events, views or clocks.
  ``--restart off``: one process per engine for the run; ``on``: new ones every game.
- ``floor+SAN``: the same, each move's SAN made as it is pushed (``san_and_push``, as the
  referee does; its ``#``/``+`` then spare the mate search as in the referee).

Each within each repeat in turn (fastchess if found, the runner's event of bench_vs_peers,
floor, floor+SAN), at ``--pairs`` and ``--steady`` openings; a markdown table of engine
plies, move rows, marginal ms per ply ((CPU long - CPU short) / (plies long - plies short))
and its ratio to fastchess's of the same repeat, medians last; then the floor's marginal
CPU per ply by thread (schedstat: the loop's, the compiled readers' read while they live,
the writer's own).

    PATH=PEERS:$PATH:/usr/games python bench/bench_floor.py --vs-peers [--pairs 32] [--steady 8]
        [--repeat 3] [--restart off|on] [--nodes 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import bench_vs_peers as vs_peers
from bench_vs_peers import ENGINES, book_lines, sampled_cpu

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- the referees


def _openings(book: Path) -> list[list[str]]:
    import chess.pgn

    lines = []
    with open(book, encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            lines.append([move.uci() for move in game.mainline_moves()])
    return lines


def _pairings(openings: list[list[str]]) -> list[tuple[list[str], str, str]]:
    """(book moves, white command, black command) of every game, in order."""
    (_, first), (_, second) = ENGINES
    return [(line, white, black) for line in openings
            for white, black in ((first, second), (second, first))]


async def _python_chess(book: Path, nodes: int, out: Path) -> None:
    import chess
    import chess.engine

    counts = []
    for line, white, black in _pairings(_openings(book)):
        engines = {}
        for color, command in ((chess.WHITE, white), (chess.BLACK, black)):
            _, engine = await chess.engine.popen_uci(command)
            await engine.configure({"Hash": 16, "Threads": 1})
            engines[color] = engine
        board = chess.Board()
        for move in line:
            board.push_uci(move)
        plies = 0
        limit = chess.engine.Limit(nodes=nodes)
        while (board.outcome() is None and not board.is_repetition(3)
               and board.halfmove_clock < 100 and board.fullmove_number <= 150):
            result = await engines[board.turn].play(board, limit, info=chess.engine.INFO_NONE)
            if result.move is None:
                break
            board.push(result.move)
            plies += 1
        for engine in engines.values():
            await engine.quit()
        counts.append(plies)
    out.write_text(json.dumps(counts))


class _Bare(asyncio.SubprocessProtocol):
    def __init__(self) -> None:
        self.buffer = b""
        self.waiter: asyncio.Future[str] | None = None

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self.buffer += data
        at = self.buffer.find(b"bestmove ")
        if at >= 0 and self.waiter is not None and not self.waiter.done():
            end = self.buffer.find(b"\n", at)
            if end >= 0:
                self.waiter.set_result(self.buffer[at:end].split()[1].decode())
                self.buffer = b""

    def process_exited(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(RuntimeError("engine exited"))


async def _bare(book: Path, nodes: int, counts_file: Path) -> None:
    loop = asyncio.get_running_loop()
    counts = json.loads(counts_file.read_text())
    for (line, white, black), plies in zip(_pairings(_openings(book)), counts, strict=True):
        sides = []
        for command in (white, black):
            transport, protocol = await loop.subprocess_exec(_Bare, command)
            stdin = transport.get_pipe_transport(0)
            stdin.write(b"uci\nsetoption name Hash value 16\nsetoption name Threads value 1\n"
                        b"isready\nucinewgame\n")
            sides.append((transport, protocol, stdin))
        moves = list(line)
        for ply in range(plies):
            _, protocol, stdin = sides[(len(line) + ply) % 2]
            protocol.waiter = loop.create_future()
            stdin.write(f"position startpos moves {' '.join(moves)}\ngo nodes {nodes}\n".encode())
            moves.append(await protocol.waiter)
        for _, _, stdin in sides:
            stdin.write(b"quit\n")
        for transport, _, _ in sides:
            while transport.get_returncode() is None:
                await asyncio.sleep(0.001)
            transport.close()


# --------------------------------------------------------------------------- the mandated floor

FLOOR_INTERVAL_S = 0.05  # the writer's commits: at most this long after a row is queued
MAX_PLIES = 300  # the bench's 150 moves (the runner's MaxMoves: the game's plies, book included)


class _FloorWriter(threading.Thread):
    """The store's part of the floor: its own SQLite connection (WAL, ``synchronous=NORMAL``),
    the rows the loop queues (no wake but the first of a batch) committed within
    FLOOR_INTERVAL_S; its own CPU kept in ``cpu`` when it ends."""

    def __init__(self, path: Path) -> None:
        super().__init__(name="floor-writer")
        self.path = path
        self.moves: collections.deque[tuple[Any, ...]] = collections.deque()
        self.games: collections.deque[tuple[Any, ...]] = collections.deque()
        self.wake = threading.Event()
        self.stopping = False
        self.cpu = 0.0

    def move(self, row: tuple[Any, ...]) -> None:
        self.moves.append(row)  # queued first, then the wake asked (run clears, then drains)
        if not self.wake.is_set():
            self.wake.set()

    def game(self, row: tuple[Any, ...]) -> None:
        self.games.append(row)
        if not self.wake.is_set():
            self.wake.set()

    def run(self) -> None:
        conn = sqlite3.connect(self.path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("CREATE TABLE IF NOT EXISTS moves (game INTEGER, ply INTEGER, uci TEXT, "
                     "san TEXT, PRIMARY KEY (game, ply))")
        conn.execute("CREATE TABLE IF NOT EXISTS games (game INTEGER PRIMARY KEY, result TEXT, "
                     "reason TEXT, plies INTEGER)")
        conn.commit()
        moves, games = self.moves, self.games
        while True:
            self.wake.wait()
            if not self.stopping:
                time.sleep(FLOOR_INTERVAL_S)
            self.wake.clear()
            stopping = self.stopping  # read after the clear: a finish() later wakes it again
            batch = [moves.popleft() for _ in range(len(moves))]
            ended = [games.popleft() for _ in range(len(games))]
            if batch:
                conn.executemany("INSERT INTO moves VALUES (?, ?, ?, ?)", batch)
            if ended:
                conn.executemany("INSERT INTO games VALUES (?, ?, ?, ?)", ended)
            if batch or ended:
                conn.commit()
            if stopping and not moves and not games:
                break
        conn.close()
        self.cpu = time.thread_time()

    def finish(self) -> None:
        self.stopping = True
        self.wake.set()
        self.join()


def _task_cpu(tid: int) -> float:
    """A thread of this process: its time on a CPU (schedstat, ns), in seconds."""
    with open(f"/proc/self/task/{tid}/schedstat", encoding="ascii") as handle:
        return int(handle.read().split()[0]) / 1e9


def _readers_seen(seen: dict[int, float]) -> None:
    """The compiled readers' CPU so far (by thread, the last reading), read while they live."""
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm", encoding="ascii") as handle:
                if handle.read().strip() != "engine-reader":
                    continue
            seen[int(tid)] = _task_cpu(int(tid))
        except (OSError, ValueError, IndexError):
            continue


async def _floor(book: Path, nodes: int, restart: str, san: bool, db: Path, out: Path) -> None:
    """The mandated floor: each move taken from the runner's relay (the engines started and
    readied by its engine layer, read by the compiled pipes, every bestmove relayed below
    Python), checked and pushed by python-chess, the game ended by the rules or 150 moves,
    each move a row committed by a writer thread; ``san``: each move's SAN made too."""
    import chess
    import chess.engine

    from runner.config.typed import AdjudicationConfig, EngineConfig
    from runner.domain.adjudication import (
        RepetitionWindow,
        king_can_step,
        natural_end,
        pawn_can_push,
    )
    from runner.domain.models import GameSpec
    from runner.domain.timecontrol import Clock, TimeControl
    from runner.play import eventloop
    from runner.play.engines import close_engines, start_engine
    from runner.play.referee import _moves_left, _plainly_pseudo_legal
    from runner.play.relay import REST, STAMP, open_relay
    from runner.play.relay import reply as relay_reply
    from runner.play.uci import UciMove, go_line, position_line

    (white_name, white_cmd), (black_name, black_cmd) = ENGINES
    configs = {name: EngineConfig(name=name, command=cmd, options={"Hash": 16, "Threads": 1},
                                  nodes=nodes, restart=restart == "on")
               for name, cmd in ((white_name, white_cmd), (black_name, black_cmd))}
    go = go_line(chess.engine.Limit(nodes=nodes))
    fixed = {chess.WHITE: go, chess.BLACK: go}
    tc = TimeControl(None)
    adjudication = AdjudicationConfig(max_moves=MAX_PLIES // 2)
    writer = _FloorWriter(db)
    writer.start()
    readers: dict[int, float] = {}
    kept: dict[str, Any] = {}
    if restart == "off":  # one process per engine for the whole run
        started = await asyncio.gather(*(start_engine(c, timeout=30.0) for c in configs.values()))
        kept = dict(zip(configs, started, strict=True))
    eventloop.collect_garbage()  # as the runner does before a round
    counts: list[int] = []
    commands = {cmd: name for name, cmd in ENGINES}
    for game_id, (line, white, black) in enumerate(_pairings(_openings(book)), start=1):
        names = (commands[white], commands[black])
        if kept:
            procs = {chess.WHITE: kept[names[0]], chess.BLACK: kept[names[1]]}
        else:
            started = await asyncio.gather(*(start_engine(configs[n], timeout=30.0) for n in names))
            procs = {chess.WHITE: started[0], chess.BLACK: started[1]}
        spec = GameSpec(game_id, game_id, 1, configs[names[0]], configs[names[1]], tc, adjudication)
        board = chess.Board()
        for uci in line:
            board.push_uci(uci)
        # both engines' ucinewgame + isready at once (the referee's _new_game)
        await asyncio.gather(*(UciMove(procs[c].protocol, "", None, True, c, ready_timeout=30.0)
                               .start() for c in (board.turn, not board.turn)))
        relay = open_relay(spec, procs, fixed)
        if relay is None:
            raise RuntimeError("the runner's relay cannot take this game (compiled pipes?)")
        clocks = {chess.WHITE: Clock(tc), chess.BLACK: Clock(tc)}
        relay.arm(position_line(chess.STARTING_FEN) + (" moves " + " ".join(line) if line else ""),
                  0.0)
        color = board.turn
        go_at = relay.start(color, None, clocks)
        repetitions = RepetitionWindow()
        plies = 0
        result = reason = None
        try:
            while True:
                event = await relay.next(color, go_at, lambda _: 30.0)
                text, _, _, move = relay_reply(event, color)
                if move is None:  # not a plain UCI move text: python-chess reads it
                    move = chess.Move.from_uci(text)
                if not move or not (_plainly_pseudo_legal(board, move)
                                    or board.is_pseudo_legal(move)):
                    result, reason = ("0-1" if color else "1-0"), f"illegal move {text}"
                    break
                if san:
                    notation = board.san_and_push(move)
                else:
                    board.push(move)
                    notation = None
                if board.was_into_check():
                    board.pop()
                    result, reason = ("0-1" if color else "1-0"), f"illegal move {text}"
                    break
                plies += 1
                writer.move((game_id, plies, text, notation))
                if notation is not None:
                    left = _moves_left(notation, board)
                else:
                    left = None if board.is_check() else \
                        1 if pawn_can_push(board) or king_can_step(board) else None
                end = natural_end(board, left, repetitions.played(board))
                if event[REST]:
                    procs[color].protocol.bytes_read(event[REST], event[STAMP])
                if end is not None:
                    result, reason = end.result, end.reason
                    break
                if len(board.move_stack) >= MAX_PLIES:
                    result, reason = "1/2-1/2", "maximal game length"
                    break
                if move.uci() != text:
                    raise RuntimeError(f"a move text the relay cannot follow: {text}")
                color = not color
                go_at = relay.pass_turn(event, color, text, clocks)
            await relay.settle(30.0)
        finally:
            relay.close()
        writer.game((game_id, result, reason, plies))
        counts.append(plies)
        if not kept:
            _readers_seen(readers)
            await close_engines(list(procs.values()))
    _readers_seen(readers)
    if kept:
        await close_engines(list(kept.values()))
    writer.finish()
    out.write_text(json.dumps({"plies": counts, "threads": {
        "loop": _task_cpu(threading.get_native_id()), "readers": sum(readers.values()),
        "writer": writer.cpu}}))


# --------------------------------------------------------------------------- measuring


def _import_cpu(statement: str) -> float:
    """CPU seconds of ``python -c statement`` beyond ``python -c pass`` (best of 3)."""
    def best(code: str) -> float:
        return min(sampled_cpu([sys.executable, "-c", code], REPO) for _ in range(3))
    return best(statement) - best("pass")


FLOOR_TOOLS = ("fastchess", "swiss-runner", "floor", "floor+SAN")


def run_floor(pairs: int, nodes: int, restart: str, san: bool, work: Path
              ) -> tuple[float, int, int, dict[str, float]]:
    """The mandated floor over the first ``pairs`` openings in a process of its own
    (bench_vs_peers.sampled_cpu): (CPU s, engine plies, move rows in its SQLite, its
    threads' CPU s: loop, readers, writer)."""
    book = book_lines(pairs, work)
    db, out = work / "floor.sqlite", work / "floor.json"
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", "floor", "--book",
            str(book), "--counts", str(out), "--db", str(db), "--nodes", str(nodes),
            "--restart", restart, *(["--san"] if san else [])]
    cpu = sampled_cpu(argv, work, env={**os.environ, "PYTHONPATH": str(REPO)})
    child = json.loads(out.read_text())
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute("SELECT COUNT(*) FROM moves").fetchone()[0]
        played = conn.execute("SELECT COALESCE(SUM(plies), 0) FROM games").fetchone()[0]
    if played != sum(child["plies"]):
        raise RuntimeError(f"floor: games rows say {played} plies, the loop {sum(child['plies'])}")
    return cpu, sum(child["plies"]), rows, child["threads"]


def _play_tool(name: str, fastchess: str | None, pairs: int, nodes: int, restart: str,
               base: Path) -> tuple[float, int, int | None, dict[str, float] | None] | str:
    """One tool over the first ``pairs`` openings: (CPU s, engine plies, rows, threads)."""
    work = base / f"{name}-{pairs}"
    work.mkdir()
    if name.startswith("floor"):
        return run_floor(pairs, nodes, restart, name == "floor+SAN", work)
    if name == "fastchess" and fastchess is None:
        return "not found (PATH or FASTCHESS)"
    vs_peers.RESTART = restart
    book = book_lines(pairs, work)
    if name == "fastchess":
        cpu, _, plies = vs_peers.run_fastchess(fastchess, pairs, nodes, work, book)  # type: ignore[arg-type]
    else:
        cpu, _, plies = vs_peers.run_swiss_runner(pairs, nodes, work, book)
    return cpu, plies, None, None


def vs_peers_main(args: argparse.Namespace) -> None:
    """fastchess, the runner, the floor and floor+SAN in turn within each repeat, each at
    ``--pairs`` and ``--steady`` openings: the marginal CPU per ply of each, against
    fastchess's of the same repeat, as one markdown table (medians last), and where the
    floor's CPU goes by thread."""
    fastchess = vs_peers.peers.find("fastchess")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "runner"),
                    str(REPO / "bench")], check=True)
    before = vs_peers.peers.stamp()
    runs: list[dict[str, Any]] = []
    for repeat in range(1, args.repeat + 1):
        results: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for name in FLOOR_TOOLS:
                load = os.getloadavg()[0]
                long = _play_tool(name, fastchess, args.pairs, args.nodes, args.restart, Path(tmp))
                short = None if isinstance(long, str) else \
                    _play_tool(name, fastchess, args.steady, args.nodes, args.restart, Path(tmp))
                results[name] = (long, short)
                print(f"repeat {repeat}, restart {args.restart}, {name}: {long} / {short} "
                      f"(load {load:.2f})", file=sys.stderr, flush=True)
        runs.append(results)
    print_floor_table(args, runs, before, vs_peers.peers.stamp(), fastchess)


def _marginal(long: Any, short: Any) -> float | None:
    """ms per ply beyond the short run: (CPU long - CPU short) / (plies long - plies short)."""
    if isinstance(long, str) or short is None or long[1] <= short[1]:
        return None
    return 1000 * (long[0] - short[0]) / (long[1] - short[1])


def print_floor_table(args: argparse.Namespace, runs: list[dict[str, Any]], before: str,
                      after: str, fastchess: str | None) -> None:
    """The repeats' rows (plies, rows, marginal ms/ply, x fastchess of the same repeat),
    the medians, and the floor's marginal CPU per ply by thread."""
    mode = "fresh engines (restart on)" if args.restart == "on" else "kept engines (restart off)"
    print(f"\n{args.pairs} openings minus {args.steady} ({2 * args.pairs} - {2 * args.steady} "
          f"games), Stockfish vs Ethereal, nodes={args.nodes}, {mode}, {args.repeat} repeat(s), "
          f"the tools in turn; start {before}; end {after}\n")
    print("| repeat | tool | engine plies (long/short) | move rows (long/short) | "
          "marginal ms/ply | x fastchess |")
    print("|---|---|---|---|---|---|")
    margins: dict[str, list[float]] = {name: [] for name in FLOOR_TOOLS}
    ratios: dict[str, list[float]] = {name: [] for name in FLOOR_TOOLS}
    for repeat, results in enumerate(runs, start=1):
        fast = _marginal(*results["fastchess"])
        for name in FLOOR_TOOLS:
            long, short = results[name]
            label = vs_peers.peers.version(name, fastchess) if name == "fastchess" else name
            if isinstance(long, str):
                print(f"| {repeat} | {label} | {long} | | | |")
                continue
            rows = "-" if long[2] is None else f"{long[2]}/{short[2]}"
            marginal = _marginal(long, short)
            ratio = None if marginal is None or not fast else marginal / fast
            if marginal is not None:
                margins[name].append(marginal)
            if ratio is not None:
                ratios[name].append(ratio)
            print(f"| {repeat} | {label} | {long[1]}/{short[1]} | {rows} | "
                  f"{'-' if marginal is None else f'{marginal:.3f}'} | "
                  f"{'-' if ratio is None else f'{ratio:.2f}x'} |")
    for name in FLOOR_TOOLS:
        ratio = f"{statistics.median(ratios[name]):.2f}x" if ratios[name] else "-"
        print(f"| **median** | {name} | | | {vs_peers.peers.spread(margins[name], 3)} | {ratio} |")
    print("\nThe floor's marginal CPU per engine ply by thread, us (median [lowest, highest]); "
          "'rest' is the process's CPU less the three (the engine spawner, start-up and exit):\n")
    print("| tool | event loop | compiled readers | writer | rest | all |")
    print("|---|---|---|---|---|---|")
    for name in ("floor", "floor+SAN"):
        parts: dict[str, list[float]] = {k: [] for k in ("loop", "readers", "writer", "rest", "all")}
        for results in runs:
            long, short = results[name]
            plies = long[1] - short[1]
            if plies <= 0:
                continue
            for key in ("loop", "readers", "writer"):
                parts[key].append(1e6 * (long[3][key] - short[3][key]) / plies)
            parts["all"].append(1e6 * (long[0] - short[0]) / plies)
            parts["rest"].append(parts["all"][-1] - sum(parts[k][-1] for k in ("loop", "readers",
                                                                                  "writer")))
        print(f"| {name} | " + " | ".join(vs_peers.peers.spread(v, 0) for v in parts.values())
              + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=None,
                    help="openings, each played twice (default 24; 32 with --vs-peers)")
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--vs-peers", action="store_true",
                    help="the mandated floor against fastchess and the runner: marginal CPU per ply")
    ap.add_argument("--steady", type=int, default=8, help="--vs-peers: the short run's openings")
    ap.add_argument("--repeat", type=int, default=3, help="--vs-peers: repeats (default 3)")
    ap.add_argument("--restart", choices=("off", "on"), default="off",
                    help="--vs-peers: kept engines (off, default) or fresh every game (on)")
    ap.add_argument("--child", choices=("python-chess", "bare", "floor"), help=argparse.SUPPRESS)
    ap.add_argument("--book", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--counts", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--san", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "python-chess":
        asyncio.run(_python_chess(args.book, args.nodes, args.counts))
        return
    if args.child == "bare":
        asyncio.run(_bare(args.book, args.nodes, args.counts))
        return
    if args.child == "floor":
        from runner.play import eventloop

        eventloop.run(_floor(args.book, args.nodes, args.restart, args.san, args.db, args.counts))
        return
    if args.vs_peers:
        args.pairs = args.pairs or 32
        vs_peers_main(args)
        return
    args.pairs = args.pairs or 24
    me = [sys.executable, str(Path(__file__).resolve())]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        book = book_lines(args.pairs, work)
        counts = work / "plies.json"
        common = ["--book", str(book), "--counts", str(counts), "--nodes", str(args.nodes)]
        chess_cpu = sampled_cpu([*me, "--child", "python-chess", *common], work)
        plies = sum(json.loads(counts.read_text()))
        bare_cpu = sampled_cpu([*me, "--child", "bare", *common], work)
    imports = {
        "python-chess (chess, chess.engine, chess.pgn)": _import_cpu(
            "import chess, chess.engine, chess.pgn"),
        "numpy + scipy (what runner.domain.ratings imports)": _import_cpu(
            "import numpy, scipy.optimize, scipy.sparse, scipy.sparse.csgraph, scipy.special"),
    }
    print(f"{args.pairs * 2} games, Stockfish vs Ethereal, nodes={args.nodes}, "
          f"{plies} engine plies, fresh engines every game")
    print(f"{'referee':<52} {'CPU s':>6} {'ms/ply':>7}")
    for name, cpu in (("python-chess engine.play, nothing recorded", chess_cpu),
                      ("bare asyncio, no chess library", bare_cpu)):
        print(f"{name:<52} {cpu:>6.2f} {1000 * cpu / plies:>7.3f}")
    print(f"{'once-per-run import':<52} {'CPU s':>6} {'ms/ply':>7}")
    for name, cpu in imports.items():
        print(f"{name:<52} {cpu:>6.2f} {1000 * cpu / plies:>7.3f}")


if __name__ == "__main__":
    main()
