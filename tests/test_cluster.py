"""Games on several machines: a real Dask scheduler and two real `swiss-runner worker`
processes on 127.0.0.1, the runner as a real subprocess, and kill -9 of a worker and of the
runner in the middle of a game.

Each test starts its own scheduler (``python -m distributed.cli.dask_scheduler``) on a free
loopback port and two workers (``python -m runner worker``), so a killed process never
leaks into another test. The engines are the deterministic fake UCI engine
(tests/fakes/det_engine.py: its move depends on the position only) and, for the plain event,
Stockfish and Ethereal limited by nodes. Mid-game kills are placed by what the store shows
(a game running on a named worker with moves logged), never by the wall clock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import chess.pgn
import psutil
import pytest
from testkit import need_distributed, pgn_games, wait_until, write_config

REPO = Path(__file__).resolve().parent.parent
FAKE = REPO / "tests" / "fakes" / "det_engine.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
# the runner's line for a game that goes on from its logged position (TCEC rule 7.c.v)
CONTINUED = re.compile(r"continues from ply \d+ \(TCEC rule 7\.c\.v\)")

need_distributed()

pytestmark = [pytest.mark.engines, pytest.mark.slow]


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A scheduler and workers, all subprocesses of this test."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.pids: set[int] = set()  # every process started here (owner-token prefixes)

    def _start(self, key: str, argv: list[str],
               env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        with open(self.dir / f"{key}.log", "ab") as log:
            proc = subprocess.Popen(argv, cwd=REPO, env={**ENV, **(env or {})}, stdout=log,
                                    stderr=subprocess.STDOUT)
        self.procs[key] = proc
        self.pids.add(proc.pid)
        return proc

    def start_scheduler(self) -> None:
        self._start("scheduler", [sys.executable, "-m", "distributed.cli.dask_scheduler",
                                  "--host", "127.0.0.1", "--port", str(self.port),
                                  "--no-dashboard"])

    def start_worker(self, name: str, env: dict[str, str] | None = None, slots: int = 1) -> None:
        self._start(name, [sys.executable, "-m", "runner", "worker", self.address,
                           "--name", name, "--slots", str(slots)], env)

    def joined(self, name: str) -> bool:
        log = self.dir / f"{name}.log"
        return log.exists() and f"{name} joined" in log.read_text(errors="replace")

    def run(self, config: Path, log: str = "runner") -> subprocess.Popen[bytes]:
        return self._start(log, [sys.executable, "-m", "runner", "run", str(config)])

    def log(self, key: str) -> str:
        return (self.dir / f"{key}.log").read_text(errors="replace")

    def close(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """Scheduler + workers w1, w2; ``@pytest.mark.worker_env(w1={...})`` sets a worker's
    environment."""
    marker = request.node.get_closest_marker("worker_env")
    envs = marker.kwargs if marker else {}
    c = Cluster(tmp_path)
    try:
        c.start_scheduler()
        for name in ("w1", "w2"):
            c.start_worker(name, envs.get(name))
        for name in ("w1", "w2"):
            wait_until(lambda n=name: c.joined(n), f"worker {name} joins", 90,
                       c.procs[name])
        yield c
    finally:
        c.close()


def engines_of(pids: set[int]) -> list[int]:
    """Live processes whose owner token (SWISS_RUNNER_OWNER=<pid>:...) names one of ``pids``."""
    prefixes = tuple(f"{pid}:" for pid in pids)
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            owner = proc.environ().get("SWISS_RUNNER_OWNER", "")
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        if owner.startswith(prefixes) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


def no_engines_left(pids: set[int]) -> None:
    wait_until(lambda: not engines_of(pids), f"engines of {sorted(pids)} exit", 15)


# --------------------------------------------------------------------------- the event


def cluster_config(directory: Path, address: str, *, real: bool, rounds: int,
                 delay_ms: int = 30, wrapper: Path | None = None, tc: str = "60+1",
                 overdue_s: float = 60, cluster: dict[str, Any] | None = None,
                 replace: dict[str, dict[str, Any]] | None = None,
                 interruption: dict[str, Any] | None = None) -> Path:
    if real:
        stockfish, ethereal = shutil.which("stockfish"), shutil.which("ethereal-chess")
        if not stockfish or not ethereal:
            pytest.skip("Stockfish and Ethereal (Debian packages) are not installed")
        engines = [{"Name": f"SF{i}", "Command": stockfish, "Nodes": 2000 + 500 * i,
                    "Options": {"Threads": 1, "Hash": 8}} for i in (1, 2)]
        engines += [{"Name": f"ETH{i}", "Command": ethereal, "Nodes": 2000 + 500 * i,
                     "Options": {"Threads": 1, "Hash": 8}} for i in (1, 2)]
    else:
        engines = [{"Name": f"D{i}", "Command": sys.executable,
                    "Args": [str(FAKE), "greedy", f"salt{i}", str(delay_ms)], "Nodes": 1}
                   for i in range(1, 5)]
        if wrapper is not None:  # through a script that fails where BROKEN_ENGINE is set
            engines = [{**e, "Command": str(wrapper), "Args": [sys.executable, *e["Args"]]}
                       for e in engines]
    engines = [(replace or {}).get(e["Name"], e) for e in engines]
    path = write_config(directory, {
        "Event": "cluster test", "TimeControl": tc, "Concurrency": 2,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": rounds, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 40},
        # interrupted games continue from their position, never shortcut by 7.c.ii-iv
        "Interruption": interruption or {"Mode": "resume", "Adjudicate": False},
        "Cluster": {"Scheduler": address, "WaitS": 60, "OverdueS": overdue_s, **(cluster or {})},
        "Engines": engines,
    })
    (directory / "seeds.txt").write_text("".join(e["Name"] + "\n" for e in engines))
    return path


def db(directory: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{(directory / 'state' / 'swiss.sqlite3').as_uri()}?mode=ro",
                           uri=True)


def running_game(directory: Path, min_moves: int,
                 on: str | None = None) -> tuple[int, str] | None:
    """(game id, worker name) of a game in progress with at least ``min_moves`` logged
    (``on``: on that worker only)."""
    if not (directory / "state" / "swiss.sqlite3").exists():
        return None
    conn = db(directory)
    try:
        for game_id, started in conn.execute(
                "SELECT game_id, started_event FROM games WHERE status='running'"):
            n = conn.execute("SELECT COUNT(*) FROM moves WHERE game_id=?",
                             (game_id,)).fetchone()[0]
            worker = json.loads(started or "{}").get("worker", "")
            if n >= min_moves and worker and on in (None, worker):
                return game_id, worker
    except sqlite3.Error:  # not created yet, or busy
        return None
    finally:
        conn.close()
    return None


def game_in_progress(directory: Path, runner: subprocess.Popen[bytes]) -> tuple[int, str]:
    """Wait for a game in progress on a worker with 12 moves logged: (game id, worker)."""
    found: list[tuple[int, str]] = []

    def mid_game() -> bool:
        hit = running_game(directory, 12)
        if hit:
            found.append(hit)
        return hit is not None

    wait_until(mid_game, "a game in progress on a worker", 120, runner)
    return found[-1]


def check_complete(directory: Path, total: int) -> list[chess.pgn.Game]:
    """Every game in the PGN once, each named its worker, and `audit` agrees."""
    games = pgn_games(directory / "state" / "games.pgn")
    keys = [(g.headers["Round"], g.headers["White"], g.headers["Black"]) for g in games]
    assert len(keys) == total and len(set(keys)) == total, keys
    for g in games:  # the workers that played its moves, in order ("w1" or "w1, w2")
        names = g.headers.get("Worker", "").split(", ")
        assert set(names) <= {"w1", "w2"} and len(names) == len(set(names)), g.headers
    assert all(not g.errors and g.end().board().ply() > 0 for g in games)
    audit = subprocess.run([sys.executable, "-m", "runner", "audit",
                            str(directory / "state" / "games.pgn"), "--seeds",
                            str(directory / "seeds.txt")], cwd=REPO, env=ENV,
                           capture_output=True, text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    conn = db(directory)
    try:
        assert conn.execute("SELECT COUNT(*) FROM games WHERE status!='finished'"
                            ).fetchone()[0] == 0
    finally:
        conn.close()
    return games


# --------------------------------------------------------------------------- tests


def test_event_on_two_workers(cluster: Cluster, tmp_path: Path) -> None:
    """A short real event (Stockfish/Ethereal, nodes-limited) plays on both workers."""
    config = cluster_config(tmp_path, cluster.address, real=True, rounds=2)
    runner = cluster.run(config)
    assert runner.wait(300) == 0, cluster.log("runner")
    games = check_complete(tmp_path, 8)
    assert {g.headers["Worker"] for g in games} == {"w1", "w2"}  # none interrupted
    assert all("ResumedFromPly" not in g.headers for g in games)
    out = cluster.log("runner")
    assert "Connected to the Dask scheduler" in out
    assert "Started game 1 of 8 (" in out and " on w" in out
    status = subprocess.run([sys.executable, "-m", "runner", "status", str(config), "--json"],
                            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)
    state = json.loads(status.stdout)
    assert state["complete"] is True
    workers = {w["name"]: w for w in state["workers"]}
    assert set(workers) == {"w1", "w2"} and sum(w["games"] for w in workers.values()) == 8
    assert all(w["slots"] == 1 and w["busy"] == 0 and w["state"] == "joined"
               for w in workers.values())
    text = subprocess.run([sys.executable, "-m", "runner", "status", str(config)], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=60).stdout
    assert "Workers:" in text and "w1: joined, 1 slot(s), 0 busy" in text, text
    no_engines_left(cluster.pids)


def test_worker_killed_mid_game(cluster: Cluster, tmp_path: Path) -> None:
    """kill -9 of the worker playing a game: the game continues from its logged position on
    the other worker; no loss is scored and the dead worker's engines die with it."""
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=1)
    alerts = tmp_path / "alerts.jsonl"  # Alerts (docs/alerts.md): a command keeps each one
    keep = f"import sys; open({str(alerts)!r}, 'a').write(sys.stdin.read() + chr(10))"
    with open(config, "a", encoding="utf-8") as out:
        out.write("Alerts: " + json.dumps({"Command": [sys.executable, "-c", keep],
                                           "On": ["worker_lost"], "DiskFreeMb": 0}) + "\n")
    runner = cluster.run(config)
    game_id, victim = game_in_progress(tmp_path, runner)
    victim_pid = cluster.procs[victim].pid
    assert engines_of({victim_pid}), "the victim worker runs the game's engines"
    os.kill(victim_pid, signal.SIGKILL)
    cluster.procs[victim].wait(10)
    no_engines_left({victim_pid})  # parent-death signal: the engines died with the worker
    assert runner.wait(300) == 0, cluster.log("runner")
    games = check_complete(tmp_path, 4)
    out = cluster.log("runner")
    assert f"worker {victim} was lost at ply" in out, out
    assert f"Game {game_id} (" in out and CONTINUED.search(out)
    survivor = "w2" if victim == "w1" else "w1"
    resumed = [g for g in games if "ResumedFromPly" in g.headers]
    # the PGN names both workers that played its moves, the first one first
    assert len(resumed) == 1 and resumed[0].headers["Worker"] == f"{victim}, {survivor}"
    assert int(resumed[0].headers["ResumedFromPly"]) >= 12
    assert "forfeit" not in out.lower() and "disconnect" not in out.lower()
    lost = [json.loads(line) for line in alerts.read_text().splitlines()]
    assert any(a["kind"] == "worker_lost" and a["data"]["worker"] == victim
               and a["data"]["games"] == [game_id] for a in lost), lost
    no_engines_left(cluster.pids)


def test_runner_killed_mid_game(cluster: Cluster, tmp_path: Path) -> None:
    """kill -9 of the runner while workers play: the workers drop the old run's games (their
    engines stop), and the restarted runner resumes each interrupted game once."""
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=1)
    first = cluster.run(config, log="runner1")
    wait_until(lambda: running_game(tmp_path, 12) is not None, "a game in progress", 120,
               first)
    first.kill()
    first.wait(10)
    # the scheduler releases the dead client's tasks; each game stops and kills its engines
    workers = {cluster.procs[w].pid for w in ("w1", "w2")}
    no_engines_left(workers)
    conn = db(tmp_path)
    try:
        interrupted = {r[0] for r in conn.execute(
            "SELECT game_id FROM games WHERE status='running'")}
        finished_before = {r[0] for r in conn.execute(
            "SELECT game_id FROM games WHERE status='finished'")}
    finally:
        conn.close()
    assert interrupted
    second = cluster.run(config, log="runner2")
    assert second.wait(300) == 0, cluster.log("runner2")
    games = check_complete(tmp_path, 4)
    out = cluster.log("runner2")
    for game_id in interrupted:
        # resumed once: one line of its own (the start-up list names it too, indented)
        assert [line.startswith(f"Game {game_id} (") for line in out.splitlines()].count(
            True) == 1, out
    resumed = [g for g in games if "ResumedFromPly" in g.headers]
    assert len(resumed) == len(interrupted)
    conn = db(tmp_path)
    try:
        attempts = dict(conn.execute("SELECT game_id, attempt FROM games"))
    finally:
        conn.close()
    for game_id, attempt in attempts.items():  # nothing played twice
        assert attempt == (2 if game_id in interrupted else 1), attempts
    assert not finished_before & interrupted
    no_engines_left(cluster.pids)


def test_scheduler_killed_mid_event(cluster: Cluster, tmp_path: Path) -> None:
    """kill -9 of the scheduler mid-game, started again on the same port: the runner waits
    and says so, the workers come back by themselves, the game in flight continues from its
    position, the event completes."""
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=1)
    runner = cluster.run(config)
    wait_until(lambda: running_game(tmp_path, 12) is not None, "a game in progress", 120,
               runner)
    cluster.procs["scheduler"].kill()
    cluster.procs["scheduler"].wait(10)
    workers = {cluster.procs[w].pid for w in ("w1", "w2")}
    no_engines_left(workers)  # the games stop with their Dask workers
    time.sleep(2)
    cluster.start_scheduler()
    assert runner.wait(300) == 0, cluster.log("runner")
    games = check_complete(tmp_path, 4)
    out = cluster.log("runner")
    assert "is back: dispatching again" in out, out
    assert any("ResumedFromPly" in g.headers for g in games)
    assert CONTINUED.search(out)
    for name in ("w1", "w2"):
        assert "lost the scheduler; starting a fresh worker" in cluster.log(name)
        assert cluster.procs[name].poll() is None
    no_engines_left(cluster.pids)


@pytest.mark.worker_env(w1={"BROKEN_ENGINE": "1"})
def test_worker_that_cannot_run_an_engine_refuses(cluster: Cluster, tmp_path: Path) -> None:
    """w1 cannot start the engines (their probe fails there): it refuses the game the
    scheduler gives it first, every game is played on w2, none is forfeited, and the console
    and the workers table say why."""
    wrapper = tmp_path / "engine.sh"
    wrapper.write_text('#!/bin/sh\n[ -n "$BROKEN_ENGINE" ] && exit 3\nexec "$@"\n')
    wrapper.chmod(0o755)
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=1, delay_ms=5,
                          wrapper=wrapper)
    runner = cluster.run(config)
    assert runner.wait(300) == 0, cluster.log("runner")
    games = check_complete(tmp_path, 4)
    out = cluster.log("runner")
    assert "Worker w1 refused game" in out and "it gets no games of D" in out, out
    state = json.loads(subprocess.run(
        [sys.executable, "-m", "runner", "status", str(config), "--json"], cwd=REPO, env=ENV,
        capture_output=True, text=True, timeout=60).stdout)
    w1 = next(w for w in state["workers"] if w["name"] == "w1")
    assert w1["refused"] and all("exit" in why or "start" in why
                                 for why in w1["refused"].values()), w1
    for g in games:
        assert g.headers["Worker"] == "w2"  # nothing played on w1
        assert "forfeit" not in g.headers.get("Termination", "")
    no_engines_left(cluster.pids)


FIXED = Path(tempfile.gettempdir()) / f"swiss-runner-engine-fixed-{uuid.uuid4().hex}"


@pytest.mark.worker_env(w1={"BROKEN_UNTIL": str(FIXED)})
def test_a_refusal_is_retried_after_cluster_retryrefuseds(cluster: Cluster, tmp_path: Path) -> None:
    """w1 cannot start the engines until the operator fixes it: its refusal lasted for the
    whole event; now w1 is asked again after RetryRefusedS, probes again, and plays."""
    wrapper = tmp_path / "engine.sh"
    wrapper.write_text('#!/bin/sh\n[ -n "$BROKEN_UNTIL" ] && [ ! -e "$BROKEN_UNTIL" ] && exit 3\n'
                       'exec "$@"\n')
    wrapper.chmod(0o755)
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=3, delay_ms=30,
                            wrapper=wrapper, cluster={"RetryRefusedS": 2})
    runner = cluster.run(config)
    try:
        wait_until(lambda: "Worker w1 refused game" in cluster.log("runner"), "w1 refuses", 120,
                   runner)
        FIXED.touch()  # the operator installs the engine on w1
        assert runner.wait(300) == 0, cluster.log("runner")
    finally:
        FIXED.unlink(missing_ok=True)
    out = cluster.log("runner")
    assert "it gets no games of D" in out and "for 2 s (then it is asked again)" in out, out
    assert "Worker w1 may play D" in out and "it probes it again" in out, out
    games = check_complete(tmp_path, 12)
    assert any(g.headers["Worker"] == "w1" for g in games), [g.headers["Worker"] for g in games]
    no_engines_left(cluster.pids)


def test_a_game_that_ends_its_worker_again_and_again_stops_the_event(cluster: Cluster,
                                                                     tmp_path: Path) -> None:
    """An engine that kills the machine it plays on (here: its worker process) took down
    one worker after another, its game replayed for ever: after Cluster.MaxLostAttempts the
    event stops (exit 1) naming the game, the workers and why; the record is intact."""
    killer = {"Name": "D4", "Command": sys.executable,
              "Args": [str(REPO / "tests" / "fakes" / "fake_uci.py"), "--kill-parent-on-go", "3"]}
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=1, delay_ms=30,
                            cluster={"MaxLostAttempts": 2}, replace={"D4": killer})
    runner = cluster.run(config)
    assert runner.wait(300) == 1, cluster.log("runner")
    out = cluster.log("runner")
    stop = next((line for line in out.splitlines() if "lost its worker in 2 attempts" in line), "")
    assert "(Cluster.MaxLostAttempts = 2), on w1, w2: attempt 1: w" in stop, out
    assert "D4" in stop and "The event stops here" in stop and "run the same command again" in stop
    assert cluster.procs["w1"].poll() is not None and cluster.procs["w2"].poll() is not None
    status = subprocess.run([sys.executable, "-m", "runner", "status", str(config)], cwd=REPO,
                            env=ENV, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0 and "damaged" not in status.stderr, status.stderr


def test_worker_cut_off_mid_game(cluster: Cluster, tmp_path: Path) -> None:
    """A worker frozen mid-game (SIGSTOP: no heartbeat, no close, like a network cut) is
    noticed by the runner from the game itself (nothing for longer than the mover's clock
    plus Cluster.OverdueS, here no clock and 3 s): the game continues on the other worker.
    When the frozen worker wakes up, its stale game stops and its engines exit."""
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=1, tc="inf",
                          overdue_s=3)
    runner = cluster.run(config)
    game_id, victim = game_in_progress(tmp_path, runner)
    victim_pid = cluster.procs[victim].pid
    os.kill(victim_pid, signal.SIGSTOP)
    try:
        wait_until(lambda: f"worker {victim} sent nothing for" in cluster.log("runner"),
                   "the runner notices the silent worker", 60, runner)
    finally:
        os.kill(victim_pid, signal.SIGCONT)
    assert runner.wait(300) == 0, cluster.log("runner")
    games = check_complete(tmp_path, 4)
    out = cluster.log("runner")
    assert f"Game {game_id} (" in out and CONTINUED.search(out)
    resumed = [g for g in games if "ResumedFromPly" in g.headers]
    assert len(resumed) == 1
    no_engines_left(cluster.pids)


def test_a_game_decided_from_its_log_after_a_kill_names_its_worker(cluster: Cluster,
                                                                    tmp_path: Path) -> None:
    """kill -9 of the worker mid-game, and the log is enough to decide the game (TCEC rule
    7.c.iii, here any score is a draw score after 0 moves): no engine is started again, and
    the PGN still names the worker that played its moves, as the JSON state does."""
    config = cluster_config(tmp_path, cluster.address, real=False, rounds=1,
                            interruption={"Mode": "resume", "Adjudicate": True,
                                          "DrawScoreCp": 100000, "DrawMoves": 0,
                                          # the fakes score material: a kill late enough
                                          # would find both 10 pawns up (7.c.ii) first
                                          "WinScoreCp": 100000})
    runner = cluster.run(config)
    game_id, victim = game_in_progress(tmp_path, runner)
    os.kill(cluster.procs[victim].pid, signal.SIGKILL)
    cluster.procs[victim].wait(10)
    assert runner.wait(300) == 0, cluster.log("runner")
    games = check_complete(tmp_path, 4)
    out = cluster.log("runner")
    assert f"Game {game_id} (" in out and "(TCEC rule 7.c.iii)" in out, out
    decided = [g for g in games if g.headers.get("TerminationDetails") == "server interruption"]
    assert len(decided) == 1 and decided[0].headers["Worker"] == victim, \
        [g.headers for g in games]
    assert int(decided[0].headers["ResumedFromPly"]) >= 12
    conn = db(tmp_path)
    try:
        started = json.loads(conn.execute("SELECT started_event FROM games WHERE game_id=?",
                                          (game_id,)).fetchone()[0])
    finally:
        conn.close()
    assert started["played_by"] == [victim] and started["worker"] == "", started
    no_engines_left(cluster.pids)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def slot_processes(supervisor: int) -> dict[str, int]:
    """The slot processes of a `swiss-runner worker --slots N` supervisor: name -> pid."""
    found = {}
    for child in psutil.Process(supervisor).children():
        try:
            argv = child.cmdline()
        except psutil.Error:
            continue
        if "--name" in argv and child.status() != psutil.STATUS_ZOMBIE:
            found[argv[argv.index("--name") + 1]] = child.pid
    return found


def test_one_process_per_game_slot(tmp_path: Path) -> None:
    """`worker --slots 2` runs two single-slot worker processes m/1 and m/2 under one
    supervisor: both play; a slot process killed mid-game is started again and its game
    continues from its position; kill -9 of the supervisor takes its slots and their engines
    with it."""
    c = Cluster(tmp_path)
    try:
        c.start_scheduler()
        c.start_worker("m", slots=2)
        for slot in ("m/1", "m/2"):
            wait_until(lambda s=slot: f"{s} joined" in c.log("m"), f"slot {slot} joins", 90,
                       c.procs["m"])
        supervisor = c.procs["m"].pid
        slots = slot_processes(supervisor)
        assert set(slots) == {"m/1", "m/2"}, slots
        config = cluster_config(tmp_path, c.address, real=False, rounds=2)
        runner = c.run(config)
        game_id, victim = game_in_progress(tmp_path, runner)
        os.kill(slots[victim], signal.SIGKILL)
        no_engines_left({slots[victim]})  # the slot's engines died with it
        wait_until(lambda: slot_processes(supervisor).get(victim, slots[victim]) != slots[victim],
                   f"slot {victim} started again", 30)
        assert runner.wait(300) == 0, c.log("runner")
        games = pgn_games(tmp_path / "state" / "games.pgn")
        assert len(games) == 8
        assert {n for g in games for n in g.headers["Worker"].split(", ")} == {"m/1", "m/2"}
        resumed = [g for g in games if "ResumedFromPly" in g.headers]
        # first the slot that was killed (then the one it continued on, when not itself again)
        assert len(resumed) == 1 and resumed[0].headers["Worker"].split(", ")[0] == victim
        assert f"slot {victim} died (exit -9); starting it again" in c.log("m")
        state = json.loads(subprocess.run(
            [sys.executable, "-m", "runner", "status", str(config), "--json"], cwd=REPO,
            env=ENV, capture_output=True, text=True, timeout=60).stdout)
        rows = {w["name"]: w for w in state["workers"]}
        assert {"m/1", "m/2"} <= set(rows) and all(rows[n]["slots"] == 1 for n in ("m/1", "m/2"))
        slots = slot_processes(supervisor)
        assert len(slots) == 2
        os.kill(supervisor, signal.SIGKILL)
        c.procs["m"].wait(10)
        wait_until(lambda: not any(alive(p) for p in slots.values()),
                   "the slot processes die with their supervisor", 15)
        no_engines_left(set(slots.values()) | c.pids)
    finally:
        c.close()
