"""The store's one ordered writer (issue #38, item 1): game starts, moves and barriers reach
SQLite in the order they were submitted, and every write is idempotent on (game, attempt,
ply). The writer is paused deterministically in the window between taking its next piece of
the queue and writing it (``StoreWriter.between``), never by sleeping and hoping."""

from __future__ import annotations

import threading
from pathlib import Path

import chess

from runner.domain.events import MovePlayed
from runner.store.database import Store
from runner.store.writer import StoreWriter

LINE = ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6"]


def _store(tmp_path: Path) -> Store:
    store = Store.open(tmp_path / "s.sqlite3")
    store.add_round(1, [("A", "B")], None, (), (), [
        {"game_id": 1, "game_in_round": 1, "pair_index": 0, "leg": 1, "white": "A",
         "black": "B", "match_index": 0, "opening": None}])
    return store


def _moves(attempt: int, plies: range) -> list[MovePlayed]:
    board = chess.Board()
    out = []
    for ply, uci in enumerate(LINE, start=1):
        move = chess.Move.from_uci(uci)
        san = board.san(move)
        board.push(move)
        if ply in plies:
            out.append(MovePlayed(game_id=1, ply=ply, uci=uci, san=san, fen=board.fen(),
                                  white_clock_ms=None, black_clock_ms=None, attempt=attempt))
    return out


def _logged(store: Store) -> list[tuple[int, int]]:
    return [(r[0], r[1]) for r in store.conn.execute(
        "SELECT ply, attempt FROM moves WHERE game_id=1 ORDER BY ply")]


class Gate:
    """Holds the writer in its window once, while the test submits behind its back."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()
        self.armed = True

    def __call__(self) -> None:
        if self.armed:
            self.armed = False
            self.inside.set()
            assert self.release.wait(10), "the test never released the writer"


def test_a_start_is_never_committed_after_its_own_book_moves(tmp_path: Path) -> None:
    """The writer is held after it took a piece of the queue. Meanwhile the game's start is
    submitted, its book moves are appended, and another thread flushes (as the cluster's
    ReplayGame path does from asyncio.to_thread). Released, the start runs first and its
    moves stay: the flush is a barrier that waits, not a second writer that overtakes."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=60.0).start()  # moves only go out behind a job
    gate = Gate()
    log.between = gate
    try:
        assert log.conn is not None
        writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
        log.submit(lambda conn: None)  # wakes the writer: it takes this and is held
        assert gate.inside.wait(10)
        start = log.restart(1, 1, lambda conn: writer.start_game(1, 1, "{}", keep_plies=0))
        for move in _moves(1, range(1, 5)):
            log.append(move)
        flushed = threading.Event()
        flusher = threading.Thread(target=lambda: (log.flush(), flushed.set()))
        flusher.start()
        assert not flushed.wait(0.3), "flush must wait for the writer, not write by itself"
        assert _logged(store) == []
        gate.release.set()
        flusher.join(10)
        assert flushed.is_set()
        start.result(timeout=10)
        assert _logged(store) == [(1, 1), (2, 1), (3, 1), (4, 1)]
    finally:
        gate.release.set()
        log.close()
        store.close()


def test_writes_are_idempotent_on_game_attempt_and_ply(tmp_path: Path) -> None:
    """A resumed attempt keeps the prefix it goes on from; a stale move of the earlier
    attempt that arrives after the new start is not written; the start, repeated, deletes
    nothing of its own attempt."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=60.0).start()
    try:
        assert log.conn is not None
        writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
        log.submit(lambda conn: writer.start_game(1, 1, "{}", keep_plies=0))
        for move in _moves(1, range(1, 7)):
            log.append(move)
        log.flush()
        assert _logged(store) == [(p, 1) for p in range(1, 7)]
        # attempt 2 resumes from ply 3: plies 4-6 of attempt 1 go
        log.restart(1, 2, lambda conn: writer.start_game(1, 2, "{}", keep_plies=3))
        for move in _moves(2, range(4, 6)):
            log.append(move)
        log.flush()
        assert _logged(store) == [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2)]
        # a stale move of attempt 1 (an event that arrived late) changes nothing
        for move in _moves(1, range(5, 8)):
            log.append(move)
        log.flush()
        assert _logged(store) == [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2)]
        # the start of attempt 2, written again (a retry), keeps attempt 2's own moves
        log.submit(lambda conn: writer.start_game(1, 2, "{}", keep_plies=3)).result(10)
        assert _logged(store) == [(1, 1), (2, 1), (3, 1), (4, 2), (5, 2)]
    finally:
        log.close()
        store.close()


def test_a_game_record_takes_its_queued_moves_in_its_own_transaction(tmp_path: Path) -> None:
    """Moves queued before a record are handed to it (one commit), in order, and the moves
    of another game queued between them are written too, before the record."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=60.0).start()
    seen: list[list[int]] = []
    try:
        for move in _moves(1, range(1, 4)):
            log.append(move)
        future = log.settle(1, lambda conn, rows: seen.append([r[1] for r in rows]))
        future.result(timeout=10)
        assert seen == [[1, 2, 3]]
        assert _logged(store) == []  # they were the record's to commit
    finally:
        log.close()
        store.close()


def _status(store: Store) -> tuple[str, int]:
    row = store.conn.execute("SELECT status, attempt FROM games WHERE game_id=1").fetchone()
    return row[0], row[1]


def test_a_start_is_committed_with_the_moves_around_it_in_one_transaction(tmp_path: Path
                                                                          ) -> None:
    """A game's start (restart) is queued as a move is: no job behind it, the writer commits
    it within ``interval`` in the same transaction as the book moves queued after it (one
    BEGIN, one COMMIT, the start in a savepoint), and its future is then done."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=0.2).start()
    statements: list[str] = []
    try:
        assert log.conn is not None
        writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
        log.submit(lambda conn: conn.set_trace_callback(statements.append)).result(10)
        start = log.restart(1, 1, lambda conn: writer.start_game(1, 1, "{}", keep_plies=0))
        for move in _moves(1, range(1, 4)):
            log.append(move)
        start.result(timeout=10)  # no flush, no job behind it: the batch's own commit
        assert _status(store) == ("running", 1)
        assert _logged(store) == [(1, 1), (2, 1), (3, 1)]
        assert [s for s in statements if s.startswith(("BEGIN", "COMMIT"))] == [
            "BEGIN IMMEDIATE", "COMMIT"]
        assert "SAVEPOINT joined" in statements and "RELEASE joined" in statements
        assert log.starts == 1 and log.written == 3
    finally:
        log.close()
        store.close()


def test_a_start_that_fails_in_the_batch_fails_alone(tmp_path: Path) -> None:
    """A start whose write fails inside the batch is rolled back to its savepoint and hands
    its error to its future; the moves around it are committed all the same."""
    store = _store(tmp_path)
    log = StoreWriter(store.path, interval=60.0).start()
    try:
        def broken(conn: object) -> None:
            with writer.transaction(synced=False) as c:
                c.execute("UPDATE games SET status='running' WHERE game_id=1")
                c.execute("INSERT INTO no_such_table VALUES (1)")

        assert log.conn is not None
        writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
        start = log.restart(1, 1, broken)
        for move in _moves(0, range(1, 3)):
            log.append(move)
        log.flush()
        exc = start.exception(timeout=10)
        assert exc is not None and "no_such_table" in str(exc)
        assert _status(store) == ("scheduled", 0)  # its savepoint rolled back
        assert _logged(store) == [(1, 0), (2, 0)]
    finally:
        log.close()
        store.close()


def test_a_start_in_a_batch_that_cannot_be_written_goes_on_by_itself(tmp_path: Path) -> None:
    """A batch of moves that cannot be written (not a full disk) stays queued and is tried
    again; a game's start that was in it is not held behind it: it is committed on its own
    at once, and its future is done. The error reported is the batch's own, and the jobs
    after it still commit with ``synchronous=FULL``."""
    store = _store(tmp_path)
    errors: list[BaseException] = []
    log = StoreWriter(store.path, interval=60.0, on_error=errors.append).start()
    try:
        assert log.conn is not None
        writer = Store.on_writer_thread(log.conn, store.path, log.on_writer)
        start = log.restart(1, 1, lambda conn: writer.start_game(1, 1, "{}", keep_plies=0))
        bad = _moves(1, range(1, 2))[0]
        log.append(MovePlayed(**{**bad.__dict__, "ply": None}))  # NOT NULL: refused
        log.flush()
        assert start.result(timeout=10) is None
        assert _status(store) == ("running", 1)
        assert errors and "NOT NULL" in str(errors[0])
        assert log.failed is not None and log.pending() == 1  # the move is still queued
        # the error reported is the batch's own, and a job after it is still synced (FULL)
        assert log.submit(lambda conn: conn.execute("PRAGMA synchronous").fetchone()[0]
                          ).result(timeout=10) == 2
    finally:
        log._queue.clear()  # the refused move: nothing to write at close
        log.close()
        store.close()
