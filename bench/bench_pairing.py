"""Benchmark of runner.domain.pairing: whole events with random results (not a test).

    python bench/bench_pairing.py            # 42x11 ... 1000x20, 2000x20 (see main)
    python bench/bench_pairing.py 1000 20 1  # players rounds games_per_match
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.domain.models import RESULTS, PlayedGame  # noqa: E402
from runner.domain.pairing import RoundRecord, pair_round  # noqa: E402


def simulate(players: int, rounds: int, games_per_match: int, seed: int = 1,
             schedule: str = "split") -> tuple[float, float, int]:
    """Play an event with random results; returns (total s, slowest round s, dropped rounds)."""
    rng = random.Random(seed)
    seeds = [f"P{i:04d}" for i in range(1, players + 1)]
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    total = slowest = 0.0
    dropped = 0
    for number in range(1, rounds + 1):
        start = time.perf_counter()
        plan = pair_round(seeds, history, number, games_per_match, schedule, excluded)
        elapsed = time.perf_counter() - start
        total += elapsed
        slowest = max(slowest, elapsed)
        dropped += len(plan.dropped_history_rounds)
        excluded = plan.excluded
        games = tuple(PlayedGame(number, g.game_in_round, g.white, g.black, rng.choice(RESULTS))
                      for g in plan.games)
        history.append(RoundRecord(number, plan.pairs, games, plan.bye))
    return total, slowest, dropped


def main(argv: list[str]) -> None:
    if argv:
        cases = [(int(argv[0]), int(argv[1]), int(argv[2]) if len(argv) > 2 else 1)]
    else:
        cases = [(42, 11, 1), (50, 11, 1), (50, 11, 2), (51, 30, 1), (20, 60, 1),
                 (100, 150, 1), (200, 20, 1), (1000, 20, 1), (1000, 20, 2), (2000, 20, 1)]
    for players, rounds, gpm in cases:
        total, slowest, dropped = simulate(players, rounds, gpm)
        print(f"{players:5d} players x {rounds:3d} rounds, {gpm} game(s)/match: "
              f"{total:8.3f} s total, {total / rounds * 1000:8.1f} ms/round, "
              f"slowest round {slowest * 1000:8.1f} ms, history rounds dropped: {dropped}")


if __name__ == "__main__":
    main(sys.argv[1:])
