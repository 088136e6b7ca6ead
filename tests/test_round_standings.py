"""The standings the run loop shows after each round (runner.service.views.roundstandings)
and the history it pairs from (runner.service.results): what it keeps between rounds (the
complete rounds' results, their tally, their cells) gives the table and the history a
reading and ranking from scratch gives, also after a TD decision changed recorded rounds
between two rounds; and the ranking that goes on from a tally of earlier rounds is the
ranking from scratch (runner.domain.standings.tally)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from testkit import backend, loop_config, run_args

from runner.cli.run import cli_run
from runner.config import load_config
from runner.config.typed import Config
from runner.domain.models import EventResults, GameSpec, PlayedGame, RoundResult
from runner.domain.pairing import RoundRecord, pair_round
from runner.domain.standings import compute_standings, tally
from runner.render.standings_report import render_standings
from runner.service.results import KeptResults
from runner.service.schedule import Schedule
from runner.service.td.rules import apply_rewind, apply_withdraw, forfeits_due
from runner.service.views import roundstandings
from runner.store import queries
from runner.store.database import Store, StoredGame, StoredRound

TIEBREAKS = ["SonnebornBerger", "RMobility", "Wins", "DirectEncounter", "Buchholz",
             "MedianBuchholz", "ProgressiveScore", "BlackGames"]


def scratch_text(config: Config) -> str:
    """The standings table read and ranked from nothing kept (a connection of its own)."""
    store = Store.open_readonly(config.database)
    assert store is not None
    try:
        results = store.event_results()
        assert results is not None
        return render_standings(compute_standings(results, config.tiebreaks), results, "text")
    finally:
        store.close()


def scratch_history(config: Config, rounds: Sequence[StoredRound]) -> list[RoundRecord]:
    """The pairing's history read from the store as it was before the results were kept:
    each scheduled round's finished games, by game id."""
    conn = sqlite3.connect(config.database)
    try:
        rows = conn.execute("SELECT round, game_in_round, white, black, result, rmobility, "
                            "extra FROM games WHERE status='finished' ORDER BY game_id")
        played: dict[int, list[PlayedGame]] = {}
        for r in rows:
            played.setdefault(r[0], []).append(PlayedGame(r[0], r[1], r[2], r[3], r[4], r[5],
                                                          bool(r[6])))
    finally:
        conn.close()
    return [RoundRecord(rd.number, rd.pairs, tuple(played.get(rd.number, ())), rd.bye)
            for rd in rounds if not rd.extra]


def scratch_rounds(config: Config) -> list[StoredRound]:
    """The stored rounds read on a connection of their own."""
    store = Store.open_readonly(config.database)
    assert store is not None
    try:
        return store.rounds()
    finally:
        store.close()


class Witness:
    """Each table the run loop shows, beside the results it read and the same table made
    from scratch at that moment."""

    def __init__(self, config: Config, monkeypatch: pytest.MonkeyPatch) -> None:
        self.config = config
        self.seen: list[tuple[str, str]] = []  # (shown, from scratch)
        self.results: list[tuple[EventResults | None, EventResults | None]] = []
        results, text = roundstandings.RoundStandings.results, roundstandings.RoundStandings.text

        def read(standings: roundstandings.RoundStandings) -> EventResults | None:
            kept = results(standings)
            self.results.append((kept, standings.store.event_results()))
            held = standings.kept
            if held.kept:  # the mark made on round by round is the mark read whole (else
                # every read would read the kept rounds again)
                assert held._mark[1] == queries.kept_mark(
                    standings.store.conn, held.kept[-1].number, held._mark[0])
            return kept

        def shown(standings: roundstandings.RoundStandings, res: EventResults | None
                  ) -> str | None:
            table = text(standings, res)
            assert table is not None
            self.seen.append((table, scratch_text(self.config)))
            return table

        monkeypatch.setattr(roundstandings.RoundStandings, "results", read)
        monkeypatch.setattr(roundstandings.RoundStandings, "text", shown)
        history = Schedule.history
        self.histories: list[tuple[list[RoundRecord], list[RoundRecord]]] = []

        def paired_from(schedule: Schedule, rounds: Sequence[StoredRound]) -> list[RoundRecord]:
            records = history(schedule, rounds)
            self.histories.append((records, scratch_history(config, rounds)))
            self.rounds.append((list(rounds), scratch_rounds(config)))
            return records

        self.rounds: list[tuple[list[StoredRound], list[StoredRound]]] = []  # kept, read

        monkeypatch.setattr(Schedule, "history", paired_from)
        # the games each round is played from, beside a read of the store at that moment;
        # each game the loop starts without asking the store, beside what the store says
        unfinished, listed = Schedule.unfinished, Schedule.listed_unchanged
        self.played_from: list[tuple[list[StoredGame], list[StoredGame]]] = []
        self.unasked: list[tuple[StoredGame, str | None, dict[int, str]]] = []

        def games_of(schedule: Schedule, number: int) -> list[StoredGame]:
            games = unfinished(schedule, number)
            self.played_from.append((games, [g for g in scratch_games(config, number)
                                             if g.status != "finished"]))
            return games

        def unchanged(schedule: Schedule, game: StoredGame) -> bool:
            same = listed(schedule, game)
            if same:
                now = {g.game_id: g for g in scratch_games(config, game.round)}.get(game.game_id)
                store = Store.open_readonly(config.database)
                assert store is not None
                try:
                    self.unasked.append((game, None if now is None else now.status,
                                         forfeits_due(store, [game])))
                finally:
                    store.close()
            return same

        monkeypatch.setattr(Schedule, "unfinished", games_of)
        monkeypatch.setattr(Schedule, "listed_unchanged", unchanged)

    def check(self) -> None:
        assert self.seen and self.results and self.histories
        assert self.played_from and self.unasked
        for played, read in self.played_from:
            assert played == read
        for _game, status, due in self.unasked:
            assert status == "scheduled" and not due
        for records, scratch in self.histories:
            assert records == scratch
        for kept_rounds, read_rounds in self.rounds:  # the rounds paired from (KeptResults)
            assert kept_rounds == read_rounds
        for kept, fresh in self.results:
            assert kept == fresh
        for table, scratch in self.seen:
            assert table == scratch


def scratch_games(config: Config, number: int) -> list[StoredGame]:
    """Round ``number``'s games read on a connection of their own."""
    store = Store.open_readonly(config.database)
    assert store is not None
    try:
        return store.games(number)
    finally:
        store.close()


def first_game_of(config: Config, number: int) -> int:
    store = Store.open_readonly(config.database)
    assert store is not None
    try:
        return min(g.game_id for g in store.games(number))
    finally:
        store.close()


def test_a_rewind_between_rounds_is_seen_in_the_next_standings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rounds 1-3 are played (and kept); as round 4 starts the TD rewinds to round 2, whose
    games are then played again with other results: every table shown, before and after,
    is the one made from scratch, and the final one counts the new results only."""
    config = load_config(loop_config(tmp_path, players=5, Rounds=4))
    witness = Witness(config, monkeypatch)
    rewound: list[int] = []

    def result_of(spec: GameSpec) -> str:  # the games played again end the other way
        return ("1-0", "0-1")[(spec.round + spec.game_in_round + len(rewound)) % 2]

    def hook(spec: GameSpec) -> None:
        if spec.round == 4 and not rewound:
            rewound.append(first_game_of(config, 2))
            store = Store.open(config.database)
            try:
                apply_rewind(store, config, rewound[0], "round 2 was played wrong", 1)
            finally:
                store.close()
            raise asyncio.CancelledError  # the game in progress is voided with the rest

    assert cli_run(config, run_args(), play_game=backend(result_of, hook=hook)) == 0
    assert rewound
    out = capsys.readouterr().out
    assert out.count("Round 2 complete") == 2 and out.count("Round 3 complete") == 2
    witness.check()
    assert len(witness.seen) == 3 + 3 + 1  # rounds 1-3, 2-4 again, the final standings
    assert witness.seen[-1][0] in out
    # kept results that outlived the rewind would show round 2's first results: the final
    # table is not the one the first results give
    first = [r for r, _ in witness.results if r is not None and len(r.rounds) == 3][0]
    assert render_standings(compute_standings(first, config.tiebreaks), first, "text") \
        not in witness.seen[-1][0]


def test_a_withdrawal_between_rounds_is_seen_in_the_next_standings(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Withdrawn after round 2 (before round 3 is paired): the tables after rounds 3 and 4
    mark it, with its rounds not paired, as the ones made from scratch."""
    config = load_config(loop_config(tmp_path, players=5, Rounds=4))
    witness = Witness(config, monkeypatch)
    done: list[str] = []
    pair = Schedule.pair

    def withdraw_then_pair(schedule: Schedule, number: int) -> None:
        if number == 3 and not done:
            store = Store.open(config.database)
            try:
                done.append(apply_withdraw(store, config, "P5", False, "asked to leave", 1))
            finally:
                store.close()
        pair(schedule, number)

    monkeypatch.setattr(Schedule, "pair", withdraw_then_pair)
    assert cli_run(config, run_args(), play_game=backend()) == 0
    assert done
    witness.check()
    assert "P5 (withdrawn)" not in witness.seen[1][0]
    assert "P5 (withdrawn)" in witness.seen[2][0] and "WD" in witness.seen[-1][0]


def random_event(rng: random.Random, seeds: list[str], rounds: int, gpm: int) -> EventResults:
    history: list[RoundRecord] = []
    for number in range(1, rounds + 1):
        plan = pair_round(seeds, history, number, gpm, "split")
        games = tuple(PlayedGame(number, g.game_in_round, g.white, g.black,
                                 rng.choice(("1-0", "0-1", "1/2-1/2")),
                                 rmobility=rng.choice((None, "G1.5", "G0.0")))
                      for g in plan.games)
        history.append(RoundRecord(number, plan.pairs, games, plan.bye))
    return EventResults(tuple(seeds), gpm, tuple(RoundResult(r.number, r.games, r.bye)
                                                 for r in history))


@pytest.mark.parametrize("players", [2, 5, 8])
def test_standings_from_a_tally_of_the_first_rounds_are_the_standings(players: int) -> None:
    for trial in range(20):
        rng = random.Random(trial * 97 + players)
        seeds = [f"E{i}" for i in range(1, players + 1)]
        results = random_event(rng, seeds, 6, rng.choice((1, 2)))
        whole = compute_standings(results, TIEBREAKS)
        base = None
        for k in range(len(results.rounds) + 1):
            base = tally(dataclasses.replace(results, rounds=results.rounds[:k]), base)
            assert compute_standings(results, TIEBREAKS, base) == whole
            assert compute_standings(results, TIEBREAKS, base) == whole  # the tally unchanged


def test_a_tally_of_other_rounds_is_not_gone_on_from() -> None:
    rng = random.Random(3)
    seeds = ["A", "B", "C", "D"]
    results = random_event(rng, seeds, 4, 2)
    other = random_event(random.Random(4), seeds, 4, 2)
    base = tally(dataclasses.replace(other, rounds=other.rounds[:3]))
    assert compute_standings(results, TIEBREAKS, base) == compute_standings(results, TIEBREAKS)
    fewer = tally(dataclasses.replace(results, seeds=("A", "B", "C", "D", "E"), rounds=()))
    assert compute_standings(results, TIEBREAKS, fewer) == compute_standings(results, TIEBREAKS)


def test_the_table_with_kept_cells_is_the_table_made_without_them() -> None:
    rng = random.Random(11)
    results = random_event(rng, [f"E{i}" for i in range(1, 8)], 6, 2)
    memo: dict = {}
    for k in range(len(results.rounds) + 1):
        part = dataclasses.replace(results, rounds=results.rounds[:k])
        rows = compute_standings(part, TIEBREAKS)
        assert render_standings(rows, part, "text", cells=memo) == \
            render_standings(rows, part, "text")
        assert len(memo) == k  # the rounds of the last table only
    # the last round played again the other way: another RoundResult, made anew
    last = results.rounds[-1]
    flipped = {"1-0": "0-1", "0-1": "1-0", "1/2-1/2": "1-0"}
    again = dataclasses.replace(results, rounds=(*results.rounds[:-1], RoundResult(
        last.number, tuple(dataclasses.replace(g, result=flipped[g.result]) for g in last.games),
        last.bye)))
    rows = compute_standings(again, TIEBREAKS)
    text = render_standings(rows, again, "text", cells=memo)
    assert text == render_standings(rows, again, "text")
    assert text != render_standings(compute_standings(results, TIEBREAKS), results, "text")


@pytest.mark.parametrize("writer", ["another connection", "the same connection"])
def test_kept_results_are_read_again_after_any_write(tmp_path: Path, writer: str) -> None:
    """Read twice with nothing written between, the results are the same object (no read);
    after a TD rewind written on another connection (PRAGMA data_version) or on the
    reader's own (its changes), they are read again: equal to a read from scratch."""
    config = load_config(loop_config(tmp_path, players=4, Rounds=3))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    store = Store.open(config.database)
    try:
        kept = KeptResults(store)
        first = kept.read()
        assert first is not None and len(first.rounds) == 3
        assert kept.read() is first and kept.rounds() == tuple(store.rounds())
        other = Store.open(config.database) if writer == "another connection" else store
        try:
            apply_rewind(other, config, first_game_of(config, 3), "round 3 again", 1)
        finally:
            if other is not store:
                other.close()
        again = kept.read()
        assert again is not first and again == store.event_results() != first
        # the next match index, read from the last game's round, is one above every game's
        top = store.conn.execute("SELECT MAX(match_index) FROM games").fetchone()[0]
        assert store.next_match_index() == top + 1
        assert kept.rounds() == tuple(store.rounds())
        assert kept.read() is again
    finally:
        store.close()


def test_a_round_just_paired_is_played_from_the_games_stored_without_reading_them_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each round the run pairs is played from the games it stored (equal to a read of the
    store: the Witness), without reading them back while nothing else was written."""
    config = load_config(loop_config(tmp_path, players=4, Rounds=3))
    witness = Witness(config, monkeypatch)
    reads: list[int | None] = []
    games = Store.games

    def counted(store: Store, round_number: int | None = None) -> list[StoredGame]:
        if not store.readonly:  # (the run's store, not the witness's)
            reads.append(round_number)
        return games(store, round_number)

    monkeypatch.setattr(Store, "games", counted)
    assert cli_run(config, run_args(), play_game=backend()) == 0
    witness.check()
    assert len(witness.played_from) == 3
    assert not {1, 2, 3} & set(reads)


def test_games_listed_are_asked_of_the_store_again_after_any_write(tmp_path: Path) -> None:
    """The games of a round listed by Schedule.unfinished are known unchanged only while
    nothing is written to the store: a write on another connection (a TD decision) makes
    the loop ask the store again before it starts them."""
    config = load_config(loop_config(tmp_path, players=4, Rounds=2))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    other = sqlite3.connect(config.database)
    try:
        with other:  # round 2 as if not played yet
            other.execute("UPDATE games SET status='scheduled', result=NULL, reason=NULL, "
                          "finish_seq=NULL WHERE round=2")
        store = Store.open(config.database)
        try:
            schedule = Schedule(config, store, None, lambda *_a, **_k: None)  # type: ignore[arg-type]
            listed = schedule.unfinished(2)
            assert listed and listed == store.games(2)
            assert all(schedule.listed_unchanged(g) for g in listed)
            assert not any(schedule.listed_unchanged(g) for g in store.games(1))
            with other:  # the TD settles the first of them
                other.execute("UPDATE games SET status='finished', result='1-0' WHERE "
                              "game_id=?", (listed[0].game_id,))
            assert not any(schedule.listed_unchanged(g) for g in listed)
            assert schedule.unfinished(2) == listed[1:]
            store.conn.execute("UPDATE games SET status='finished', result='1-0' WHERE "
                               "game_id=?", (listed[1].game_id,))  # on its own connection
            assert not schedule.listed_unchanged(listed[2])
        finally:
            store.close()
    finally:
        other.close()
