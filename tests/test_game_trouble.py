"""Any unexpected error raised inside one game is that game's trouble only (issue #48 item 3,
docs/orchestrator.md "One game's trouble"): the game is held (a `game_held` alert naming the
error), the other game in progress completes and is recorded, the event is not aborted, the
held game is tried again and played once the fault clears, and the event completes with
every game once. Real Debian engines; the fault is injected in-process into one game's
backend call."""

from __future__ import annotations

import asyncio
import collections
import pickle
from pathlib import Path
from typing import Any

import pytest
from test_alerts import Receiver, valid
from test_alerts import receiver as receiver  # the fixture
from test_engine_trouble import query
from testkit import run_args, write_config

import runner.service.held as held_module
from runner.cli.run import cli_run
from runner.cluster.client import ClusterBackend, _Attempt
from runner.config import load_config
from runner.domain.events import GameEvent, GameStarted
from runner.domain.models import GameSpec
from runner.errors import EXIT_OK, ReplayGame
from runner.play.referee import EnginesNotStarted
from runner.play.referee import play_game as referee_play
from runner.store.database import count_pgn_games

FAILURES = 3  # the faulty game's first three attempts raise: HOLD_TRIES, then the slow wait


def event(directory: Path, receiver_url: str) -> Path:
    engines: list[dict[str, Any]] = [
        {"Name": "Stockfish", "Command": "stockfish", "Options": {"Threads": 1, "Hash": 1}},
        {"Name": "Ethereal", "Command": "ethereal-chess", "Options": {"Threads": 1, "Hash": 2}},
        {"Name": "Toga", "Command": "toga2"},
        {"Name": "Fairy", "Command": "fairy-stockfish", "Options": {"Threads": 1, "Hash": 1}}]
    return write_config(directory, {
        "Event": "game trouble", "TimeControl": "6+0.1", "Concurrency": 2,
        "StartRetryS": [0.2],
        "SwissOptions": {"GamesPerMatch": 1, "Rounds": 2, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 30},
        "Alerts": {"Url": receiver_url, "On": ["game_held"]},
        "Engines": engines,
    })


@pytest.mark.slow
@pytest.mark.engines
def test_an_unexpected_error_in_one_game_holds_that_game_only(
        tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(held_module, "HOLD_SLOW_S", 1.5)  # (600 s in an event)
    config = load_config(event(tmp_path, receiver.url))
    calls: collections.Counter[int] = collections.Counter()
    finished_while_held: list[int] = []

    async def faulty(spec: GameSpec, **kwargs: Any) -> Any:
        calls[spec.game_id] += 1
        if spec.game_id == 1 and calls[1] == 1:  # inside the referee, its engines started
            emit = kwargs["emit"]

            def faulty_emit(event: GameEvent) -> None:
                emit(event)
                if isinstance(event, GameStarted):
                    raise ValueError("injected fault, try 1")

            return await referee_play(spec, **{**kwargs, "emit": faulty_emit})
        if spec.game_id == 1 and calls[1] <= FAILURES:
            raise ValueError(f"injected fault, try {calls[1]}")
        if spec.game_id == 1:  # the fault cleared: what was recorded meanwhile
            finished_while_held.extend(
                gid for (gid,) in query(config.database,
                                        "SELECT game_id FROM games WHERE status='finished'"))
        return await referee_play(spec, **kwargs)

    assert cli_run(config, run_args(), play_game=faulty) == EXIT_OK  # before #48: exit 1
    out = capsys.readouterr()
    white, black = query(config.database, "SELECT white, black FROM games WHERE game_id=1")[0]
    assert f"Game 1 ({white} vs {black}) could not be played (ValueError: injected fault, " \
        "try 1); it is held" in out.out, out.out
    assert f"Game 1 ({white} vs {black}) is still held: ValueError: injected fault, try 3 " \
        f"(failed {FAILURES} times" in out.out, out.out
    assert "abort" not in out.out.lower() and "could not be played:" not in out.err, out
    # the other game of round 1 was played once, to its end, while game 1 was held
    assert finished_while_held == [2] and calls[2] == 1, (finished_while_held, calls)
    assert calls[1] == FAILURES + 1
    games = query(config.database, "SELECT game_id, round, status, reason FROM games "
                                   "ORDER BY game_id")
    assert [g[:3] for g in games] == [(1, 1, "finished"), (2, 1, "finished"),
                                      (3, 2, "finished"), (4, 2, "finished")], games
    assert not any("abort" in (g[3] or "").lower() for g in games), games
    assert count_pgn_games(config.pgn_out) == 4
    held = [valid(doc) for doc in receiver.got]
    assert [d["kind"] for d in held] == ["game_held", "game_held"], receiver.got
    assert held[0]["data"]["game_id"] == 1 and held[0]["data"]["round"] == 1
    assert held[0]["data"]["reason"] == "ValueError: injected fault, try 1"
    assert held[1]["data"]["reason"].startswith("ValueError: injected fault, try 3 (failed 3")


@pytest.mark.parametrize("error, seen", [
    (EnginesNotStarted("neither engine could be started: ..."), EnginesNotStarted),
    (RuntimeError("the task broke"), ReplayGame)])
def test_a_cluster_task_whose_engines_did_not_start_holds_its_game(
        error: Exception, seen: type[Exception]) -> None:
    """A worker's EnginesNotStarted (pickled back as Dask sends a task's error) reaches the
    runner as EnginesNotStarted, so the game is held as on one machine; any other error of
    the task is a lost attempt (ReplayGame: continued from its log). No scheduler needed: the
    task's future is a finished one."""
    async def outcome() -> None:
        backend = ClusterBackend("tcp://127.0.0.1:9", overdue_s=4)
        future = asyncio.get_running_loop().create_future()
        future.set_exception(pickle.loads(pickle.dumps(error)))
        await backend._outcome(future, _Attempt("1:1", 1, lambda event: None))

    with pytest.raises(seen) as raised:
        asyncio.run(outcome())
    assert type(raised.value) is seen and str(error) in str(raised.value)
