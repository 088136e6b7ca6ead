"""The tournament director's commands (`swiss-runner td`, docs/td.md) against a running event
of real Debian engines and against a stopped one (applied by the next `run`): the database,
the PGN, the JSON state, `status` and `td log` agree, and no command is applied twice across
a kill -9."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from testkit import (
    FOUR_ENGINES,
    backend,
    loop_config,
    pgn_games,
    run_args,
    wait_until,
    write_config,
)

from runner.cli.run import cli_run
from runner.config import load_config
from runner.domain.models import GameSpec

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PATH": os.environ.get("PATH", "") + os.pathsep + "/usr/games"}


# --------------------------------------------------------------------------- helpers


def td(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", "td", str(config), *argv],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)


def engines_config(directory: Path, rounds: int = 2, **more: Any) -> Path:
    """Four real engines, two games at once, short games (about 10 s: MaxMoves 40)."""
    return write_config(directory, {**more,
        "Event": "td test", "TimeControl": "6+0.1", "Concurrency": 2,
        "SwissOptions": {"GamesPerMatch": 1, "Rounds": rounds, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Openings": {"File": str(REPO / "books" / "default.pgn"), "Plies": 4},
        "Adjudication": {"MaxMoves": 40},
        "Engines": FOUR_ENGINES,
    })


class Runner:
    """`swiss-runner run CONFIG` in its own process, read through the database."""

    def __init__(self, config: Path):
        self.config = config
        self.db = config.parent / "state" / "swiss.sqlite3"
        self.out = config.parent / f"run-{time.monotonic_ns()}.out"
        with open(self.out, "w") as handle:
            self.proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)],
                                         cwd=REPO, env=ENV, stdout=handle,
                                         stderr=subprocess.STDOUT)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        if not self.db.exists():
            return []
        conn = sqlite3.connect(f"{self.db.as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()

    def wait(self, what: str, ok: Callable[[], Any], timeout: float = 60) -> Any:
        return wait_until(ok, what, timeout, self.proc, log=self.out)

    def output(self) -> str:
        return self.out.read_text()

    def command_state(self, cid: int) -> str | None:
        rows = self.query("SELECT state FROM td_commands WHERE id=?", cid)
        return rows[0][0] if rows else None

    def applied(self, cid: int, timeout: float = 30) -> None:
        self.wait(f"TD command {cid} applied",
                  lambda: self.command_state(cid) in ("applied", "refused"), timeout)
        assert self.command_state(cid) == "applied", self.query("SELECT * FROM td_commands")

    def two_games_under_way(self) -> list[int]:
        """Wait until two games run with 6 logged plies or more; their ids."""
        return self.wait("two games under way", lambda: self.running_at_ply(6) if len(
            self.running_at_ply(6)) == 2 else None)

    def running_at_ply(self, ply: int) -> list[int]:
        """Games running with at least ``ply`` logged moves."""
        return [r[0] for r in self.query(
            "SELECT g.game_id FROM games g WHERE g.status='running' AND "
            "(SELECT COUNT(*) FROM moves m WHERE m.game_id=g.game_id) >= ?", ply)]

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        # the engines of a killed runner die with it (their parent's death signal): wait
        # until the database no longer names a live runner
        wait_until(lambda: not main_alive(self.config), "the killed runner to be seen dead",
                   10, step=0.1)

    def finish(self, timeout: float = 240) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"the run did not end; output:\n{self.output()}") from None


def main_alive(config: Path) -> bool:
    from runner.service.lock import runner_alive

    return bool(runner_alive(config.parent / "state" / "swiss.sqlite3"))


def recorded_id(result: subprocess.CompletedProcess[str]) -> int:
    assert result.returncode == 0, result.stderr
    words = result.stdout.split()
    return int(words[words.index("command") + 1].lstrip("#"))


def log_json(config: Path) -> list[dict[str, Any]]:
    result = td(config, "log", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["format"] == "swiss-runner-td-log"
    return doc["commands"]


def check_views_agree(config: Path) -> dict[str, Any]:
    """The database, the PGN, the JSON snapshot and `status --json` tell one story."""
    state_dir = config.parent / "state"
    db = state_dir / "swiss.sqlite3"
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
    finished = conn.execute("SELECT game_id, round, game_in_round, result, termination, "
                            "termination_details FROM games WHERE status='finished' "
                            "ORDER BY finish_seq").fetchall()
    conn.close()
    games = pgn_games(state_dir / "games.pgn")
    assert [(g.headers["Round"], g.headers["Result"]) for g in games] == \
        [(f"{r[1]}.{r[2]}", r[3]) for r in finished]
    snapshot = json.loads((state_dir / "swiss.json").read_text())
    status = subprocess.run([sys.executable, "-m", "runner", "status", str(config), "--json"],
                            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["version"] == snapshot["version"] == 2
    assert doc["td"]["decisions"] == snapshot["td"]["decisions"] == [
        c for c in log_json(config) if c["state"] != "pending"]
    assert doc["games_finished"] == snapshot["games_finished"] == len(finished)
    return doc


# --------------------------------------------------------------------------- refusals


@pytest.fixture()
def small_event(tmp_path: Path) -> Path:
    """A finished five-player event of scripted games (no engine needed to refuse)."""
    config = loop_config(tmp_path, players=5, Rounds=2)
    assert cli_run(load_config(config), run_args(), play_game=backend()) == 0
    return config


@pytest.mark.slow
@pytest.mark.parametrize(("argv", "message"), [
    (["withdraw", "Nobody", "--reason", "r"], "no engine 'Nobody' in this event"),
    (["adjudicate", "1", "1-0", "--reason", "r"], "has ended"),
    (["adjudicate", "99", "1-0", "--reason", "r"], "no game '99'"),
    (["adjudicate", "1.9", "1-0", "--reason", "r"], "no game '1.9'"),
    (["restart", "2.1", "--reason", "r"], "has ended"),
    (["rewind", "--to", "0", "--reason", "r"], "no game '0'"),
    (["rewind", "--to", "x", "--reason", "r"], "no game 'x'"),
    # a complete event: what cannot apply to it is refused (rewind and note can)
    (["resume", "--reason", "r"], "resume: the event is complete (all 2 rounds played, every "
                                  "game finished): there is nothing to resume"),
    (["pause", "--reason", "r"], "pause: the event is complete (all 2 rounds played, every "
                                 "game finished): there is no game left to pause"),
    (["pause", "--after-round", "--reason", "r"], "there is no game left to pause"),
    (["pause", "--now", "--reason", "r"], "there is no game left to pause"),
    (["withdraw", "P1", "--reason", "r"], "all 2 rounds are played"),
    (["withdraw", "P1", "--now", "--reason", "r"], "there is no pairing left"),
    (["restart", "5", "--end-of-round", "--reason", "r"], "has ended"),
    (["gpu", "off", "0", "--reason", "r"], "gpu: the event is complete"),
    (["note", "  "], "needs some text"),
    (["pause", "--reason", "  "], "--reason must say why"),
])
def test_a_command_that_cannot_apply_is_refused_and_nothing_is_recorded(
        small_event: Path, argv: list[str], message: str) -> None:
    db = small_event.parent / "state" / "swiss.sqlite3"
    before = db.read_bytes()
    result = td(small_event, *argv)
    assert result.returncode == 2, result
    assert message in result.stderr and "nothing was recorded" in result.stderr
    assert "Traceback" not in result.stderr
    assert log_json(small_event) == []
    assert db.read_bytes() == before


@pytest.mark.slow
def test_a_complete_event_still_takes_a_note_and_a_rewind(small_event: Path) -> None:
    """The two actions that do apply to a complete event (every other is refused above)."""
    recorded_id(td(small_event, "note", "closing ceremony"))
    recorded_id(td(small_event, "rewind", "--to", "2.1", "--reason", "wrong book in round 2"))
    assert [c["action"] for c in log_json(small_event)] == ["note", "rewind"]


@pytest.mark.slow
def test_reason_is_required_and_no_event_is_refused(tmp_path: Path, small_event: Path) -> None:
    result = td(small_event, "pause")
    assert result.returncode == 2 and "--reason" in result.stderr
    other = loop_config(tmp_path / "other")
    result = td(other, "note", "hello")
    assert result.returncode == 2 and "no event recorded yet" in result.stderr
    assert not (tmp_path / "other" / "state" / "swiss.sqlite3").exists()


@pytest.fixture()
def stopped_event(tmp_path: Path) -> Path:
    """The same event stopped (SIGTERM) after its first four games."""
    config = loop_config(tmp_path, players=5, Rounds=2)

    def stop_at_5(spec: GameSpec) -> None:
        if spec.game_id == 5:
            os.kill(os.getpid(), signal.SIGTERM)

    assert cli_run(load_config(config), run_args(), play_game=backend(hook=stop_at_5)) == 130
    return config


@pytest.mark.slow
def test_a_second_pause_is_refused_while_the_first_is_pending(stopped_event: Path) -> None:
    cid = recorded_id(td(stopped_event, "pause", "--reason", "lunch"))
    assert td(stopped_event, "note", "n").returncode == 0
    again = td(stopped_event, "pause", "--now", "--reason", "again")
    assert again.returncode == 2 and "already paused" in again.stderr
    log = log_json(stopped_event)
    assert [(c["id"], c["action"], c["state"], c["args"]) for c in log] == [
        (cid, "pause", "pending", {"mode": "finish"}), (cid + 1, "note", "pending",
                                                        {"text": "n"})]
    assert log[0]["who"].count("@") == 1 and log[0]["reason"] == "lunch"


# --------------------------------------------------------------------------- a running event


@pytest.mark.slow
@pytest.mark.engines
def test_td_commands_on_a_running_event_of_real_engines(tmp_path: Path) -> None:
    config = engines_config(tmp_path, rounds=2)
    run = Runner(config)
    first = run.two_games_under_way()
    adjudicated, restarted = sorted(first)

    note = recorded_id(td(config, "note", "hello from the TD"))
    adj = recorded_id(td(config, "adjudicate", str(adjudicated), "0-1", "--reason",
                         "engine hung"))
    run.applied(note)
    run.applied(adj)
    plies_before = len(run.query("SELECT ply FROM moves WHERE game_id=?", restarted))
    again = td(config, "adjudicate", str(adjudicated), "1-0", "--reason", "twice")
    assert again.returncode == 2 and "has ended" in again.stderr

    rst = recorded_id(td(config, "restart", str(restarted), "--now", "--reason",
                         "crash, replayed at once (7.d)"))
    run.applied(rst)
    run.wait("the restarted game's second attempt", lambda: run.query(
        "SELECT attempt FROM games WHERE game_id=?", restarted)[0][0] >= 2)
    # played again from move one: its log starts over (the book plies first)
    run.wait("the restarted game under way again", lambda: run.running_at_ply(6))
    assert plies_before >= 6

    pause = recorded_id(td(config, "pause", "--now", "--reason", "server maintenance"))
    run.applied(pause)
    run.wait("games interrupted", lambda: not run.query(
        "SELECT 1 FROM games WHERE status='running'"))
    interrupted = run.query("SELECT game_id, (SELECT COUNT(*) FROM moves m WHERE "
                            "m.game_id=g.game_id) FROM games g WHERE status!='finished' AND "
                            "attempt>0")
    # the loop holds the pause (announced from its wait: no game starts meanwhile), and
    # the snapshot written then shows it
    run.wait("the runner holding the pause", lambda: "Paused by the TD: server maintenance"
             in run.output())
    run.wait("the snapshot showing the pause", lambda: ((json.loads(
        (tmp_path / "state" / "swiss.json").read_text()).get("td") or {}).get("paused")
        or {}).get("active"))
    assert run.proc.poll() is None  # a paused runner stays up
    assert not run.query("SELECT 1 FROM games WHERE status='running'")
    state = json.loads((tmp_path / "state" / "swiss.json").read_text())
    assert state["td"]["paused"]["active"] and state["td"]["paused"]["reason"] == \
        "server maintenance"
    status = subprocess.run([sys.executable, "-m", "runner", "status", str(config)],
                            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)
    assert "TD: paused by the TD: server maintenance" in status.stdout

    # a restart of the process keeps the event paused
    run.kill9()
    run = Runner(config)
    run.wait("the new runner up, holding the pause", lambda: "Paused by the TD: server "
             "maintenance" in run.output())
    assert not run.query("SELECT 1 FROM games WHERE status='running'")
    resume = recorded_id(td(config, "resume", "--reason", "maintenance over"))
    run.applied(resume)
    assert run.finish() == 0, run.output()
    out = run.output()
    for gid, plies in interrupted:
        if plies > 4:  # engine moves logged: it goes on from its position (7.c.v)
            assert f"Game {gid} (" in out and f"continues from ply {plies} (TCEC rule 7.c.v)" in out

    # exactly once each, in order, and every view agrees
    log = log_json(config)
    assert [(c["id"], c["action"], c["state"]) for c in log] == [
        (note, "note", "applied"), (adj, "adjudicate", "applied"),
        (rst, "restart", "applied"), (pause, "pause", "applied"),
        (resume, "resume", "applied")]
    doc = check_views_agree(config)
    assert doc["complete"] and doc["td"]["paused"] is None
    assert doc["td"]["notes"][0]["text"] == "hello from the TD"
    game = next(g for g in pgn_games(tmp_path / "state" / "games.pgn")
                if g.headers.get("Termination") == "adjudication"
                and "TD decision" in g.headers.get("TerminationDetails", ""))
    assert game.headers["Result"] == "0-1"
    assert "engine hung" in game.headers["TerminationDetails"]
    rows = run.query("SELECT result, termination FROM games WHERE game_id=?", adjudicated)
    assert rows == [("0-1", "adjudication")]
    audit = subprocess.run([sys.executable, "-m", "runner", "audit",
                            str(tmp_path / "state" / "games.pgn"), "--seeds",
                            str(_seeds(tmp_path))], cwd=REPO, env=ENV, capture_output=True,
                           text=True, timeout=60)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def _seeds(tmp_path: Path) -> Path:
    path = tmp_path / "seeds.txt"
    path.write_text("Stockfish\nToga\nFairy\nEthereal\n")
    return path


# --------------------------------------------------------------------------- a stopped event


@pytest.mark.slow
@pytest.mark.engines
def test_td_commands_given_while_no_runner_runs_apply_at_the_next_run(tmp_path: Path) -> None:
    alerts = tmp_path / "alerts.jsonl"  # each TD decision applied is an alert (docs/alerts.md)
    config = engines_config(tmp_path, rounds=2, Alerts={
        "Command": ["sh", "-c", f"cat >> {alerts}; echo >> {alerts}"], "On": ["td_decision"]})
    run = Runner(config)
    ids = run.two_games_under_way()
    run.kill9()
    adjudicated, restarted = sorted(ids)
    logged = run.query("SELECT COUNT(*) FROM moves WHERE game_id=?", adjudicated)[0][0]

    given = td(config, "adjudicate", f"1.{_label(run, adjudicated)}", "1/2-1/2", "--reason",
               "agreed by the TD")
    assert "no runner is running: the next `swiss-runner run` applies it" in given.stdout
    adj = recorded_id(given)
    rst = recorded_id(td(config, "restart", str(restarted), "--end-of-round", "--reason",
                         "hardware fault"))
    pause = recorded_id(td(config, "pause", "--after-round", "--reason", "end of day 1"))
    note = recorded_id(td(config, "note", "day 1 ends after round 1"))
    assert {c["state"] for c in log_json(config)} == {"pending"}

    # the next run applies them; a kill -9 right after the first is applied applies none twice
    run = Runner(config)
    run.wait("the adjudication applied", lambda: run.command_state(adj) == "applied")
    run.kill9()
    recorded = run.query("SELECT result, pgn FROM games WHERE game_id=?", adjudicated)
    run = Runner(config)
    run.wait("paused after round 1", lambda: "Paused by the TD: end of day 1" in run.output(),
             timeout=120)
    assert run.query("SELECT result, pgn FROM games WHERE game_id=?", adjudicated) == recorded
    assert "adjudicate game" not in run.output()  # not applied again
    assert run.query("SELECT state FROM rounds ORDER BY number") == [("complete",)]
    # the restarted game was played from its start: no resume from the killed run's moves
    assert run.query("SELECT attempt FROM games WHERE game_id=?", restarted)[0][0] >= 2
    # (the second run may have begun the replay before its kill -9: the third then continues
    # that replay, attempt 2, which it may say; the killed first run's moves are gone)
    assert not run.query("SELECT ply FROM moves WHERE game_id=? AND attempt=1", restarted)
    assert logged >= 6 and recorded[0][0] == "1/2-1/2"

    run.proc.send_signal(signal.SIGINT)
    assert run.finish() == 130
    doc = check_views_agree(config)
    assert doc["td"]["paused"]["active"] and doc["td"]["paused"]["round"] == 1
    log = log_json(config)
    assert [(c["id"], c["state"]) for c in log] == [(adj, "applied"), (rst, "applied"),
                                                    (pause, "applied"), (note, "applied")]
    resume = recorded_id(td(config, "resume", "--reason", "day 2"))
    run = Runner(config)
    assert run.finish() == 0, run.output()
    assert log_json(config)[-1]["id"] == resume
    # (a runner killed with SIGKILL sends nothing more: the alerts of the decisions it applied
    # last may be lost, never sent twice)
    sent = [json.loads(line) for line in alerts.read_text().splitlines() if line.strip()]
    logged = [(c["action"], c["reason"] or None, c["args"]) for c in log_json(config)]
    seen = [(d["data"]["action"], d["data"]["reason"], d["data"]["arguments"]) for d in sent]
    assert {d["kind"] for d in sent} == {"td_decision"} and len(set(map(str, seen))) == len(seen)
    assert all(entry in logged for entry in seen) and seen[-1] == ("resume", "day 2", {})
    doc = check_views_agree(config)
    assert doc["complete"] and doc["games_finished"] == 4


def _label(run: Runner, game_id: int) -> int:
    return run.query("SELECT game_in_round FROM games WHERE game_id=?", game_id)[0][0]


# --------------------------------------------------------------------------- random moments


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_commands_at_moments_the_test_does_not_choose(tmp_path: Path, seed: int) -> None:
    """A thread gives random commands (as `td` does) at random moments while a scripted
    event plays: every command ends applied or refused, once, and the event, its PGN and
    its state agree at the end."""
    import random
    import threading

    from runner.service.td.director import give_command as give
    from runner.store.database import Store

    config_path = loop_config(tmp_path, players=5, Rounds=3)
    config = load_config(config_path)
    rng = random.Random(seed)
    done = threading.Event()
    given: list[tuple[int, str]] = []

    def director() -> None:
        paused = False
        while not done.is_set():
            time.sleep(rng.uniform(0.02, 0.25))
            if not config.database.exists():
                continue
            game = str(rng.randint(1, 12))
            with contextlib.suppress(sqlite3.Error):
                conn = sqlite3.connect(f"{config.database.as_uri()}?mode=ro", uri=True)
                try:
                    running = [r[0] for r in conn.execute(
                        "SELECT game_id FROM games WHERE status='running'")]
                finally:
                    conn.close()
                if running and rng.random() < 0.8:
                    game = str(rng.choice(running))
            choice = rng.choice(["note", "pause", "adjudicate", "adjudicate", "restart",
                                 "restart"])
            if paused:
                choice, paused = "resume", False
            elif choice == "pause":
                paused = True
            args = {"note": {"text": f"note {len(given)}"},
                    "pause": {"mode": rng.choice(["finish", "now", "after-round"])},
                    "resume": {},
                    "adjudicate": {"game": game, "result": rng.choice(["1-0", "0-1"])},
                    "restart": {"game": game, "when": rng.choice(["now", "end-of-round"])},
                    }[choice]
            try:
                cid, _ = give(config, choice, args, "" if choice == "note" else "random", "t@h")
            except Exception:  # noqa: BLE001 - the database being created
                continue
            if cid:
                given.append((cid, choice))
            elif choice in ("pause", "resume"):
                paused = choice == "resume"  # refused: as before
        if paused:  # refused when the event is complete by now: nothing is recorded then
            cid, _ = give(config, "resume", {}, "the end", "t@h")
            if cid:
                given.append((cid, "resume"))

    thread = threading.Thread(target=director, daemon=True)
    thread.start()
    stop = threading.Timer(6.0, done.set)
    stop.start()
    try:
        assert cli_run(config, run_args(), play_game=backend(delay=0.3)) == 0
    finally:
        done.set()
        stop.cancel()
        thread.join(timeout=10)
    # commands given during the run's last moments are applied by the next run (a pause of
    # a complete event holds nothing)
    assert cli_run(config, run_args(), play_game=backend()) == 0
    store = Store.open(config.database)
    try:
        from runner.store import decisions

        log = decisions.commands(store.conn)
        assert [(c.id, c.action) for c in log] == sorted(given)
        applied = {c.action for c in log if c.state == "applied"}
        assert applied & {"adjudicate", "restart", "pause"}, applied
        assert {c.state for c in log} <= {"applied", "refused"}
        assert len(given) >= 5
        for c in log:
            if c.action == "adjudicate" and c.state == "applied":
                row = store.conn.execute("SELECT result, termination FROM games WHERE "
                                         "game_id=?", (c.args["game"],)).fetchone()
                assert row == (c.args["result"], "adjudication")
        assert store.counts() == {"finished": 12}
        assert store.pgn_matches(config.pgn_out)
    finally:
        store.close()
    audit = subprocess.run([sys.executable, "-m", "runner", "audit", str(config.pgn_out),
                            "--seeds", str(_loop_seeds(tmp_path))], cwd=REPO, env=ENV,
                           capture_output=True, text=True, timeout=60)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def _loop_seeds(tmp_path: Path) -> Path:
    path = tmp_path / "seeds.txt"
    path.write_text("".join(f"P{i}\n" for i in range(1, 6)))
    return path


# --------------------------------------------------------------------------- withdraw, rewind


def five_engines_config(directory: Path) -> Path:
    path = engines_config(directory, rounds=3)
    data = path.read_text() + (
        "- Name: Fairymax\n  Command: fairymax\n  Protocol: xboard\n")
    path.write_text(data)
    return path


@pytest.mark.slow
@pytest.mark.engines
def test_withdraw_now_and_rewind_on_a_running_event(tmp_path: Path) -> None:
    """The dispatch of withdraw and rewind to runner.service.td.rules (issue 39's store
    functions; skipped on a build without them): the withdrawn engine's game in progress is
    lost by forfeit, it is paired no more, a rewind voids the games from its point (kept in
    the voided PGN) and the final PGN passes the audit."""
    pytest.importorskip("runner.service.td.rules")
    config = five_engines_config(tmp_path)
    run = Runner(config)
    playing = run.two_games_under_way()
    engine = run.query("SELECT black FROM games WHERE game_id=?", min(playing))[0][0]
    wd = recorded_id(td(config, "withdraw", engine, "--now", "--reason", "crashes"))
    run.applied(wd)
    row = run.query("SELECT status, result, white FROM games WHERE game_id=?", min(playing))
    assert row[0][0] == "finished" and row[0][1] == ("1-0" if row[0][2] != engine else "0-1")
    again = td(config, "withdraw", engine, "--reason", "twice")
    assert again.returncode == 2 and "withdrawn already" in again.stderr
    run.wait("round 3 under way", lambda: run.query(
        "SELECT 1 FROM games WHERE round=3 AND status='running'"), timeout=120)
    first_of_2 = run.query("SELECT MIN(game_id) FROM games WHERE round=2")[0][0]
    rw = recorded_id(td(config, "rewind", "--to", str(first_of_2), "--reason",
                        "wrong pairing"))
    run.applied(rw)
    assert run.finish() == 0, run.output()
    names = run.query("SELECT white, black FROM games WHERE round>1")
    assert names and all(engine not in pair for pair in names)
    voided = pgn_games(tmp_path / "state" / "games.voided.pgn")  # round 2 as first played
    assert len(voided) == 2 and {g.headers["Round"] for g in voided} == {"2.1", "2.2"}
    doc = check_views_agree(config)
    assert doc["complete"]
    seeds = tmp_path / "seeds5.txt"
    seeds.write_text("Stockfish\nToga\nFairy\nEthereal\nFairymax\n")
    audit = subprocess.run([sys.executable, "-m", "runner", "audit",
                            str(tmp_path / "state" / "games.pgn"), "--seeds", str(seeds)],
                           cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)
    assert audit.returncode == 0, audit.stdout + audit.stderr


@pytest.mark.slow
@pytest.mark.engines
def test_restart_at_the_end_of_the_round_and_a_pause_that_lets_games_finish(
        tmp_path: Path) -> None:
    from datetime import datetime

    config = engines_config(tmp_path, rounds=2)
    run = Runner(config)
    playing = run.two_games_under_way()
    again, other = sorted(playing)
    rst = recorded_id(td(config, "restart", str(again), "--end-of-round", "--reason",
                         "engine crash, replayed at the end of the round (7.d)"))
    run.applied(rst)
    run.wait("the restarted game played again", lambda: run.query(
        "SELECT 1 FROM games WHERE game_id=? AND attempt>=2 AND status='running'", again))
    started = run.query("SELECT started FROM games WHERE game_id=?", again)[0][0]
    ended = run.query("SELECT end_time FROM games WHERE game_id=?", other)[0][0]
    assert ended is not None  # the round's other game ended first
    assert datetime.fromisoformat(started) >= datetime.fromisoformat(ended).replace(
        microsecond=0)

    pause = recorded_id(td(config, "pause", "--reason", "end of the session"))
    run.applied(pause)
    run.wait("the game in progress finished", lambda: run.query(
        "SELECT status FROM games WHERE game_id=?", again)[0][0] == "finished")
    # the loop holds the pause before its next pairing (announced from its wait)
    run.wait("the runner holding the pause", lambda: "Paused by the TD: end of the session"
             in run.output())
    assert run.proc.poll() is None
    assert run.query("SELECT COUNT(*) FROM rounds") == [(1,)]  # no new pairing while paused
    assert not run.query("SELECT 1 FROM games WHERE status='running'")
    plies = run.query("SELECT moves FROM games WHERE game_id=?", again)[0][0].split()
    resume = recorded_id(td(config, "resume", "--reason", "next session"))
    run.applied(resume)
    assert run.finish() == 0, run.output()
    assert "was interrupted" not in run.output()  # played from its start, not resumed
    replayed = next(g for g in pgn_games(tmp_path / "state" / "games.pgn")
                    if g.headers.get("TDRestart"))
    assert replayed.headers["TDRestart"] == (
        f"#{rst} by {log_json(config)[0]['who']}: engine crash, replayed at the end of the "
        "round (7.d)")
    assert replayed.headers["Round"] == "1.{}".format(run.query(
        "SELECT game_in_round FROM games WHERE game_id=?", again)[0][0])
    assert len(plies) > 4
    assert [(c["action"], c["state"]) for c in log_json(config)] == [
        ("restart", "applied"), ("pause", "applied"), ("resume", "applied")]
    check_views_agree(config)
