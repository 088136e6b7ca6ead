"""What the referee does with a move once it has come, per engine ply, without engines.

Replays the engine plies of a run's move log (each move, its search info, its time and PV as
logged) through ``runner.play.referee._take_move`` on a board, game by game, as the loop
calls it: the clock charged, the reply checked, pushed (python-chess's SAN), commented,
adjudicated (MaxMoves 150, as bench_vs_peers.py's event) and made into its MovePlayed, which
the emit keeps in a list. Printed: the thread CPU per ply (``time.thread_time`` around each
call; the median and range of ``--passes`` passes). With ``--events FILE`` the MovePlayed
events of the last pass are written there as JSON lines (``at_ms``, the wall time, left
out), to compare two checkouts' (``--pythonpath``) to the byte.

Without ``--db`` it first plays bench_vs_peers.py's games (Stockfish vs Ethereal at 3000
nodes, ``--pairs`` openings of books/default.pgn each played twice, engines kept) and reads
their move log.

    PATH=$PATH:/usr/games python bench/bench_take_move.py [--pairs 8] [--passes 7]
    python bench/bench_take_move.py --db STATE.sqlite3 --pythonpath OTHER_CHECKOUT
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_vs_peers as peers_bench  # noqa: E402

Ply = tuple[bool, Any, dict[str, Any], float, tuple[str, ...]]


def played_log(pairs: int, work: Path) -> Path:
    """bench_vs_peers.py's games played with engines kept: their state database."""
    config = peers_bench.event_config(work, pairs, 3000, peers_bench.book_lines(pairs, work), "off")
    subprocess.run([sys.executable, "-m", "runner", "run", str(config), "--quiet"], cwd=work,
                   check=True, stdout=subprocess.DEVNULL)
    return work / "state.sqlite3"


def logged_games(db: Path) -> list[tuple[int, list[str], list[Ply]]]:
    """Each game of the move log: its id, its book moves and its engine plies (mover, move,
    info, seconds, PV), of its last attempt."""
    import chess
    import chess.engine

    rows: dict[int, dict[int, dict[str, Any]]] = {}
    with sqlite3.connect(db) as conn:
        for gid, ply, _attempt, data in conn.execute("SELECT game_id, ply, attempt, data "
                                                     "FROM moves ORDER BY 1, 3, 2"):
            rows.setdefault(gid, {})[ply] = json.loads(data)  # a later attempt's replaces
    games = []
    for gid, plies in rows.items():
        board, book, engine_plies = chess.Board(), [], []
        for _, r in sorted(plies.items()):
            move = chess.Move.from_uci(r["uci"])
            if r["book"]:
                book.append(r["uci"])
            else:
                info: dict[str, Any] = {k: r[k] for k in ("depth", "seldepth", "nodes", "nps",
                                                          "tbhits") if r[k] is not None}
                score = chess.engine.Mate(r["mate"]) if r["mate"] is not None else \
                    chess.engine.Cp(r["score_cp"]) if r["score_cp"] is not None else None
                if score is not None:
                    info["score"] = chess.engine.PovScore(score, board.turn)
                engine_plies.append((board.turn, move, info, r["time_ms"] / 1000, tuple(r["pv"])))
            board.push(move)
        games.append((gid, book, engine_plies))
    return games


def one_pass(games: list[tuple[int, list[str], list[Ply]]]) -> tuple[float, int, list[Any]]:
    """Every game's engine plies through ``_take_move``: the CPU seconds, the plies, the events."""
    import chess

    from runner.config.typed import AdjudicationConfig
    from runner.domain.adjudication import Adjudicator, RepetitionWindow
    from runner.domain.rmobility import RMobility
    from runner.domain.timecontrol import Clock, TimeControl
    from runner.play import referee

    engine = types.SimpleNamespace(config=types.SimpleNamespace(protocol="uci", movetime_ms=None),
                                   protocol=types.SimpleNamespace(last_move_text=""))
    events: list[Any] = []
    cpu, count = 0.0, 0
    for gid, book, plies in games:
        g = object.__new__(referee._Plies)  # what _take_move reads of a game, set here
        g.spec, g.procs = types.SimpleNamespace(game_id=gid), {c: engine for c in chess.COLORS}
        g.board = chess.Board()
        for uci in book:
            g.board.push_uci(uci)
        g.moves, g.comments, g.sans = list(book), [], []
        g.clocks = {c: Clock(TimeControl(None)) for c in chess.COLORS}
        g.emit, g.attempt, g.move_data, g.mobility = events.append, 1, None, RMobility()
        g.adjudicator = Adjudicator(AdjudicationConfig(max_moves=150))
        g.margin, g.infinite, g.repetitions = 0.0, True, RepetitionWindow()
        if "emit_move" in referee._Plies.__slots__:  # (a checkout since the seventh pass)
            g.wanted, g.emit_move = True, events.append
        for color, move, info, seconds, pv in plies:
            start = time.thread_time()
            step = referee._take_move(g, color, move, info, seconds, pv)
            try:
                step.send(None)  # no Syzygy probe here: it never awaits
                raise AssertionError("_take_move awaited")
            except StopIteration as done:
                end = done.value
            cpu += time.thread_time() - start
            count += 1
            if end is not None:
                break
    return cpu, count, events


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--db", type=Path, help="a run's state database (default: play the games)")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--passes", type=int, default=7)
    ap.add_argument("--pythonpath", type=Path, default=peers_bench.REPO,
                    help="the checkout whose runner is timed")
    ap.add_argument("--events", type=Path, help="write the last pass's MovePlayed events here")
    args = ap.parse_args()
    sys.path.insert(0, str(args.pythonpath))
    import runner

    timed = Path(runner.__file__).resolve().parents[1]  # (the checkout imported, to be sure)
    with tempfile.TemporaryDirectory() as tmp:
        games = logged_games(args.db or played_log(args.pairs, Path(tmp)))
    runs = [one_pass(games) for _ in range(args.passes)]
    per_ply = sorted(cpu / count * 1e6 for cpu, count, _ in runs)
    print(f"{runs[0][1]} engine plies of {len(games)} games, {timed}: "
          f"{statistics.median(per_ply):.1f} us per ply [{per_ply[0]:.1f}-{per_ply[-1]:.1f}]")
    if args.events:
        with args.events.open("w", encoding="utf-8") as out:
            for event in runs[-1][2]:
                fields = {k: v for k, v in vars(event).items() if k != "at_ms"}
                out.write(json.dumps(fields, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
