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
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path

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


# --------------------------------------------------------------------------- measuring


def _import_cpu(statement: str) -> float:
    """CPU seconds of ``python -c statement`` beyond ``python -c pass`` (best of 3)."""
    def best(code: str) -> float:
        return min(sampled_cpu([sys.executable, "-c", code], REPO) for _ in range(3))
    return best(statement) - best("pass")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=24, help="openings, each played twice (default 24)")
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--child", choices=("python-chess", "bare"), help=argparse.SUPPRESS)
    ap.add_argument("--book", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--counts", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "python-chess":
        asyncio.run(_python_chess(args.book, args.nodes, args.counts))
        return
    if args.child == "bare":
        asyncio.run(_bare(args.book, args.nodes, args.counts))
        return
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
