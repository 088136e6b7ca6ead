"""The SQLite store: durability, read-only access, damaged files, full disk, fingerprints."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import simple_record, unwritable, write_config

from runner.config import load_config
from runner.config.fingerprint import event_fingerprint, fingerprint_changes
from runner.domain.models import Opening
from runner.store.database import (
    Store,
    StoreError,
    append_pgn,
    atomic_write,
    count_pgn_games,
    load_results,
)

REPO = Path(__file__).resolve().parent.parent
SEEDS = ["A", "B", "C", "D", "E"]


def game_rows(first_id: int, pairs: list[tuple[str, str]], opening: Opening | None = None) -> list[dict]:
    return [{"game_id": first_id + i, "game_in_round": i + 1, "pair_index": i, "leg": 1,
             "white": w, "black": b, "match_index": first_id - 1 + i, "opening": opening}
            for i, (w, b) in enumerate(pairs)]


def new_store(path: Path) -> Store:
    store = Store.open(path)
    store.init_event({"x": 1}, SEEDS, [2, 0, 1], event="T", games_per_match=1, rounds=3)
    pairs = [("B", "A"), ("D", "C")]
    store.add_round(1, pairs, "E", (), (), game_rows(1, pairs, Opening(index=2, moves=("e2e4",))))
    return store


def test_roundtrip_and_results(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    store = new_store(db)
    store.start_game(1, 1, "{}")
    store.record_process(4242, 123.5, 1)
    assert store.counts() == {"running": 1, "scheduled": 1}
    store.record_game(1, simple_record("B", "A", "0-1"))
    assert store.processes() == []  # the finished game's engines are forgotten with it
    assert [r.state for r in store.rounds()] == ["playing"]
    store.record_game(2, simple_record("D", "C", "1/2-1/2"))
    assert [r.state for r in store.rounds()] == ["complete"]
    store.close()

    again = Store.open(db)
    assert again.seeds() == SEEDS and again.opening_order() == [2, 0, 1]
    games = again.games(1)
    assert games[0].opening == Opening(index=2, moves=("e2e4",))
    assert [g.result for g in games] == ["0-1", "1/2-1/2"]
    assert again.next_game_id() == 3 and again.next_match_index() == 2
    again.close()
    results = Store.open_readonly(db).event_results()
    assert results is not None
    assert results.seeds == tuple(SEEDS) and results.games_per_match == 1
    (rnd,) = results.rounds
    assert rnd.bye == "E" and rnd.complete
    assert [(g.white, g.black, g.result, g.rmobility) for g in rnd.games] == [
        ("B", "A", "0-1", "G0.0"), ("D", "C", "1/2-1/2", "G0.0")]


def test_record_refuses_duplicates_and_wrong_players(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.sqlite3")
    store.record_game(1, simple_record("B", "A"))
    with pytest.raises(StoreError, match="already recorded"):
        store.record_game(1, simple_record("B", "A"))
    with pytest.raises(StoreError, match="D vs C"):
        store.record_game(2, simple_record("C", "D"))
    with pytest.raises(StoreError, match="never scheduled"):
        store.record_game(99, simple_record("B", "A"))
    assert store.counts() == {"finished": 1, "scheduled": 1}


@pytest.mark.slow
def test_committed_game_survives_hard_exit(tmp_path: Path) -> None:
    """A process that dies right after record_game returns (no close) loses nothing."""
    db = tmp_path / "s.sqlite3"
    new_store(db).close()
    code = (
        "import os, sys\n"
        "sys.path.insert(0, sys.argv[2]); sys.path.insert(0, sys.argv[2] + '/tests')\n"
        "from runner.store.database import Store\n"
        "from testkit import simple_record\n"
        "s = Store.open(sys.argv[1])\n"
        "s.record_game(1, simple_record('B', 'A', '1-0'))\n"
        "os._exit(9)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(db), str(REPO)], cwd=REPO)
    assert proc.returncode == 9
    store = Store.open(db)
    assert [(g.game_id, g.status, g.result) for g in store.games()] == [
        (1, "finished", "1-0"), (2, "scheduled", None)]


def test_readonly_reader_does_not_block_or_see_uncommitted(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    store = new_store(db)
    store.record_game(1, simple_record("B", "A"))
    store.conn.execute("BEGIN IMMEDIATE")  # the runner is in the middle of a write
    store.conn.execute("UPDATE games SET status='finished', result='0-1' WHERE game_id=2")
    reader = Store.open_readonly(db)
    assert reader is not None
    assert reader.counts() == {"finished": 1, "scheduled": 1}
    with pytest.raises(sqlite3.OperationalError):  # read-only really is read-only
        reader.conn.execute("DELETE FROM games")
    reader.close()
    store.conn.execute("COMMIT")
    assert store.counts() == {"finished": 2}


def test_load_results_without_state_is_none(tmp_path: Path) -> None:
    cfg = load_config(fingerprint_config(tmp_path))
    assert load_results(cfg) is None
    assert not cfg.database.exists()  # reading never creates anything


def test_garbage_database_is_refused_and_untouched(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    db.write_bytes(b"this is not a database at all\n" * 10)
    before = db.read_bytes()
    with pytest.raises(StoreError, match="not an SQLite database.*left untouched"):
        Store.open(db)
    with pytest.raises(StoreError, match="not an SQLite database"):
        Store.open_readonly(db)
    assert db.read_bytes() == before


def test_truncated_database_is_refused_and_untouched(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite3"
    store = new_store(db)
    for n in range(3):  # make the file span many pages
        first = store.next_game_id()
        pairs = [("A", "B"), ("C", "D")]
        store.add_round(2 + n, pairs, None, (), (), game_rows(first, pairs))
        for i in range(2):
            store.record_game(first + i, simple_record(*pairs[i], size=20000))
    store.close()  # checkpoints the WAL into the main file
    size = db.stat().st_size
    assert size > 40000
    with open(db, "r+b") as handle:
        handle.truncate(size // 2)
    before = db.read_bytes()
    with pytest.raises(StoreError, match="damaged|malformed|not a database"):
        Store.open(db)
    assert db.read_bytes() == before


def test_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    assert before[18:20] == b"\x01\x01"  # a rollback-journal database
    with pytest.raises(StoreError, match="not a swiss-runner state database.*left untouched"):
        Store.open(db)
    with pytest.raises(StoreError, match="not a swiss-runner state database"):
        Store.open_readonly(db)
    assert db.read_bytes() == before  # not even switched to WAL (header bytes 18-19)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite3"]


def test_foreign_sqlite_file_without_tables_is_refused(tmp_path: Path) -> None:
    """Only an SQLite file with nothing at all in it is taken for an unfinished first start."""
    db = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version=7")
    conn.close()
    before = db.read_bytes()
    with pytest.raises(StoreError, match="not a swiss-runner state database"):
        Store.open(db)
    assert db.read_bytes() == before


def test_foreign_sqlite_file_with_a_hot_journal_is_recovered_then_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.sqlite3"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES ('keep me')")
    conn.commit()
    conn.close()
    committed = db.read_bytes()
    _first_start_killed_switching_to_wal_on(db, "t")  # a crashed writer of the other program
    with pytest.raises(StoreError, match="rollback journal"):
        Store.open_readonly(db)  # `status` writes nothing, not even the rollback
    with pytest.raises(StoreError, match="not a swiss-runner state database.*left untouched"):
        Store.open(db)
    assert db.read_bytes() == committed  # rolled back to what the other program committed
    check = sqlite3.connect(db)
    assert check.execute("SELECT x FROM t").fetchall() == [("keep me",)]
    assert check.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    check.close()


def _first_start_killed_after_connect(db: Path) -> None:
    db.touch()  # what sqlite3.connect() leaves: an empty file


def _first_start_killed_after_wal(db: Path) -> None:
    code = ("import os, sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "conn.execute('PRAGMA journal_mode=WAL')\n"
            "os._exit(9)\n")
    assert subprocess.run([sys.executable, "-c", code, str(db)]).returncode == 9


def _first_start_killed_in_the_schema_transaction(db: Path) -> None:
    code = ("import os, sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "conn.execute('PRAGMA journal_mode=WAL')\n"
            "conn.execute('BEGIN IMMEDIATE')\n"
            "conn.execute('CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)')\n"
            "os._exit(9)\n")
    assert subprocess.run([sys.executable, "-c", code, str(db)]).returncode == 9


def _first_start_killed_switching_to_wal(db: Path) -> None:
    """Killed while SQLite switches the new file to WAL: page 1 written, a hot rollback
    journal beside it (a read-only connection cannot read the file until it is rolled back).
    A transaction that spills to the file before its commit leaves the same shape."""
    _first_start_killed_switching_to_wal_on(db, "CREATE TABLE t (x)")


def _first_start_killed_switching_to_wal_on(db: Path, create: str) -> None:
    code = ("import os, sqlite3, sys\n"
            "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "conn.execute('PRAGMA cache_size=2')\n"
            "conn.execute('BEGIN IMMEDIATE')\n"
            "if sys.argv[2].startswith('CREATE'):\n"
            "    conn.execute(sys.argv[2])\n"
            "for _ in range(200):\n"
            "    conn.execute('INSERT INTO t VALUES (randomblob(2000))')\n"
            "os._exit(9)\n")
    assert subprocess.run([sys.executable, "-c", code, str(db), create]).returncode == 9
    journal = db.with_name(db.name + "-journal")
    assert db.stat().st_size > 0 and journal.stat().st_size > 0  # a hot journal


@pytest.mark.parametrize("leftover", [_first_start_killed_after_connect, _first_start_killed_after_wal,
                                      _first_start_killed_switching_to_wal,
                                      _first_start_killed_in_the_schema_transaction])
def test_first_start_killed_before_the_schema_is_committed_starts_afresh(tmp_path: Path, leftover) -> None:
    """A kill during the very first start leaves an empty file; it must not be refused forever."""
    db = tmp_path / "state" / "s.sqlite3"
    db.parent.mkdir()
    leftover(db)
    assert db.exists()
    assert Store.open_readonly(db) is None  # `status`: no event yet (not "damaged")
    store = new_store(db)
    store.record_game(1, simple_record("B", "A"))
    store.close()
    again = Store.open(db)
    assert again.seeds() == SEEDS and again.counts() == {"finished": 1, "scheduled": 1}
    again.close()


def test_fingerprint_shows_a_section_added_or_removed_as_one_change(tmp_path: Path) -> None:
    (tmp_path / "book.pgn").write_text('[Event "x"]\n\n1. e4 e5 *\n')
    base = event_fingerprint(load_config(fingerprint_config(tmp_path)))
    added = event_fingerprint(load_config(fingerprint_config(
        tmp_path, Openings={"File": "book.pgn", "Order": "sequential"},
        Adjudication={"TcecDraw": {"Plies": 12}})))
    digest = hashlib.sha256((tmp_path / "book.pgn").read_bytes()).hexdigest()
    assert fingerprint_changes(base, added) == [
        'Adjudication.TcecDraw: null -> {"max_pawns": 8, "max_pieces": 8, "plies": 12, "score_cp": 20}',
        f'Openings: null -> {{"format": "pgn", "order": "sequential", "plies": 0, "sha256": "{digest}"}}',
    ]
    assert fingerprint_changes(added, base) == [
        'Adjudication.TcecDraw: {"max_pawns": 8, "max_pieces": 8, "plies": 12, "score_cp": 20} -> null',
        f'Openings: {{"format": "pgn", "order": "sequential", "plies": 0, "sha256": "{digest}"}} -> null',
    ]
    older = json.loads(json.dumps(base))  # a key an older swiss-runner did not record
    del older["TimeMarginMs"]
    assert fingerprint_changes(older, base) == ["TimeMarginMs: (unset) -> 0"]


def test_unwritable_state_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    with unwritable(locked), pytest.raises(StoreError, match="not writable"):
        Store.open(locked / "s.sqlite3")
    assert list(locked.iterdir()) == []


def test_state_directory_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("oops")
    with pytest.raises(StoreError, match="cannot create the state directory"):
        Store.open(tmp_path / "state" / "s.sqlite3")


def test_full_disk_rolls_back_the_game_and_keeps_the_rest(tmp_path: Path) -> None:
    """SQLITE_FULL (simulated with max_page_count) loses nothing already recorded."""
    db = tmp_path / "s.sqlite3"
    store = new_store(db)
    store.record_game(1, simple_record("B", "A", "0-1"))
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count={pages}")
    with pytest.raises(sqlite3.OperationalError, match="full"):
        store.record_game(2, simple_record("D", "C", size=50000))
    assert store.counts() == {"finished": 1, "scheduled": 1}
    store.close()
    store = Store.open(db)  # the limit is per connection: "space was freed"
    assert [g.status for g in store.games()] == ["finished", "scheduled"]
    store.record_game(2, simple_record("D", "C", size=50000))
    assert store.counts() == {"finished": 2}


def test_atomic_write_keeps_old_file_on_enospc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "snap.json"
    atomic_write(path, '{"old": true}\n')

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        atomic_write(path, '{"new": true}\n')
    assert info.value.errno == errno.ENOSPC
    assert json.loads(path.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["snap.json"]  # no temp file left


def test_pgn_count_and_rebuild(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.sqlite3")
    pgn = tmp_path / "games.pgn"
    assert store.pgn_matches(pgn)  # nothing recorded, no file: fine
    for gid, (w, b) in ((1, ("B", "A")), (2, ("D", "C"))):
        rec = simple_record(w, b, n=gid)
        store.record_game(gid, rec)
        append_pgn(pgn, rec.pgn)
    assert count_pgn_games(pgn) == 2 and store.pgn_matches(pgn)
    full = pgn.read_bytes()
    pgn.write_bytes(full[: len(full) - 30])  # cut short by a crash mid-append
    assert count_pgn_games(pgn) is None and not store.pgn_matches(pgn)
    assert store.rebuild_pgn(pgn) is None  # our own file, completed in place
    assert pgn.read_bytes() == full
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("games")) == ["games.pgn"]


def test_rebuild_keeps_a_pgn_we_did_not_write(tmp_path: Path) -> None:
    store = new_store(tmp_path / "s.sqlite3")
    ours = simple_record("B", "A", n=1)
    store.record_game(1, ours)
    pgn = tmp_path / "games.pgn"
    foreign = '[Event "last season"]\n[White "X"]\n[Black "Y"]\n[Result "1-0"]\n\n1. e4 1-0\n\n'
    pgn.write_text(foreign)
    assert not store.pgn_matches(pgn)
    backup = store.rebuild_pgn(pgn)
    assert backup is not None and backup.parent == tmp_path
    assert re.fullmatch(r"games\.pgn\.\d{8}T\d{6}Z\.bak", backup.name), backup.name
    assert backup.read_text() == foreign
    assert store.pgn_matches(pgn) and pgn.read_text() == ours.pgn.strip() + "\n\n"
    # the same foreign text again in the same second: a second backup, the first one kept
    pgn.write_text(foreign + "more")
    second = store.rebuild_pgn(pgn)
    assert second is not None and second != backup and second.read_text() == foreign + "more"
    assert backup.read_text() == foreign
    # longer than ours although it starts like it: not ours either
    pgn.write_text(ours.pgn.strip() + "\n\n" + foreign)
    third = store.rebuild_pgn(pgn)
    assert third is not None and third.read_text().endswith(foreign)


def fingerprint_config(tmp_path: Path, **changes: object) -> Path:
    data = {
        "Event": "Fingerprint",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 3, "StatePath": "state/s.json"},
        "TimeControl": "10+0.1",
        "Concurrency": 1,
        "Engines": [
            {"Name": "A", "Command": "stockfish", "Rating": 3000, "Options": {"Hash": 16}},
            {"Name": "B", "Command": "fairymax", "Protocol": "xboard"},
        ],
    }
    for key, value in changes.items():
        target = data
        parts = key.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if isinstance(target, list) else target[part]
        target[parts[-1]] = value
    path = write_config(tmp_path, data)
    return path


def test_fingerprint_lists_exactly_what_changed(tmp_path: Path) -> None:
    base = event_fingerprint(load_config(fingerprint_config(tmp_path)))
    assert fingerprint_changes(base, base) == []
    same = event_fingerprint(load_config(fingerprint_config(
        tmp_path, Concurrency=2, PgnOut="elsewhere.pgn", Event="Renamed",
        Tiebreaks=["Wins"])))
    assert fingerprint_changes(base, same) == []
    changed = event_fingerprint(load_config(fingerprint_config(
        tmp_path, **{"SwissOptions.Rounds": 5, "Engines.0.Options": {"Hash": 32},
                     "TimeControl": "20+0.2"})))
    assert fingerprint_changes(base, changed) == [
        "Engines.A.options.Hash: 16 -> 32",
        "SwissOptions.Rounds: 3 -> 5",
        'TimeControl: "10+0.1" -> "20+0.2"',
    ]
    renamed = event_fingerprint(load_config(fingerprint_config(tmp_path, **{"Engines.1.Name": "C"})))
    assert fingerprint_changes(base, renamed) == ["Engines: 'B' was removed", "Engines: 'C' was added"]


# --------------------------------------------------------------------------- SQLite's locks


_WRITER = """
import sys
from pathlib import Path
from runner.store.database import Store
store = Store.open(Path(sys.argv[1]))
store.set_meta("x", "1")
reader = Store.open_readonly(store.path)  # as the runner's snapshot thread does
reader.close()
print("ready", flush=True)
sys.stdin.read()
store.close()
"""


def test_a_reader_beside_the_writer_in_its_process_leaves_the_writers_locks(tmp_path: Path) -> None:
    """Store.open_readonly in the process of a Store.open (the runner's snapshot thread) reads
    nothing outside SQLite: closing such a descriptor dropped the writer's fcntl locks, and
    the next connection to close in another process deleted the live WAL (issue 28)."""
    db = tmp_path / "s.sqlite3"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(db)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parent.parent)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "ready\n"
        wal = db.with_name(db.name + "-wal")
        inode = os.stat(wal).st_ino
        other = sqlite3.connect(db)  # read-write, as a shell or a backup script
        assert other.execute("SELECT value FROM meta WHERE key='x'").fetchone() == ("1",)
        other.close()  # it is not the last connection: the WAL stays
        assert os.stat(wal).st_ino == inode
    finally:
        assert writer.stdin is not None
        writer.stdin.close()
        assert writer.wait(timeout=30) == 0


def test_nothing_reads_a_file_this_process_has_open_in_sqlite(tmp_path: Path) -> None:
    from runner.store.forensics import opened_here, read_header

    db = tmp_path / "s.sqlite3"
    store = Store.open(db)
    assert opened_here(db) and read_header(db) is None
    reader = Store.open_readonly(db)
    assert reader is not None
    store.close()
    assert opened_here(db)  # the reader is still open
    reader.close()
    assert not opened_here(db) and read_header(db).startswith(b"SQLite format 3\x00")


def test_a_connection_left_to_the_garbage_collector_is_not_counted_for_ever(tmp_path: Path) -> None:
    import gc

    from runner.store.forensics import opened_here

    db = tmp_path / "s.sqlite3"
    Store.open(db).close()
    reader = Store.open_readonly(db)
    assert reader is not None and opened_here(db)
    del reader
    gc.collect()
    assert not opened_here(db)


def test_the_reads_of_tables_a_database_may_lack_are_one_statement_each(tmp_path: Path) -> None:
    """The TD's, the withdrawals' and the builds' tables are read without a look at the
    schema first (the run loop polls them): a database without them reads as empty, and any
    other error of the read is not taken for a missing table."""
    from runner.store import buildrecords, decisions, queries, tdstore

    conn = sqlite3.connect(tmp_path / "bare.sqlite3", isolation_level=None)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    assert queries.table_rows(conn, "SELECT id FROM td_commands") is None
    assert decisions.pending_ids(conn) == [] and tdstore.withdrawals(conn) == []
    assert buildrecords.builds(conn) == {}
    assert not any("sqlite_master" in s for s in statements)
    conn.execute("CREATE TABLE td_commands (id INTEGER PRIMARY KEY, state TEXT)")
    conn.executemany("INSERT INTO td_commands (state) VALUES (?)",
                     [("pending",), ("applied",), ("pending",)])
    assert decisions.pending_ids(conn) == [1, 3]
    with pytest.raises(sqlite3.OperationalError, match="no such column"):
        queries.table_rows(conn, "SELECT missing FROM td_commands")
    conn.close()


def test_game_rows_kept_between_reads_are_a_fresh_read_and_unchanged_rows_the_same(
        tmp_path: Path) -> None:
    """Store.game_rows(known), as the snapshot reads it (a finished game's row read again only
    when its status, start or finish changed), equals a read of every row after each change
    of a game: a start, a restart, a record, a rewind put back; a row that did not change is
    the same dict."""
    store = new_store(tmp_path / "s.sqlite3")
    known: dict = {}

    def both() -> list[dict]:
        kept = store.game_rows(known)
        assert kept == store.game_rows()
        return kept

    first = both()
    assert [g["status"] for g in first] == ["scheduled", "scheduled"]
    store.start_game(1, 1, '{"attempt":1}')
    second = both()
    assert second[0]["started_event"] == '{"attempt":1}' and second[1] is first[1]
    store.start_game(1, 2, '{"attempt":2}')  # a restart: the game stays running
    third = both()
    assert third[0]["attempt"] == 2 and third[0]["started_event"] == '{"attempt":2}'
    store.record_game(1, simple_record("B", "A", "0-1"))
    fourth = both()
    assert fourth[0]["status"] == "finished" and fourth[0]["plies"] > 0
    assert both()[0] is fourth[0]  # finished and unchanged: not made again
    with store.transaction() as conn:  # a TD rewind puts the game back (tdstore.rewind)
        conn.execute("UPDATE games SET status='scheduled', started=NULL, finish_seq=NULL, "
                     "result=NULL, moves=NULL, pgn=NULL, attempt=0, started_event=NULL "
                     "WHERE game_id=1")
    rewound = both()
    assert rewound[0]["status"] == "scheduled" and rewound[0]["attempt"] == 0
    store.add_round(2, [("A", "C")], None, (), (), game_rows(3, [("A", "C")]))
    assert [g["game_id"] for g in both()] == [1, 2, 3]
    store.close()
