"""How long the rest of an event should take: pure arithmetic on measured game lengths.

Three things make the estimate honest early in an event, when the plain mean of the finished
games is biased low (the first game to finish is by selection the shortest of those running):

* **Games in progress are censored observations.** A game running for X seconds lasts at
  least X, and is expected to last ``max(mean, X + TAIL_SHARE x mean)``; the mean game length
  is the fixed point of averaging the finished games, those expectations and the prior.
* **A prior from the time control** (``expected_game_s``): both sides using ``BASE_USE`` of
  their base time plus their increments over ``PRIOR_PLIES`` plies, worth ``PRIOR_WEIGHT``
  finished games, so a single quick mate cannot set the pace alone.
* **Rounds are barriers.** A Swiss round is paired only when the previous one is over, so the
  ETA is the sum over rounds of each round's makespan (games scheduled greedily on
  ``Concurrency`` slots, plus the expected excess of the slowest game of the last wave),
  not the total work divided by the slots.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from statistics import NormalDist

from runner.domain.timecontrol import TimeControl

PRIOR_PLIES = 120  # an engine game's length, TCEC adjudication included (60 moves a side)
BASE_USE = 0.8  # the share of its base time an engine has used after 60 moves
PRIOR_WEIGHT = 4.0  # the prior counts as this many finished games
PRIOR_SPREAD = 0.35  # the prior coefficient of variation of game lengths
TAIL_SHARE = 0.25  # a game past the mean length still has this share of the mean to go


def expected_game_s(tc: TimeControl) -> float | None:
    """The prior length (s) of a game under ``tc`` (None without a clock)."""
    if tc.base is None:
        return None
    moves = PRIOR_PLIES / 2
    periods = moves / tc.moves if tc.moves else 1.0
    return 2 * (BASE_USE * tc.base * periods + tc.increment * moves)


def game_length(durations: Sequence[float], running_elapsed: Sequence[float],
                prior_s: float | None = None) -> tuple[float, float]:
    """(mean, standard deviation) of a game's length (s) from the finished games'
    ``durations`` (at least one), the games in progress (censored) and the prior."""
    weight = PRIOR_WEIGHT if prior_s else 0.0
    known = weight * (prior_s or 0.0) + sum(durations)
    count = weight + len(durations) + len(running_elapsed)
    mean = known / (weight + len(durations))
    for _ in range(100):  # a contraction: converges in a few steps
        new = (known + sum(max(mean, e + TAIL_SHARE * mean) for e in running_elapsed)) / count
        if abs(new - mean) <= 1e-9 * new:
            break
        mean = new
    observed = sum((d - mean) ** 2 for d in durations)
    spread = math.sqrt((3 * (PRIOR_SPREAD * mean) ** 2 + observed) / (3 + len(durations)))
    return mean, spread


def rounds_left(total: int, started: int, round_games: int) -> list[int]:
    """The games not started yet, by round: the current round's first (0 when all of it has
    started), then each later round's. ``round_games`` <= 0: one pool, no rounds."""
    if round_games <= 0:
        return [max(0, total - started)]
    end = min(total, -(-started // round_games) * round_games)  # the current round's end
    left = [max(0, end - started)]
    while end < total:
        left.append(min(round_games, total - end))
        end += round_games
    return left


def slowest_excess(games: int) -> float:
    """How many standard deviations the longest of ``games`` parallel games exceeds the mean
    by, on average (Blom's approximation of the expected normal maximum)."""
    if games <= 1:
        return 0.0
    return NormalDist().inv_cdf((games - 0.375) / (games + 0.25))


def eta_seconds(durations: Sequence[float], remaining: int, running_elapsed: Sequence[float],
                concurrency: int, *, prior_s: float | None = None,
                round_games: int = 0, finished: int = 0) -> float | None:
    """Seconds until the last game ends (None before any game has a measured length).

    ``remaining`` counts the games not finished yet, those in progress included;
    ``running_elapsed`` is how long each game in progress has been played; ``round_games``
    the games of one round (0: the games are not played in rounds) and ``finished`` the games
    finished so far (where the round boundaries fall).
    """
    if remaining <= 0:
        return 0.0
    if not durations:
        return None
    mean, spread = game_length(durations, running_elapsed, prior_s)
    slots = max(1, concurrency)
    ends = sorted(max(mean - e, TAIL_SHARE * mean) for e in running_elapsed)[-slots:]
    ends += [0.0] * (slots - len(ends))  # more games in play than slots: a slot is free
    # only when the games in play are fewer than the slots, at the ends of the last ones
    heapq.heapify(ends)
    current, *later = rounds_left(finished + remaining, finished + len(running_elapsed),
                                  round_games)
    for _ in range(current):
        heapq.heappush(ends, heapq.heappop(ends) + mean)
    eta = max(ends)
    if current:
        eta += spread * slowest_excess(min(current + len(running_elapsed), slots))
    for games in later:
        eta += -(-games // slots) * mean + spread * slowest_excess(min(games, slots))
    return eta


__all__ = ["expected_game_s", "eta_seconds", "game_length", "rounds_left", "slowest_excess"]
