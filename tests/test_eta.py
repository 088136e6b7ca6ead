"""The ETA estimator (runner.domain.eta): games in progress as censored lengths, the time
control's prior and Swiss rounds as barriers (#54: "The first ETA said 1 m 30 s for an event
of 5 m 42 s")."""

from __future__ import annotations

from dataclasses import replace

import pytest
from testkit import simple_record

from runner.domain.eta import (
    PRIOR_WEIGHT,
    eta_seconds,
    expected_game_s,
    game_length,
    rounds_left,
    slowest_excess,
)
from runner.domain.events import GameFinished, GameStarted
from runner.domain.timecontrol import parse_time_control
from runner.service.views.progress import Progress, format_eta


def test_one_quick_game_finished_while_three_long_ones_run() -> None:
    """The first game to finish is the shortest of those running: a 10 s mate while three
    games have run 60 s each. main took 10 s as the game length: ETA 0:00:10 for 4 more
    games on 4 slots after those three, each of which needs at least what they have run."""
    eta = eta_seconds([10.0], 7, [60.0, 60.0, 60.0], 4)
    assert eta is not None
    at_least = (10 + 3 * 60) / 4  # the mean with each running game counted at its elapsed
    assert game_length([10.0], [60.0] * 3)[0] > at_least
    assert eta > 1.15 * at_least  # three slots still busy, then a whole game on each slot
    assert eta < 3 * 60  # and not absurd


def test_a_running_game_short_of_the_mean_tells_nothing() -> None:
    assert game_length([30.0, 30.0], [5.0, 1.0])[0] == pytest.approx(30.0)
    mean = game_length([30.0, 30.0], [100.0])[0]  # one already 100 s long: at least that
    assert mean > (30 + 30 + 100) / 3


def test_the_time_control_prior_outweighs_a_single_quick_game() -> None:
    prior = expected_game_s(parse_time_control("10+0.1"))
    assert prior == pytest.approx(2 * (0.8 * 10 + 60 * 0.1))
    assert expected_game_s(parse_time_control("40/90:00+30")) == pytest.approx(
        2 * (0.8 * 5400 * 60 / 40 + 30 * 60))
    assert expected_game_s(parse_time_control("inf")) is None
    mean = game_length([5.0], [], prior)[0]
    assert mean == pytest.approx((PRIOR_WEIGHT * prior + 5) / (PRIOR_WEIGHT + 1))
    many = game_length([5.0] * 1000, [], prior)[0]  # the measurements win in the end
    assert many == pytest.approx(5.0, rel=0.05)


def test_a_round_must_end_before_the_next_starts() -> None:
    """Two rounds of 3 games on 2 slots: each round takes two game lengths (one slot idles
    while the third game is played), 4 lengths in all, not 6 games x 60 s / 2 slots."""
    durations = [60.0] * 40  # a steady event: the spread is small
    pooled = eta_seconds(durations, 6, [], 2)
    rounds = eta_seconds(durations, 6, [], 2, round_games=3, finished=6)
    assert pooled is not None and rounds is not None
    assert pooled == pytest.approx(3 * 60, rel=0.05)
    assert rounds == pytest.approx(4 * 60, rel=0.05)
    assert rounds > pooled + 50


def test_the_slowest_game_of_a_wave_sets_the_round_end() -> None:
    steady = eta_seconds([60.0] * 40, 2, [], 2)
    spread = eta_seconds([30.0, 90.0] * 20, 2, [], 2)  # the same mean, lengths spread wide
    assert steady is not None and spread is not None
    assert spread > steady + 10
    assert slowest_excess(1) == 0.0 and slowest_excess(2) == pytest.approx(0.56, abs=0.05)


def test_rounds_left_by_round() -> None:
    assert rounds_left(18, 0, 6) == [0, 6, 6, 6]
    assert rounds_left(18, 2, 6) == [4, 6, 6]
    assert rounds_left(18, 6, 6) == [0, 6, 6]  # round 1 all started: round 2 waits for it
    assert rounds_left(20, 18, 6) == [0, 2]  # extra games after the last round
    assert rounds_left(18, 5, 0) == [13]


def test_the_end_and_the_unknown() -> None:
    assert eta_seconds([], 5, [], 2) is None
    assert eta_seconds([10.0, 30.0], 0, [], 2) == 0.0
    last = eta_seconds([60.0] * 20, 1, [50.0], 4)  # the last game's rest, at least a share
    assert last is not None and 10 <= last < 20


def test_progress_counts_the_games_in_play_and_the_rounds() -> None:
    """The console's Progress: the quick first game of #54 with the other one running."""
    now = [0.0]
    progress = Progress([], done=0, total=lambda: 18, concurrency=2, clock=lambda: now[0],
                        prior_s=28.0, rounds=3)
    for game_id in (1, 2):
        progress.handle(GameStarted(game_id=game_id, white="A", black="B", white_id="",
                                    black_id="", start_time="", start_fen="", book_plies=0,
                                    white_clock_ms=None, black_clock_ms=None))
    now[0] = 14.0
    progress.handle(GameFinished(1, replace(simple_record("A", "B"), duration_s=14.0), 1))
    eta = progress.eta()
    assert eta is not None and eta > 3 * 3 * 14  # 3 rounds of 3 waves, each at least 14 s
    assert progress.summary().startswith("1/18 games, ETA 0:")
    assert format_eta(eta) in progress.summary()
