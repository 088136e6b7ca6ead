"""``Restart: off``: engines kept between games (runner.play.keep), with real engines.

Each engine runs through a tiny wrapper script that appends its pid to a file and then
``exec``s the engine (same pid): the file counts the engine processes really started."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml
from testkit import DET_ENGINE, FAKE_UCI, REPO, event_games, swiss_event, wait_until, write_config

from runner.cli import main
from runner.config import ConfigError, load_config

pytestmark = pytest.mark.engines


def wrapper(tmp_path: Path, name: str, argv: list[str]) -> tuple[str, Path]:
    """A script that records its pid in ``<name>.pids`` and becomes ``argv``."""
    pids = tmp_path / f"{name}.pids"
    script = tmp_path / f"{name}.sh"
    quoted = " ".join(f"'{a}'" for a in argv)
    script.write_text(f"#!/bin/sh\necho $$ >> '{pids}'\nexec {quoted}\n")
    script.chmod(0o755)
    return str(script), pids


def started(pids: Path) -> list[int]:
    return [int(x) for x in pids.read_text().split()] if pids.exists() else []


def event(tmp_path: Path, engines: list[dict], restart: object = "off", **top: object) -> Path:
    if restart is not None:
        top["Restart"] = restart
    return swiss_event(tmp_path, engines, event="restart", rounds=3, max_moves=12, **top)


def real_engines(tmp_path: Path) -> tuple[list[dict], dict[str, Path]]:
    engines, files = [], {}
    for name, argv, extra in (
            ("Stockfish", ["/usr/games/stockfish"], {"Nodes": 2000, "Options": {"Hash": 1}}),
            ("Ethereal", ["/usr/games/ethereal-chess"], {"Depth": 3, "Options": {"Hash": 2}}),
            ("Fairy-Stockfish", ["/usr/games/fairy-stockfish"],
             {"Nodes": 2000, "Options": {"Hash": 1}}),
            ("Fairymax", ["/usr/games/fairymax"], {"Protocol": "xboard", "Depth": 2})):
        command, files[name] = wrapper(tmp_path, name, argv)
        engines.append({"Name": name, "Command": command, **extra})
    return engines, files


def games(tmp_path: Path) -> list[tuple[str, str, str, str]]:
    """(white, black, result, reason) of every finished game, in game order."""
    db = tmp_path / "state" / "swiss.sqlite3"
    with sqlite3.connect(db) as conn:
        reasons = dict(conn.execute("SELECT game_id, reason FROM games").fetchall())
    return [(r[3], r[4], r[7], reasons[r[0]]) for r in event_games(db) if r[6] == "finished"]


def assert_all_gone(files: dict[str, Path]) -> None:
    """No engine process that was started is still running (a reused pid is not ours)."""
    running = []
    for path in files.values():
        for pid in started(path):
            try:
                proc = psutil.Process(pid)
                if proc.status() != psutil.STATUS_ZOMBIE and "SWISS_RUNNER_OWNER" in proc.environ():
                    running.append((path.stem, pid))
            except psutil.Error:
                continue
    assert not running


@pytest.mark.slow
def test_restart_off_plays_the_event_with_fewer_engine_starts(tmp_path: Path) -> None:
    engines, files = real_engines(tmp_path)
    assert main(["run", str(event(tmp_path, engines, EngineLogs={"Dir": "logs", "Keep": "all"}))]) == 0
    played = games(tmp_path)
    assert len(played) == 12  # 2 pairs x 2 games x 3 rounds
    assert all(r[2] in ("1-0", "0-1", "1/2-1/2") for r in played)
    assert not [r for r in played if any(w in r[3] for w in ("disconnects", "stalls", "illegal",
                                                             "on time"))]
    starts = {name: len(started(path)) for name, path in files.items()}
    per_engine = {name: sum(name in (r[0], r[1]) for r in played) for name in files}
    logs = [p.read_text() for p in sorted((tmp_path / "logs").iterdir())]
    reused = sum(text.count("kept from an earlier game (Restart: off)") for text in logs)
    # each engine of each game was either started for it or kept from an earlier game (fresh
    # engines every game: 24 starts, + 4 of the preflight)
    assert sum(starts.values()) - len(files) + reused == sum(per_engine.values()), (starts, reused)
    # How many are kept depends on which game of a round ends first (Concurrency 2: the
    # second game of a pair that starts while the first still holds its engines starts two
    # more, and the pool's capacity, 2 x Concurrency, closes idle ones for them). But every
    # round after the first starts with every engine idle: its first two games (all four
    # engines) take kept ones, 2 rounds x 4 at least.
    assert reused >= 8, (starts, reused)
    kept = [p for p in (tmp_path / "logs").iterdir()
            if "kept from an earlier game (Restart: off)" in p.read_text()]
    assert kept and all("ucinewgame" in p.read_text() or "new" in p.read_text() for p in kept)
    assert_all_gone(files)
    conn = sqlite3.connect(tmp_path / "state" / "swiss.sqlite3")
    assert conn.execute("SELECT COUNT(*) FROM processes").fetchone()[0] == 0
    conn.close()


@pytest.mark.slow
def test_an_engine_that_crashes_is_restarted_the_others_are_kept(tmp_path: Path) -> None:
    engines, files = real_engines(tmp_path)
    command, files["Crasher"] = wrapper(tmp_path, "Crasher",
                                        [sys.executable, str(FAKE_UCI), "--crash-on-go", "3"])
    engines[-1] = {"Name": "Crasher", "Command": command}  # instead of Fairymax
    files.pop("Fairymax")
    # Ethereal keeps Restart: on for itself: a fresh process for every game of it
    engines[1] = {**engines[1], "Restart": "on"}
    assert main(["run", str(event(tmp_path, engines))]) == 0
    played = games(tmp_path)
    assert len(played) == 12
    crashed = [r for r in played if "Crasher" in r[:2]]
    assert crashed and all(r[3].endswith("disconnects") for r in crashed), crashed
    starts = {name: len(started(path)) for name, path in files.items()}
    per_engine = {name: sum(name in (r[0], r[1]) for r in played) for name in files}
    # + 1: run's preflight starts every engine once before the event
    assert starts["Crasher"] == per_engine["Crasher"] + 1  # a fresh one after every crash
    assert starts["Ethereal"] == per_engine["Ethereal"] + 1  # its own Restart: on
    assert starts["Stockfish"] < per_engine["Stockfish"] or \
        starts["Fairy-Stockfish"] < per_engine["Fairy-Stockfish"]
    assert_all_gone(files)


@pytest.mark.slow
def test_restart_on_starts_every_engine_for_every_game(tmp_path: Path) -> None:
    engines, files = real_engines(tmp_path)
    assert main(["run", str(event(tmp_path, engines, restart=None))]) == 0
    played = games(tmp_path)
    starts = {name: len(started(path)) for name, path in files.items()}
    # + 1: run's preflight starts every engine once before the event
    assert starts == {name: sum(name in (r[0], r[1]) for r in played) + 1 for name in files}


@pytest.mark.parametrize(("change", "needles"), [
    ({"Restart": "sometimes"}, ["Restart: got 'sometimes'", "on | off"]),
    ({"Restart": 1}, ["Restart: got 1", "on | off"]),
    ({"Restart": False, "Backend": "cutechess"}, ["Restart: got 'off'", "Backend: cutechess"]),
    ({"Cluster": {"Scheduler": "tcp://127.0.0.1:8786"}, "Restart": "off"},
     ["Restart: got 'off'", "Cluster"]),
    ({"Restart": True, "EngineRestart": "maybe"}, ["Engines[0].Restart: got 'maybe'", "on | off"]),
])
def test_bad_restart_is_named(tmp_path: Path, change: dict, needles: list[str]) -> None:
    engines = [{"Name": "A", "Command": sys.executable}, {"Name": "B", "Command": sys.executable}]
    change = dict(change)
    if "EngineRestart" in change:
        engines[0]["Restart"] = change.pop("EngineRestart")
    path = event(tmp_path, engines, restart=None, **change)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert all(n in text for n in needles), text
    assert f"{path}:" in text


def test_restart_values(tmp_path: Path) -> None:
    engines = [{"Name": "A", "Command": sys.executable, "Restart": "on"},
               {"Name": "B", "Command": sys.executable}]
    text = "Restart: off\n" + yaml.safe_dump({"Event": "r", "TimeControl": "10+0.1", "SwissOptions": {},
                                              "Engines": engines}, sort_keys=False)
    config = load_config(write_config(tmp_path, text))  # YAML reads off as false
    assert [e.restart for e in config.engines] == [True, False]
    config = load_config(event(tmp_path, engines, restart=None))
    assert [e.restart for e in config.engines] == [True, True]  # the default: on


def test_the_pool_keeps_records_repins_evicts_and_closes() -> None:
    """runner.play.keep.EnginePool with real Stockfish processes."""
    from dataclasses import replace

    from runner.config.typed import EngineConfig
    from runner.play.keep import EnginePool

    kept = EngineConfig(name="SF", command="/usr/games/stockfish", restart=False)
    other = replace(kept, name="SF2")
    fresh = replace(kept, name="SF3", restart=True)
    cores = sorted(os.sched_getaffinity(0))

    async def scenario() -> None:
        recorded: list[tuple[int, float]] = []
        pool = EnginePool(2, lambda pid, created: recorded.append((pid, created)))
        first = await pool.acquire(kept, timeout=30, cpus=cores[:1])
        await pool.release([first], "adjudication", cores[:1])
        assert first.alive and recorded == [(first.pid, first.create_time)]  # swept if we die
        told: list[tuple[int, float]] = []
        again = await pool.acquire(kept, timeout=30, cpus=cores[-1:],
                                   on_process=lambda pid, created: told.append((pid, created)))
        assert again is first and pool.reused == 1
        assert not told  # its row for the sweep is the idle one: not written again per game
        assert os.sched_getaffinity(first.pid) == set(cores[-1:])  # pinned to its new slot
        await pool.release([again], None)
        assert recorded == [(first.pid, first.create_time)]  # recorded once while kept
        again = await pool.acquire(kept, timeout=30, cpus=cores[-1:])
        assert again is first and pool.reused == 2
        await pool.release([again], "time forfeit")  # a forfeit: never kept
        assert not first.alive and not pool.idle
        a = await pool.acquire(kept, timeout=30)
        await pool.release([a], None)
        b = await pool.acquire(other, timeout=30)
        c = await pool.acquire(fresh, timeout=30)  # capacity 2: the idle SF makes room
        assert not a.alive and not pool.idle
        await pool.release([c], None)  # Restart: on for SF3: closed
        assert not c.alive
        await pool.release([b], None)
        assert b.alive and [i.proc for i in pool.idle] == [b]
        await pool.aclose()
        assert not b.alive and pool.started == 4
        late = await pool.acquire(kept, timeout=30)
        await pool.release([late], None)  # after the run: closed, not kept
        assert not late.alive and not pool.idle

    asyncio.run(scenario())


def test_a_kept_engine_is_taken_at_once_only_when_nothing_is_to_be_awaited() -> None:
    """EnginePool.kept (the referee's start of a game without a task per engine): the idle
    engine at once, with its note; None (nothing taken, acquire then starts or pins) for
    an engine with Restart: on, for none idle, and for an idle one that died (removed)."""
    from dataclasses import replace

    from runner.config.typed import EngineConfig
    from runner.play.keep import EnginePool

    kept = EngineConfig(name="SF", command="/usr/games/stockfish", restart=False)

    async def scenario() -> None:
        pool = EnginePool(2)
        assert pool.kept(kept) is None  # none idle
        first = await pool.acquire(kept, timeout=30)
        await pool.release([first], None)
        assert pool.kept(replace(kept, restart=True)) is None and len(pool.idle) == 1
        notes: list[str] = []
        again = pool.kept(kept, note=notes.append)
        assert again is first and pool.reused == 1 and not pool.idle
        assert notes == [f"SF: engine process {first.pid} kept from an earlier game "
                         "(Restart: off)"]
        await pool.release([again], None)
        os.kill(first.pid, signal.SIGKILL)  # it dies while idle
        await asyncio.to_thread(wait_until, lambda: not first.alive, "the engine's death")
        assert pool.kept(kept) is None and not pool.idle  # dead: dropped, not handed out
        await pool.aclose()

    asyncio.run(scenario())


@pytest.mark.slow
def test_a_runner_killed_with_kept_engines_leaves_nothing_and_resumes(tmp_path: Path) -> None:
    """SIGKILL the runner of a Restart: off event right after a game finished (its engines
    kept, waiting): no engine survives it, the next start sweeps what was recorded and the
    event completes with every game."""
    token = f"keep{os.getpid()}x{tmp_path.name[-10:]}"
    config = write_config(tmp_path, {
        "Event": "kept", "TimeControl": "120+1", "Concurrency": 2, "Restart": "off",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 3, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 40},
        "Engines": [{"Name": f"D{i}", "Command": sys.executable,
                     "Args": [str(DET_ENGINE), "random", f"{token}-{i}", "5"], "Nodes": 1}
                    for i in range(1, 5)]})
    log = tmp_path / "run.log"

    def start() -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            return subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)],
                                    cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                    env={**os.environ, "PYTHONPATH": str(REPO)})

    def ours() -> list[int]:
        found = []
        for proc in psutil.process_iter(["cmdline", "status"]):
            if any(token in part for part in proc.info["cmdline"] or ()) and \
                    proc.info["status"] != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        return found

    proc = start()
    wait_until(lambda: "Finished game " in log.read_text(), "a game finished", 120, proc,
               step=0.005, log=log)
    assert proc.poll() is None, log.read_text()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    for _ in range(200):  # the kernel's parent-death signal reaches the engines
        if not ours():
            break
        time.sleep(0.05)
    assert not ours()
    proc = start()
    assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    output = log.read_text()
    assert "Resuming event" in output and "Engine processes of the previous run:" in output
    assert "Event complete" in output
    played = games(tmp_path)
    assert len(played) == 12 and not [r for r in played if r[3].endswith("disconnects")]
    assert not ours()
