"""Runner CPU time per ply of the built-in referee (engines excluded).

Plays a few games between two real engines at a fixed node count and reports the runner
process's own CPU time (user + system, from psutil; engine processes are children and are
not counted) divided by the number of engine plies. Compare with cutechess-cli's CPU time
on the same games (``/usr/bin/time cutechess-cli ... nodes=N``).

    PATH=$PATH:/usr/games python bench/bench_referee.py [--games 4] [--nodes 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.config import AdjudicationConfig, EngineConfig, TcecDrawRule  # noqa: E402
from runner.domain.models import GameSpec, Opening  # noqa: E402
from runner.domain.timecontrol import parse_time_control  # noqa: E402
from runner.play.referee import play_game  # noqa: E402

OPENINGS = [("e2e4", "e7e5"), ("d2d4", "d7d5"), ("c2c4", "e7e5"), ("g1f3", "g8f6"),
            ("e2e4", "c7c5"), ("d2d4", "g8f6"), ("e2e4", "e7e6"), ("e2e4", "c7c6")]


def engine(name: str, command: str, nodes: int) -> EngineConfig:
    return EngineConfig(name=name, command=f"/usr/games/{command}", nodes=nodes,
                        options={"Hash": 16, "Threads": 1})


async def run(games: int, nodes: int, emit: bool = False) -> int:
    """Play the games; return the number of engine (non-book) plies."""
    a, b = engine("Stockfish", "stockfish", nodes), engine("Ethereal", "ethereal-chess", nodes)
    adj = AdjudicationConfig(tcec_draw=TcecDrawRule(), max_moves=150)
    plies = 0
    for i in range(games):
        white, black = (a, b) if i % 2 == 0 else (b, a)
        opening = Opening(i // 2, moves=OPENINGS[(i // 2) % len(OPENINGS)])
        spec = GameSpec(game_id=i + 1, round=1, game_in_round=i + 1, white=white, black=black,
                        time_control=parse_time_control("inf"), adjudication=adj, opening=opening)
        events: list[object] = []
        record = await play_game(spec, emit=events.append if emit else None)
        engine_plies = sum(1 for c in record.comments if c != "book")
        plies += engine_plies
        print(f"game {i + 1}: {record.white} - {record.black} {record.result} "
              f"{{{record.reason}}} {engine_plies} plies", flush=True)
    return plies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--emit", action="store_true",
                    help="collect the game's events (MovePlayed with SAN, FEN, PV) as the runner does")
    args = ap.parse_args()
    me = psutil.Process()
    cpu0 = me.cpu_times()
    wall0 = time.monotonic()
    plies = asyncio.run(run(args.games, args.nodes, args.emit))
    cpu1 = me.cpu_times()
    wall = time.monotonic() - wall0
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    print(f"games={args.games} nodes={args.nodes} engine_plies={plies} wall={wall:.2f}s")
    print(f"runner CPU: {cpu:.3f}s total, {1000 * cpu / max(plies, 1):.3f} ms per ply "
          f"(user {cpu1.user - cpu0.user:.3f}s, system {cpu1.system - cpu0.system:.3f}s)")


if __name__ == "__main__":
    main()
