"""The tournament loop with a scripted backend: fault injection, resume, signals, extra pairs.

These tests replace only the game backend (play_game) by a deterministic coroutine so that
failures can be injected at exact moments; pairing, openings, standings and the store are
the real modules. Real engines play in tests/test_orchestrator_engines.py and the SIGKILL
crash test (tests/test_resume.py).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import sys
import threading
from pathlib import Path

import chess
import chess.pgn
import pytest
import yaml
from testkit import (
    backend,
    event_games,
    loop_config,
    run_args,
    unwritable,
    wait_until,
    write_config,
)

from runner.cli import main
from runner.cli.run import cli_run
from runner.config import load_config
from runner.domain.models import GameRecord, GameSpec
from runner.domain.pairing import RoundRecord, pair_round
from runner.errors import StopEvent
from runner.store.database import Store, StoreError, count_pgn_games

FAKE = Path(__file__).resolve().parent / "fakes" / "det_engine.py"


def test_whole_event_is_consistent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = load_config(loop_config(tmp_path))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    out = capsys.readouterr().out
    games = event_games(config.database)
    assert len(games) == 3 * 2 * 2 and all(g[6] == "finished" for g in games)
    assert [g[0] for g in games] == list(range(1, 13))
    assert "Started game 1 of 12 (" in out and "Finished game 12 (" in out
    assert out.count("complete:") == 3 and "Event complete. Final standings:" in out

    store = Store.open_readonly(config.database)
    rounds = store.rounds()
    assert [r.state for r in rounds] == ["complete"] * 3
    assert len({r.bye for r in rounds}) == 3  # nobody gets a second bye while others have none
    # the stored pairings are exactly what pairing computes from the stored results
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    for rd in rounds:
        plan = pair_round(store.seeds(), history, rd.number, 2, "split", excluded)
        assert plan.pairs == rd.pairs and plan.bye == rd.bye
        stored = [(g.white, g.black, g.game_in_round) for g in store.games(rd.number)]
        assert stored == [(g.white, g.black, g.game_in_round) for g in plan.games]
        played = tuple(store.event_results().rounds[rd.number - 1].games)
        history.append(RoundRecord(rd.number, rd.pairs, played, rd.bye))
        excluded = plan.excluded
    # one opening per match, both legs, in book order (Order: sequential)
    by_match: dict[int, set[int]] = {}
    for g in store.games():
        by_match.setdefault(g.match_index, set()).add(g.opening.index)
    assert [sorted(v) for _, v in sorted(by_match.items())] == [[i % 6] for i in range(6)]
    store.close()

    # the PGN and the JSON snapshot agree with the database
    assert count_pgn_games(config.pgn_out) == 12
    with open(config.pgn_out) as handle:
        pgn_results = []
        while (game := chess.pgn.read_game(handle)) is not None:
            pgn_results.append((game.headers["White"], game.headers["Black"], game.headers["Result"]))
    assert sorted(pgn_results) == sorted((g[3], g[4], g[7]) for g in games)
    snap = json.loads(config.swiss.state_path.read_text())
    assert snap["games_finished"] == 12 and snap["current_round"]["number"] == 3
    assert (snap["format"], snap["version"]) == ("swiss-runner-state", 2)
    assert snap["opening_order"] == list(range(6))
    snap_games = [(g["game_id"], g["result"]) for r in snap["rounds"] for p in r["pairs"]
                  for g in p["games"]]
    assert sorted(snap_games) == [(g[0], g[7]) for g in games]
    assert snap["standings"] is not None


def test_failure_mid_event_then_resume_equals_uninterrupted(tmp_path: Path) -> None:
    clean = load_config(loop_config(tmp_path / "clean"))
    assert cli_run(clean, run_args(), play_game=backend()) == 0

    config = load_config(loop_config(tmp_path / "broken"))

    def explode(spec: GameSpec) -> None:
        if spec.game_id == 6:
            raise StopEvent("the runner stops")

    assert cli_run(config, run_args(), play_game=backend(hook=explode)) == 1
    games = event_games(config.database)
    assert [g[6] for g in games[:6]] == ["finished"] * 5 + ["scheduled"]
    assert cli_run(config, run_args(), play_game=backend()) == 0
    assert event_games(config.database) == event_games(clean.database)


def test_concurrency_starts_in_playing_order_and_limits(tmp_path: Path) -> None:
    config = load_config(loop_config(tmp_path, players=6, Rounds=2))
    config = config.__class__(**{**vars(config), "concurrency": 3})
    log: list = []
    assert cli_run(config, run_args(), play_game=backend(delay=0.01, log=log)) == 0
    starts = [gid for kind, gid in log if kind == "start"]
    assert starts == list(range(1, 13))
    running = peak = 0
    for kind, _ in log:
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == 3
    # round 2 starts only when every game of round 1 is recorded (TCEC rule 7.e)
    first_r2 = log.index(("start", 7))
    assert all(("end", gid) in log[:first_r2] for gid in range(1, 7))


def test_changed_config_is_refused_with_the_changes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path)
    config = load_config(path)
    assert cli_run(config, run_args(), play_game=backend()) == 0
    before = config.database.read_bytes()
    data = yaml.safe_load(path.read_text())
    data["SwissOptions"]["Rounds"] = 4
    data["Engines"][0]["Args"] = [str(FAKE), "greedy", "1", "0"]
    data["Concurrency"] = 2  # allowed
    write_config(path.parent, data, path.name)
    capsys.readouterr()
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "SwissOptions.Rounds: 3 -> 4" in err
    assert f'Engines.P1.args: ["{FAKE}", "random", "1", "0"] -> ["{FAKE}", "greedy", "1", "0"]' in err
    assert "Concurrency" not in err
    assert config.database.read_bytes() == before


def test_corrupt_database_is_refused_by_run_and_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path)
    config = load_config(path)
    config.database.parent.mkdir(parents=True)
    config.database.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    before = config.database.read_bytes()
    assert main(["run", str(path)]) == 2
    assert main(["status", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(config.database) in err and "left untouched" in err
    assert config.database.read_bytes() == before


def test_corrupt_snapshot_and_cut_pgn_are_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = load_config(loop_config(tmp_path))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    good_pgn = config.pgn_out.read_text()
    config.swiss.state_path.write_text('{"current_round": 2, "rou')
    config.pgn_out.write_text(good_pgn[:-200])
    capsys.readouterr()
    assert cli_run(config, run_args(), play_game=backend()) == 0
    out = capsys.readouterr().out
    assert "JSON snapshot was unreadable" in out and "Rebuilt" in out
    assert json.loads(config.swiss.state_path.read_text())["games_finished"] == 12
    assert config.pgn_out.read_text() == good_pgn


@pytest.mark.slow
def test_full_disk_while_recording_is_waited_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A record that finds the disk full is not lost and does not stop the event: the writer
    says so, tries again, and the event goes on by itself once the write goes through
    (docs/orchestrator.md, "A full disk")."""
    config = load_config(loop_config(tmp_path))
    real = Store.record_game
    calls = {"n": 0}

    def full(self: Store, game_id: int, record: GameRecord, moves=()) -> None:
        calls["n"] += 1
        if calls["n"] in (4, 5):  # game 4's record, twice: the disk stays full a while
            raise sqlite3.OperationalError("database or disk is full")
        real(self, game_id, record, moves)

    monkeypatch.setattr(Store, "record_game", full)
    assert cli_run(config, run_args(), play_game=backend()) == 0
    out = capsys.readouterr()
    assert out.err.count("the disk is full (database or disk is full); waiting for space") == 1
    assert "disk space is back" in out.out
    rows = event_games(config.database)
    assert len(rows) == 12 and all(g[6] == "finished" for g in rows)
    assert count_pgn_games(config.pgn_out) == 12


def test_snapshot_enospc_is_reported_and_the_run_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import runner.service.views.snapshotdoc as orch

    config = load_config(loop_config(tmp_path))
    real = orch.atomic_write

    failed: list[int] = []

    def flaky(path: Path, data: str, **kwargs: bool) -> None:  # the disk is full once, from game 5 on
        finished = json.loads(data)["games_finished"]
        if finished >= 5 and not failed:
            failed.append(finished)
            raise OSError(28, "No space left on device")
        real(path, data, **kwargs)

    monkeypatch.setattr(orch, "atomic_write", flaky)
    assert cli_run(config, run_args(), play_game=backend()) == 0
    assert failed and "cannot write the JSON snapshot (No space left on device)" in capsys.readouterr().err
    assert json.loads(config.swiss.state_path.read_text())["games_finished"] == 12


@pytest.mark.parametrize("finish_games", [False, True])
def test_sigint_stops_cleanly(tmp_path: Path, finish_games: bool) -> None:
    config = load_config(loop_config(tmp_path))

    def interrupt(spec: GameSpec) -> None:
        if spec.game_id == 3:
            os.kill(os.getpid(), signal.SIGINT)

    code = cli_run(config, run_args() if not finish_games else argparse.Namespace(
        finish_games=True, quiet=False), play_game=backend(delay=0.05, hook=interrupt))
    assert code == 130
    statuses = [g[6] for g in event_games(config.database)]
    expected = ["finished", "finished", "finished" if finish_games else "scheduled"]
    assert statuses[:3] == expected and set(statuses[3:]) == {"scheduled"}
    store = Store.open_readonly(config.database)
    assert store.processes() == []  # nothing left to sweep after a clean stop
    store.close()
    assert cli_run(config, run_args(), play_game=backend()) == 0


def test_two_leaders_play_extra_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = load_config(loop_config(tmp_path, players=4, Rounds=2, AllowExtraPairsOnTie=True))

    def result(spec: GameSpec) -> str:
        w, b = spec.white.name, spec.black.name
        if spec.round > 2:  # extra pair 1: each wins with White; pair 2: P2 wins both
            return "1-0" if spec.round == 3 else ("1-0" if w == "P2" else "0-1")
        if {w, b} == {"P1", "P2"}:
            return "1/2-1/2"
        if w in ("P1", "P2"):
            return "1-0"
        return "0-1" if b in ("P1", "P2") else "1/2-1/2"

    seen: list[GameSpec] = []
    assert cli_run(config, run_args(), play_game=backend(result, hook=seen.append)) == 0
    out = capsys.readouterr().out
    assert [s.extra_pair for s in seen if s.round > 2] == [1, 1, 2, 2]
    assert all(s.extra_pair == 0 for s in seen if s.round <= 2)
    games = event_games(config.database)
    extra = [g for g in games if g[8]]
    assert [(g[1], g[3], g[4], g[7]) for g in extra] == [
        (3, "P2", "P1", "1-0"), (3, "P1", "P2", "1-0"), (4, "P1", "P2", "0-1"), (4, "P2", "P1", "1-0")]
    assert "P1 and P2 share first place" in out and "after 2 pair(s)" in out
    snap = json.loads(config.swiss.state_path.read_text())
    top = snap["standings"][0]
    assert top["engine"] == "P2" and top["extra_games"] == 4 and top["extra_score"] == 3.0
    # the event's PGN audits clean: the extra games are marked and set aside
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(Store.open_readonly(config.database).seeds()) + "\n")
    assert main(["audit", str(config.pgn_out), "--seeds", str(seeds)]) == 0
    audit_out = capsys.readouterr().out
    assert "4 extra tie-break game(s)" in audit_out and "all 2 rounds match" in audit_out
    # a rerun of the finished event plays nothing more
    assert cli_run(config, run_args(), play_game=backend(result)) == 0
    assert event_games(config.database) == games


def test_status_is_read_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path)
    assert main(["status", str(path)]) == 1  # nothing yet
    assert not load_config(path).database.exists()
    config = load_config(path)

    def stop_at_5(spec: GameSpec) -> None:
        if spec.game_id == 5:
            os.kill(os.getpid(), signal.SIGTERM)

    assert cli_run(config, run_args(), play_game=backend(hook=stop_at_5, delay=0.01)) == 130
    capsys.readouterr()
    before = config.database.read_bytes()
    assert main(["status", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Games: 4 of 12 finished" in out and "round 2 of 3" in out
    assert main(["status", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["games_finished"] == 4 and data["games_total"] == 12 and data["in_progress"] == []
    assert config.database.read_bytes() == before


@pytest.mark.slow
def test_status_during_a_run_and_a_second_runner_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path)
    config = load_config(path)
    seen: dict[str, object] = {}

    def peek(spec: GameSpec) -> None:
        if spec.game_id == 6:  # its start is committed within the writer's interval (0.05 s)
            wait_until(lambda: [g[6] for g in event_games(config.database) if g[0] == 6]
                       == ["running"], "game 6 marked running")
            seen["status"] = main(["status", str(path), "--json"])
            seen["second"] = main(["run", str(path)])

    assert cli_run(config, run_args(), play_game=backend(hook=peek)) == 0
    out, err = capsys.readouterr()
    assert seen == {"status": 0, "second": 2}
    assert "another swiss-runner (pid" in err and "is running this event" in err
    data = json.loads(out[out.index("{\n"):out.index("\n}\n") + 2])
    assert data["runner_running"] is True and data["games_finished"] == 5
    assert [g["game_id"] for g in data["in_progress"]] == [6]
    assert len(event_games(config.database)) == 12  # the peeking disturbed nothing
    assert main(["status", str(path)]) == 0
    assert "Runner: not running" in capsys.readouterr().out


def test_unwritable_state_directory_is_a_clear_bad_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    with unwritable(state):
        assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    # refused with the config's own words before anything is opened: file, line, key, why
    assert f"{path}:6: SwissOptions.StatePath: {state / 'swiss.json'}: the JSON snapshot " in err
    assert f"the directory {state} is not writable by this user" in err
    assert "nothing was run or written" in err and "Traceback" not in err
    assert list(state.iterdir()) == []


def test_an_existing_pgn_is_kept_when_a_new_event_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PgnOut holding another event's games is moved aside, never overwritten."""
    config = load_config(loop_config(tmp_path))
    last_season = '[Event "last season"]\n[White "A"]\n[Black "B"]\n[Result "1-0"]\n\n1. e4 1-0\n\n'
    config.pgn_out.parent.mkdir(parents=True)
    config.pgn_out.write_text(last_season)

    def stop(spec: GameSpec) -> None:
        raise StopEvent("stop before any game is recorded")

    assert cli_run(config, run_args(), play_game=backend(hook=stop)) == 1
    out = capsys.readouterr().out
    (kept,) = config.pgn_out.parent.glob("games.pgn.*.bak")
    assert kept.read_text() == last_season
    assert f"{config.pgn_out} held games that are not this event's; kept it as {kept}" in out
    assert config.pgn_out.read_text() == ""
    assert cli_run(config, run_args(), play_game=backend()) == 0
    assert count_pgn_games(config.pgn_out) == 12 and kept.read_text() == last_season


@pytest.mark.slow
def test_pgn_out_moved_onto_an_unrelated_file_on_resume_keeps_that_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path)
    config = load_config(path)

    def stop_at_5(spec: GameSpec) -> None:
        if spec.game_id == 5:
            raise StopEvent("stop")

    assert cli_run(config, run_args(), play_game=backend(hook=stop_at_5)) == 1
    notes = tmp_path / "notes.pgn"
    notes.write_text("my annotated games, nothing to do with this event\n")
    data = yaml.safe_load(path.read_text())
    data["PgnOut"] = "notes.pgn"  # allowed between runs
    write_config(path.parent, data, path.name)
    capsys.readouterr()
    assert main(["run", str(path)]) == 0
    out = capsys.readouterr().out
    (kept,) = tmp_path.glob("notes.pgn.*.bak")
    assert kept.read_text() == "my annotated games, nothing to do with this event\n"
    assert f"kept it as {kept}" in out and f"Rebuilt {notes} from the database (4 games)" in out
    assert count_pgn_games(notes) == 12
    store = Store.open_readonly(config.database)
    assert notes.read_text() == "".join(store.finished_pgns())
    store.close()


@pytest.mark.parametrize("error", [
    StoreError("state/swiss.sqlite3: cannot read the state database: disk I/O error"),
    sqlite3.OperationalError("unable to open database file"),
], ids=["StoreError", "sqlite3.Error"])
def test_a_failed_snapshot_read_does_not_fail_the_event(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        error: Exception) -> None:
    """The snapshot is derived: an error reading the database for it (in its worker thread,
    the last one included) is reported like a failed snapshot write; the event exits 0."""
    config = load_config(loop_config(tmp_path))
    real = Store.open_readonly
    failed: list[str] = []

    def failing_in_the_snapshot_thread(path: Path, **kwargs: bool) -> Store | None:
        if threading.current_thread() is not threading.main_thread():
            failed.append(threading.current_thread().name)
            raise error
        return real(path, **kwargs)

    monkeypatch.setattr(Store, "open_readonly", staticmethod(failing_in_the_snapshot_thread))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    err = capsys.readouterr().err
    assert failed
    assert f"{config.swiss.state_path}: cannot update the JSON snapshot ({error})" in err
    assert "the previous snapshot is intact" in err
    # the snapshot written at the start (main thread) is still there and valid
    assert json.loads(config.swiss.state_path.read_text())["games_finished"] == 0
    assert len(event_games(config.database)) == 12


def test_a_first_start_killed_before_the_schema_was_committed_is_resumed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path)
    config = load_config(path)
    config.database.parent.mkdir(parents=True)
    config.database.touch()  # killed right after sqlite3.connect() created the file
    assert main(["status", str(path)]) == 1
    assert "no event recorded yet" in capsys.readouterr().out
    assert cli_run(config, run_args(), play_game=backend()) == 0
    assert len(event_games(config.database)) == 12


def test_the_opening_order_is_read_once_per_run(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_config(loop_config(tmp_path, players=6, Rounds=3))
    real = Store.opening_order
    callers: list[str] = []

    def counted(self: Store) -> list[int]:
        callers.append(sys._getframe(1).f_code.co_name)
        return real(self)

    monkeypatch.setattr(Store, "opening_order", counted)
    assert cli_run(config, run_args(), play_game=backend()) == 0
    # stored with the event and never changed: one read for the run's 3 paired rounds, not
    # one per round or per game (18 games); the snapshot reads its own
    assert callers.count("schedule_games") == 1
