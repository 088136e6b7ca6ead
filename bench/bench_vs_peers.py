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

``--restart on|off``: fresh engines every game (swiss-runner ``Restart: on``, cutechess-cli
``restart=on``, fastchess ``restart=on``) or kept ones (``off``, the peers' defaults keep
them too); default ``on``.

``--steady K`` also plays the first K lines alone with each tool and reports the CPU per
ply of the games beyond them ((CPU(N) - CPU(K)) / (plies(N) - plies(K))): the cost per ply
once a tool is running, without what it spends once per run (start-up, imports).

cutechess-cli and fastchess are on no package registry: the bench looks for them on PATH
(or CUTECHESS_CLI / FASTCHESS) and reports a missing one instead of failing.

    PATH=$PATH:/usr/games python bench/bench_vs_peers.py [--pairs 24] [--nodes 3000] [--steady 4]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import chess.pgn
import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
BOOK = REPO / "books" / "default.pgn"
ENGINES = [("Stockfish", "/usr/games/stockfish"), ("Ethereal", "/usr/games/ethereal-chess")]


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


def run_swiss_runner(pairs: int, nodes: int, work: Path, book: Path) -> tuple[float, int, int]:
    config = work / "event.yaml"
    config.write_text(yaml.safe_dump({
        "Event": "bench", "TimeControl": "inf", "Concurrency": 1, "Restart": RESTART,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": pairs, "Seeding": "listed",
                         "RandomOpenings": False, "StatePath": str(work / "state.json")},
        "Openings": {"File": str(book), "Format": "pgn", "Order": "sequential"},
        "Adjudication": {"MaxMoves": 150},
        "Engines": [{"Name": n, "Command": c, "Nodes": nodes, "Options": {"Hash": 16, "Threads": 1}}
                    for n, c in ENGINES],
    }))
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
    ap.add_argument("--only", choices=("swiss-runner", "cutechess-cli", "fastchess"))
    ap.add_argument("--restart", choices=("on", "off"), default="on")
    ap.add_argument("--repeat", type=int, default=1, help="the whole bench R times (default 1)")
    args = ap.parse_args()
    global RESTART
    RESTART = args.restart
    tools = {
        "swiss-runner": sys.executable,
        "cutechess-cli": os.environ.get("CUTECHESS_CLI") or shutil.which("cutechess-cli"),
        "fastchess": os.environ.get("FASTCHESS") or shutil.which("fastchess"),
    }
    for _ in range(args.repeat):  # the tools in turn, each repeat: same minutes, same load
        run_all(args, tools)


def run_all(args: argparse.Namespace, tools: dict[str, str | None]) -> None:
    results: dict[str, tuple[float, int, int] | str] = {}
    steady: dict[str, tuple[float, int, int] | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for name in ("swiss-runner", "cutechess-cli", "fastchess"):
            if args.only and name != args.only:
                continue
            results[name] = play(name, tools[name], args.pairs, args.nodes, base)
            print(f"{name}: {results[name]}", file=sys.stderr, flush=True)
            if args.steady and not isinstance(results[name], str):
                steady[name] = play(name, tools[name], args.steady, args.nodes, base)
                print(f"{name} ({args.steady} pairs): {steady[name]}", file=sys.stderr, flush=True)
    print(f"{args.pairs * 2} games, Stockfish vs Ethereal, nodes={args.nodes}, concurrency 1, "
          f"restart {args.restart}, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    head = f"{'tool':<14} {'games':>5} {'plies':>6} {'CPU s':>7} {'ms/ply':>7}"
    print(head + (f" {'steady ms/ply':>13}" if args.steady else ""))
    for name, value in results.items():
        if isinstance(value, str):
            print(f"{name:<14} {value}")
            continue
        cpu, games, plies = value
        line = f"{name:<14} {games:>5} {plies:>6} {cpu:>7.2f} {1000 * cpu / max(plies, 1):>7.3f}"
        small = steady.get(name)
        if small is not None and not isinstance(small, str) and plies > small[2]:
            line += f" {1000 * (cpu - small[0]) / (plies - small[2]):>13.3f}"
        print(line)


if __name__ == "__main__":
    main()
