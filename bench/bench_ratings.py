"""Benchmark of runner.domain.ratings: fit + simulated error margins (not a test).

    python bench/bench_ratings.py              # 42 engines x 462 games, 100 engines x 1000 games
    python bench/bench_ratings.py 42 11 1000   # engines, double rounds, simulations

Events are generated with a seeded RNG (random pairings, double rounds, results drawn from
Ordo's model with a 60% draw rate between equals and 30 Elo white advantage), rated with
the white advantage fitted (as `ordo -W`, the case the numbers in docs/performance.md are of).
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.domain.ratings import Game, RatingOptions, compute_ratings, wdl_probabilities  # noqa: E402

BETA = math.log(0.76 / 0.24) / 202


def event(engines: int, rounds: int, seed: int = 1) -> list[Game]:
    rng = np.random.default_rng(seed)
    true = rng.normal(0, 150, engines)
    games = []
    for rnd in range(1, rounds + 1):
        perm = rng.permutation(engines)
        for i, (a, b) in enumerate(zip(perm[0::2], perm[1::2], strict=False)):
            for leg, (w, bl) in enumerate(((a, b), (b, a))):
                pw, pd, _ = wdl_probabilities(np.array([true[w] + 30 - true[bl]]), 0.6, BETA)
                u = rng.random()
                result = "1-0" if u < pw[0] else "1/2-1/2" if u < pw[0] + pd[0] else "0-1"
                games.append(Game(f"E{w:03d}", f"E{bl:03d}", result, rnd, game=2 * i + leg + 1))
    return games


def bench(engines: int, rounds: int, simulations: int) -> None:
    games = event(engines, rounds)
    start = time.perf_counter()
    compute_ratings(games, RatingOptions(simulations=0, white_advantage=None))
    fit = time.perf_counter() - start
    start = time.perf_counter()
    r = compute_ratings(games, RatingOptions(simulations=simulations, white_advantage=None))
    total = time.perf_counter() - start
    print(f"{engines} engines x {len(games)} games: fit {fit * 1000:.0f} ms, fit + {simulations} "
          f"simulations {total:.2f} s (redrawn {r.simulations_redrawn})")


def main() -> None:
    if len(sys.argv) > 1:
        bench(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1000)
        return
    bench(42, 11, 1000)
    bench(100, 10, 1000)


if __name__ == "__main__":
    main()
