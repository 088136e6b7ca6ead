"""The soak: a TCEC-size event on a local Dask cluster while a chaos driver kills everything.

A local Dask scheduler and ``--workers`` `swiss-runner worker` processes (1 slot each) play an
``--engines``-engine, ``--rounds``-double-round Swiss (default 42 and 11: 462 games, TCEC's
size) with the deterministic fake engine (tests/fakes/det_engine.py: ``--delay-ms`` per
move, MaxMoves 60), while a chaos driver SIGKILLs, at random moments (a random ``--gap`` after the
event was seen moving again since the last kill: every kill hits games being played) and in
random order, the runner, one worker, the scheduler, or the runner's whole process group,
``--kills`` times in all. Each is started again as systemd would: the Restart= and
RestartSec= of its unit in deploy/ (RestartSec times ``--restart-scale``), the runner only
on failure (exit 0 ends the soak; exit 2 would need a person and fails it).

Right after each kill the move log of every game the kill interrupts is read (read-only
SQLite, as any reader beside a run). At the end the invariants are checked and printed as a
table (exit 0 when all hold, 1 otherwise):

- games lost 0, duplicated 0, scored twice 0 (PGN, database, standings);
- every interrupted game continued from its last logged position or decided from its log
  (TCEC rule 7.c), none replayed from move 1 unless its log held no engine move;
- each logged move list read after a kill is a prefix of the final game;
- `swiss-runner audit` of the final PGN against the seeds: every round's pairing as the
  rules give it;
- no engine process left (owned by any process the soak started);
- the JSON state (state/swiss.json, `status --json` and the dashboard's /api/state) agrees
  with the database, and the dashboard's /event.pgn has every game.

Usage: python bench/soak.py [--kills 1000] [--engines 42] [--rounds 11] [--workers 4] [--slots 1]
       [--gap 0.2-1.5] [--delay-ms 150] [--restart-scale 0.1] [--seed 1] [--dir DIR]
Small: python bench/soak.py --engines 6 --rounds 2 --kills 20 --gap 0.2-2 (tests/test_soak.py)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess.pgn
import psutil
import yaml

REPO = Path(__file__).resolve().parent.parent
ENGINE = REPO / "tests" / "fakes" / "det_engine.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
OWNER_ENV = "SWISS_RUNNER_OWNER"
KINDS = ("runner", "worker", "scheduler", "tree")


# --------------------------------------------------------------------------- services


def unit_policy(unit: str) -> dict[str, Any]:
    """Restart=, RestartSec=, RestartPreventExitStatus=, SuccessExitStatus= of a deploy/ unit."""
    keys: dict[str, str] = {}
    for line in (REPO / "deploy" / unit).read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            keys[key.strip()] = value.strip()
    return {"restart": keys.get("Restart", "no"), "sec": float(keys.get("RestartSec", "0")),
            "prevent": {int(v) for v in keys.get("RestartPreventExitStatus", "").split()},
            "success": {0} | {int(v) for v in keys.get("SuccessExitStatus", "").split()}}


@dataclass
class Service:
    """One supervised process, restarted by its unit's policy (as systemd would)."""

    name: str
    argv: list[str]
    log: Path
    policy: dict[str, Any]
    scale: float
    session: bool = False  # own process group (the runner: "kill its whole tree")
    proc: subprocess.Popen[bytes] | None = None
    restart_at: float | None = None
    starts: int = 0
    exits: list[int] = field(default_factory=list)
    pids: set[int] = field(default_factory=set)
    done: bool = False  # exited and not to be restarted

    def start(self) -> None:
        with open(self.log, "ab") as out:
            out.write(f"\n===== start {self.starts + 1} at {time.time():.3f}\n".encode())
            out.flush()
            self.proc = subprocess.Popen(self.argv, cwd=REPO, env=ENV, stdout=out,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         start_new_session=self.session)
        self.pids.add(self.proc.pid)
        self.starts += 1
        self.restart_at = None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def poll(self, now: float) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            code = self.proc.returncode
            self.exits.append(code)
            self.proc = None
            policy = self.policy
            clean = code in policy["success"]
            if policy["restart"] == "always" or (policy["restart"] == "on-failure" and not clean
                                                 and code not in policy["prevent"]):
                self.restart_at = now + policy["sec"] * self.scale
            else:
                self.done = True
        if self.proc is None and self.restart_at is not None and now >= self.restart_at:
            self.start()

    def stop(self) -> None:
        self.restart_at = None
        self.done = True
        if self.alive():
            assert self.proc is not None
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def engines_owned_by(pids: set[int]) -> list[int]:
    """Live processes whose owner token (pid:create time:n) names one of ``pids``."""
    prefixes = tuple(f"{pid}:" for pid in pids)
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            owner = proc.environ().get(OWNER_ENV, "")
        except (psutil.Error, OSError):
            continue
        if owner.startswith(prefixes) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


# --------------------------------------------------------------------------- the event


def write_event(directory: Path, address: str, engines: int, rounds: int, workers: int,
                delay_ms: int) -> Path:
    names = [f"E{i:02d}" for i in range(1, engines + 1)]
    config = {
        "Event": f"soak {engines} engines {rounds} rounds", "TimeControl": "30+0.5",
        "Concurrency": workers,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": rounds, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 60},
        "Cluster": {"Scheduler": address, "WaitS": 600, "OverdueS": 30,
                    "MaxLostAttempts": 10},
        "Engines": [{"Name": name, "Command": sys.executable,
                     "Args": [str(ENGINE), "greedy" if i % 3 else "random", f"s{i}",
                              str(delay_ms)], "Nodes": 1}
                    for i, name in enumerate(names, 1)],
    }
    path = directory / "event.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    (directory / "seeds.txt").write_text("".join(n + "\n" for n in names))
    return path


def db(directory: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{(directory / 'state' / 'swiss.sqlite3').as_uri()}?mode=ro",
                           uri=True, timeout=10)


def snapshot(directory: Path, worker: str | None) -> dict[int, tuple[int, list[dict[str, Any]]]]:
    """The attempt and move log of each game in progress (on ``worker`` only, when given; "w1/": on
    every slot of the supervisor w1)."""
    if not (directory / "state" / "swiss.sqlite3").exists():
        return {}
    try:
        conn = db(directory)
    except sqlite3.Error:
        return {}
    logs: dict[int, tuple[int, list[dict[str, Any]]]] = {}
    try:
        for game_id, started, attempt in conn.execute(
                "SELECT game_id, started_event, attempt FROM games WHERE status='running'"
        ).fetchall():
            on = str(json.loads(started or "{}").get("worker", ""))
            if worker is not None and on != worker and not (worker.endswith("/")
                                                            and on.startswith(worker)):
                continue
            logs[game_id] = (attempt, [json.loads(r[0]) for r in conn.execute(
                "SELECT data FROM moves WHERE game_id=? ORDER BY ply", (game_id,))])
    except sqlite3.Error:  # not created yet
        return logs
    finally:
        conn.close()
    return logs


# --------------------------------------------------------------------------- chaos


def progress(directory: Path) -> set[tuple[int, int]]:
    """(game id, last logged ply) of each game in progress: the event moves when it changes."""
    if not (directory / "state" / "swiss.sqlite3").exists():
        return set()
    try:
        conn = db(directory)
        try:
            return set(conn.execute(
                "SELECT g.game_id, MAX(m.ply) FROM games g JOIN moves m USING (game_id) "
                "WHERE g.status='running' GROUP BY g.game_id").fetchall())
        finally:
            conn.close()
    except sqlite3.Error:
        return set()


def slots_of(worker: Service) -> dict[str, int]:
    """The slot processes of a `swiss-runner worker --slots N` supervisor: name -> pid."""
    found: dict[str, int] = {}
    if not worker.alive():
        return found
    assert worker.proc is not None
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(worker.proc.pid).children():
            with contextlib.suppress(psutil.Error):
                argv = child.cmdline()
                if "--name" in argv:
                    found[argv[argv.index("--name") + 1]] = child.pid
    return found


def parse_gap(text: str) -> tuple[float, float]:
    low, _, high = text.partition("-")
    return float(low), float(high or low)


def soak(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    directory = Path(args.dir or tempfile.mkdtemp(prefix="swiss-soak-"))
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    config = write_event(directory, address, args.engines, args.rounds,
                         args.workers * args.slots, args.delay_ms)
    scale = args.restart_scale
    logs = directory / "logs"
    logs.mkdir(exist_ok=True)
    scheduler = Service("scheduler", [sys.executable, "-m", "distributed.cli.dask_scheduler",
                                      "--host", "127.0.0.1", "--port", str(port),
                                      "--no-dashboard"],
                        logs / "scheduler.log", unit_policy("swiss-runner-scheduler.service"),
                        scale)
    workers = [Service(f"w{k}", [sys.executable, "-m", "runner", "worker", address, "--slots",
                                 str(args.slots), "--name", f"w{k}"],
                       logs / f"w{k}.log", unit_policy("swiss-runner-worker.service"), scale)
               for k in range(1, args.workers + 1)]
    runner = Service("runner", [sys.executable, "-m", "runner", "run", str(config)],
                     logs / "runner.log", unit_policy("swiss-runner.service"), scale,
                     session=True)
    services = [scheduler, *workers, runner]
    print(f"soak in {directory}: {args.engines} engines, {args.rounds} double rounds, "
          f"{args.workers} workers, {args.kills} kills, gap {args.gap} s", flush=True)
    began = time.monotonic()
    scheduler.start()
    for w in workers:
        w.start()
    time.sleep(1.0)
    runner.start()
    low, high = parse_gap(args.gap)
    kills: Counter[str] = Counter()
    # kill no, kind, game, log, the game's attempt when the log was read
    seen: list[tuple[int, str, int, list[dict[str, Any]], int]] = []
    # a kill comes a random gap after the event was seen moving again (a game in progress
    # logged a move since the last kill), so that every kill hits games being played
    next_kill: float | None = None
    at_kill: set[tuple[int, int]] = set()
    checked = 0.0
    deadline = began + args.timeout
    while not runner.done:
        now = time.monotonic()
        for s in services:
            s.poll(now)
        if now > deadline:
            print(f"soak: not complete within {args.timeout:g} s", flush=True)
            break
        if (next_kill is None and sum(kills.values()) < args.kills and now - checked > 0.25
                and runner.alive()):
            checked = now
            for w in workers:  # slot processes of a supervisor (--slots > 1): engine owners
                w.pids.update(slots_of(w))
            moving = progress(directory)
            if moving - at_kill:
                next_kill = now + rng.uniform(low, high)
        if next_kill is not None and now >= next_kill:
            kind = rng.choice(KINDS)
            victim = rng.choice(workers) if kind == "worker" else (
                scheduler if kind == "scheduler" else runner)
            slots = slots_of(victim) if kind == "worker" and args.slots > 1 else {}
            if victim.alive():
                assert victim.proc is not None
                where: str | None = None  # the games it interrupts: all, or a worker's
                if kind == "tree":
                    os.killpg(victim.proc.pid, signal.SIGKILL)
                elif slots and rng.random() < 0.5:  # one slot process of the supervisor
                    where, pid = rng.choice(sorted(slots.items()))
                    victim.pids.update(slots.values())
                    with contextlib.suppress(psutil.Error):
                        slot = psutil.Process(pid)
                        slot.kill()
                        slot.wait(10)
                else:
                    victim.proc.kill()
                    victim.proc.wait()
                    if kind == "worker":
                        where = f"{victim.name}/" if args.slots > 1 else victim.name
                kills[kind] += 1
                number = sum(kills.values())
                for game_id, (attempt, log) in snapshot(directory, where).items():
                    seen.append((number, kind, game_id, log, attempt))
                if args.verbose:
                    print(f"kill {number}: {kind} {where or victim.name}", flush=True)
                at_kill = progress(directory)
                next_kill = None
            else:  # restarting: another target, another moment
                next_kill = now + rng.uniform(low, high) / 4
        time.sleep(0.05)
    elapsed = time.monotonic() - began
    all_pids = set().union(*(s.pids for s in services))
    time.sleep(2.0)
    engines_after_event = engines_owned_by(all_pids)
    for s in services:
        s.stop()
    time.sleep(1.0)
    engines_at_end = engines_owned_by(all_pids)
    for pid in engines_at_end:  # leave nothing behind, but count it
        with contextlib.suppress(psutil.Error):
            psutil.Process(pid).kill()
    rows = check(directory, config, args, runner, seen)
    rows.insert(0, ("kills (runner / worker / scheduler / tree)",
                    f"{sum(kills.values())} ({' / '.join(str(kills[k]) for k in KINDS)})",
                    sum(kills.values()) == args.kills))
    rows.append(("restarts (runner / workers / scheduler)",
                 f"{runner.starts - 1} / {sum(w.starts - 1 for w in workers)} / "
                 f"{scheduler.starts - 1}", True))
    rows.append(("engine processes left (after the event / at the end)",
                 f"{len(engines_after_event)} / {len(engines_at_end)}",
                 not engines_after_event and not engines_at_end))
    exits = Counter(runner.exits)
    rows.append(("runner exits (code x times; the last 0)",
                 ", ".join(f"{code} x{n}" for code, n in sorted(exits.items())) or "-",
                 bool(runner.exits) and runner.exits[-1] == 0))
    rows.append(("elapsed", f"{elapsed:.0f} s (load {os.getloadavg()[0]:.1f})", True))
    width = max(len(r[0]) for r in rows)
    print(f"\n{'invariant'.ljust(width)} | value | holds")
    print(f"{'-' * width} | --- | ---")
    for what, value, ok in rows:
        print(f"{what.ljust(width)} | {value} | {'yes' if ok else 'NO'}")
    failed = [r for r in rows if not r[2]]
    print(f"\n{'ALL INVARIANTS HOLD' if not failed else f'{len(failed)} INVARIANT(S) FAILED'}; "
          f"logs and state in {directory}", flush=True)
    if not failed and not args.keep and args.dir is None:
        shutil.rmtree(directory, ignore_errors=True)
    return 0 if not failed else 1


# --------------------------------------------------------------------------- invariants


def pgn_games(path: Path) -> list[chess.pgn.Game]:
    games = []
    if path.exists():
        with open(path, encoding="utf-8") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                games.append(game)
    return games


REPLAYED = re.compile(r"Game (\d+) \(.*\) was interrupted at ply \d+: it is played again from "
                      r"its start \((.*)\)")


def check(directory: Path, config: Path, args: argparse.Namespace, runner: Service,
          seen: list[tuple[int, str, int, list[dict[str, Any]], int]]) -> list[tuple[str, str, bool]]:
    rows: list[tuple[str, str, bool]] = []
    expected = (args.engines // 2) * 2 * args.rounds
    games = pgn_games(directory / "state" / "games.pgn")
    keys = Counter((g.headers["Round"], g.headers["White"], g.headers["Black"]) for g in games)
    conn = db(directory)
    try:
        stored = {r[0]: r[1:] for r in conn.execute(
            "SELECT game_id, status, result, attempt, round || '.' || game_in_round FROM games")}
    finally:
        conn.close()
    finished = {g: row for g, row in stored.items() if row[0] == "finished"}
    rows.append(("games scheduled / finished (db) / in the PGN",
                 f"{len(stored)} / {len(finished)} / {len(games)} (expected {expected})",
                 len(stored) == len(finished) == len(games) == expected))
    rows.append(("games lost", str(max(0, expected - len(keys))), len(keys) >= expected))
    duplicated = sum(n - 1 for n in keys.values() if n > 1)
    rows.append(("games duplicated (PGN)", str(duplicated), duplicated == 0))
    state = json.loads((directory / "state" / "swiss.json").read_text())
    standings = state.get("standings") or []
    total = sum(float(r["score"]) for r in standings)
    twice = sum(1 for r in standings if r["games"] != 2 * args.rounds)
    rows.append(("scored twice (standings: points, games per engine)",
                 f"{total:g} points for {len(finished)} games; {twice} engine(s) without "
                 f"{2 * args.rounds} games", total == len(finished) and twice == 0))
    label = {row[3]: gid for gid, row in stored.items()}  # "round.game" -> game id
    by_id = {label[g.headers["Round"]]: g for g in games if g.headers["Round"] in label}
    mismatch = [gid for gid, g in by_id.items() if g.headers["Result"] != stored[gid][1]]
    rows.append(("PGN result = database result", f"{len(mismatch)} differ", not mismatch))

    # interrupted games and how each went on
    out = runner.log.read_text(errors="replace")
    replayed = [(int(m.group(1)), m.group(2)) for m in REPLAYED.finditer(out)]
    bad_replays = [(gid, why) for gid, why in replayed if why != "no engine move was logged"]
    interrupted = {gid for gid, row in stored.items() if row[2] > 1}
    how: Counter[str] = Counter()
    for gid in interrupted:
        g = by_id.get(gid)
        if g is None:
            continue
        if g.headers.get("TerminationDetails") == "server interruption":
            how["decided from the log by 7.c"] += 1
        elif "ResumedFromPly" in g.headers and int(g.headers["ResumedFromPly"]) == len(
                list(g.mainline_moves())):
            how["ended as its log showed"] += 1
        elif "ResumedFromPly" in g.headers:
            how["continued from its position"] += 1
        else:
            how["started again from move 1 (nothing logged)"] += 1
    rows.append(("interrupted games (attempt > 1)",
                 f"{len(interrupted)}: " + ", ".join(f"{how[k]} {k}" for k in sorted(how)), True))
    no_log_replays = len(replayed) - len(bad_replays)
    rows.append(("replayed from move 1 with engine moves logged (console)",
                 f"{len(bad_replays)} ({no_log_replays} with no engine move logged)"
                 + (f": {bad_replays[:3]}" if bad_replays else ""), not bad_replays))

    # every move log read after a kill: a prefix of the final game, and continued from
    not_prefix, behind = [], []
    for number, kind, gid, log, attempt in seen:
        g = by_id.get(gid)
        if g is None or not log:
            continue
        final = [m.uci() for m in g.mainline_moves()]
        logged = [m["uci"] for m in log]
        if final[:len(logged)] != logged:
            not_prefix.append((number, kind, gid))
        # resumed after this read (a later attempt): from this position or later; a game
        # whose worker kept playing it while the runner restarted was not resumed at all
        if (any(not m.get("book") for m in log) and stored[gid][2] > attempt
                and int(g.headers.get("ResumedFromPly", 0)) < len(logged)):
            behind.append((number, kind, gid, len(logged), g.headers.get("ResumedFromPly")))
    rows.append(("move logs read after kills: not a prefix of the final game",
                 f"{len(not_prefix)} of {len(seen)}" + (f": {not_prefix[:3]}" if not_prefix
                                                        else ""), not not_prefix))
    rows.append(("... interrupted game resumed before its logged position",
                 str(len(behind)) + (f": {behind[:3]}" if behind else ""), not behind))

    audit = subprocess.run([sys.executable, "-m", "runner", "audit",
                            str(directory / "state" / "games.pgn"), "--seeds",
                            str(directory / "seeds.txt")], cwd=REPO, env=ENV,
                           capture_output=True, text=True, timeout=600)
    last = (audit.stdout.strip().splitlines() or [""])[-1]
    rows.append(("swiss-runner audit against the seeds", f"exit {audit.returncode}: {last[:80]}",
                 audit.returncode == 0))

    # the JSON state and status --json against the database
    status = subprocess.run([sys.executable, "-m", "runner", "status", str(config), "--json"],
                            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=300)
    problems = []
    dashboard, event_pgn = served(config)
    if event_pgn.count("[Event ") != len(finished):
        problems.append(f"dashboard /event.pgn: {event_pgn.count('[Event ')} games")
    for name, doc in (("swiss.json", state), ("status --json", json.loads(status.stdout or "{}")),
                      ("dashboard /api/state", dashboard)):
        if not doc.get("complete") or doc.get("games_finished") != len(finished):
            problems.append(f"{name}: complete {doc.get('complete')}, "
                            f"{doc.get('games_finished')} finished")
        for rnd in doc.get("rounds", []):
            for pair in rnd["pairs"]:
                for game in pair["games"]:
                    row = stored.get(game["game_id"])
                    if row is None or (game["status"], game["result"], game["attempt"]) != (
                            row[0], row[1], row[2]):
                        problems.append(f"{name}: game {game['game_id']}")
    rows.append(("JSON state, status --json, dashboard = database",
                 f"{len(problems)} differ" + (f": {problems[:3]}" if problems else ""),
                 not problems))
    return rows


def served(config: Path) -> tuple[dict[str, Any], str]:
    """The dashboard's /api/state and /event.pgn (`swiss-runner serve` on a free port)."""
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "runner", "serve", str(config), "--port",
                              str(port)], cwd=REPO, env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=30) as r:
                    state = json.loads(r.read())
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/event.pgn", timeout=60) as r:
                    return state, r.read().decode("utf-8", "replace")
            except (OSError, ValueError):
                if time.monotonic() > deadline or serve.poll() is not None:
                    return {}, ""
                time.sleep(0.5)
    finally:
        serve.terminate()
        serve.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--engines", type=int, default=42)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--slots", type=int, default=1,
                        help="game slots per worker (> 1: a supervisor of slot processes; a "
                             "worker kill is then of one slot or of the supervisor)")
    parser.add_argument("--gap", default="0.2-1.5",
                        help="seconds from the event moving again to the next kill, LOW-HIGH")
    parser.add_argument("--restart-scale", type=float, default=0.1,
                        help="RestartSec of the deploy/ units times this (default 0.1)")
    parser.add_argument("--delay-ms", type=int, default=180,
                        help="the engines' time per move (default 180: the 462-game event "
                             "lasts long enough for 1,000 kills)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=24 * 3600.0)
    parser.add_argument("--dir", help="work directory (kept; default: a temporary one, "
                                      "removed when every invariant holds)")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--verbose", action="store_true")
    return soak(parser.parse_args())


if __name__ == "__main__":
    sys.exit(main())
