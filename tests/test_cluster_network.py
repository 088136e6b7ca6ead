"""A cluster on a network exposes nothing by default (docs/cluster.md, "Security"): real
schedulers and workers on 127.0.0.1 and 127.0.0.2 listen only on their address (checked on
their sockets with psutil); plain tcp:// beyond loopback is refused without --insecure; the
TLS set-up of docs/cluster.md, run as written, plays an event to its end; a worker whose
"SF1" is another binary refuses that engine only; a slot process that crashes is started
again while the other slot's games go on."""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from test_cluster import (
    ENV,
    REPO,
    Cluster,
    cluster_config,
    no_engines_left,
    pgn_games,
    running_game,
    slot_processes,
    wait_until,
)
from testkit import run_cli as cli
from web_support import serve

from runner.cluster.network import local_address_to

pytestmark = [pytest.mark.engines, pytest.mark.slow]
PY = sys.executable


def listening(pid: int) -> set[tuple[str, int]]:
    """(host, port) of every listening socket of the process and its children."""
    found = set()
    proc = psutil.Process(pid)
    for p in (proc, *proc.children(recursive=True)):
        try:
            found |= {(c.laddr.ip, c.laddr.port) for c in p.net_connections("inet")
                      if c.status == psutil.CONN_LISTEN}
        except psutil.Error:
            continue
    return found


def finished_games(directory: Path) -> int:
    conn = sqlite3.connect(f"{(directory / 'state' / 'swiss.sqlite3').as_uri()}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM games WHERE status='finished'").fetchone()[0])
    finally:
        conn.close()


def test_scheduler_and_workers_listen_only_on_their_address(tmp_path: Path) -> None:
    """`swiss-runner scheduler --listen 127.0.0.2:P` (no dashboard), a worker without
    --listen (the address that reaches the scheduler) and a two-slot worker with --listen
    127.0.0.2: no socket on any other address, none on every interface; an event plays."""
    c = Cluster(tmp_path)
    c.address = f"tcp://127.0.0.2:{c.port}"
    try:
        c._start("scheduler", [PY, "-m", "runner", "scheduler", "--listen", f"127.0.0.2:{c.port}"])
        wait_until(lambda: "listening on tcp://127.0.0.2" in c.log("scheduler"),
                   "the scheduler listens", 60, c.procs["scheduler"])
        c._start("w1", [PY, "-m", "runner", "worker", c.address, "--name", "w1"])
        c._start("w2", [PY, "-m", "runner", "worker", c.address, "--name", "w2", "--slots", "2",
                        "--listen", "127.0.0.2"])
        for name, key in (("w1", "w1"), ("w2/1", "w2"), ("w2/2", "w2")):
            wait_until(lambda n=name, k=key: f"{n} joined" in c.log(k), f"{name} joins", 90,
                       c.procs[key])
        scheduler = listening(c.procs["scheduler"].pid)
        assert {host for host, _ in scheduler} == {"127.0.0.2"}, scheduler
        assert ("127.0.0.2", c.port) in scheduler
        assert not any(port == 8787 for _, port in scheduler)  # no dashboard
        (http_port,) = {port for _, port in scheduler} - {c.port}  # Dask's HTTP server
        for path, status in (("/health", 200), ("/status", 404), ("/json/identity.json", 404),
                             ("/info/main/workers.html", 404)):
            conn = http.client.HTTPConnection("127.0.0.2", http_port, timeout=10)
            conn.request("GET", path)
            assert conn.getresponse().status == status, path  # nothing but its health
            conn.close()
        own = local_address_to("127.0.0.2", c.port)
        w1 = listening(c.procs["w1"].pid)
        assert w1 and {host for host, _ in w1} == {own}, w1
        slots = slot_processes(c.procs["w2"].pid)
        assert set(slots) == {"w2/1", "w2/2"}
        for pid in slots.values():
            assert {host for host, _ in listening(pid)} == {"127.0.0.2"}
        assert not listening(c.procs["w2"].pid) - set().union(*(listening(p)
                                                                for p in slots.values()))
        config = cluster_config(tmp_path, c.address, real=False, rounds=1, delay_ms=5)
        runner = c.run(config)
        assert runner.wait(300) == 0, c.log("runner")
        assert finished_games(tmp_path) == 4
        assert "warning" not in c.log("runner")  # loopback: nothing to warn about
    finally:
        c.close()
    no_engines_left(c.pids)


def test_plain_tcp_beyond_loopback_is_refused_without_insecure(tmp_path: Path) -> None:
    address = "tcp://192.0.2.1:8786"  # TEST-NET-1: not this machine, never answers
    worker = cli("worker", address, "--wait", "1")
    assert worker.returncode == 2, worker.stderr
    assert address in worker.stderr and "tls://" in worker.stderr and "--insecure" in worker.stderr
    for listen in ("192.0.2.1:8786", "0.0.0.0"):
        scheduler = cli("scheduler", "--listen", listen)
        assert scheduler.returncode == 2 and "--insecure" in scheduler.stderr, scheduler.stderr
    config = cluster_config(tmp_path, address, real=False, rounds=1)
    run = cli("run", str(config))
    assert run.returncode == 2 and "Cluster.Insecure: true" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr + worker.stderr
    assert not (tmp_path / "state" / "swiss.sqlite3").exists()  # refused before anything
    # allowed on a private network: one warning, then it tries (and gives up: no scheduler)
    config = cluster_config(tmp_path, address, real=False, rounds=1,
                            cluster={"Insecure": True, "WaitS": 1})
    run = cli("run", str(config), timeout=180)
    assert run.returncode == 1 and run.stderr.count("warning: tcp://192.0.2.1:8786") == 1, \
        run.stdout + run.stderr
    assert "no Dask scheduler at tcp://192.0.2.1:8786" in run.stderr + run.stdout
    worker = cli("worker", address, "--wait", "1", "--insecure", timeout=180)
    assert worker.returncode == 1 and worker.stderr.count("warning: tcp://192.0.2.1") == 1, \
        worker.stderr
    assert "giving up" in worker.stderr


def doc_block(first_line: str) -> str:
    """The code block of docs/cluster.md whose first line is ``first_line``."""
    text = (REPO / "docs" / "cluster.md").read_text()
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"docs/cluster.md has no block starting {first_line!r}")


def test_tls_cluster_as_documented_plays_an_event(tmp_path: Path) -> None:
    """The CA and certificates made by the docs' own commands (openssl), the docs' Dask
    configuration, `swiss-runner scheduler --listen tls://...`, a worker and the runner:
    the event plays to its end over TLS; a plain tcp:// peer is not let in."""
    if not shutil.which("openssl"):
        pytest.skip("the openssl command is not installed")
    tls = tmp_path / "tls"
    made = subprocess.run(["bash", "-e", "-c", doc_block("# TLS set-up: the CA")],
                          env={**ENV, "TLS": str(tls), "SCHEDULER_HOST": "127.0.0.1"},
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert "scheduler.pem: OK" in made.stdout and (tls / "runner.key").exists()
    dask_yaml = tmp_path / "dask.yaml"
    dask_yaml.write_text(doc_block("# TLS set-up: /etc/swiss-runner/dask.yaml").replace(
        "/etc/swiss-runner/tls", str(tls)))
    env = {"DASK_CONFIG": str(dask_yaml)}
    c = Cluster(tmp_path)
    c.address = f"tls://127.0.0.1:{c.port}"
    try:
        c._start("scheduler", [PY, "-m", "runner", "scheduler", "--listen", c.address], env)
        wait_until(lambda: f"listening on {c.address}" in c.log("scheduler"),
                   "the TLS scheduler listens", 60, c.procs["scheduler"])
        c._start("w1", [PY, "-m", "runner", "worker", c.address, "--name", "w1"], env)
        wait_until(lambda: "w1 joined" in c.log("w1"), "w1 joins over TLS", 90, c.procs["w1"])
        assert "as tls://127.0.0.1:" in c.log("w1")
        plain = cli("worker", f"tcp://127.0.0.1:{c.port}", "--name", "intruder", "--wait", "3",
                    timeout=120)  # no certificate, plain tcp: never joins
        assert plain.returncode == 1 and "intruder joined" not in plain.stderr
        config = cluster_config(tmp_path, c.address, real=False, rounds=1, delay_ms=5)
        runner = c._start("runner", [PY, "-m", "runner", "run", str(config)], env)
        assert runner.wait(300) == 0, c.log("runner")
        games = pgn_games(tmp_path / "state" / "games.pgn")
        assert len(games) == 4 and {g.headers["Worker"] for g in games} == {"w1"}
    finally:
        c.close()
    no_engines_left(c.pids)


def test_a_worker_with_another_build_is_refused_for_that_engine_only(tmp_path: Path) -> None:
    """w1 runs "SF1" with a copy of Ethereal (--engine SF1=...): it refuses SF1's games with
    both digests (runner output, status); every SF1 game is played on w2, w1 plays the
    others; the event completes and each game names the builds that played it."""
    other = tmp_path / "other" / "stockfish"
    other.parent.mkdir()
    ethereal = shutil.which("ethereal-chess", path=ENV.get("PATH", "") + ":/usr/games")
    if ethereal is None:
        pytest.skip("ethereal-chess (Debian package) is not installed")
    shutil.copy2(ethereal, other)
    c = Cluster(tmp_path)
    try:
        c.start_scheduler()
        c._start("w1", [PY, "-m", "runner", "worker", c.address, "--name", "w1",
                        "--engine", f"SF1={other}"])
        wait_until(lambda: c.joined("w1"), "w1 joins", 90, c.procs["w1"])
        config = cluster_config(tmp_path, c.address, real=True, rounds=1)
        runner = c.run(config)
        # w1 alone: the first SF1 game goes to it and is refused; then w2 comes
        wait_until(lambda: "Worker w1 refused game" in c.log("runner"), "w1 refuses SF1",
                   120, runner)
        c.start_worker("w2")
        assert runner.wait(300) == 0, c.log("runner")
        out = c.log("runner")
        conn = sqlite3.connect(tmp_path / "state" / "swiss.sqlite3")
        event_build = conn.execute("SELECT digest FROM builds WHERE engine='SF1'").fetchone()[0]
        conn.close()
        theirs = hashlib.sha256(other.read_bytes()).hexdigest()
        refusal = next(line for line in out.splitlines() if "Worker w1 refused game" in line)
        assert "engine SF1: its build differs from the event's (TCEC rule 8)" in refusal
        assert event_build in refusal and f"{other}: {theirs}" in refusal, refusal
        games = pgn_games(tmp_path / "state" / "games.pgn")
        assert len(games) == 4
        for g in games:
            if "SF1" in (g.headers["White"], g.headers["Black"]):
                assert g.headers["Worker"] == "w2", g.headers
                color = "White" if g.headers["White"] == "SF1" else "Black"
                assert g.headers[f"{color}Build"] == event_build
        assert any(g.headers["Worker"] == "w1" for g in games)  # its other engines play
        state = json.loads(cli("status", str(config), "--json").stdout)
        w1 = next(w for w in state["workers"] if w["name"] == "w1")
        assert set(w1["refused"]) == {"SF1"} and event_build in w1["refused"]["SF1"]
        text = cli("status", str(config)).stdout
        assert "refused SF1: its build differs" in text, text
        with serve(config) as served:  # the dashboard's workers table says it too
            page = urllib.request.urlopen(served.url, timeout=30).read().decode()
        assert "SF1: its build differs from the event" in page and event_build in page
    finally:
        c.close()
    no_engines_left(c.pids)


CRASH = '''
import asyncio, os
from pathlib import Path
import runner.cluster.worker as worker

_serve = worker.serve


async def serve(scheduler, *, name, **kw):
    trigger, marker = Path(os.environ["CRASH_TRIGGER"]), Path(os.environ["CRASH_MARKER"])
    if name != os.environ["CRASH_SLOT"] or marker.exists():
        return await _serve(scheduler, name=name, **kw)
    task = asyncio.ensure_future(_serve(scheduler, name=name, **kw))
    while not trigger.exists():
        if task.done():
            return task.result()
        await asyncio.sleep(0.05)
    marker.touch()
    raise RuntimeError(f"injected fault in slot {name}")


worker.serve = serve
'''

# With CRASH: slot m/2's game thread stuck (an engine probe on a hung file system, say)
# until the fault; STUCK_MARKER says it is.
STUCK = '''
import time
import runner.cluster.task as task

_checked_play = task._checked_play


def checked_play(worker, key, *args, **kw):
    if str(worker.name) == os.environ["CRASH_SLOT"] and not Path(os.environ["CRASH_MARKER"]).exists():
        Path(os.environ["STUCK_MARKER"]).touch()
        time.sleep(120)
    return _checked_play(worker, key, *args, **kw)


task._checked_play = checked_play
'''


def start_two_slots(c: Cluster, env: dict[str, str]) -> None:
    """A scheduler, and a worker ``m`` with slots m/1 and m/2 (``env``: its fault injection)."""
    c.start_scheduler()
    c.start_worker("m", env=env, slots=2)
    for slot in ("m/1", "m/2"):
        wait_until(lambda s=slot: f"{s} joined" in c.log("m"), f"slot {slot} joins", 90,
                   c.procs["m"])


def test_a_crashing_slot_is_started_again_and_the_others_play_on(tmp_path: Path) -> None:
    """`worker --slots 2`: slot m/2 raises an unexpected error (exit 1) while the event
    plays (fault injected through sitecustomize); the supervisor starts it again after its
    back-off, m/1 (the same process) and its game go on, and the event completes."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(CRASH)
    trigger, marker = tmp_path / "crash-now", tmp_path / "crashed"
    env = {"PYTHONPATH": f"{inject}:{REPO}", "CRASH_SLOT": "m/2",
           "CRASH_TRIGGER": str(trigger), "CRASH_MARKER": str(marker)}
    c = Cluster(tmp_path)
    try:
        start_two_slots(c, env)
        supervisor = c.procs["m"].pid
        before = slot_processes(supervisor)
        config = cluster_config(tmp_path, c.address, real=False, rounds=2)
        runner = c.run(config)
        wait_until(lambda: running_game(tmp_path, 6) is not None, "a game in progress", 120,
                   runner)
        trigger.touch()
        wait_until(marker.exists, "the injected fault", 30)
        wait_until(lambda: "slot m/2 died (exit 1); starting it again" in c.log("m"),
                   "the supervisor restarts m/2", 30, c.procs["m"])
        assert runner.wait(300) == 0, c.log("runner")
        assert c.procs["m"].poll() is None, c.log("m")  # the supervisor goes on
        after = slot_processes(supervisor)
        assert after["m/1"] == before["m/1"] and after["m/2"] != before["m/2"]
        assert "injected fault in slot m/2" in c.log("m")
        assert "stopping every slot" not in c.log("m")
        games = pgn_games(tmp_path / "state" / "games.pgn")
        assert len(games) == 8 and all("forfeit" not in g.headers.get("Termination", "")
                                       for g in games)
        assert c.log("m").count("m/2 joined") >= 2  # started again, and back in the cluster
    finally:
        c.close()
    no_engines_left(c.pids)



def test_a_slot_that_crashes_with_its_game_thread_stuck_is_started_again_at_once(
        tmp_path: Path) -> None:
    """A slot's unexpected error ends its process at once (exit 1), though its game thread
    is stuck: the Dask worker's own close would wait 30 s for that thread. The game it
    held is continued elsewhere and the event completes."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(CRASH + STUCK)
    trigger, marker, stuck = tmp_path / "crash-now", tmp_path / "crashed", tmp_path / "stuck"
    env = {"PYTHONPATH": f"{inject}:{REPO}", "CRASH_SLOT": "m/2", "CRASH_TRIGGER": str(trigger),
           "CRASH_MARKER": str(marker), "STUCK_MARKER": str(stuck)}
    c = Cluster(tmp_path)
    try:
        start_two_slots(c, env)
        runner = c.run(cluster_config(tmp_path, c.address, real=False, rounds=2))
        wait_until(stuck.exists, "m/2 given a game", 120, runner)
        trigger.touch()
        wait_until(marker.exists, "the injected fault", 30)
        faulted = time.monotonic()
        wait_until(lambda: "slot m/2 died (exit 1); starting it again" in c.log("m"),
                   "the supervisor restarts m/2", 60, c.procs["m"])
        assert time.monotonic() - faulted < 10, c.log("m")
        assert runner.wait(300) == 0, c.log("runner")
        games = pgn_games(tmp_path / "state" / "games.pgn")
        assert len(games) == 8 and all("forfeit" not in g.headers.get("Termination", "")
                                       for g in games)
    finally:
        c.close()
    no_engines_left(c.pids)
