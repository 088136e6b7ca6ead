"""The runner's snapshot (runner.service.views.snapshotdoc with a StateCache) is the document a fresh
build makes from the same database, whatever happened since the last snapshot: moves
logged, games started, finished, restarted from a ply (resume) or played again (replay),
rounds paired (the ratings excepted: the runner computes them again when a round is
complete, docs/state.md). No engine is run (tests/web_event.py fills the database as the runner would).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import chess
import pytest
from web_event import _play, add_moves, generate_event

from runner.config import Config
from runner.domain.events import GameStarted, event_to_json
from runner.domain.models import GameRecord
from runner.service.tournament import Tournament
from runner.service.views.snapshotdoc import WORKERS_META, StateCache, build_state, live_game
from runner.store.database import Store

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def same_document(config: Config, cache: StateCache) -> dict:
    reader = Store.open_readonly(config.database)
    assert reader is not None
    try:
        fresh = build_state(config, reader)
        cached = build_state(config, reader, cache=cache)
    finally:
        reader.close()
    for doc in (fresh, cached):
        doc.pop("updated")
        doc.pop("ratings")  # the runner's are computed again when a round is complete
    assert cached == fresh
    return cached


def start(store: Store, game_id: int, attempt: int, *, keep: int = 0) -> None:
    g = next(g for g in store.games() if g.game_id == game_id)
    started = GameStarted(game_id=game_id, white=g.white, black=g.black, white_id=f"{g.white} 1",
                          black_id=f"{g.black} 1", start_time=f"2026-11-20T12:00:0{attempt}.000+00:00",
                          start_fen=chess.STARTING_FEN, book_plies=8, white_clock_ms=60_000,
                          black_clock_ms=60_000, resumed_from_ply=keep, attempt=attempt,
                          worker="w1" if attempt > 1 else "")
    store.start_game(game_id, attempt, json.dumps(event_to_json(started)), keep_plies=keep)


def log_moves(store: Store, game_id: int, plies: range, attempt: int = 1) -> None:
    moves, _ = _play(random.Random(game_id), game_id, plies.stop - 1, T0, attempt)
    add_moves(store, [m for m in moves if m.ply in plies])


def finish(store: Store, game_id: int) -> None:
    g = next(g for g in store.games() if g.game_id == game_id)
    moves = [m["uci"] for m in store.logged_moves(game_id)]
    store.record_game(game_id, GameRecord(white=g.white, black=g.black, result="1/2-1/2",
                                          reason="Draw by agreement", moves=moves, pgn="[x]",
                                          rmobility="G9.5"))


@pytest.mark.slow
def test_the_runners_cached_snapshot_is_a_fresh_build(tmp_path: Path) -> None:
    config = generate_event(tmp_path, engines=6, rounds=3, finished_rounds=1, running=0, plies=20)
    cache = StateCache()
    same_document(config, cache)
    store = Store.open(config.database)
    try:
        pending = [g.game_id for g in store.games() if g.status == "scheduled"]
        a, b, c = pending[:3]
        start(store, a, 1)
        doc = same_document(config, cache)  # started, nothing logged yet
        assert doc["in_progress"][0]["ply"] == 0
        log_moves(store, a, range(1, 12))
        start(store, b, 1)
        log_moves(store, b, range(1, 5))
        same_document(config, cache)
        log_moves(store, a, range(12, 30))  # only these are read now
        doc = same_document(config, cache)
        assert [g["ply"] for g in doc["in_progress"]] == [29, 4]
        # game a is interrupted and resumed from ply 20 (attempt 2): plies past it are dropped
        start(store, a, 2, keep=20)
        doc = same_document(config, cache)
        assert doc["in_progress"][0]["ply"] == 20 and doc["workers"][0]["name"] == "w1"
        log_moves(store, a, range(21, 26), attempt=2)
        same_document(config, cache)
        # game b is played again from its start (replay): a fresh log
        start(store, b, 2)
        same_document(config, cache)
        log_moves(store, b, range(1, 3), attempt=2)
        finish(store, a)
        doc = same_document(config, cache)
        assert [g["game_id"] for g in doc["in_progress"]] == [b]
        finish(store, b)
        # game c starts and is put back (a stopped run) between two snapshots
        start(store, c, 1)
        log_moves(store, c, range(1, 6))
        assert store.reset_running() == 1
        doc = same_document(config, cache)
        assert doc["in_progress"] == [] and not cache.live
        start(store, c, 2)
        log_moves(store, c, range(1, 40), attempt=2)
        store.set_meta(WORKERS_META, json.dumps([{"name": "w1", "address": "tcp://h:1",
                                                  "slots": 2, "state": "joined"}]))
        doc = same_document(config, cache)
        assert doc["games_finished"] == 8 and doc["in_progress"][0]["ply"] == 39
        assert doc["workers"][0]["slots"] == 2 and list(cache.live) == [c]
        # the next round is paired once this one is complete
        for g in store.games():
            if g.status != "finished" and g.round == 2:
                start(store, g.game_id, 1)
                finish(store, g.game_id)
        Tournament(config, store, quiet=True).pair(3)
        doc = same_document(config, cache)
        assert doc["current_round"]["number"] == 3 and doc["rounds_complete"] == 2
    finally:
        store.close()


def test_live_game_of_an_empty_log_and_of_a_whole_log() -> None:
    moves, board = _play(random.Random(3), 9, 30, T0)
    started = {"start_fen": chess.STARTING_FEN, "white_clock_ms": 1, "black_clock_ms": 2,
               "attempt": 1}
    empty = live_game(started, [])
    assert (empty["ply"], empty["fen"], empty["clocks"]["turn"]) == (0, chess.STARTING_FEN, "white")
    assert empty["last"] == {"white": None, "black": None}
    whole = live_game(started, [event_to_json(m) for m in moves])
    assert whole["fen"] == board.fen() and whole["moves"] == [m.uci for m in moves]
    assert whole["last"]["black"]["score_cp"] == moves[-1].score_cp
    assert whole["last"]["white"]["nodes"] == moves[-2].nodes


def test_a_clock_ticks_from_the_game_start_until_the_first_move_of_the_attempt() -> None:
    """Before the first move the side to move's clock ticked for nobody (at_ms null); after a
    resume it ticked from the last move before the interruption, hours too early."""
    moves, _ = _play(random.Random(5), 9, 12, T0)
    logged = [event_to_json(m) for m in moves]
    last_at = logged[-1]["at_ms"]
    fresh = {"start_fen": chess.STARTING_FEN, "white_clock_ms": 60_000, "black_clock_ms": 60_000,
             "attempt": 1, "at_ms": last_at - 5_000}
    clocks = live_game(fresh, [])["clocks"]
    assert clocks == {"white_ms": 60_000, "black_ms": 60_000, "at_ms": last_at - 5_000,
                      "turn": "white"}
    # moves of this attempt: the last one's clocks and time
    after = live_game(fresh, logged)["clocks"]
    assert (after["white_ms"], after["black_ms"], after["at_ms"]) == (
        logged[-1]["white_clock_ms"], logged[-1]["black_clock_ms"], last_at)
    # resumed an hour later from ply 12 with the clocks restored: they tick from the restart
    resumed = {**fresh, "attempt": 2, "resumed_from_ply": 12, "at_ms": last_at + 3_600_000,
               "white_clock_ms": 41_000, "black_clock_ms": 39_500}
    clocks = live_game(resumed, logged)["clocks"]
    assert (clocks["white_ms"], clocks["black_ms"], clocks["at_ms"]) == (41_000, 39_500,
                                                                         last_at + 3_600_000)
    assert live_game(resumed, logged)["ply"] == 12
    # events written before GameStarted had at_ms: as before
    old = {k: v for k, v in fresh.items() if k != "at_ms"}
    assert live_game(old, [])["clocks"]["at_ms"] is None
    assert live_game(old, logged)["clocks"]["at_ms"] == last_at


def test_a_round_just_paired_does_not_change_the_ranking() -> None:
    """state.ranked() keeps a ranking for the same games: a round paired with nothing played
    in it (and no bye) must rank the engines exactly as before."""
    from dataclasses import replace

    from runner.domain.models import EventResults, PlayedGame, RoundResult
    from runner.domain.standings import compute_standings
    from runner.service.views.snapshotdoc import ranked

    rng = random.Random(5)
    chain = ("DirectEncounter", "SonnebornBerger", "Wins", "Buchholz", "MedianBuchholz",
             "ProgressiveScore", "BlackGames", "RMobility")
    for engines in (2, 5, 8):
        seeds = tuple(f"E{i}" for i in range(engines))
        rounds = []
        for number in range(1, 5):
            names = list(seeds)
            rng.shuffle(names)
            bye = names.pop() if len(names) % 2 else None
            games = tuple(
                PlayedGame(number, 2 * i + leg + 1, *((a, b) if leg == 0 else (b, a)),
                           rng.choice(["1-0", "0-1", "1/2-1/2"]),
                           rng.choice([None, "G1.0", "G3.5", "G12.0"]))
                for i, (a, b) in enumerate(zip(names[::2], names[1::2], strict=True))
                for leg in (0, 1))
            rounds.append(RoundResult(number, games, bye, complete=True))
            played = EventResults(seeds, 2, tuple(rounds))
            paired = replace(played, rounds=(*played.rounds,
                                             RoundResult(number + 1, (), None, complete=False)))
            assert compute_standings(paired, chain) == compute_standings(played, chain)
            assert ranked(paired, chain) == compute_standings(played, chain)


def test_fast_play_makes_one_snapshot_write_per_interval_and_a_quiet_start_one_at_once() -> None:
    """Games shorter than SnapshotIntervalS: a start or end is written no sooner than the
    interval after the last write that showed one, so 30 games in 1.5 s make a handful of
    writes, not one each, and the file is never older than the interval and a settle while
    they play; a start after a quiet interval is written within the settle (0.1 s), a TD
    decision's refresh at once, and the flush at the end writes what is pending
    (docs/state.md)."""
    import asyncio
    import time
    from types import SimpleNamespace

    from runner.service.views.snapshot import SnapshotSink

    writes: list[float] = []

    async def scenario() -> dict[str, float]:
        sink = SnapshotSink(SimpleNamespace(in_thread=lambda: writes.append(time.monotonic())),
                            interval=0.5)  # type: ignore[arg-type]
        begin = time.monotonic()
        while time.monotonic() - begin < 1.5:  # a game every 0.05 s
            sink.request(now=True)  # its start
            await asyncio.sleep(0.05)
            sink.request(now=True, settle=sink.end_settle)  # its end
        played = time.monotonic()
        await sink.flush()
        out = {"begin": begin, "played": played, "flushed": len(writes)}
        await asyncio.sleep(0.7)  # quiet: longer than the interval since the last write
        asked = time.monotonic()
        sink.request(now=True)
        while len(writes) == out["flushed"]:
            await asyncio.sleep(0.01)
        out["quiet_start"] = writes[-1] - asked
        asked = time.monotonic()
        sink.request(now=True, gap=False)  # a TD decision, just after a write
        while len(writes) == out["flushed"] + 1:
            await asyncio.sleep(0.01)
        out["refresh"] = writes[-1] - asked
        return out

    out = asyncio.run(scenario())
    during = [t for t in writes if t <= out["played"]]
    assert 2 <= len(during) <= 5, len(during)  # every 0.5 s, not every game (30)
    gaps = [b - a for a, b in zip([out["begin"], *during], during, strict=False)]
    assert max(gaps) < 0.5 + 0.1 + 0.4, gaps  # interval + settle, slack for a busy machine
    assert out["flushed"] >= len(during)  # the last state written at the end
    assert out["quiet_start"] < 0.1 + 0.3  # not the interval (0.5)
    assert out["refresh"] < 0.1 + 0.3
