"""The store's one writer (issue #32): game starts, records and engine processes are committed
on the writer thread; the event loop only enqueues, so a slow commit (a slow fsync, or the
SQLite write lock held elsewhere) never stalls the games in progress."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from testkit import event_games, swiss_event

from runner.cli import main
from runner.domain.models import GameRecord
from runner.service.tournament import Tournament
from runner.store.database import Store
from runner.store.writer import StoreWriter

SLOW_COMMIT_S = 0.6  # each game's record holds the write lock this long (a slow disk)


def _event(tmp_path: Path) -> Path:
    engines = [
        {"Name": "Stockfish", "Command": "/usr/games/stockfish", "Nodes": 1500,
         "Options": {"Hash": 1}},
        {"Name": "Ethereal", "Command": "/usr/games/ethereal-chess", "Depth": 2,
         "Options": {"Hash": 2}},
        {"Name": "Fairy-Stockfish", "Command": "/usr/games/fairy-stockfish", "Nodes": 1500,
         "Options": {"Hash": 1}},
        {"Name": "Fairymax", "Command": "/usr/games/fairymax", "Protocol": "xboard",
         "Depth": 2}]
    return swiss_event(tmp_path, engines, event="writer", max_moves=10)


@pytest.mark.slow
def test_a_slow_commit_never_stalls_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """Every game's record takes SLOW_COMMIT_S inside its transaction (the write lock held):
    on the loop, the other game's engines would wait that long at every game end. The loop's
    lag stays far below it, and every per-game write ran on the writer thread."""
    threads: dict[str, set[str]] = {"record_game": set(), "start_game": set(),
                                    "record_process": set()}
    synced_on_loop_while_playing: list[str] = []
    lags: list[float] = []
    playing: list[Tournament] = []

    slow_record = Store.record_game

    def record_game(self: Store, game_id: int, record: GameRecord, moves=()) -> None:
        threads["record_game"].add(threading.current_thread().name)
        with self.transaction() as c:  # the write lock, held as a slow fsync would hold it
            c.execute("UPDATE meta SET value=value WHERE key='event'")
            time.sleep(SLOW_COMMIT_S)
        slow_record(self, game_id, record, moves)

    for name in ("start_game", "record_process"):
        original = getattr(Store, name)

        def wrapped(self: Store, *args: object, _name: str = name, _orig=original,
                    **kwargs: object) -> None:
            threads[_name].add(threading.current_thread().name)
            _orig(self, *args, **kwargs)

        monkeypatch.setattr(Store, name, wrapped)
    monkeypatch.setattr(Store, "record_game", record_game)

    transaction = Store.transaction

    def watched(self: Store, *, synced: bool = True):
        if synced and threading.current_thread() is threading.main_thread() and playing \
                and playing[0].running:
            synced_on_loop_while_playing.append(repr(self.path))
        return transaction(self, synced=synced)

    monkeypatch.setattr(Store, "transaction", watched)

    run = Tournament.run

    async def measured_run(self: Tournament) -> int:
        playing.append(self)

        async def tick() -> None:
            while True:
                t = time.monotonic()
                await asyncio.sleep(0.01)
                lags.append(time.monotonic() - t - 0.01)

        ticker = asyncio.create_task(tick())
        try:
            return await run(self)
        finally:
            ticker.cancel()

    monkeypatch.setattr(Tournament, "run", measured_run)
    assert main(["run", str(_event(tmp_path))]) == 0
    rows = event_games(tmp_path / "state" / "swiss.sqlite3")
    assert len(rows) == 8 and all(r[6] == "finished" for r in rows)
    assert threads == {"record_game": {"store-writer"}, "start_game": {"store-writer"},
                       "record_process": {"store-writer"}}, threads
    assert not synced_on_loop_while_playing
    assert lags and max(lags) < SLOW_COMMIT_S / 2, max(lags)


def test_a_commit_outside_the_writer_thread_is_refused(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s.sqlite3")
    log = StoreWriter(store.path).start()
    try:
        assert log.conn is not None
        writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
        with pytest.raises(AssertionError, match="outside its thread"):
            writer.set_meta("k", "here")  # the test's thread, not the writer's
        log.submit(lambda conn: writer.set_meta("k", "writer")).result(timeout=10)
        assert store.meta("k") == "writer"
    finally:
        log.close()
        store.close()


def test_a_failed_commit_reaches_the_loop_through_its_future(tmp_path: Path) -> None:
    """A job that fails (here: a table that does not exist, as a full disk would fail the
    commit) hands its error to the future; the jobs after it still run, in order."""
    store = Store.open(tmp_path / "s.sqlite3")
    log = StoreWriter(store.path).start()
    try:
        assert log.conn is not None
        writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
        done: list[str] = []

        def broken(conn: sqlite3.Connection) -> None:
            with writer.transaction() as c:
                c.execute("INSERT INTO nowhere VALUES (1)")

        first = log.submit(broken)
        second = log.submit(lambda conn: done.append("second"))
        with pytest.raises(sqlite3.OperationalError, match="nowhere"):
            first.result(timeout=10)
        second.result(timeout=10)
        assert done == ["second"]
    finally:
        log.close()
        store.close()
