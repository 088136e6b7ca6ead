"""The move log's commits and its fsyncs (issue #52, item 2): a batch of moves is committed
without an fsync (``synchronous=NORMAL``), so every reader sees it at once, and the writer
fsyncs the WAL itself within ``sync_s``; every job (a game's record) stays a synced commit; a
process killed after a commit loses nothing of it (runner/store/writer.py's docstring)."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from test_writer_order import _moves, _store
from testkit import REPO, simple_record, wait_until

from runner.store.database import Store
from runner.store.writer import StoreWriter


def _seen(path: Path) -> int:
    """Moves another (read-only) connection sees."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM moves").fetchone()[0])
    finally:
        conn.close()


def test_moves_are_seen_by_readers_before_any_fsync_and_jobs_stay_synced(tmp_path: Path
                                                                           ) -> None:
    """No fsync is due for an hour: the moves reach another connection all the same (a
    commit without an fsync), a job after them runs with ``synchronous=FULL`` (what makes a
    game's record durable), and closing the writer fsyncs what was left."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=0.01, sync_s=3600).start()
    try:
        for move in _moves(0, range(1, 5)):
            log.append(move)
        wait_until(lambda: _seen(store.path) == 4, "the moves seen by another connection")
        assert log.syncs == 0 and log.unsynced_since is not None  # seen, not yet fsynced
        level = log.submit(lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0])
        assert level.result(timeout=10) == 2  # FULL: a job's commit is fsynced
    finally:
        log.close()
        store.close()
    assert log.syncs == 1 and log.unsynced_since is None  # the close made them durable


def test_a_games_record_makes_the_moves_before_it_durable_without_an_fsync_of_the_writer(
        tmp_path: Path) -> None:
    """Moves committed unsynced, then the game's record (a synced commit: SQLite fsyncs the
    WAL, every frame before it included): the writer has nothing left to fsync itself, not
    at ``sync_s`` nor when it closes; a move after the record is again its to fsync."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=0.01, sync_s=3600).start()
    thread_store = Store.on_writer_thread(log.conn, store.path, log.on_writer)
    *moves, last = _moves(1, range(1, 6))
    try:
        list(map(log.append, moves))
        wait_until(lambda: _seen(store.path) == 4, "the moves committed")
        assert log.unsynced_since is not None  # committed, not yet durable
        log.settle(1, lambda conn, rows: thread_store.record_game(
            1, simple_record("A", "B", "1-0"), moves=rows)).result(timeout=10)
        assert log.unsynced_since is None and log.syncs == 0  # the record's commit synced them
        log.append(last)  # (a move logged after its game's record: committed all the same)
        wait_until(lambda: _seen(store.path) == 5, "a move after the record")
        assert log.unsynced_since is not None
    finally:
        log.close()
        store.close()
    assert log.syncs == 1 and log.unsynced_since is None  # the close fsynced the last move


def test_the_writer_fsyncs_within_sync_s_and_wakes_for_a_move_after_sleeping(tmp_path: Path
                                                                              ) -> None:
    """With moves committed and nothing more coming, the writer fsyncs the WAL by itself
    (nothing else would: no job follows), then sleeps with nothing to do; a move queued
    later wakes it and is committed without any job behind it."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=0.01, sync_s=0.05).start()
    try:
        moves = _moves(0, range(1, 9))
        for move in moves[:4]:
            log.append(move)
        wait_until(lambda: log.syncs >= 1 and log.unsynced_since is None, "the writer's fsync")
        assert _seen(store.path) == 4
        wait_until(lambda: log._idle, "the writer asleep with nothing to do")
        syncs = log.syncs
        log.append(moves[4])
        wait_until(lambda: _seen(store.path) == 5, "the move queued to a sleeping writer")
        wait_until(lambda: log.syncs > syncs, "its fsync")
    finally:
        log.close()
        store.close()


def test_moves_of_a_game_in_play_are_committed_one_wake_per_batch(tmp_path: Path) -> None:
    """A move queued less than ``interval`` after a commit of moves does not wake the writer:
    it is committed when that interval is up (one wake: the timeout), still within
    ``interval`` of its queueing; with nothing queued at that time the writer sleeps until
    something is (a move then wakes it and is committed within ``interval`` too)."""
    store = _store(tmp_path)
    interval = 1.0  # the test appends the second move well within it, even on a busy machine
    log = StoreWriter(store.path, interval=interval, sync_s=3600).start()
    try:
        moves = _moves(0, range(1, 9))
        log.append(moves[0])
        wait_until(lambda: _seen(store.path) == 1, "the first move committed", step=0.01)
        wakes, queued = log.wakes, time.monotonic()
        log.append(moves[1])  # within ``interval`` of the first commit: no wake of its own
        wait_until(lambda: _seen(store.path) == 2, "the second move committed", step=0.01)
        assert time.monotonic() - queued < interval + 0.3
        assert log.wakes == wakes + 1, log.wakes - wakes  # the timeout alone
        wait_until(lambda: log._idle, "the writer asleep once no move follows")
        queued = time.monotonic()
        log.append(moves[2])  # wakes the sleeping writer
        wait_until(lambda: _seen(store.path) == 3, "the third move committed", step=0.01)
        assert time.monotonic() - queued < interval + 0.3
    finally:
        log.close()
        store.close()


KILLED = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from test_writer_order import _moves, _store
    from test_writer_sync import _seen
    from runner.store.database import Store
    from runner.store.writer import StoreWriter
    store = _store(Path({tmp!r}))
    log = StoreWriter(store.path, interval=0.01, sync_s=3600).start()
    writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
    moves = _moves(0, range(1, 9))
    for move in moves[:4]:
        log.append(move)
    log.submit(lambda conn: writer.set_meta("record", "reported")).result(timeout=10)
    for move in moves[4:]:
        log.append(move)
    while _seen(store.path) < 8:
        time.sleep(0.01)
    print("committed", log.syncs, flush=True)
    time.sleep(60)
""")


def test_a_process_killed_after_a_commit_loses_nothing_committed(tmp_path: Path) -> None:
    """SIGKILL after moves were committed without an fsync and after a job was reported:
    the database opened again holds all of them (the WAL survives the process; an fsync
    only guards against a power cut)."""
    script = KILLED.format(tests=str(REPO / "tests"), tmp=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env={"PYTHONPATH": str(REPO),
                                                           "PATH": "/usr/bin:/bin"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.split() == ["committed", "0"], line + proc.stdout.read().decode()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    conn = sqlite3.connect(tmp_path / "s.sqlite3")
    try:
        assert conn.execute("SELECT COUNT(*) FROM moves").fetchone()[0] == 8
        assert conn.execute("SELECT value FROM meta WHERE key='record'").fetchone()[0] \
            == "reported"
    finally:
        conn.close()
