"""Benchmark the store: cost of recording one game, and of resuming, with 10 000 games recorded.

    python bench/bench_store.py [--games 10000] [--record 200] [--dir DIR]

Builds an event of 50 engines (25 pairs, double rounds = 50 games per round) whose first
``--games`` games are recorded with realistic PGNs (~80 moves each), then measures:
  * record_game: one durable transaction (WAL, synchronous=FULL) per game;
  * the per-game views: PGN append and the JSON snapshot (built from the database,
    standings included, written atomically);
  * resume: opening the database (quick_check), the fingerprint comparison, the orphan
    sweep, the PGN check and the snapshot rewrite, i.e. Tournament.prepare() as `run` does it.
Goals (issue 6): < 5 ms per game, < 1 s to resume.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import chess
import chess.pgn
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from runner.config import load_config  # noqa: E402
from runner.config.fingerprint import event_fingerprint  # noqa: E402
from runner.domain.models import GameRecord  # noqa: E402
from runner.service.tournament import Tournament  # noqa: E402
from runner.service.views.sink import ViewErrors  # noqa: E402
from runner.service.views.snapshot import SnapshotFile  # noqa: E402
from runner.store.database import Store, append_pgn  # noqa: E402

FAKE = REPO / "tests" / "fakes" / "det_engine.py"
PLAYERS = 50


def sample_pgn(white: str, black: str, rnd: str, seed: int) -> tuple[str, list[str]]:
    board = chess.Board()
    moves = []
    for ply in range(160):
        legal = sorted(board.legal_moves, key=lambda m: m.uci())
        if not legal:
            break
        move = legal[(seed * 31 + ply * 17) % len(legal)]
        moves.append(move.uci())
        board.push(move)
    game = chess.pgn.Game.from_board(board)
    game.headers.update({"Event": "bench", "Round": rnd, "White": white, "Black": black,
                         "Result": "1/2-1/2"})
    node = game
    while node.variations:
        node = node.variations[0]
        node.comment = "+0.12/23 4.5s"
    return str(game), moves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=10_000)
    parser.add_argument("--record", type=int, default=200, help="games to time one by one")
    parser.add_argument("--dir", type=Path, default=None)
    opts = parser.parse_args()
    work = opts.dir or Path(tempfile.mkdtemp(prefix="bench_store_"))
    per_round = PLAYERS  # 25 pairs x 2 games
    rounds = (opts.games + opts.record) // per_round + 2
    cfg_path = work / "bench.yaml"
    cfg_path.write_text(yaml.safe_dump({
        "Event": "bench", "TimeControl": "60+1",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": rounds, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Engines": [{"Name": f"E{i:02d}", "Command": sys.executable, "Args": [str(FAKE), "random", str(i), "0"]}
                    for i in range(PLAYERS)],
    }))
    config = load_config(cfg_path)
    names = [e.name for e in config.engines]
    templates = [sample_pgn("W", "B", "1.1", s) for s in range(20)]

    store = Store.open(config.database)
    store.init_event(event_fingerprint(config), names, [], event="bench", games_per_match=2,
                     rounds=rounds)
    game_id = 1
    t0 = time.perf_counter()
    for rnd in range(1, rounds + 1):
        rows = []
        pairs = [(names[(i + rnd) % PLAYERS], names[(PLAYERS - 1 - i + rnd) % PLAYERS])
                 for i in range(PLAYERS // 2)]
        for leg in (1, 2):
            for i, (a, b) in enumerate(pairs):
                w, bl = (b, a) if leg == 1 else (a, b)
                rows.append({"game_id": game_id, "game_in_round": len(rows) + 1, "pair_index": i,
                             "leg": leg, "white": w, "black": bl,
                             "match_index": (rnd - 1) * 25 + i, "opening": None})
                game_id += 1
        store.add_round(rnd, pairs, None, (), (), rows)
    # bulk-fill the first --games games in one transaction (setup, not measured)
    with store.transaction() as c:
        for g in store.games()[: opts.games]:
            pgn, moves = templates[g.game_id % len(templates)]
            c.execute("UPDATE games SET status='finished', finish_seq=?, result='1/2-1/2', "
                      "reason='Draw by adjudication: TCEC draw rule', moves=?, pgn=?, "
                      "rmobility='G3.5' WHERE game_id=?", (g.game_id, " ".join(moves), pgn, g.game_id))
        c.execute("UPDATE rounds SET state='complete' WHERE NOT EXISTS "
                  "(SELECT 1 FROM games WHERE round=rounds.number AND status!='finished')")
    store.rebuild_pgn(config.pgn_out)
    print(f"setup: {opts.games} games recorded in {time.perf_counter() - t0:.1f} s; "
          f"db {config.database.stat().st_size / 1e6:.1f} MB, "
          f"pgn {config.pgn_out.stat().st_size / 1e6:.1f} MB  ({work})")

    tour = Tournament(config, store, quiet=True)
    snapshots = SnapshotFile(config, store, ViewErrors(store.path))
    pending = [g for g in store.games() if g.status != "finished"][: opts.record]
    rec_ms, pgn_ms, snap_ms = [], [], []
    for g in pending:
        pgn, moves = templates[g.game_id % len(templates)]
        record = GameRecord(white=g.white, black=g.black, result="1-0", reason="White mates",
                            moves=moves, pgn=pgn, rmobility="G0.0")
        t = time.perf_counter()
        store.record_game(g.game_id, record)
        rec_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        append_pgn(config.pgn_out, record.pgn)
        pgn_ms.append((time.perf_counter() - t) * 1000)
        if len(snap_ms) < 20:
            t = time.perf_counter()
            snapshots.in_thread()
            snap_ms.append((time.perf_counter() - t) * 1000)

    def show(label: str, values: list[float]) -> None:
        values = sorted(values)
        p95 = values[int(len(values) * 0.95) - 1] if len(values) >= 20 else values[-1]
        print(f"{label:<38} mean {statistics.mean(values):7.2f} ms  median "
              f"{statistics.median(values):7.2f} ms  p95 {p95:7.2f} ms  (n={len(values)})")

    show("record_game (1 transaction, fsync)", rec_ms)
    show("append to PGN", pgn_ms)
    show("JSON snapshot incl. standings (thread)", snap_ms)
    size = config.swiss.state_path.stat().st_size
    print(f"snapshot size {size / 1e6:.2f} MB")
    store.close()

    # resume: what `swiss-runner run` does before playing the next game
    times = []
    for _ in range(3):
        t = time.perf_counter()
        store = Store.open(config.database)
        tour = Tournament(config, store, quiet=True)
        code = tour.prepare()
        times.append(time.perf_counter() - t)
        store.close()
        assert code is None, code
    t = time.perf_counter()
    store = Store.open(config.database)
    t_open = time.perf_counter() - t
    t = time.perf_counter()
    store.event_results()
    t_results = time.perf_counter() - t
    store.close()
    print(f"resume (open + checks + sweep + PGN check + snapshot): best {min(times) * 1000:.0f} ms, "
          f"worst {max(times) * 1000:.0f} ms with {opts.games + len(pending)} games recorded")
    print(f"  of which: open+quick_check {t_open * 1000:.0f} ms, event_results {t_results * 1000:.0f} ms")
    ok = statistics.mean(rec_ms) < 5 and max(times) < 1
    print(json.dumps({"record_ms_mean": round(statistics.mean(rec_ms), 3),
                      "resume_s_worst": round(max(times), 3), "goals_met": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
