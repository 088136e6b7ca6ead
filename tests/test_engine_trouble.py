"""An engine that cannot start mid-event is that engine's trouble only (docs/orchestrator.md,
"One game's trouble"): a failed start is tried again after each wait of ``StartRetryS``, then
its game is lost by rule 7.a; when neither engine of a game starts, that game is held (an
alert, the next round waits) and played once an engine starts again, while the other games
go on. Real Debian engines behind a shell wrapper that starts failing after the runner's
start-up probe (a broken update mid-event)."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from testkit import REPO, wait_until, write_config

pytestmark = pytest.mark.engines


def wrapper(directory: Path, name: str, engine: str) -> Path:
    """A script that runs ``engine``; after its first start (the runner's probe) every start
    fails (it says why and exits 1, as a program that cannot load does) while ``<name>.broken``
    exists; each start is counted in ``<name>.starts``."""
    script = directory / f"{name}.sh"
    flag, probed, starts = (directory / f"{name}.{s}" for s in ("broken", "probed", "starts"))
    script.write_text(f"""#!/bin/sh
echo start >> '{starts}'
if [ -e '{flag}' ]; then echo "{name}: cannot start (broken install)" >&2; sleep 0.2; exit 1; fi
if [ ! -e '{probed}' ]; then touch '{probed}' '{flag}'; fi
exec /usr/games/{engine} "$@"
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def event(directory: Path, broken: dict[str, str], rounds: int) -> Path:
    engines: list[dict[str, Any]] = [
        {"Name": "Stockfish", "Command": "stockfish", "Options": {"Threads": 1, "Hash": 1}},
        {"Name": "Toga", "Command": "toga2"}]
    for name, engine in broken.items():
        engines.append({"Name": name, "Command": str(wrapper(directory, name, engine))})
    if len(engines) < 4:
        engines.append({"Name": "Ethereal", "Command": "ethereal-chess",
                        "Options": {"Threads": 1, "Hash": 2}})
    return write_config(directory, {
        "Event": "trouble", "TimeControl": "6+0.1", "Concurrency": 2,
        "StartRetryS": [0.2, 0.3],
        "SwissOptions": {"GamesPerMatch": 1, "Rounds": rounds, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 30},
        "Engines": engines,
    })


def query(db: Path, sql: str) -> list[tuple[Any, ...]]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


@pytest.mark.slow
def test_neither_engine_starting_holds_that_game_only(tmp_path: Path) -> None:
    config = event(tmp_path, {"Fairy": "fairy-stockfish", "Glaurung": "glaurung"}, rounds=2)
    db = tmp_path / "state" / "swiss.sqlite3"
    out = tmp_path / "run.out"
    with open(out, "w") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)],
                                cwd=REPO, stdout=handle, stderr=subprocess.STDOUT)
    try:
        # round 1: Fairy - Glaurung cannot start, Stockfish - Toga is played to its end
        wait_until(lambda: "is held" in out.read_text()
                   and query(db, "SELECT 1 FROM games WHERE status='finished'"),
                   "the healthy game recorded and the other held", 240, proc, step=0.2,
                   log=out)
        time.sleep(2)  # the held game is tried again meanwhile (about every second)
        assert proc.poll() is None, out.read_text()  # the event goes on: no exit 1
        rows = query(db, "SELECT white, black, status, reason FROM games ORDER BY game_id")
        assert len(rows) == 2, rows  # round 2 is not paired while a game of round 1 is held
        finished = [r for r in rows if r[2] == "finished"]
        assert [sorted(r[:2]) for r in finished] == [["Stockfish", "Toga"]], rows
        assert "abort" not in (finished[0][3] or "").lower(), finished
        assert not query(db, "SELECT 1 FROM games WHERE status='finished' AND "
                             "(white IN ('Fairy', 'Glaurung') OR black IN ('Fairy', 'Glaurung'))")
        text = out.read_text()
        assert "could not be played" in text and "the next round waits" in text, text
        # the install is repaired: the held game is played, then the event completes
        for name in ("Fairy", "Glaurung"):
            (tmp_path / f"{name}.broken").unlink()
        assert proc.wait(timeout=300) == 0, out.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    games = query(db, "SELECT round, status FROM games")
    assert len(games) == 4 and all(status == "finished" for _, status in games), games


@pytest.mark.slow
def test_one_engine_not_starting_is_retried_then_loses_by_rule_7a(tmp_path: Path) -> None:
    config = event(tmp_path, {"Fairy": "fairy-stockfish"}, rounds=1)
    run = subprocess.run([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    db = tmp_path / "state" / "swiss.sqlite3"
    rows = query(db, "SELECT white, black, result, reason, termination FROM games")
    fairy = [r for r in rows if "Fairy" in r[:2]]
    assert len(fairy) == 1, rows
    white, black, result, reason, termination = fairy[0]
    assert result == ("0-1" if white == "Fairy" else "1-0"), fairy
    assert "disconnects" in reason and termination == "abandoned", fairy
    other = [r for r in rows if "Fairy" not in r[:2]]
    assert len(other) == 1 and "disconnects" not in other[0][3], rows
    # the probe, then the game's start and one more try after each wait of StartRetryS
    starts = (tmp_path / "Fairy.starts").read_text().split()
    assert len(starts) == 1 + 1 + 2, starts
