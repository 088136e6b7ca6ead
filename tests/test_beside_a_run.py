"""Issue 28: nothing an operator does beside a running event can hurt it. A real runner
(a separate process, real engines) plays a game while other commands and tools open the
event's database and close it again: its WAL must keep its inode (nobody deleted it under
the runner), and the runner ends the event with exit 0, nothing recovered or damaged."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from testkit import REPO, swiss_event, wait_until
from testkit import run_cli as _cli
from web_support import serve

STOCKFISH = Path("/usr/games/stockfish")


def _event(tmp_path: Path, time_control: str = "12+0") -> Path:
    """Two games between two real engines, long enough to act beside them (on a loaded host
    too: two equal engines with no increment play until their clocks run low)."""
    engine = {"Command": str(STOCKFISH), "Protocol": "uci", "Options": {"Hash": 16, "Threads": 1}}
    return swiss_event(tmp_path, [{"Name": "One", **engine}, {"Name": "Two", **engine}],
                       event="Beside a run", time_control=time_control, concurrency=1,
                       rounds=1, max_moves=400, PgnOut="state/games.pgn")


def _running_game(database: Path) -> bool:
    try:
        conn = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        return conn.execute("SELECT COUNT(*) FROM games WHERE status='running'").fetchone()[0] > 0
    except sqlite3.Error:
        return False
    finally:
        conn.close()


@pytest.mark.slow
@pytest.mark.skipif(not STOCKFISH.exists(), reason="stockfish is not installed")
def test_a_running_event_survives_every_reader_and_a_second_runner(tmp_path: Path) -> None:
    config = _event(tmp_path)
    database = tmp_path / "state" / "swiss.sqlite3"
    wal = database.with_name(database.name + "-wal")
    runner = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: wal.exists() and _running_game(database), "the game started", 60,
                   runner, step=0.1)
        inode = os.stat(wal).st_ino
        outputs = {}
        second = _cli("run", str(config))
        outputs["run"] = second
        assert second.returncode == 2 and "another swiss-runner" in second.stderr, second
        database.with_name(database.name + ".lock").unlink()  # the runner's record refuses
        third = _cli("run", str(config))
        outputs["run without the lock file"] = third
        assert third.returncode == 2 and "recorded in the database" in third.stderr, third
        conn = sqlite3.connect(database)  # a read-write connection (a backup script, a shell)
        assert conn.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 2
        conn.close()
        for args in (["status"], ["status", "--json"], ["standings"], ["ratings"], ["validate"]):
            result = _cli(args[0], str(config), *args[1:])
            outputs[" ".join(args)] = result
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        assert "Runner: running" in outputs["status"].stdout  # its lock file is gone
        with serve(config) as served:  # the dashboard, opened and stopped
            for page in ("", "api/state", "standings", "game-1", "game-2"):
                with urllib.request.urlopen(served.url + page, timeout=30) as response:
                    assert response.status == 200
        assert os.stat(wal).st_ino == inode, "the runner's WAL was deleted under it"
        # the runner's connection was open all along (its WAL is what a close would delete)
        assert runner.poll() is None, "the event ended before every tool was tried: lengthen it"
        out, _ = runner.communicate(timeout=120)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.communicate()
    assert runner.returncode == 0, out
    for text in [out, *(r.stdout + r.stderr for r in outputs.values())]:
        assert "recovered" not in text and "damaged" not in text, text
    assert not list(database.parent.glob("*.recovered"))
    conn = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    assert conn.execute("SELECT status FROM games").fetchall() == [("finished",), ("finished",)]
    conn.close()
