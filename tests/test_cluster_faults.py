"""Frozen, cut-off and slow workers (issue 48 items 1 and 2): a real Dask scheduler, two real
`swiss-runner worker` processes, the runner as a subprocess, real Debian engines
(Stockfish, Ethereal at a fixed move time), everything on 127.0.0.1.

- a freeze: SIGSTOP of a busy worker and every process under it, longer than
  Cluster.OverdueS plus the mover's clock, then SIGCONT;
- a partition that keeps the connections open but carries nothing: w1 reaches the
  scheduler through tests/netproxy.py, which stops forwarding (a black hole) and later
  forwards again;
- a slow link: the same proxy adding 200 ms each way and stalling 5% of its writes for 1 s.

Each test prints what it measured (run with -s): the time from the cut to the game
continuing on the other worker, the longest overlap (the old attempt's engines running
while the game continues elsewhere) and the time from the wake to the old engines' exit.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from netproxy import LinkProxy
from test_cluster import (
    CONTINUED,
    ENV,
    Cluster,
    check_complete,
    cluster_config,
    db,
    engines_of,
    no_engines_left,
    running_game,
    wait_until,
)
from testkit import need_distributed

need_distributed()

pytestmark = [pytest.mark.engines, pytest.mark.slow]

OVERDUE_S = 8.0  # Cluster.OverdueS of these events (no clock: the runner's give-up time)
LEASE_S = 5.0  # Cluster.LeaseS: below OverdueS
MOVE_MS = 300  # each engine's fixed time per move: a game lasts about 25 s
CUT_S = OVERDUE_S + 12  # the freeze or partition: longer than OverdueS plus the clock (none)


def fault_config(directory: Path, address: str, rounds: int = 2, **cluster: Any) -> Path:
    stockfish, ethereal = shutil.which("stockfish"), shutil.which("ethereal-chess")
    if not stockfish or not ethereal:
        pytest.skip("Stockfish and Ethereal (Debian packages) are not installed")
    replace = {f"{name}{i}": {"Name": f"{name}{i}", "Command": command, "MoveTime": MOVE_MS,
                              "Options": {"Threads": 1, "Hash": 8}}
               for name, command in (("SF", stockfish), ("ETH", ethereal)) for i in (1, 2)}
    path = cluster_config(directory, address, real=True, rounds=rounds, tc="inf",
                          overdue_s=OVERDUE_S, cluster={"LeaseS": LEASE_S, **cluster},
                          replace=replace)
    with open(path, "a", encoding="utf-8") as out:  # a loaded machine: no loss on time
        out.write("TimeMarginMs: 2000\n")
    return path


@pytest.fixture
def proxied(tmp_path: Path) -> Iterator[tuple[Cluster, LinkProxy]]:
    """A scheduler, w1 reaching it through a LinkProxy, w2 directly."""
    c = Cluster(tmp_path)
    proxy = None
    try:
        c.start_scheduler()
        proxy = LinkProxy(c.port)
        c._start("w1", [sys.executable, "-m", "runner", "worker",
                        f"tcp://127.0.0.1:{proxy.port}", "--name", "w1"])
        c.start_worker("w2")
        for name in ("w1", "w2"):
            wait_until(lambda n=name: c.joined(n), f"worker {name} joins", 90, c.procs[name])
        yield c, proxy
    finally:
        c.close()
        if proxy is not None:
            proxy.close()


def game_on(directory: Path, worker: str, min_moves: int) -> int | None:
    """The id of a game in progress on ``worker`` with ``min_moves`` plies logged."""
    hit = running_game(directory, min_moves, on=worker)
    return None if hit is None else int(hit[0])


def started_workers(directory: Path) -> dict[int, str]:
    conn = db(directory)
    try:
        return {int(g): json.loads(s or "{}").get("worker", "") for g, s in conn.execute(
            "SELECT game_id, started_event FROM games WHERE started_event IS NOT NULL")}
    finally:
        conn.close()


class Watch:
    """Samples every 0.1 s, from the cut on: when the runner continues the game elsewhere,
    when the old attempt's engines are gone, and how long they ran (not stopped) while the
    game was continued elsewhere (the overlap)."""

    def __init__(self, c: Cluster, game_id: int, old: list[int]) -> None:
        self.c, self.game_id = c, game_id
        self.old = [psutil.Process(pid) for pid in old]
        self.cut = time.monotonic()
        self.continued: float | None = None
        self.gone: float | None = None
        self.overlap = 0.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _running(self) -> tuple[bool, bool]:
        """(any old engine alive, any alive and not stopped)."""
        alive = running = False
        for proc in self.old:
            try:
                status = proc.status()
            except psutil.Error:
                continue
            if status != psutil.STATUS_ZOMBIE:
                alive = True
                running = running or status != psutil.STATUS_STOPPED
        return alive, running

    def _run(self) -> None:
        line = f"Game {self.game_id} ("
        last = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            if self.continued is None and any(
                    line in text and CONTINUED.search(text)
                    for text in self.c.log("runner").splitlines()):
                self.continued = now
            alive, running = self._running()
            if not alive and self.gone is None:
                self.gone = now
            if self.continued is not None and running:
                self.overlap += now - last
            last = now
            time.sleep(0.1)

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(5)


def cut_and_wake(c: Cluster, tmp_path: Path, cut: Any, wake: Any) -> dict[str, float]:
    """Play the event; cut w1 in the middle of its game for CUT_S, wake it; check that the
    game continued on w2 from its position, nothing of the given-up attempt is recorded,
    every game once, w1 plays again; return the measurements."""
    config = fault_config(tmp_path, c.address)
    runner = c.run(config)
    found: list[int] = []
    wait_until(lambda: bool(found.append(game_on(tmp_path, "w1", 6)) or found[-1]),
               "a game in progress on w1", 180, runner)
    game_id = found[-1]
    victim = c.procs["w1"].pid
    old = engines_of({victim})
    assert len(old) == 2, old
    cut()
    watch = Watch(c, game_id, old)
    time.sleep(CUT_S)
    assert runner.poll() is None, c.log("runner")
    wake()
    woke = time.monotonic()
    before = set(started_workers(tmp_path))  # games started by the wake
    assert runner.wait(600) == 0, c.log("runner")
    watch.finish()
    out = c.log("runner")
    assert f"Game {game_id} (" in out and CONTINUED.search(out), out
    assert "forfeit" not in out.lower()
    games = check_complete(tmp_path, 8)  # every game once, audit clean, all finished
    resumed = [g for g in games if "ResumedFromPly" in g.headers]
    assert len(resumed) == 1 and resumed[0].headers["Worker"] == "w1, w2", \
        [g.headers for g in games]
    point = int(resumed[0].headers["ResumedFromPly"])
    conn = db(tmp_path)
    try:  # nothing of the given-up attempt is recorded past its logged position
        plies = conn.execute("SELECT ply, attempt FROM moves WHERE game_id=? ORDER BY ply",
                             (game_id,)).fetchall()
    finally:
        conn.close()
    assert [p for p, _ in plies] == list(range(1, len(plies) + 1))
    assert max(p for p, a in plies if a == 1) == point, (point, plies)
    assert all(a == 2 for p, a in plies if p > point), plies
    after = {g: w for g, w in started_workers(tmp_path).items() if g not in before}
    assert "w1" in after.values(), after  # w1 plays new games, with no restart by hand
    assert c.procs["w1"].poll() is None
    no_engines_left(c.pids)
    assert watch.continued is not None and watch.gone is not None
    numbers = {"cut_to_continued_s": round(watch.continued - watch.cut, 1),
               "overlap_s": round(watch.overlap, 1),
               "cut_to_old_engines_exit_s": round(watch.gone - watch.cut, 1),
               "wake_to_old_engines_exit_s": round(max(0.0, watch.gone - woke), 1)}
    print(f"\nmeasured: {numbers}")
    return numbers


def test_a_frozen_worker_stops_its_game_and_plays_again(proxied: tuple[Cluster, LinkProxy],
                                                         tmp_path: Path) -> None:
    """SIGSTOP of w1 and all its processes mid-game for longer than OverdueS: the game
    continues on w2 from its position; on SIGCONT w1's lease has lapsed, its old engines
    exit at once, and it plays new games."""
    c, _ = proxied
    frozen: list[psutil.Process] = []

    def freeze() -> None:
        top = psutil.Process(c.procs["w1"].pid)
        frozen.extend([top, *top.children(recursive=True)])
        for proc in frozen:
            os.kill(proc.pid, signal.SIGSTOP)

    def thaw() -> None:
        for proc in frozen:
            try:
                os.kill(proc.pid, signal.SIGCONT)
            except ProcessLookupError:  # a descendant killed and reaped meanwhile (seen once
                # in a loaded CI run, cause not found): nothing to thaw; w1 itself must be there
                assert proc.pid != frozen[0].pid, "w1 itself vanished while frozen"

    numbers = cut_and_wake(c, tmp_path, freeze, thaw)
    assert numbers["cut_to_continued_s"] < OVERDUE_S + 6, numbers
    assert numbers["wake_to_old_engines_exit_s"] < 20, numbers
    assert numbers["overlap_s"] < 2, numbers  # the woken engines are killed at once


def test_a_partitioned_worker_stops_its_game_before_it_continues_elsewhere(
        proxied: tuple[Cluster, LinkProxy], tmp_path: Path) -> None:
    """w1's link to the scheduler carries nothing (connections open) for longer than
    OverdueS while w1 runs on: it stops its game within LeaseS, before the runner continues
    it on w2 (no overlap); when the link forwards again w1 plays new games."""
    c, proxy = proxied
    numbers = cut_and_wake(c, tmp_path, proxy.cut, proxy.heal)
    assert numbers["cut_to_continued_s"] < OVERDUE_S + 6, numbers
    assert numbers["cut_to_old_engines_exit_s"] < LEASE_S + 3, numbers
    assert numbers["overlap_s"] == 0, numbers
    assert "stopped on w1: the runner's lease lapsed" in c.log("w1")


@pytest.mark.parametrize("settings", ["defaults", "short lease"])
def test_a_slow_lossy_link_costs_nothing(tmp_path: Path, settings: str) -> None:
    """w1 and w2 reach the scheduler over links adding 200 ms each way and stalling 5% of
    their writes for 1 s; the event completes with the default OverdueS and LeaseS, and
    with games of 25 s under LeaseS 5 (the lease renewed over the slow link): no forfeit,
    no stall, no game given up as cut off."""
    c = Cluster(tmp_path)
    proxies = []
    try:
        c.start_scheduler()
        for name in ("w1", "w2"):
            proxy = LinkProxy(c.port, delay_s=0.2, stall_p=0.05, stall_s=1.0)
            proxies.append(proxy)
            c._start(name, [sys.executable, "-m", "runner", "worker",
                            f"tcp://127.0.0.1:{proxy.port}", "--name", name])
        for name in ("w1", "w2"):
            wait_until(lambda n=name: c.joined(n), f"worker {name} joins", 120, c.procs[name])
        if settings == "defaults":  # OverdueS 60 (= cluster_config's), LeaseS not given
            config = cluster_config(tmp_path, c.address, real=True, rounds=2, tc="20+0.2")
            assert "LeaseS" not in config.read_text()
        else:
            config = fault_config(tmp_path, c.address, rounds=1)
        total = 8 if settings == "defaults" else 4
        runner = c.run(config)
        assert runner.wait(900) == 0, c.log("runner")
        out = c.log("runner")
        games = check_complete(tmp_path, total)
        assert all("ResumedFromPly" not in g.headers for g in games), out
        for word in ("cut off", "was lost", "forfeit", "lease"):
            assert word not in out.lower(), (word, out)
        for g in games:  # no game lost on time or by a stalled connection
            assert g.headers.get("Termination") not in ("time forfeit", "stalled connection"), \
                g.headers
        assert sum(p.stalls for p in proxies) > 0 and sum(p.writes for p in proxies) > 100
        for name in ("w1", "w2"):
            assert "lease lapsed" not in c.log(name)
        status = subprocess.run([sys.executable, "-m", "runner", "status", str(config),
                                 "--json"], cwd=c.dir, env=ENV,
                                capture_output=True, text=True, timeout=60)
        assert json.loads(status.stdout)["complete"] is True
        no_engines_left(c.pids)
    finally:
        c.close()
        for proxy in proxies:
            proxy.close()
