"""The TD's withdrawals and rewinds, their pure rules: pairing with withdrawn engines, the
audit of a PGN with Withdrawn tags, the standings' marking (runner.service.td.rules)."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import chess
import chess.pgn
import pytest
from testkit import fake, spec_for

from runner.domain.adjudication import End
from runner.domain.audit import PgnGame, audit_event, parse_withdrawn
from runner.domain.events import spec_from_json, spec_to_json
from runner.domain.models import EventResults, PlayedGame, RoundResult
from runner.domain.pairing import RoundRecord, pair_round
from runner.domain.standings import compute_standings
from runner.play.cutechess import _build_pgn
from runner.play.referee import finish_record
from runner.render.standings_report import render_standings
from runner.store.database import Store
from runner.store.tdstore import td_counts, withdrawals

SEEDS = [f"E{i}" for i in range(1, 9)]
RESULTS = ("1-0", "0-1", "1/2-1/2")


def play_event(seeds: list[str], rounds: int, gpm: int, withdrawals: dict[int, list[str]],
               rng: random.Random) -> tuple[list[RoundRecord], list[frozenset[str]]]:
    """Pair and play ``rounds`` rounds with random results; ``withdrawals``: round -> the
    engines withdrawn before it is paired."""
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    out: frozenset[str] = frozenset()
    per_round = []
    for number in range(1, rounds + 1):
        out = out | frozenset(withdrawals.get(number, ()))
        plan = pair_round(seeds, history, number, gpm, "split", excluded, out)
        excluded = plan.excluded
        games = tuple(PlayedGame(number, g.game_in_round, g.white, g.black, rng.choice(RESULTS))
                      for g in plan.games)
        history.append(RoundRecord(number, plan.pairs, games, plan.bye))
        per_round.append(out)
    return history, per_round


@pytest.mark.parametrize("players", [6, 7, 8])
@pytest.mark.parametrize("gpm", [1, 2])
def test_a_withdrawn_engine_is_never_paired_and_byes_follow_the_players_left(
        players: int, gpm: int) -> None:
    seeds = SEEDS[:players]
    for trial in range(30):
        rng = random.Random(trial * 31 + players)
        first = rng.randint(2, 4)
        out = rng.sample(seeds, 2)
        history, per_round = play_event(seeds, 6, gpm, {first: [out[0]], first + 1: [out[1]]}, rng)
        for record, withdrawn in zip(history, per_round, strict=True):
            paired = [name for pair in record.pairs for name in pair]
            active = [s for s in seeds if s not in withdrawn]
            assert not set(paired) & withdrawn and record.bye not in withdrawn
            assert len(paired) == len(set(paired))  # nobody plays twice in a round
            assert sorted(paired + ([record.bye] if record.bye else [])) == sorted(active)
            assert (record.bye is not None) == (len(active) % 2 == 1)
            assert len(record.games) == len(record.pairs) * gpm


def test_withdrawal_keeps_the_games_played_and_the_scores_they_gave() -> None:
    rng = random.Random(5)
    history, _ = play_event(SEEDS[:6], 2, 1, {}, rng)
    # the withdrawn engine's games still count: a pairing from the same history with it
    # withdrawn orders the others by scores that include their games against it
    plan = pair_round(SEEDS[:6], history, 3, 1, withdrawn=frozenset({"E1"}))
    assert plan.bye is not None and "E1" not in {n for p in plan.pairs for n in p}
    # five players left: the bye goes to the lowest in pairing order without a bye
    assert plan.bye not in {r.bye for r in history}


def test_withdrawn_names_must_be_seeded() -> None:
    with pytest.raises(ValueError, match="'Nobody' not seeded"):
        pair_round(SEEDS[:4], [], 1, 1, withdrawn=frozenset({"Nobody"}))


def test_without_a_withdrawal_the_pairing_is_unchanged() -> None:
    rng = random.Random(3)
    history, _ = play_event(SEEDS[:7], 3, 2, {}, rng)
    assert pair_round(SEEDS[:7], history, 4, 2) == pair_round(SEEDS[:7], history, 4, 2,
                                                             withdrawn=frozenset())


# --------------------------------------------------------------------------- audit


def pgn_games(history: list[RoundRecord], per_round: list[frozenset[str]],
              seeds: list[str], tagged: bool = True) -> list[PgnGame]:
    games = []
    for record, withdrawn in zip(history, per_round, strict=True):
        tag = tuple(s for s in seeds if s in withdrawn) if tagged else ()
        for g in record.games:
            games.append(PgnGame(len(games) + 1, g.round, g.game_in_round, g.white, g.black,
                                 g.result, withdrawn=tag))
    return games


@pytest.mark.parametrize("gpm", [1, 2])
def test_the_audit_pairs_rounds_after_a_withdrawal_without_the_engine(gpm: int) -> None:
    seeds = SEEDS[:7]
    rng = random.Random(11)
    history, per_round = play_event(seeds, 5, gpm, {3: ["E2"]}, rng)
    report = audit_event(pgn_games(history, per_round, seeds), seeds)
    assert report.all_match, [r.to_json() for r in report.rounds if not r.match]
    assert [r.bye for r in report.rounds][2:] == [None, None, None]  # six left: no bye
    # the tag is what tells the audit: without it the rounds after the withdrawal differ
    blind = audit_event(pgn_games(history, per_round, seeds, tagged=False), seeds)
    assert [r.match for r in blind.rounds][:2] == [True, True] and not blind.all_match


def test_the_withdrawn_tag_is_read_against_the_seeds() -> None:
    seeds = ["Stockfish 16", "Lc0, v0.30", "Lc0", "Ethereal"]
    assert parse_withdrawn("Lc0, v0.30, Ethereal", seeds) == ("Lc0, v0.30", "Ethereal")
    assert parse_withdrawn("Lc0", seeds) == ("Lc0",)
    assert parse_withdrawn("", seeds) == ()
    assert parse_withdrawn("Ghost, Lc0", seeds) == ("Ghost", "Lc0")


def test_a_withdrawn_tag_naming_no_seed_is_bad_input() -> None:
    from runner.domain.audit import AuditInputError

    seeds = SEEDS[:4]
    games = [PgnGame(1, 1, 1, "E2", "E1", "1-0", withdrawn=("Ghost",)),
             PgnGame(2, 1, 2, "E4", "E3", "1-0", withdrawn=("Ghost",))]
    with pytest.raises(AuditInputError, match="withdrawn engine 'Ghost' is not in the seeds"):
        audit_event(games, seeds)


# --------------------------------------------------------------------------- standings


def test_standings_mark_a_withdrawn_engine_and_keep_its_games() -> None:
    seeds = SEEDS[:5]
    rng = random.Random(2)
    history, per_round = play_event(seeds, 4, 1, {3: ["E3"]}, rng)
    rounds = tuple(RoundResult(r.number, r.games, r.bye) for r in history)
    results = EventResults(tuple(seeds), 1, rounds, withdrawn=(("E3", 3),))
    rows = compute_standings(results, ["SonnebornBerger"])
    e3 = next(r for r in rows if r.name == "E3")
    played = sum(1 for r in history for g in r.games if "E3" in (g.white, g.black))
    assert e3.withdrawn_from == 3 and e3.games == played > 0  # its games stand
    assert all(r.withdrawn_from is None for r in rows if r.name != "E3")
    text = render_standings(rows, results, "text")
    rounds_table = text.split("\nRounds\n", 1)[1]
    line = next(li for li in rounds_table.splitlines() if "E3 (withdrawn)" in li)
    assert line.split()[-2:] == ["WD", "WD"]  # rounds 3 and 4: not paired
    doc = json.loads(render_standings(rows, results, "json"))
    marks = {r["engine"]: r["withdrawn_from_round"] for r in doc["standings"]}
    assert marks["E3"] == 3 and marks["E1"] is None
    with pytest.raises(Exception, match="'Ghost'"):
        compute_standings(EventResults(tuple(seeds), 1, rounds, withdrawn=(("Ghost", 2),)), [])


# --------------------------------------------------------------------------- store


def test_an_event_of_schema_3_reads_without_td_tables_and_run_adds_them(tmp_path: Path) -> None:
    path = tmp_path / "event.sqlite3"
    store = Store.open(path)
    store.init_event({"x": 1}, SEEDS[:4], [0], event="e", games_per_match=1, rounds=2)
    store.close()
    conn = sqlite3.connect(path)  # as a swiss-runner of schema 3 left it
    for table in ("withdrawals", "voided_games", "voided_rounds"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("PRAGMA user_version=3")
    conn.commit()
    conn.close()

    old = Store.open_readonly(path)
    assert old is not None and old.version == 3
    assert withdrawals(old.conn) == [] and td_counts(old.conn) == (0, 0)
    assert old.event_results().withdrawn == ()
    old.close()
    upgraded = Store.open(path)
    assert upgraded.version == 5 and td_counts(upgraded.conn) == (0, 0)
    upgraded.close()



def test_a_schema_4_mark_in_td_applied_becomes_the_commands_mark(tmp_path: Path) -> None:
    """Schema 4 kept an applied withdrawal or rewind in td_applied beside td_commands; `run`
    folds each row into td_commands (a pending command applied, a tool's decision given a
    row) and drops the table: a decision's mark is in one table, none applied twice."""
    from runner.store import decisions
    from runner.store.tdstore import TD_APPLIED_4, applied

    path = tmp_path / "event.sqlite3"
    store = Store.open(path)
    store.init_event({"x": 1}, SEEDS[:4], [0], event="e", games_per_match=1, rounds=2)
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)  # as schema 4 left it: killed between
    decisions.ensure_table(conn)  # applying withdrawal 1 and marking its command
    decisions.add_command(conn, "withdraw", {"engine": "A"}, "asked", "td@host")
    conn.execute(TD_APPLIED_4)
    conn.execute("INSERT INTO td_applied VALUES (1, 'withdraw', 'A withdrawn', 't1')")
    conn.execute("INSERT INTO td_applied VALUES (7, 'rewind', 'rewound to game 2', 't2')")
    conn.execute("PRAGMA user_version=4")
    conn.commit()
    conn.close()

    old = Store.open_readonly(path)
    assert old is not None and old.version == 4
    assert [c.state for c in decisions.commands(old.conn)] == ["pending"]  # still readable
    old.close()
    upgraded = Store.open(path)
    try:
        assert upgraded.version == 5
        assert upgraded.conn.execute("SELECT 1 FROM sqlite_master WHERE "
                                     "name='td_applied'").fetchone() is None
        marks = {c.id: (c.action, c.state, c.outcome) for c in decisions.commands(upgraded.conn)}
        assert marks == {1: ("withdraw", "applied", "A withdrawn"),
                         7: ("rewind", "applied", "rewound to game 2")}
        assert applied(upgraded.conn, 1) == "A withdrawn" and applied(upgraded.conn, 2) is None
        assert decisions.pending_ids(upgraded.conn) == []
    finally:
        upgraded.close()

# --------------------------------------------------------------------------- the PGN tag


def test_the_withdrawn_engines_travel_with_the_spec_and_both_backends_tag_the_pgn() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    spec = dataclasses.replace(spec_for(fake("A"), fake("B"), round_=3),
                               withdrawn=("Lc0, v0.30", "E2"))
    assert spec_from_json(json.loads(json.dumps(spec_to_json(spec)))) == spec  # to a worker
    plain = spec_for(fake("A"), fake("B"))
    assert spec_from_json(json.loads(json.dumps(spec_to_json(plain)))).withdrawn == ()

    record = finish_record(spec, chess.Board(), ["e2e4"], [""], End("1-0", "White wins"), start)
    cute = _build_pgn(record, chess.pgn.Headers(), spec)  # as the cutechess backend writes it
    for text in (record.pgn, cute):
        headers = chess.pgn.read_headers(io.StringIO(text))
        assert headers is not None and headers["Withdrawn"] == "Lc0, v0.30, E2"
        assert parse_withdrawn(headers["Withdrawn"], ["Lc0, v0.30", "E2", "A", "B"]) == (
            "Lc0, v0.30", "E2")
    untagged = finish_record(plain, chess.Board(), ["e2e4"], [""], End("1-0", "White wins"),
                             start)
    assert "[Withdrawn " not in untagged.pgn


# --------------------------------------------------------------------------- applied once


def test_a_withdrawal_now_cut_short_by_a_crash_is_completed_once(tmp_path: Path) -> None:
    """The loop's scripted backend (no engines: this is about the store). A --now withdrawal
    forfeits game by game, then records itself: killed after the first forfeit, applying the
    same decision again forfeits the rest only; applied again after that, nothing changes."""
    from testkit import backend, event_games, loop_config, run_args

    from runner.cli.run import cli_run
    from runner.config import load_config
    from runner.errors import StopEvent
    from runner.service.td.rules import apply_withdraw, record_forfeit

    config = load_config(loop_config(tmp_path, players=5))  # double rounds, 3 rounds

    def stop(spec: object) -> None:
        if getattr(spec, "game_id", 0) == 5:
            raise StopEvent("stop")

    assert cli_run(config, run_args(), play_game=backend(hook=stop)) == 1
    games = event_games(config.database)
    leg1 = next(g for g in games if g[0] == 5)
    engine = leg1[3]
    mine = [g[0] for g in games if g[6] != "finished" and engine in (g[3], g[4])]
    assert len(mine) == 2  # both games of its round-2 pair
    store = Store.open(config.database)
    try:
        game = next(g for g in store.games() if g.game_id == mine[0])
        record_forfeit(store, config, game, engine)  # the crash came after this commit
        outcome = apply_withdraw(store, config, engine, True, "crash test", 11)
        assert outcome == (f"{engine} withdrawn from round 3 on; lost by forfeit: game(s) "
                           f"{mine[1]}")
        assert apply_withdraw(store, config, engine, True, "crash test", 11) == outcome
        finish = [r for r in store.conn.execute(
            "SELECT game_id, finish_seq, termination FROM games WHERE game_id IN (?, ?)", mine)]
        assert [f[2] for f in finish] == ["abandoned", "abandoned"]
        assert store.conn.execute("SELECT COUNT(*) FROM td_commands WHERE id=11 AND "
                                  "state='applied'").fetchone()[0] == 1
    finally:
        store.close()
    assert cli_run(config, run_args(), play_game=backend()) == 0
    games = event_games(config.database)
    assert not [g for g in games if g[1] == 3 and engine in (g[3], g[4])]
    assert all(g[6] == "finished" for g in games) and len(games) == 4 + 4 + 4
