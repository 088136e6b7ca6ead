"""The referee's own work per engine ply, step by step (real engine output, no event loop).

Plays a few games of bench_vs_peers.py's kind (Stockfish vs Ethereal at a fixed node count,
the first lines of books/default.pgn, fresh engines, each line with colours reversed) over
plain blocking pipes, keeping what each engine wrote for each move. Then times, over every
engine ply played, each step the referee (runner.play.referee, runner.play.uci) does with a
move once it has come, with the runner's own functions, in this process:
the last score line found and parsed, the legality check, SAN and push, the legal-move count
(r-mobility) and the natural end, the adjudication rules, the FEN, the PV, the comment, the
MovePlayed event and its JSON row (the move log's writer thread).

What it leaves out is what a ply costs besides: the event loop waking for each pipe read,
the write of ``position ... go``, the kernel's pipe and scheduler work, the store's commits,
the views; bench_vs_peers.py measures the whole process, bench_floor.py the loop alone.

    PATH=$PATH:/usr/games python bench/bench_ply.py [--pairs 4] [--nodes 3000] [--repeat 5]
    python bench/bench_ply.py --pythonpath OTHER_CHECKOUT   # the same steps, other code
"""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENGINES = ["/usr/games/stockfish", "/usr/games/ethereal-chess"]


class Pipe:
    """An engine over blocking pipes: lines in, everything out until ``bestmove``."""

    def __init__(self, command: str):
        self.proc = subprocess.Popen([command], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.send("uci")
        self.until(b"uciok")
        self.send("setoption name Hash value 16", "setoption name Threads value 1",
                  "ucinewgame", "isready")
        self.until(b"readyok")

    def send(self, *lines: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(("\n".join(lines) + "\n").encode())
        self.proc.stdin.flush()

    def until(self, token: bytes) -> bytes:
        assert self.proc.stdout is not None
        out = b""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the engine exited")
            out += line
            if line.startswith(token):
                return out

    def close(self) -> None:
        self.send("quit")
        self.proc.wait(5)


def play(pairs: int, nodes: int) -> list[tuple[object, bytes]]:
    """(board before the move, what the engine wrote from go to its bestmove) per engine ply."""
    import chess.pgn

    from runner.domain.adjudication import natural_end

    plies: list[tuple[object, bytes]] = []
    with open(REPO / "books" / "default.pgn", encoding="utf-8") as book:
        lines = [game for _ in range(pairs) if (game := chess.pgn.read_game(book)) is not None]
    for game in lines:
        for first in (0, 1):
            board = game.end().board()
            engines = [Pipe(ENGINES[first]), Pipe(ENGINES[1 - first])]
            while board.ply() < 300 and natural_end(board) is None:
                engine = engines[0 if board.turn == chess.WHITE else 1]
                engine.send("position startpos moves " + " ".join(m.uci() for m in
                                                                 board.move_stack),
                            f"go nodes {nodes}")
                out = engine.until(b"bestmove")
                plies.append((board.copy(), out))
                board.push_uci(out.split(b"bestmove ")[-1].split()[0].decode())
            for engine in engines:
                engine.close()
    return plies


def steps() -> list[tuple[str, Callable[..., object]]]:
    """(step, function of (board before, output, state)) as the referee does them."""
    import chess

    from runner.config import AdjudicationConfig, TcecDrawRule, TcecWinRule
    from runner.domain.adjudication import Adjudicator, natural_end
    from runner.domain.events import MovePlayed
    from runner.domain.fen import fen
    from runner.domain.rmobility import RMobility, position_halves
    from runner.play.referee import _pv, move_comment, searched_info
    from runner.play.uci import parse_info
    from runner.store.writer import move_json

    counted = "legal_moves" in inspect.signature(natural_end).parameters
    adjudicator = Adjudicator(AdjudicationConfig(tcec_draw=TcecDrawRule(),
                                                 tcec_win=TcecWinRule(), max_moves=150))

    try:
        from runner.play.uci import last_search_lines
    except ImportError:  # older code: UciMove._searched's loop, as it was
        def last_search_lines(text: bytes) -> tuple[str | None, str | None, str | None]:
            score = pv = None
            for raw in reversed(text.split(b"\n")):
                if raw.startswith(b"info ") and (b" score " in raw or b" pv " in raw):
                    line = raw.decode()
                    score = score or (line if " score " in line else None)
                    pv = pv or (line if " pv " in line else None)
                    if score and pv:
                        break
            return score, None, pv

    def lines(board: chess.Board, out: bytes, s: dict) -> None:
        score, bound, pv = last_search_lines(out[:out.rindex(b"bestmove")])
        s["info"] = searched_info(parse_info(score or bound, board.turn))  # type: ignore[arg-type]
        s["pv_line"] = pv
        s["move"] = chess.Move.from_uci(out.split(b"bestmove ")[-1].split()[0].decode())

    def legal(board: chess.Board, out: bytes, s: dict) -> None:
        s["legal"] = s["move"] in board.legal_moves

    def pv(board: chess.Board, out: bytes, s: dict) -> None:
        s["pv"] = _pv(s["pv_line"], board, False)

    def san(board: chess.Board, out: bytes, s: dict) -> None:
        s["resets"] = board.is_zeroing(s["move"])
        s["san"] = board.san_and_push(s["move"])
        s["uci"] = s["move"].uci()

    def ends(board: chess.Board, out: bytes, s: dict) -> None:
        mobility = RMobility()
        if counted:
            halves = position_halves(board)
            mobility.played(board, s["resets"], halves)
            s["end"] = natural_end(board, halves // 2)
        else:
            mobility.played(board, s["resets"])
            s["end"] = natural_end(board)

    def adjudicate(board: chess.Board, out: bytes, s: dict) -> None:
        pov = s["info"].get("score")
        s["score"] = pov.pov(not board.turn) if pov is not None else None
        adjudicator.update(board, s["score"])

    def comment(board: chess.Board, out: bytes, s: dict) -> None:
        s["comment"] = move_comment(s["info"], not board.turn, 0.0042)

    def position(board: chess.Board, out: bytes, s: dict) -> None:
        s["fen"] = fen(board)

    def event(board: chess.Board, out: bytes, s: dict) -> None:
        info, score = s["info"], s["score"]
        s["event"] = MovePlayed(
            game_id=1, ply=board.ply(), uci=s["uci"], san=s["san"], fen=s["fen"],
            white_clock_ms=None, black_clock_ms=None, time_ms=4,
            score_cp=None if score is None or score.is_mate() else score.score(),
            mate=None if score is None else score.mate(), depth=info.get("depth"),
            seldepth=info.get("seldepth"), nodes=info.get("nodes"), nps=info.get("nps"),
            tbhits=info.get("tbhits"), pv=s["pv"], comment=s["comment"],
            at_ms=int(time.time() * 1000))

    def row(board: chess.Board, out: bytes, s: dict) -> None:
        move_json(s["event"])

    return [("last score line found and parsed", lines), ("legality check", legal),
            ("PV taken", pv), ("SAN and push", san),
            ("legal-move count (r-mobility) and natural end", ends),
            ("adjudication rules", adjudicate), ("comment", comment), ("FEN", position),
            ("MovePlayed", event), ("its JSON row (move log thread)", row)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=4, help="openings, each played twice")
    ap.add_argument("--nodes", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=5, help="best of R timings (default 5)")
    ap.add_argument("--pythonpath", type=Path, default=REPO,
                    help="the checkout whose runner package is timed (default: this one)")
    args = ap.parse_args()
    sys.path.insert(0, str(args.pythonpath))
    plies = play(args.pairs, args.nodes)
    table = steps()
    best = [float("inf")] * len(table)
    for _ in range(args.repeat):
        spent = [0.0] * len(table)
        boards = [(board.copy(), out) for board, out in plies]  # type: ignore[attr-defined]
        for board, out in boards:
            state: dict = {}
            for i, (_, step) in enumerate(table):
                t0 = time.perf_counter()
                step(board, out, state)
                spent[i] += time.perf_counter() - t0
        best = [min(b, s) for b, s in zip(best, spent, strict=True)]
    print(f"{len(plies)} engine plies, {args.pythonpath}")
    for (name, _), t in zip(table, best, strict=True):
        print(f"| {name} | {1e6 * t / len(plies):.1f} |")
    print(f"| total | {1e6 * sum(best) / len(plies):.1f} |")


if __name__ == "__main__":
    main()
