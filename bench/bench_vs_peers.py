"""Runner CPU per ply: swiss-runner (move log and live state on) vs cutechess-cli and fastchess.

All three play the same games: Stockfish vs Ethereal at a fixed node count (default 3000),
one game at a time, the first N lines of books/default.pgn in order, each line played twice
with colours reversed, at most 150 moves. What is measured is the CPU time (user + system)
of the tournament program's own process, engines excluded, divided by the engine plies
played (book plies excluded). Each tool runs as its own process, from its start (for
swiss-runner: the interpreter, its imports and the config check included) to its exit, read
from /proc when it has exited and before it is reaped (exact, its child processes apart):

- swiss-runner: ``python -m runner run`` on a two-engine event (Rounds = N, GamesPerMatch 2,
  Openings Order sequential; the move log and the JSON state snapshot on, as by default);
  its threads (move log, snapshot) are in its process; engines are child processes. The
  package is byte-compiled first, as an installed one is.
- cutechess-cli and fastchess: their process.

``--restart on|off|both``: fresh engines every game (swiss-runner ``Restart: on``,
cutechess-cli ``restart=on``, fastchess ``restart=on``), kept ones (``off``, the peers'
defaults keep them too), or both in turn (the default): one invocation measures every tool
in both modes and prints one markdown table (the median over ``--repeat`` runs, [lowest, highest]
after it, and each tool's ratio to cutechess-cli's), with the time and the load averages at
its start and end (the machine may be shared: compare only tools measured in the same run).

``--steady K`` (the marginal mode) also plays the first K lines alone with each tool and
reports the CPU per ply of the games beyond them ((CPU(N) - CPU(K)) / (plies(N) - plies(K))):
what one more move costs once a tool is running, without what it spends once per run
(start-up, imports), against cutechess-cli's and fastchess's. Issue #52's check: ``--pairs
32 --steady 8`` (a 64-game run minus a 16-game run).

cutechess-cli and fastchess are on no package registry: the bench looks for them on PATH
(or CUTECHESS_CLI / FASTCHESS) and reports a missing one instead of failing.

    PATH=$PATH:/usr/games python bench/bench_vs_peers.py [--pairs 24] [--nodes 3000] [--steady 4]
                                                         [--restart on|off|both] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import chess.pgn
import peers  # bench/peers.py
import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "books" / "default.pgn"
ENGINES = [("Stockfish", "/usr/games/stockfish"), ("Ethereal", "/usr/games/ethereal-chess")]
T = TypeVar("T")


def book_lines(pairs: int, directory: Path) -> Path:
    """The first ``pairs`` lines of the default book, as their own PGN file."""
    out = directory / "book.pgn"
    with open(BOOK, encoding="utf-8") as src, open(out, "w", encoding="utf-8") as dst:
        for _ in range(pairs):
            game = chess.pgn.read_game(src)
            if game is None:
                break
            print(game, file=dst, end="\n\n")
    return out


def engine_plies(pgn: Path) -> tuple[int, int]:
    """(games, engine plies) in a PGN; book plies carry a {book} comment or come before
    the engines' first commented move."""
    games = plies = 0
    with open(pgn, encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games += 1
            plies += sum(1 for node in game.mainline() if "book" not in node.comment)
    return games, plies


RESTART = "on"  # --restart


def event_config(work: Path, pairs: int, nodes: int, book: Path, restart: str) -> Path:
    """These games as swiss-runner's event (one round per opening), its config written in
    ``work``."""
    config = work / "event.yaml"
    config.write_text(yaml.safe_dump({
        "Event": "bench", "TimeControl": "inf", "Concurrency": 1, "Restart": restart,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": pairs, "Seeding": "listed",
                         "RandomOpenings": False, "StatePath": str(work / "state.json")},
        "Openings": {"File": str(book), "Format": "pgn", "Order": "sequential"},
        "Adjudication": {"MaxMoves": 150},
        "Engines": [{"Name": n, "Command": c, "Nodes": nodes, "Options": {"Hash": 16, "Threads": 1}}
                    for n, c in ENGINES],
    }))
    return config


def measured_event_args(description: str, repeat: int) -> argparse.Namespace:
    """The command line of a bench built on :func:`measured_event` (the long and the short
    run's openings, the mode, the nodes, the repeats, the checkout)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--pairs", type=int, default=32)
    parser.add_argument("--steady", type=int, default=8)
    parser.add_argument("--restart", choices=("off", "on"), default="off")
    parser.add_argument("--nodes", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--pythonpath", type=Path, default=REPO)
    return parser.parse_args()


def measured_event(repo: Path, pairs: int, nodes: int, restart: str,
                   measure: Callable[[list[str], Path, dict[str, str]], T]) -> tuple[T, int]:
    """These games as an event of ``pairs`` openings played by the checkout ``repo`` in a
    process of its own, in a directory of its own: what ``measure(argv, cwd, env)`` (which
    runs it) gives, and the engine plies."""
    with tempfile.TemporaryDirectory(prefix="bench-event-") as tmp:
        work = Path(tmp)
        config = event_config(work, pairs, nodes, book_lines(pairs, work), restart)
        env = {**os.environ, "PYTHONPATH": str(repo)}
        measured = measure([sys.executable, "-m", "runner", "run", str(config), "--quiet"],
                           work, env)
        _, plies = engine_plies(work / "games.pgn")
    return measured, plies


def run_swiss_runner(pairs: int, nodes: int, work: Path, book: Path) -> tuple[float, int, int]:
    config = event_config(work, pairs, nodes, book, RESTART)
    # compiled first, as an installed package is (pip compiles on install): with
    # PYTHONDONTWRITEBYTECODE set, every start would compile every module again
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "runner")], check=True)
    cpu = sampled_cpu([sys.executable, "-m", "runner", "run", str(config), "--quiet"], work,
                      env={**os.environ, "PYTHONPATH": str(REPO)})
    games, plies = engine_plies(work / "games.pgn")
    return cpu, games, plies


def sampled_cpu(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    """CPU time (user + system) of the process's own threads, from start to exit, read
    when it has exited and is not yet reaped (its engines, reaped children, excluded)."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # a zombie now: its times are final
    t = psutil.Process(proc.pid).cpu_times()  # its own time, not its children's
    proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {proc.returncode}")
    return t.user + t.system


def run_cutechess(binary: str, pairs: int, nodes: int, work: Path, book: Path) -> tuple[float, int, int]:
    pgn = work / "cutechess.pgn"
    argv = [binary]
    for name, cmd in ENGINES:
        argv += ["-engine", f"name={name}", f"cmd={cmd}"]
    argv += ["-each", "proto=uci", "tc=inf", f"nodes={nodes}", f"restart={RESTART}", "option.Hash=16",
             "option.Threads=1", "-openings", f"file={book}", "format=pgn", "order=sequential",
             "-repeat", "-games", "2", "-rounds", str(pairs), "-maxmoves", "150",
             "-concurrency", "1", "-pgnout", str(pgn)]
    cpu = sampled_cpu(argv, work)
    games, plies = engine_plies(pgn)
    return cpu, games, plies


def run_fastchess(binary: str, pairs: int, nodes: int, work: Path, book: Path) -> tuple[float, int, int]:
    pgn = work / "fastchess.pgn"
    argv = [binary]
    for name, cmd in ENGINES:
        argv += ["-engine", f"name={name}", f"cmd={cmd}", f"nodes={nodes}"]
    argv += ["-each", "proto=uci", "tc=inf", f"restart={RESTART}", "option.Hash=16", "option.Threads=1",
             "-openings", f"file={book}", "format=pgn", "order=sequential",
             "-repeat", "-rounds", str(pairs), "-maxmoves", "150", "-concurrency", "1",
             "-pgnout", f"file={pgn}"]
    cpu = sampled_cpu(argv, work)
    games, plies = engine_plies(pgn)
    return cpu, games, plies


def play(name: str, tool: str | None, pairs: int, nodes: int, base: Path
         ) -> tuple[float, int, int] | str:
    work = base / f"{name}-{pairs}"
    work.mkdir()
    book = book_lines(pairs, work)
    if name == "swiss-runner":
        return run_swiss_runner(pairs, nodes, work, book)
    if tool is None:
        return f"not found (PATH or {name.upper().replace('-CLI', '_CLI')})"
    runner = run_cutechess if name == "cutechess-cli" else run_fastchess
    return runner(tool, pairs, nodes, work, book)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=24, help="openings, each played twice (default 24)")
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--steady", type=int, default=0, metavar="K",
                    help="also play K openings alone: CPU per ply beyond them (default: off)")
    ap.add_argument("--only", choices=TOOLS)
    ap.add_argument("--restart", choices=("on", "off", "both"), default="both",
                    help="fresh engines every game (on), kept ones (off), or both in turn (default)")
    ap.add_argument("--repeat", type=int, default=1, help="the whole bench R times (default 1)")
    args = ap.parse_args()
    tools = {
        "swiss-runner": sys.executable,
        "cutechess-cli": peers.find("cutechess-cli"),
        "fastchess": peers.find("fastchess"),
    }
    modes = ("on", "off") if args.restart == "both" else (args.restart,)
    runs: dict[tuple[str, str], list[Result]] = {}
    before = peers.stamp()
    for _ in range(args.repeat):  # the tools in turn, each repeat: same minutes, same load
        for mode in modes:
            for name, result in run_all(args, tools, mode).items():
                runs.setdefault((mode, name), []).append(result)
    print_table(args, tools, modes, runs, before, peers.stamp())


Result = tuple[tuple[float, int, int] | str, tuple[float, int, int] | str | None]
TOOLS = ("swiss-runner", "cutechess-cli", "fastchess")


def run_all(args: argparse.Namespace, tools: dict[str, str | None],
            mode: str) -> dict[str, Result]:
    """Every tool in turn with ``Restart`` ``mode``: (whole run, the first K openings alone)."""
    global RESTART
    RESTART = mode
    results: dict[str, Result] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for name in TOOLS:
            if args.only and name != args.only:
                continue
            whole = play(name, tools[name], args.pairs, args.nodes, base)
            print(f"restart {mode}, {name}: {whole} (load {os.getloadavg()[0]:.2f})",
                  file=sys.stderr, flush=True)
            small = None
            if args.steady and not isinstance(whole, str):
                small = play(name, tools[name], args.steady, args.nodes, base)
                print(f"restart {mode}, {name} ({args.steady} pairs): {small}", file=sys.stderr,
                      flush=True)
            results[name] = (whole, small)
    return results


def per_ply(result: Result) -> tuple[float, float | None] | str:
    """(ms per ply over the whole run, ms per ply beyond the first K openings)."""
    whole, small = result
    if isinstance(whole, str):
        return whole
    cpu, _, plies = whole
    steady = None
    if small is not None and not isinstance(small, str) and plies > small[2]:
        steady = 1000 * (cpu - small[0]) / (plies - small[2])
    return 1000 * cpu / max(plies, 1), steady


def print_table(args: argparse.Namespace, tools: dict[str, str | None], modes: tuple[str, ...],
                runs: dict[tuple[str, str], list[Result]], before: str, after: str) -> None:
    """One markdown table: a row per mode and tool; medians over the repeats."""
    print(f"\n{args.pairs * 2} games, Stockfish vs Ethereal, nodes={args.nodes}, concurrency 1, "
          f"{args.repeat} run(s) per cell; start {before}; end {after}\n")
    steady = (f" marginal ms/ply ({args.steady} openings off) | marginal x cutechess-cli |"
              " marginal x fastchess |" if args.steady else "")
    print(f"| mode | tool | games | engine plies | CPU s | ms/ply | x cutechess-cli |{steady}")
    print("|---|---|---|---|---|---|---|" + ("---|---|---|" if args.steady else ""))
    for mode in modes:
        label = "fresh engines (restart on)" if mode == "on" else "kept engines (restart off)"
        rates = {name: [r for r in map(per_ply, results) if not isinstance(r, str)]
                 for (m, name), results in runs.items() if m == mode}
        base = rates.get("cutechess-cli") or []
        fast = rates.get("fastchess") or []
        for (m, name), results in runs.items():
            if m != mode:
                continue
            first = results[0][0]
            if isinstance(first, str):
                print(f"| {label} | {peers.version(name, tools[name])} | {first} |"
                      + " |" * (4 + 3 * bool(args.steady)))
                continue
            whole = [r[0] for r in rates[name]]
            cpus = [res[0][0] for res in results if not isinstance(res[0], str)]
            row = (f"| {label} | {peers.version(name, tools[name])} | {first[1]} | {first[2]} | "
                   f"{statistics.median(cpus):.2f} | {peers.spread(whole, 3)} | "
                   f"{ratio(whole, [b[0] for b in base])} |")
            if args.steady:
                marginal = [r[1] for r in rates[name] if r[1] is not None]
                row += (f" {peers.spread(marginal, 3)} | "
                        f"{ratio(marginal, [b[1] for b in base if b[1] is not None])} | "
                        f"{ratio(marginal, [f[1] for f in fast if f[1] is not None])} |")
            print(row)


def ratio(values: list[float], base: list[float]) -> str:
    if not values or not base:
        return "-"
    return f"{statistics.median(values) / statistics.median(base):.2f}x"


if __name__ == "__main__":
    main()
