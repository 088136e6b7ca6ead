"""A full disk under a running event (issue #38, item 4): the state directory (and the engine
logs) on a small tmpfs, filled to the last byte for a while, then freed. The runner waits for
space, says so, and goes on by itself: the event completes with every game once in the
database and the PGN, no time forfeit, an intact database and no traceback. A stop signal
while it waits is a clean stop that `run` resumes."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from testkit import swiss_event, wait_until

from runner.store.database import count_pgn_games

pytestmark = [pytest.mark.engines, pytest.mark.slow]
REPO = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def small_disk(path: Path, size: str = "6m") -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (CI runs as root)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Fill the file system to the last byte (a file of zeros until ENOSPC)."""
    filler = disk / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as handle:
        while True:
            try:
                handle.write(chunk)
            except OSError:
                break
        while True:  # and the last partial block
            try:
                handle.write(b"\0" * 512)
            except OSError:
                break
    assert os.statvfs(disk).f_bavail == 0
    return filler


def event(tmp_path: Path, disk: Path, logs: bool) -> Path:
    engines = [
        {"Name": "Stockfish", "Command": "/usr/games/stockfish", "Nodes": 3000,
         "Options": {"Hash": 1, "Threads": 1}},
        {"Name": "Ethereal", "Command": "/usr/games/ethereal-chess", "Nodes": 3000,
         "Options": {"Hash": 2}},
        {"Name": "Fairymax", "Command": "/usr/games/fairymax", "Protocol": "xboard",
         "Depth": 3},
        {"Name": "Fairy", "Command": "/usr/games/fairy-stockfish", "Nodes": 3000,
         "Options": {"Hash": 1}}]
    top = {"EngineLogs": {"Dir": str(disk / "logs"), "Keep": "all"}} if logs else {}
    return swiss_event(tmp_path, engines, event="full disk", time_control="20+0.2",
                       max_moves=60, state=str(disk / "state" / "swiss.json"), **top)


def recorded(db: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return conn.execute("SELECT COUNT(*) FROM games WHERE status='finished'").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def start(config: Path, out: Path) -> subprocess.Popen[bytes]:
    handle = open(out, "wb")  # noqa: SIM115 - closed with the process
    return subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                            stdout=handle, stderr=subprocess.STDOUT)


def check_complete(db: Path, pgn: Path, text: str, games: int = 8) -> None:
    assert "Traceback" not in text, text
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        rows = conn.execute("SELECT game_id, status, reason FROM games").fetchall()
    finally:
        conn.close()
    assert len(rows) == games and all(r[1] == "finished" for r in rows), rows
    assert not [r for r in rows if "time" in (r[2] or "").lower()], rows  # no time forfeit
    assert count_pgn_games(pgn) == games
    ids = [line for line in pgn.read_text().splitlines() if line.startswith("[Round ")]
    assert len(ids) == len(set(ids)) == games  # each game once


@contextlib.contextmanager
def event_on_a_full_disk(tmp_path: Path, logs: bool) -> Iterator[SimpleNamespace]:
    """A runner playing the event, its disk just filled and the runner waiting for space."""
    with small_disk(tmp_path / "disk") as disk:
        config = event(tmp_path, disk, logs)
        db, out = disk / "state" / "swiss.sqlite3", tmp_path / "out.txt"
        proc = start(config, out)
        try:
            wait_until(lambda: recorded(db) >= 1, "a game recorded", 120, proc, step=0.1, log=out)
            filler = fill(disk)
            wait_until(lambda: "waiting for space" in out.read_text(), "waiting for space", 60, proc,
                       step=0.1, log=out)
            yield SimpleNamespace(config=config, disk=disk, db=db, out=out, proc=proc,
                                  filler=filler, before=recorded(db))
        finally:
            if proc.poll() is None:
                proc.kill()


@pytest.mark.parametrize("logs", [False, True], ids=["state", "state+engine-logs"])
def test_a_full_disk_is_waited_out_and_the_event_completes(tmp_path: Path, logs: bool) -> None:
    with event_on_a_full_disk(tmp_path, logs) as run:
        time.sleep(3)  # full for a while: nothing more is recorded, nothing stops
        assert run.proc.poll() is None and recorded(run.db) == run.before
        run.filler.unlink()
        assert run.proc.wait(timeout=300) == 0, run.out.read_text()
        text = run.out.read_text()
        assert text.count("waiting for space") == 1 and "disk space is back" in text, text
        check_complete(run.db, run.disk / "state" / "games.pgn", text)


def test_a_stop_signal_while_waiting_for_space_is_a_clean_stop(tmp_path: Path) -> None:
    with event_on_a_full_disk(tmp_path, logs=False) as run:
        run.proc.send_signal(signal.SIGINT)
        assert run.proc.wait(timeout=60) == 130, run.out.read_text()
        config, disk, db, out, filler, before = (run.config, run.disk, run.db, run.out,
                                                 run.filler, run.before)
        text = out.read_text()
        assert "Traceback" not in text and "run the same command to resume" in text, text
        assert recorded(db) == before  # nothing recorded was lost
        filler.unlink()
        again = tmp_path / "again.txt"
        proc = start(config, again)
        assert proc.wait(timeout=300) == 0, again.read_text()
        check_complete(db, disk / "state" / "games.pgn", again.read_text())


def test_a_console_nobody_reads_never_stops_the_event(tmp_path: Path) -> None:
    """`run ... | head -1`: the reader goes away after the first line; the console is a
    view, so the event completes, reported once on stderr, without a traceback."""
    config = event(tmp_path, tmp_path, logs=False)
    errors = tmp_path / "err.txt"
    with open(errors, "wb") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                                stdout=subprocess.PIPE, stderr=handle)
        assert proc.stdout is not None
        assert proc.stdout.readline()
        proc.stdout.close()
        assert proc.wait(timeout=300) == 0
    text = errors.read_text()
    assert text.count("the console (standard output) cannot be written") == 1, text
    check_complete(tmp_path / "state" / "swiss.sqlite3", tmp_path / "state" / "games.pgn", text)
