"""Benchmark the store's writer thread: its CPU per move for what a run hands it.

    python bench/bench_writer.py [--games 32] [--book 8] [--plies 32] [--gap-ms 4] [--repeat 3]
        [--interval 0.05]

Replays, from one thread as the event loop does, what a run of one game at a time hands the
writer (runner.store.writer.StoreWriter) for each game: its start (``restart``, the start job
of runner.service.views.storesink), its book moves at once, then an engine move every
``--gap-ms`` (about what Stockfish at 3000 nodes takes), then its record (``settle``, with a
PGN of the game), awaited as the loop awaits it; and each round's pairing (two games a
round, as in bench_vs_peers's event), awaited. Prints the writer thread's own CPU
(``time.thread_time`` in the thread: user and system) per move, with its wakes; the median
of ``--repeat`` runs. No engines: the writer alone, so two trees compare within a few
percent where a whole run moves 10-30% on a shared machine. ``--interval``: the writer's
commit interval for moves (StoreWriter's ``interval``; the runner's is its default), to
measure what the commits of the batches cost (docs/performance.md, seventh pass: writer3).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import chess
import chess.pgn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runner.domain.events import MovePlayed  # noqa: E402
from runner.domain.models import GameRecord  # noqa: E402
from runner.store.database import Store  # noqa: E402
from runner.store.writer import StoreWriter  # noqa: E402


class TimedWriter(StoreWriter):
    """The writer, with its thread's CPU kept when the thread ends."""

    cpu = 0.0

    def _run(self) -> None:
        start = time.thread_time()
        try:
            super()._run()
        finally:
            self.cpu = time.thread_time() - start


def game_moves(plies: int, seed: int) -> list[MovePlayed]:
    board = chess.Board()
    out = []
    for ply in range(1, plies + 1):
        legal = sorted(board.legal_moves, key=lambda m: m.uci())
        if not legal:
            break
        move = legal[(seed * 31 + ply * 17) % len(legal)]
        san = board.san(move)
        board.push(move)
        pv = (move.uci(), *(m.uci() for m in list(board.legal_moves)[:6]))
        out.append(MovePlayed(game_id=0, ply=ply, uci=move.uci(), san=san, fen=board.fen(),
                              white_clock_ms=None, black_clock_ms=None, time_ms=6,
                              score_cp=(seed * 7 + ply) % 90 - 40, depth=10, seldepth=14,
                              nodes=3000, nps=450000, tbhits=0, pv=pv,
                              comment="+0.35/10 0.006s", at_ms=1795831230604 + ply))
    return out


def one_run(games: int, book: int, plies: int, gap: float, work: Path,
            interval: float | None = None) -> tuple[float, int, int]:
    """(writer CPU s, moves, wakes) of one replay into a new database under ``work``
    (``interval``: the writer's commit interval, None for its default)."""
    store = Store.open(work / "bench.sqlite3")
    writer = (TimedWriter(store.path) if interval is None
              else TimedWriter(store.path, interval=interval)).start()
    assert writer.conn is not None
    thread_store = Store.on_writer_thread(writer.conn, store.path, writer.on_writer)
    moves = 0
    try:
        for gid in range(1, games + 1):
            if gid % 2:
                rows = [{"game_id": gid + leg, "game_in_round": leg + 1, "pair_index": 0,
                         "leg": leg + 1, "white": "A" if leg == 0 else "B",
                         "black": "B" if leg == 0 else "A", "match_index": gid + leg - 1,
                         "opening": None} for leg in range(2)]
                writer.submit(lambda conn, n=(gid + 1) // 2, r=rows: thread_store.add_round(
                    n, [("A", "B")], None, (), (), r)).result()
            white, black = ("A", "B") if gid % 2 else ("B", "A")
            writer.restart(gid, 1, lambda conn, g=gid: thread_store.start_game(
                g, 1, '{"kind":"started"}', keep_plies=0))
            played = [MovePlayed(**{**vars(m), "game_id": gid, "attempt": 1, "book": i < book})
                      for i, m in enumerate(game_moves(book + plies, gid))]
            for move in played[:book]:
                writer.append(move)
            for move in played[book:]:
                time.sleep(gap)
                writer.append(move)
            moves += len(played)
            game = chess.pgn.Game()
            node = game
            for move in played:
                node = node.add_variation(chess.Move.from_uci(move.uci), comment=move.comment)
            record = GameRecord(white=white, black=black, result="1/2-1/2", reason="bench",
                                moves=[m.uci for m in played], pgn=str(game))
            writer.settle(gid, lambda conn, rows, g=gid, r=record: thread_store.record_game(
                g, r, moves=rows)).result()
    finally:
        writer.close()
        store.close()
    return writer.cpu, moves, writer.wakes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=32)
    ap.add_argument("--book", type=int, default=8)
    ap.add_argument("--plies", type=int, default=32)
    ap.add_argument("--gap-ms", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--interval", type=float, default=None,
                    help="the writer's commit interval for moves, s (default: its own)")
    args = ap.parse_args()
    per_move, wakes = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            cpu, moves, woke = one_run(args.games, args.book, args.plies, args.gap_ms / 1000,
                                       Path(tmp), args.interval)
        per_move.append(cpu / moves * 1e6)
        wakes.append(woke)
        print(f"writer CPU {cpu * 1000:.1f} ms for {moves} moves: {per_move[-1]:.1f} us/move, "
              f"{woke} wakes", flush=True)
    print(f"median {statistics.median(per_move):.1f} us/move (range {min(per_move):.1f}-"
          f"{max(per_move):.1f}), wakes {statistics.median(wakes):.0f}")


if __name__ == "__main__":
    main()
