"""The TD's withdrawals and rewinds applied to real events (real Debian engines), with the
runner stopped between runs: the event then completes, `audit` passes on the final PGN, the
database, the PGN, the voided PGN, the standings and the JSON state agree."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import chess.pgn
import pytest
from testkit import run_args, write_config

from runner.cli import main
from runner.cli.run import cli_run
from runner.config import load_config
from runner.config.typed import Config
from runner.domain.models import GameRecord, GameSpec
from runner.errors import StopEvent
from runner.play.referee import play_game as referee_play
from runner.service.td.rules import (
    TDRefused,
    apply_rewind,
    apply_withdraw,
    validate_rewind,
    validate_withdraw,
    voided_pgn_path,
)
from runner.store.database import Store

pytestmark = pytest.mark.engines

ENGINES = [  # fast and deterministic enough: fixed nodes or depth, one thread
    {"Name": "Stockfish", "Command": "stockfish", "Rating": 3500, "Nodes": 1500,
     "Options": {"Threads": 1, "Hash": 1}},
    {"Name": "Ethereal", "Command": "ethereal-chess", "Rating": 3300, "Depth": 3,
     "Options": {"Threads": 1, "Hash": 2}},
    {"Name": "Fairy-Stockfish", "Command": "fairy-stockfish", "Rating": 3400, "Nodes": 1500,
     "Options": {"Threads": 1, "Hash": 1}},
    {"Name": "Toga II", "Command": "toga2", "Rating": 2900, "Depth": 2},
    {"Name": "Fairymax", "Command": "fairymax", "Protocol": "xboard", "Rating": 2000, "Depth": 2},
    {"Name": "Stockfish B", "Command": "stockfish", "Rating": 3000, "Nodes": 500,
     "Options": {"Threads": 1, "Hash": 1}},
]
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def games_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") + os.pathsep + "/usr/games")


def event(tmp_path: Path, gpm: int, rounds: int, schedule: str = "split") -> Config:
    return load_config(write_config(tmp_path, {
        "Event": "td", "Site": "tests", "TimeControl": "60+1", "Concurrency": 1,
        "SwissOptions": {"GamesPerMatch": gpm, "Rounds": rounds, "Seeding": "listed",
                         "DoubleRoundSchedule": schedule, "StatePath": "state/swiss.json"},
        "Openings": {"File": str(REPO / "books" / "default.pgn"), "Plies": 6},
        "Adjudication": {"TcecWin": {"ScoreCp": 600, "Plies": 6}, "MaxMoves": 40},
        "Engines": ENGINES,
    }))


def run_until(config: Config, game_id: int) -> int:
    """Run the event with real engines and stop it (as a failure) when game ``game_id`` is
    about to start: the games before it are played, it and the rest are not."""
    async def play(spec: GameSpec, **kwargs: Any) -> GameRecord:
        if spec.game_id >= game_id:
            raise StopEvent(f"the test stops the runner before game {spec.game_id}")
        return await referee_play(spec, **kwargs)

    return cli_run(config, run_args(), play_game=play)


def rows(config: Config, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"{config.database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def pgn_headers(path: Path) -> list[chess.pgn.Headers]:
    out = []
    with open(path, encoding="utf-8") as handle:
        while (headers := chess.pgn.read_headers(handle)) is not None:
            out.append(headers)
    return out


def audit(config: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str],
          pgn: Path | None = None) -> tuple[int, str]:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(e["Name"] for e in ENGINES) + "\n")
    capsys.readouterr()
    code = main(["audit", str(pgn or config.pgn_out), "--seeds", str(seeds)])
    return code, capsys.readouterr().out


def opened(config: Config) -> Store:
    return Store.open(config.database)


@pytest.mark.slow
def test_withdraw_between_runs_single_rounds(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = event(tmp_path, 1, 4)
    assert run_until(config, 7) == 1  # rounds 1 and 2 played; round 3 paired, not started
    reader = Store.open_readonly(config.database)  # the checks only read (as `td` does)
    assert reader is not None
    try:
        validate_withdraw(reader, config, "Toga II")
        with pytest.raises(TDRefused, match="'Nobody': not an engine"):
            validate_withdraw(reader, config, "Nobody")
    finally:
        reader.close()
    store = opened(config)
    try:
        with pytest.raises(TDRefused, match="'Nobody': not an engine of this event"):
            validate_withdraw(store, config, "Nobody")
        outcome = apply_withdraw(store, config, "Toga II", False, "engine author asked", 1)
        assert outcome.startswith("Toga II withdrawn from round 3 on")
        assert "round 3 paired again without it" in outcome
        # applied once: the same decision again changes nothing and says what it did
        assert apply_withdraw(store, config, "Toga II", False, "engine author asked", 1) == outcome
        with pytest.raises(TDRefused, match="already withdrawn"):
            validate_withdraw(store, config, "Toga II")
    finally:
        store.close()
    assert main(["run", str(config.path), "--quiet"]) == 0

    games = rows(config, "SELECT round, white, black, status FROM games ORDER BY game_id")
    toga = [g for g in games if "Toga II" in g[1:3]]
    assert [g[0] for g in toga] == [1, 2]  # its finished games stand, it plays no more
    assert all(g[3] == "finished" for g in games) and len(games) == 3 + 3 + 2 + 2
    byes = rows(config, "SELECT number, bye FROM rounds ORDER BY number")
    assert [b[1] is None for b in byes] == [True, True, False, False]  # five left: a bye
    assert "Toga II" not in {b[1] for b in byes}
    assert rows(config, "SELECT number FROM voided_rounds") == [(3,)]  # the unplayed pairing

    headers = pgn_headers(config.pgn_out)
    assert {h["Round"].split(".")[0] for h in headers if h.get("Withdrawn") == "Toga II"} == {"3", "4"}
    assert not [h for h in headers if int(h["Round"].split(".")[0]) < 3 and "Withdrawn" in h]
    code, out = audit(config, tmp_path, capsys)
    assert code == 0 and "all 4 rounds match" in out
    assert "round 3: match (2 games; bye " in out and "withdrawn: Toga II)" in out
    # without the tag the audit cannot know: the rounds after the withdrawal differ
    stripped = tmp_path / "stripped.pgn"
    stripped.write_text("".join(line for line in config.pgn_out.read_text().splitlines(True)
                                if not line.startswith("[Withdrawn ")))
    code, out = audit(config, tmp_path, capsys, stripped)
    assert code == 1 and "round 3: MISMATCH" in out

    state = json.loads(config.swiss.state_path.read_text())
    assert [w["engine"] for w in state["withdrawn"]] == ["Toga II"]
    marks = {s["engine"]: s["withdrawn_from_round"] for s in state["standings"]}
    assert marks["Toga II"] == 3 and marks["Stockfish"] is None
    assert main(["standings", str(config.path)]) == 0
    assert "Toga II (withdrawn)" in capsys.readouterr().out
    from starlette.testclient import TestClient

    from runner.web.app import create_app

    with TestClient(create_app(config)) as client:  # the dashboard
        page = client.get("/standings").text
        assert 'title="withdrawn by the TD from round 3">(withdrawn)</span>' in page
        assert client.get("/api/state").json()["withdrawn"][0]["engine"] == "Toga II"


@pytest.mark.slow
def test_withdraw_now_between_the_two_games_of_a_pair(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    config = event(tmp_path, 2, 3, "consecutive")
    assert run_until(config, 8) == 1  # round 2: game 7 (first leg of a pair) played, 8 not
    first_leg = rows(config, "SELECT white, black, status FROM games WHERE game_id=7")[0]
    assert first_leg[2] == "finished"
    leaving = first_leg[0]  # White of the first leg: Black of the second
    store = opened(config)
    try:
        outcome = apply_withdraw(store, config, leaving, True, "crashes on this hardware", 4)
    finally:
        store.close()
    assert outcome == (f"{leaving} withdrawn from round 3 on; lost by forfeit: game(s) 8")
    second = rows(config, "SELECT white, black, result, termination, status FROM games "
                  "WHERE game_id=8")[0]
    assert second[1] == leaving and second[2:] == ("1-0", "abandoned", "finished")
    assert main(["run", str(config.path), "--quiet"]) == 0

    games = rows(config, "SELECT round, white, black FROM games ORDER BY game_id")
    assert not [g for g in games if g[0] == 3 and leaving in g[1:]]
    code, out = audit(config, tmp_path, capsys)
    assert code == 0 and "all 3 rounds match" in out
    forfeit = next(h for h in pgn_headers(config.pgn_out) if h["Round"] == "2.2")
    assert forfeit["Termination"] == "abandoned" and forfeit["Result"] == "1-0"
    assert forfeit["Black"] == leaving

    # a rewind to the forfeited game: the round keeps its pairing, the runner forfeits the
    # game again (the engine is still withdrawn) and pairs round 3 afresh without it
    store = opened(config)
    try:
        outcome = apply_rewind(store, config, 8, "replay from the forfeit", 5)
    finally:
        store.close()
    assert "pairing of round(s) 3 voided" in outcome
    assert rows(config, "SELECT status FROM games WHERE game_id=8") == [("scheduled",)]
    capsys.readouterr()
    assert main(["run", str(config.path)]) == 0
    assert f"Game 8 ({second[0]} vs {leaving}): Black forfeits" in capsys.readouterr().out
    assert rows(config, "SELECT result, termination FROM games WHERE game_id=8") == [
        ("1-0", "abandoned")]
    assert not rows(config, "SELECT 1 FROM games WHERE round=3 AND ? IN (white, black)",
                    (leaving,))
    code, out = audit(config, tmp_path, capsys)
    assert code == 0 and "all 3 rounds match" in out


@pytest.mark.slow
def test_rewind_after_a_wrong_round(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = event(tmp_path, 1, 3)
    assert run_until(config, 4) == 1  # round 1 played; round 2 paired, not started
    # the crash of rule 7.e: round 2 is paired wrongly (two pairs swap their Black)
    conn = sqlite3.connect(config.database)
    (w4, b4), (w5, b5) = conn.execute(
        "SELECT white, black FROM games WHERE game_id IN (4, 5) ORDER BY game_id").fetchall()
    conn.execute("UPDATE games SET black=? WHERE game_id=4", (b5,))
    conn.execute("UPDATE games SET black=? WHERE game_id=5", (b4,))
    pairs = [list(p) for p in json.loads(conn.execute(
        "SELECT pairs FROM rounds WHERE number=2").fetchone()[0])]
    swap = {b4: b5, b5: b4}
    conn.execute("UPDATE rounds SET pairs=? WHERE number=2",
                 (json.dumps([[swap.get(a, a), swap.get(b, b)] for a, b in pairs]),))
    conn.commit()
    conn.close()
    assert run_until(config, 8) == 1  # the wrong round 2 and game 7 of round 3 are played
    code, out = audit(config, tmp_path, capsys)
    assert code == 1 and "round 2: MISMATCH" in out
    wrong = rows(config, "SELECT game_id, white, black, result, pgn FROM games "
                 "WHERE game_id >= 4 AND status='finished' ORDER BY game_id")
    assert [g[0] for g in wrong] == [4, 5, 6, 7]

    store = opened(config)
    try:
        with pytest.raises(TDRefused, match="game numbers start at 1"):
            validate_rewind(store, config, 0)
        with pytest.raises(TDRefused, match="no such game"):
            validate_rewind(store, config, 99)
        outcome = apply_rewind(store, config, 4, "round 2 was paired after a crash", 9)
        assert apply_rewind(store, config, 4, "again", 9) == outcome  # applied once
    finally:
        store.close()
    assert outcome.startswith("rewound to game 4 (round 2.1): 4 finished game(s) voided, 2 unfinished")
    assert "pairing of round(s) 2, 3 voided" in outcome
    # at once: the PGN holds the valid games only, the voided ones are beside it
    assert [h["Round"] for h in pgn_headers(config.pgn_out)] == ["1.1", "1.2", "1.3"]
    voided = pgn_headers(voided_pgn_path(config))
    assert [(h["White"], h["Black"], h["Result"]) for h in voided] == [g[1:4] for g in wrong]
    assert {h["VoidedBy"] for h in voided} == {"9"}
    assert main(["run", str(config.path), "--quiet"]) == 0

    code, out = audit(config, tmp_path, capsys)
    assert code == 0 and "all 3 rounds match" in out
    kept = rows(config, "SELECT game_id, decision_id, status, pgn FROM voided_games "
                "ORDER BY void_id")
    assert [k[0] for k in kept] == [4, 5, 6, 7, 8, 9] and {k[1] for k in kept} == {9}
    assert [k[3] for k in kept if k[2] == "finished"] == [g[4] for g in wrong]  # as recorded
    assert rows(config, "SELECT number, decision_id FROM voided_rounds") == [(2, 9), (3, 9)]
    round2 = rows(config, "SELECT white, black FROM games WHERE round=2 ORDER BY game_in_round")
    assert (w4, b5) not in round2 and len(round2) == 3
    assert rows(config, "SELECT COUNT(*) FROM games WHERE status='finished'") == [(9,)]
    state = json.loads(config.swiss.state_path.read_text())
    assert state["voided_games"] == 6 and state["games_finished"] == 9
    # a view of the database: deleted, the next run writes it again, as it was
    text = voided_pgn_path(config).read_text()
    voided_pgn_path(config).unlink()
    assert main(["run", str(config.path), "--quiet"]) == 0
    assert voided_pgn_path(config).read_text() == text


@pytest.mark.slow
def test_rewind_into_a_round_keeps_its_pairing(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    config = event(tmp_path, 1, 2)
    assert run_until(config, 6) == 1  # game 5 (round 2.2) played, 6 not
    before = rows(config, "SELECT game_id, white, black FROM games WHERE round=2 ORDER BY game_id")
    store = opened(config)
    try:
        with pytest.raises(TDRefused, match="have not started: nothing to void"):
            validate_rewind(store, config, 6)
        outcome = apply_rewind(store, config, 5, "the server lagged in game 5", 2)
    finally:
        store.close()
    assert "1 finished game(s) voided, 1 unfinished" in outcome
    assert "round 2 keeps its pairing and plays games 2.2 on again" in outcome
    assert rows(config, "SELECT status, attempt FROM games WHERE game_id=5") == [("scheduled", 0)]
    assert main(["run", str(config.path), "--quiet"]) == 0
    assert rows(config, "SELECT game_id, white, black FROM games WHERE round=2 "
                "ORDER BY game_id") == before
    code, out = audit(config, tmp_path, capsys)
    assert code == 0 and "all 2 rounds match" in out
    assert [h["Round"] for h in pgn_headers(voided_pgn_path(config))] == ["2.2"]


@pytest.mark.slow
def test_withdraw_now_inside_a_running_runner_between_games(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Applied at a safe point of a running event (before game 5 starts, nothing in
    progress: Concurrency 1), as the td framework does: the runner does not play the game
    just forfeited, pairs the next round without the engine and completes in the same run."""
    config = event(tmp_path, 1, 3)
    outcomes: list[str] = []
    leaving: list[str] = []

    async def play(spec: GameSpec, **kwargs: Any) -> GameRecord:
        if spec.game_id == 5:
            sixth = rows(config, "SELECT white, black FROM games WHERE game_id=6")[0]
            leaving.append(sixth[0])
            store = Store.open(config.database)  # the decision's own connection
            try:
                outcomes.append(apply_withdraw(store, config, sixth[0], True, "stalls", 3))
            finally:
                store.close()
        return await referee_play(spec, **kwargs)

    assert cli_run(config, run_args(), play_game=play) == 0
    assert outcomes == [f"{leaving[0]} withdrawn from round 3 on; lost by forfeit: game(s) 6"]
    out = capsys.readouterr().out
    assert "Started game 6 " not in out and "Event complete" in out
    assert rows(config, "SELECT termination FROM games WHERE game_id=6") == [("abandoned",)]
    assert [r[0] for r in rows(config, "SELECT bye FROM rounds ORDER BY number")][2] is not None
    assert len(rows(config, "SELECT 1 FROM games")) == 3 + 3 + 2
    assert [h["Round"] for h in pgn_headers(config.pgn_out)][3:6] == ["2.1", "2.3", "2.2"]
    code, out = audit(config, tmp_path, capsys)
    assert code == 0 and "all 3 rounds match" in out
    state = json.loads(config.swiss.state_path.read_text())
    assert state["games_total"] == 8 and state["games_finished"] == 8 and state["complete"]


@pytest.mark.slow
def test_rewind_inside_a_running_runner(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Applied while game 8 (round 3) is about to be played: the runner interrupts it (here:
    the game is cancelled, as the td framework cancels the games after the point rewound
    to), then goes on from round 2, paired afresh, and completes in the same run."""
    import asyncio

    config = event(tmp_path, 1, 3)
    outcomes: list[str] = []

    async def play(spec: GameSpec, **kwargs: Any) -> GameRecord:
        if spec.game_id == 8 and not outcomes:
            store = Store.open(config.database)
            try:
                outcomes.append(apply_rewind(store, config, 4, "wrong round 2", 7))
            finally:
                store.close()
            raise asyncio.CancelledError
        return await referee_play(spec, **kwargs)

    assert cli_run(config, run_args(), play_game=play) == 0
    assert outcomes and outcomes[0].startswith("rewound to game 4 (round 2.1): 4 finished")
    assert "Event complete" in capsys.readouterr().out
    assert rows(config, "SELECT COUNT(*) FROM games WHERE status='finished'") == [(9,)]
    assert [r[0] for r in rows(config, "SELECT game_id FROM voided_games")] == [4, 5, 6, 7, 8, 9]
    assert len(pgn_headers(voided_pgn_path(config))) == 4
    assert [h["Round"] for h in pgn_headers(config.pgn_out)] == [
        f"{r}.{g}" for r in (1, 2, 3) for g in (1, 2, 3)]
    code, out = audit(config, tmp_path, capsys)
    assert code == 0 and "all 3 rounds match" in out
