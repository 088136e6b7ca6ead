"""Game lengths and ETAs that a stepped wall clock cannot bend (issue #54, item 9): a game is
measured on a monotonic clock within a run, and the part of a resumed game played before the
interruption by the engines' logged times, never by subtracting wall-clock times of two runs.
The machine's clock is never touched: the referee's wall clock is stepped in-process."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from test_interruption import log, run
from testkit import simple_record

from runner.config import AdjudicationConfig, EngineConfig
from runner.domain.events import GameFinished, GameStarted, MovePlayed
from runner.domain.models import GameSpec, Opening
from runner.domain.timecontrol import parse_time_control
from runner.play import referee
from runner.service.views.progress import Progress

STEP = timedelta(days=-400)  # a dead RTC battery: the clock 400 days behind


def spec() -> GameSpec:
    return GameSpec(game_id=1, round=1, game_in_round=1,
                    white=EngineConfig("Stockfish", "/usr/games/stockfish", nodes=2000),
                    black=EngineConfig("Ethereal", "/usr/games/ethereal-chess", nodes=2000),
                    time_control=parse_time_control("60+1"),
                    adjudication=AdjudicationConfig(max_moves=20),
                    opening=Opening(index=0, name="Ruy Lopez", moves=("e2e4", "e7e5")))


class SteppedClock(datetime):
    """The referee's wall clock: true until ``step`` is set, then off by it."""

    step = timedelta(0)

    @classmethod
    def now(cls, tz=None):  # noqa: ANN001, ANN206
        return datetime.now(tz) + cls.step


@pytest.mark.engines
def test_a_wall_clock_stepped_during_a_game_does_not_bend_its_length(
        monkeypatch: pytest.MonkeyPatch) -> None:
    SteppedClock.step = timedelta(0)
    monkeypatch.setattr(referee, "datetime", SteppedClock)

    def emit(event: object) -> None:
        if isinstance(event, MovePlayed) and event.ply == 3:  # the game is under way
            SteppedClock.step = STEP

    record = asyncio.run(referee.play_game(spec(), emit=emit, attempt=1))
    assert record.end_time < record.start_time  # the wall clock did step back
    assert record.duration_s is not None and 0 < record.duration_s < 120, record.duration_s


@pytest.mark.engines
def test_a_game_resumed_under_another_wall_clock_keeps_its_real_length() -> None:
    """Killed under the true clock, resumed with it 400 days behind: the length is the
    engines' time before the interruption plus this attempt's, not 400 days."""
    started, moves = log(None, ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O",
                                "Be7"], [10] * 10, book=2)  # eight engine moves of 0.5 s
    started["start_time"] = (datetime.now().astimezone() - STEP).isoformat(
        timespec="milliseconds")  # the first run's clock was 400 days ahead of this one's
    point = run(started, moves).resume
    assert point is not None
    record = asyncio.run(referee.play_game(spec(), attempt=2, resume=point))
    assert record.duration_s is not None and 4 < record.duration_s < 150, record.duration_s


def test_the_logged_part_of_a_game_is_its_engines_time() -> None:
    started, moves = log(None, ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"], [10] * 6, book=2)
    decision = run(started, moves)
    assert decision.action == "resume" and decision.resume is not None
    assert decision.resume.played_s == 2.0  # four engine moves of 0.5 s each
    del moves[3]["time_ms"]  # an engine move without its time: the length is not known
    decision = run(started, moves)
    assert decision.resume is not None and decision.resume.played_s is None


def test_a_length_not_known_is_left_out_of_the_eta_never_guessed() -> None:
    now = [100.0]
    progress = Progress([60.0, 60.0], done=2, total=lambda: 10, concurrency=1,
                        clock=lambda: now[0])
    started = GameStarted(game_id=3, white="A", black="B", white_id="", black_id="",
                          start_time="", start_fen="", book_plies=0, white_clock_ms=None,
                          black_clock_ms=None)
    progress.handle(started)
    now[0] = 105.0  # this attempt's few seconds are not the game's length
    unknown = replace(simple_record("A", "B"), duration_s=None)
    progress.handle(GameFinished(3, unknown, 2))
    assert progress.durations == [60.0, 60.0]
    assert progress.summary() == "3/10 games, ETA 0:07:00"
