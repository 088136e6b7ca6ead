"""Durable tournament state: SQLite is the truth, the JSON snapshot and the PGN are views.

Layout (all beside ``SwissOptions.StatePath`` unless configured otherwise):

* ``Database`` (default ``swiss_state.sqlite3``): WAL journal, ``synchronous=FULL``. Every
  finished game is committed in one transaction before anything depends on it.
* ``StatePath`` JSON snapshot for dashboards, replaced atomically (temp file, rename) at
  every game start and end; not synced to disk (it is a view): a missing or corrupt
  snapshot is simply rebuilt from the database.
* ``PgnOut``: every finished game appended (not synced either); rebuilt from the database
  whenever it does not hold exactly the recorded games (cut short by a crash or a power cut,
  deleted, or moved to a new path).

The store is split by concern: ``schema`` (tables, upgrades, identity checks, StoreError),
``forensics`` (what an existing file is, before and beside SQLite), ``files`` (atomic writes
beside the database), ``pgnfile`` (the PGN view) and ``writer`` (the one writer thread: the per-move log and every write); this
module is the :class:`Store` itself and re-exports what callers import from here.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from runner.clock import utc_now
from runner.config.typed import Config
from runner.domain.models import EventResults, GameRecord, Opening, PlayedGame, RoundResult
from runner.store import buildrecords, queries
from runner.store.dbformat import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    StoreError,
    check_identity,
)
from runner.store.files import atomic_write, file_identity, remove_stale_temp_files
from runner.store.forensics import FileWatch, connect, save_copy
from runner.store.opening import damaged_file, open_event_file, open_event_readonly
from runner.store.pgnfile import append_pgn, count_pgn_games, pgn_block, pgn_matches, rebuild_pgn
from runner.store.tdstore import Withdrawal, withdrawals
from runner.store.writer import INSERT_MOVES, MoveRow

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "Store", "StoreError", "StoredGame", "StoredRound",
           "append_pgn", "atomic_write", "count_pgn_games", "damaged_state", "event_recorded", "file_identity",
           "load_results", "remove_stale_temp_files", "scheduled_game"]


# --------------------------------------------------------------------------- the store


@dataclass(frozen=True)
class StoredGame:
    """One scheduled (maybe finished) game as stored."""

    game_id: int
    round: int
    game_in_round: int
    pair_index: int
    leg: int
    white: str
    black: str
    match_index: int
    opening: Opening | None
    extra: bool
    status: str
    result: str | None = None
    reason: str | None = None
    rmobility: str | None = None


@dataclass(frozen=True)
class StoredRound:
    number: int
    pairs: tuple[tuple[str, str], ...]
    bye: str | None
    dropped: tuple[int, ...]
    excluded: frozenset[int]
    extra: bool
    state: str


def _opening_json(opening: Opening | None) -> str | None:
    if opening is None:
        return None
    return json.dumps({"index": opening.index, "name": opening.name, "fen": opening.fen,
                       "moves": list(opening.moves)})


@functools.lru_cache(maxsize=4096)
def _opening_from(text: str | None) -> Opening | None:
    """A game's opening from its stored JSON, decoded once per distinct text (immutable)."""
    if not text:
        return None
    d = json.loads(text)
    return Opening(index=d["index"], name=d.get("name", ""), fen=d.get("fen"),
                   moves=tuple(d.get("moves", ())))


_GAME_COLUMNS = ("game_id, round, game_in_round, pair_index, leg, white, black, match_index, "
                 "opening, extra, status, result, reason, rmobility")


@functools.lru_cache(maxsize=4096)
def _round_from_row(r: tuple[Any, ...]) -> StoredRound:
    """A stored round from its row, decoded once per distinct row: the loop, the standings
    and the snapshot read the rounds after every game (StoredRound is immutable)."""
    return StoredRound(number=r[0], pairs=tuple(tuple(p) for p in json.loads(r[1])), bye=r[2],
                       dropped=tuple(json.loads(r[3])), excluded=frozenset(json.loads(r[4])),
                       extra=bool(r[5]), state=r[6])


def _kept_game_rows(conn: sqlite3.Connection, select: str,
                    known: dict[int, tuple[tuple[Any, ...], tuple[Any, ...], dict[str, Any]]]
                    ) -> list[dict[str, Any]]:
    """Store.game_rows with ``known``: the finished games whose marks (status, started,
    finish_seq) did not change are their kept dicts; the others' rows (``select``) are read."""
    marks = conn.execute(
        "SELECT game_id, status, started, finish_seq FROM games ORDER BY game_id").fetchall()
    stale = [m[0] for m in marks if m[1] != "finished" or m[0] not in known
             or known[m[0]][0] != m]
    rows: dict[int, tuple[Any, ...]] = {}
    if len(stale) > 400:  # (SQLite takes at most 32766 parameters)
        rows = {r[0]: r for r in conn.execute(select)}
    elif stale:
        rows = {r[0]: r for r in conn.execute(
            f"{select} WHERE game_id IN ({','.join('?' * len(stale))})", stale)}
    out, now = [], {}
    for m in marks:
        kept = known.get(m[0])
        row = rows.get(m[0])
        if row is None:  # unchanged and finished (or gone between the two reads)
            if kept is not None:
                now[m[0]] = kept
                out.append(kept[2])
            continue
        d = kept[2] if kept is not None and kept[1] == row else _game_dict(row)
        now[m[0]] = (m, row, d)
        out.append(d)
    known.clear()
    known.update(now)
    return out


_GAME_DICT_KEYS = ("game_id", "round", "game_in_round", "pair_index", "leg", "white", "black",
                   "opening_index", "status", "result", "reason", "termination", "rmobility",
                   "extra")


def _game_dict(row: Sequence[Any]) -> dict[str, Any]:
    """A game's dict for the state document (Store.game_rows) from its row: the columns of
    ``_GAME_DICT_KEYS``, then moves, attempt and started_event."""
    d = dict(zip(_GAME_DICT_KEYS, row[:14], strict=True))
    d["extra"] = bool(d["extra"])
    d["attempt"], d["started_event"] = row[15], row[16]
    moves = row[14]
    d["plies"] = len(moves.split()) if moves else (0 if d["status"] == "finished" else None)
    return d


_decode_move = msgspec.json.Decoder().decode


def move_data(text: str) -> Any:
    """``json.loads(text)`` of a logged move, by msgspec's decoder (a third of the cost; it
    gives the same values for every text it takes) and by ``json.loads`` for the texts it
    refuses (NaN, lone surrogates, numbers beyond a double: json takes them)."""
    try:
        return _decode_move(text)
    except msgspec.MsgspecError:
        return json.loads(text)


def scheduled_game(number: int, game: dict[str, Any], extra: bool) -> StoredGame:
    """The game ``game`` of :meth:`Store.add_round`'s ``games`` (round ``number``) as
    :meth:`Store.games` reads it back once stored (its Opening as it is: the stored JSON
    gives back an equal one)."""
    return StoredGame(
        game_id=game["game_id"], round=number, game_in_round=game["game_in_round"],
        pair_index=game["pair_index"], leg=game["leg"], white=game["white"],
        black=game["black"], match_index=game["match_index"], opening=game["opening"],
        extra=bool(extra), status="scheduled")


def _game_from_row(row: Sequence[Any]) -> StoredGame:
    return StoredGame(
        game_id=row[0], round=row[1], game_in_round=row[2], pair_index=row[3], leg=row[4],
        white=row[5], black=row[6], match_index=row[7], opening=_opening_from(row[8]),
        extra=bool(row[9]), status=row[10], result=row[11], reason=row[12], rmobility=row[13],
    )


class Store:
    """The tournament database. Open with :meth:`open` (read-write) or :meth:`open_readonly`."""

    def __init__(self, conn: sqlite3.Connection, path: Path, readonly: bool):
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self._synced = True  # the connection's synchronous=FULL (see transaction)
        self.owner: Callable[[], bool] | None = None  # set: may commit only where this is True

    @classmethod
    def on_writer_thread(cls, conn: sqlite3.Connection, path: Path, owner: Callable[[], bool]) -> Store:
        """The store on the writer thread's connection (runner.store.writer): every commit
        through it is checked to run on that thread."""
        store = cls(conn, path, readonly=False)
        store.owner = owner
        return store

    # ---- opening -------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> Store:
        """Open or create the database; refuse (StoreError) anything that is not ours
        (runner.store.opening.open_event_file)."""
        path = Path(os.path.normpath(path))
        store = cls(open_event_file(path), path, readonly=False)
        try:
            store._migrate()
        except BaseException as exc:  # the connection closed, whatever stopped the upgrade
            store.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise damaged_file(path, exc) from None
            raise
        return store

    @classmethod
    def open_readonly(cls, path: Path, *, threads: bool = False) -> Store | None:
        """Read-only connection that never writes or blocks the running tournament; None
        when there is no event yet (runner.store.opening.open_event_readonly). ``threads``:
        the connection may be used from another thread than this one (one at a time)."""
        path = Path(os.path.normpath(path))
        conn = open_event_readonly(path, threads=threads)
        return None if conn is None else cls(conn, path, readonly=True)

    @property
    def version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        """Bring an event started by an older swiss-runner to this schema (kept data intact)."""
        version = self.version
        while version < SCHEMA_VERSION:
            version += 1
            with self.transaction() as c:
                for statement in MIGRATIONS[version]:
                    c.execute(statement)
                c.execute(f"PRAGMA user_version={version}")

    def close(self) -> None:
        self.conn.close()

    @contextlib.contextmanager
    def transaction(self, *, synced: bool = True) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT; rolled back on any error (the error propagates).

        ``synced=False``: the commit is not fsynced (``synchronous=NORMAL`` for it). A crash
        of the process loses nothing; a power cut may lose it, but only together with every
        later commit: the WAL is synced as a whole, in order, by the next synced commit of
        any connection (a recorded game, a batch of the move log). For what only matters
        while its process lives: a game marked running, an engine process to sweep.
        """
        if self.owner is not None and not self.owner():
            raise AssertionError(f"{self.path}: a commit of the store's writer ran outside "
                                 "its thread")
        if self.conn.in_transaction:  # a game's start in the writer's batch of moves
            with _joined(self.conn, self.path, synced):
                yield self.conn
            return
        if synced != self._synced:  # never changed inside a transaction (SQLite refuses)
            self.conn.execute(f"PRAGMA synchronous={'FULL' if synced else 'NORMAL'}")
            self._synced = synced
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")
        finally:
            if not synced:  # back to FULL now; else (a failed rollback) before the next one
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("PRAGMA synchronous=FULL")
                    self._synced = True

    # ---- event ---------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def has_event(self) -> bool:
        return self.meta("fingerprint") is not None

    def fingerprint(self) -> dict[str, Any] | None:
        text = self.meta("fingerprint")
        return None if text is None else json.loads(text)

    def builds(self) -> dict[str, list[dict[str, Any]]]:
        """The engines' recorded builds, oldest first (runner.store.buildrecords)."""
        return buildrecords.builds(self.conn)

    def record_builds(self, entries: dict[str, dict[str, Any]], reason: str) -> None:
        """Record a build per engine (runner.store.buildrecords), in one transaction."""
        with self.transaction() as c:
            buildrecords.record(c, entries, reason)

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as c:
            c.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def init_event(self, fingerprint: dict[str, Any], seeds: Sequence[str],
                   opening_order: Sequence[int], *, event: str, games_per_match: int,
                   rounds: int, book_fingerprint: str | None = None) -> None:
        """Record the event once: its fingerprint, seeds, opening order and the book's lines
        (``book_fingerprint``, see runner.books.openings.book_fingerprint)."""
        meta = [("fingerprint", json.dumps(fingerprint, sort_keys=True)), ("created", utc_now()),
                ("event", event), ("games_per_match", str(games_per_match)),
                ("rounds", str(rounds))]
        if book_fingerprint is not None:
            meta.append(("book_fingerprint", book_fingerprint))
        with self.transaction() as c:
            c.executemany("INSERT INTO meta VALUES (?, ?)", meta)
            c.executemany("INSERT INTO players VALUES (?, ?)",
                          [(i + 1, name) for i, name in enumerate(seeds)])
            c.executemany("INSERT INTO opening_order VALUES (?, ?)", list(enumerate(opening_order)))

    def seeds(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT name FROM players ORDER BY seed")]

    def opening_order(self) -> list[int]:
        return [r[0] for r in self.conn.execute("SELECT book_index FROM opening_order ORDER BY position")]

    # ---- rounds and games ----------------------------------------------------------------

    def add_round(self, number: int, pairs: Sequence[tuple[str, str]], bye: str | None,
                  dropped: Iterable[int], excluded: Iterable[int], games: Sequence[dict[str, Any]],
                  *, extra: bool = False) -> None:
        """Store a paired round and its scheduled games (one transaction).

        ``games`` items: game_id, game_in_round, pair_index, leg, white, black, match_index,
        opening (Opening | None), in playing order.
        """
        with self.transaction() as c:
            c.execute("INSERT INTO rounds (number, pairs, bye, dropped, excluded, extra, state, created)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (number, json.dumps([list(p) for p in pairs]), bye,
                       json.dumps(sorted(dropped)), json.dumps(sorted(excluded)), int(extra),
                       "playing" if games else "complete", utc_now()))
            c.executemany(
                "INSERT INTO games (game_id, round, game_in_round, pair_index, leg, white, black,"
                " match_index, opening_index, opening, extra) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [(g["game_id"], number, g["game_in_round"], g["pair_index"], g["leg"], g["white"],
                  g["black"], g["match_index"], None if g["opening"] is None else g["opening"].index,
                  _opening_json(g["opening"]), int(extra)) for g in games])

    def rounds(self, after: int | None = None) -> list[StoredRound]:
        """The stored rounds (those numbered above ``after``), by number."""
        rows = self.conn.execute(
            "SELECT number, pairs, bye, dropped, excluded, extra, state FROM rounds "
            + ("ORDER BY number" if after is None else "WHERE number>? ORDER BY number"),
            () if after is None else (after,))
        return [_round_from_row(r) for r in rows]

    def games(self, round_number: int | None = None) -> list[StoredGame]:
        if round_number is None:
            rows = self.conn.execute(f"SELECT {_GAME_COLUMNS} FROM games ORDER BY game_id")
        else:
            rows = self.conn.execute(f"SELECT {_GAME_COLUMNS} FROM games WHERE round=? ORDER BY game_id",
                                     (round_number,))
        return [_game_from_row(r) for r in rows]

    def next_game_id(self) -> int:
        return int(self.conn.execute("SELECT COALESCE(MAX(game_id), 0) + 1 FROM games").fetchone()[0])

    def next_match_index(self) -> int:
        """One above every game's match_index, read from the round of the last game: each
        round's games are added at once (:meth:`add_round`), their matches numbered above
        every game's then stored, with game ids above every id then stored (no pass over
        every game's row, which reads the pages of every recorded game)."""
        return int(self.conn.execute(
            "SELECT COALESCE(MAX(match_index), -1) + 1 FROM games WHERE round="
            "(SELECT round FROM games ORDER BY game_id DESC LIMIT 1)").fetchone()[0])

    def start_game(self, game_id: int, attempt: int, started_event: str, *,
                   keep_plies: int = 0) -> None:
        """A game (attempt) started: mark it running, keep its GameStarted, and drop the
        logged moves of earlier attempts past ``keep_plies`` (a replay keeps none; a resume
        keeps those it goes on from). Rows of this attempt are never deleted: a start that
        is committed after some of its own moves (runner.store.writer) loses none.

        Not synced: a power cut that loses this loses every move of the attempt with it (they
        are committed after it), and the game is then as it was before it started."""
        with self.transaction(synced=False) as c:
            c.execute("UPDATE games SET status='running', started=?, attempt=?, started_event=? "
                      "WHERE game_id=? AND status!='finished'",
                      (utc_now(), attempt, started_event, game_id))
            c.execute("DELETE FROM moves WHERE game_id=? AND ply>? AND attempt<?",
                      (game_id, keep_plies, attempt))

    def attempts(self, game_id: int) -> int:
        row = self.conn.execute("SELECT attempt FROM games WHERE game_id=?", (game_id,)).fetchone()
        return int(row[0]) if row else 0

    def started_event(self, game_id: int) -> dict[str, Any] | None:
        """The GameStarted event (wire form) of the game's latest attempt."""
        if self.version < 2:
            return None
        row = self.conn.execute("SELECT started_event FROM games WHERE game_id=?",
                                (game_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def logged_moves(self, game_id: int) -> list[dict[str, Any]]:
        """The game's per-move log (MovePlayed events, wire form), in ply order."""
        if self.version < 2:
            return []
        return [move_data(r[0]) for r in self.conn.execute(
            "SELECT data FROM moves WHERE game_id=? ORDER BY ply", (game_id,))]

    def logged_rows(self, game_id: int) -> list[tuple[int, str]]:
        """The game's per-move log as stored: (ply, JSON text), in ply order, unparsed
        (runner.domain.interruption.parse_log reads what of it is sound)."""
        if self.version < 2:
            return []
        return [(r[0], r[1]) for r in self.conn.execute(
            "SELECT ply, data FROM moves WHERE game_id=? ORDER BY ply", (game_id,))]

    def logged_moves_after(self, game_id: int, ply: int) -> list[tuple[int, dict[str, Any]]]:
        """(ply, MovePlayed in wire form) of the game's logged moves past ``ply``, in order."""
        if self.version < 2:
            return []
        return [(r[0], move_data(r[1])) for r in self.conn.execute(
            "SELECT ply, data FROM moves WHERE game_id=? AND ply>? ORDER BY ply",
            (game_id, ply)).fetchall()]

    def game_rows(self, known: dict[int, tuple[tuple[Any, ...], tuple[Any, ...], dict[str, Any]]]
                  | None = None) -> list[dict[str, Any]]:
        """Every scheduled game as a dict (for the state document). ``known``: what the last
        call read, kept by the caller (and then holding this call's): a game whose row did
        not change is that same dict (the caller must not change them).

        With ``known``, a finished game's row is read again only when its ``status``,
        ``started`` or ``finish_seq`` changed (a reader reads every page again after each
        commit, and a finished game's row lies mostly on overflow pages, after its PGN): a
        finished game's row changes only with a record (which sets a new ``finish_seq``), a
        start (which sets ``started``, to the millisecond, and makes the game running) or a
        TD rewind (which puts it back to scheduled). The other games are read each time."""
        late = "attempt, started_event" if self.version >= 2 else "0, NULL"
        select = ("SELECT game_id, round, game_in_round, pair_index, leg, white, black, "
                  "opening_index, status, result, reason, termination, rmobility, extra, moves, "
                  f"{late} FROM games")
        if known is None:
            return [_game_dict(r) for r in self.conn.execute(f"{select} ORDER BY game_id")]
        return _kept_game_rows(self.conn, select, known)

    def record_process(self, pid: int, create_time: float, game_id: int | None) -> None:
        """An engine process to sweep if this run dies (not synced: a power cut ends it too)."""
        with self.transaction(synced=False) as c:
            c.execute("INSERT OR REPLACE INTO processes VALUES (?, ?, ?)", (pid, create_time, game_id))

    def processes(self) -> list[tuple[int, float]]:
        return [(r[0], r[1]) for r in self.conn.execute("SELECT pid, create_time FROM processes")]

    def clear_processes(self, game_id: int | None = None) -> None:
        with self.transaction() as c:
            if game_id is None:
                c.execute("DELETE FROM processes")
            else:
                c.execute("DELETE FROM processes WHERE game_id=?", (game_id,))

    def reset_running(self) -> int:
        """Games left 'running' by a dead run go back to 'scheduled' (played again)."""
        with self.transaction() as c:
            return c.execute("UPDATE games SET status='scheduled', started=NULL "
                             "WHERE status='running'").rowcount

    def record_game(self, game_id: int, record: GameRecord,
                    moves: Sequence[MoveRow] = (),
                    then: Callable[[sqlite3.Connection], None] | None = None) -> None:
        """Commit one finished game with the rest of its move log (one transaction, durable
        when this returns); ``then(connection)`` runs in the same transaction (a TD
        decision marked applied with its game, runner.store.decisions)."""
        with self.transaction() as c:
            row = c.execute("SELECT status, round, white, black FROM games WHERE game_id=?",
                            (game_id,)).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: game {game_id} was never scheduled")
            if row[0] == "finished":
                raise StoreError(f"{self.path}: game {game_id} is already recorded")
            if (row[2], row[3]) != (record.white, record.black):
                raise StoreError(f"{self.path}: game {game_id} is {row[2]} vs {row[3]}, "
                                 f"the record says {record.white} vs {record.black}")
            seq = c.execute("SELECT COALESCE(MAX(finish_seq), 0) + 1 FROM games").fetchone()[0]
            moves_text, pgn = " ".join(record.moves), pgn_block(record.pgn)
            c.execute(
                "UPDATE games SET status='finished', finish_seq=?, result=?, reason=?, termination=?,"
                " termination_details=?, rmobility=?, moves=?, start_fen=?, pgn=?, start_time=?,"
                " end_time=?, duration_s=?, record_sha256=? WHERE game_id=?",
                (seq, record.result, record.reason, record.termination, record.termination_details,
                 record.rmobility, moves_text, record.start_fen, pgn,
                 record.start_time, record.end_time, record.duration_s,
                 _record_digest(game_id, row[2], row[3], record.result, record.rmobility,
                                moves_text, pgn), game_id))
            c.execute("DELETE FROM processes WHERE game_id=?", (game_id,))
            if moves:
                c.executemany(INSERT_MOVES, moves)
            c.execute("UPDATE rounds SET state='complete' WHERE number=? AND NOT EXISTS "
                      "(SELECT 1 FROM games WHERE round=? AND status!='finished')", (row[1], row[1]))
            if then is not None:
                then(c)

    def finished_pgns(self) -> list[str]:
        """The finished games' PGN blocks in finish order, each verified (StoreError if not)."""
        return [r[6] for r in self._verified_records()]

    def verify_records(self) -> int:
        """Check every finished game against its checksum; StoreError naming the damaged
        games (the number of games checked otherwise)."""
        return len(self._verified_records())

    def _verified_records(self) -> list[tuple[Any, ...]]:
        checksum = "record_sha256" if self.version >= 3 else "NULL"
        rows = self.conn.execute(
            "SELECT game_id, white, black, result, rmobility, moves, pgn, round, game_in_round, "
            f"{checksum} FROM games WHERE status='finished' ORDER BY finish_seq").fetchall()
        damaged = [f"game {r[0]} (round {r[7]}.{r[8]})" for r in rows if not _record_intact(r)]
        if damaged:
            shown = ", ".join(damaged[:10]) + (f" and {len(damaged) - 10} more" if len(damaged) > 10 else "")
            raise StoreError(f"{self.path}: the stored record of {shown} is damaged (it does not "
                             "match its checksum); nothing was written: restore the database from "
                             "a backup (SQLite's own integrity check cannot see this damage)")
        return rows

    # ---- the file's identity during a run ------------------------------------------------

    def remember_files(self) -> None:
        """Note which files the database and its WAL are, to notice them being replaced."""
        self._watch = FileWatch(self.path)

    def files_problem(self, save: bool = True) -> str | None:
        """Why the database this run writes is no longer the file at its path, or None (see
        runner.store.forensics.FileWatch); with ``save``, what this connection still sees is
        copied beside it and the message says where."""
        watch = getattr(self, "_watch", None)
        if watch is None:
            self.remember_files()
            return None
        problem = watch.problem()
        if problem is None:
            return None
        return problem + (save_copy(self.conn, self.path) if save else "")

    def counts(self) -> dict[str, int]:
        rows = self.conn.execute("SELECT status, COUNT(*) FROM games GROUP BY status").fetchall()
        return dict(rows)

    # ---- views ---------------------------------------------------------------------------

    def event_results(self) -> EventResults | None:
        """Finished games per round, as the standings read them (None before seeding)."""
        gpm = self.meta("games_per_match")
        if gpm is None:
            return None
        rows = self.conn.execute(
            f"SELECT {queries.RESULT_COLUMNS} FROM games ORDER BY round, game_in_round")
        return results_of(self.seeds(), int(gpm), self.rounds(), rows, withdrawals(self.conn))

    def rebuild_pgn(self, path: Path) -> Path | None:
        """Rewrite ``path`` with exactly the recorded games (see runner.store.pgnfile)."""
        return rebuild_pgn(path, self.finished_pgns())

    def pgn_matches(self, path: Path) -> bool:
        """True when the PGN file holds exactly the recorded games, byte for byte."""
        size = self.conn.execute(
            "SELECT COALESCE(SUM(LENGTH(CAST(pgn AS BLOB))), 0) FROM games "
            "WHERE status='finished'").fetchone()[0]
        return pgn_matches(path, self.finished_pgns(), size)


@contextlib.contextmanager
def _joined(conn: sqlite3.Connection, path: Path, synced: bool) -> Iterator[None]:
    """Inside a transaction already open (runner.store.writer commits a game's start with the
    moves around it): a savepoint, rolled back alone on an error; the commit is the open
    transaction's, unsynced, so only an unsynced write may join it."""
    if synced:
        raise AssertionError(f"{path}: a synced commit inside an open transaction")
    conn.execute("SAVEPOINT joined")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK TO joined")
            conn.execute("RELEASE joined")
        raise
    conn.execute("RELEASE joined")


def _record_digest(game_id: int, white: str, black: str, result: str | None,
                   rmobility: str | None, moves: str | None, pgn: str | None) -> str:
    """The checksum of a finished game's record as stored (what the standings and the PGN
    are built from)."""
    text = json.dumps([game_id, white, black, result, rmobility, moves, pgn], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _record_intact(row: Sequence[Any]) -> bool:
    """A finished game's row (game_id, white, black, result, rmobility, moves, pgn, round,
    game_in_round, record_sha256) matches its checksum; rows from before schema 3 (no
    checksum) at least hold text a PGN can carry."""
    game_id, white, black, result, rmobility, moves, pgn = row[:7]
    if row[9] is None:
        return isinstance(pgn, str) and "\0" not in pgn and result in ("1-0", "0-1", "1/2-1/2")
    try:
        return _record_digest(game_id, white, black, result, rmobility, moves, pgn) == row[9]
    except (TypeError, ValueError):  # a value of another type than stored
        return False


def event_recorded(path: Path) -> bool | None:
    """Does the database file hold an event? Read-only, and with no WAL beside it read as an
    immutable file, so that not even the WAL's side files are created (None: cannot tell:
    damaged, not ours or unreadable; Store.open says which)."""
    if not path.exists():
        return False
    try:
        if path.with_name(path.name + "-wal").exists():  # a runner may be writing it: share
            store = Store.open_readonly(path)
            if store is None:
                return False
            try:
                return store.has_event()
            finally:
                store.close()
        conn = connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", path, uri=True,
                       isolation_level=None)
        try:
            if conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name "
                            "NOT LIKE 'sqlite_%'").fetchone()[0] == 0:
                return False  # no table (or only SQLite's own, its tables dropped): no event
            check_identity(conn, path)
            return conn.execute("SELECT 1 FROM meta WHERE key='fingerprint'").fetchone() is not None
        finally:
            conn.close()
    except (sqlite3.Error, StoreError):
        return None


def results_of(seeds: Sequence[str], games_per_match: int, rounds: Sequence[StoredRound],
               games: Iterable[Sequence[Any]], withdrawn: Sequence[Withdrawal]) -> EventResults:
    """The standings' view of the event (Store.event_results) from what was read of it:
    ``games`` as (round, game_in_round, white, black, result, rmobility, extra, status, ...)
    (queries.RESULT_COLUMNS) in (round, game_in_round) order (the state document builds it
    from the rows it read)."""
    by_round: dict[int, list[PlayedGame]] = {}
    unfinished: set[int] = set()
    for r in games:
        if r[7] != "finished":
            unfinished.add(r[0])
            continue
        by_round.setdefault(r[0], []).append(PlayedGame(
            round=r[0], game_in_round=r[1], white=r[2], black=r[3], result=r[4],
            rmobility=r[5], extra=bool(r[6])))
    return EventResults(
        seeds=tuple(seeds), games_per_match=games_per_match,
        rounds=tuple(RoundResult(number=rd.number, games=tuple(by_round.get(rd.number, ())),
                                 bye=rd.bye, complete=rd.number not in unfinished)
                     for rd in rounds),
        withdrawn=tuple((w.engine, w.from_round) for w in withdrawn))


def load_results(config: Config) -> EventResults | None:
    """The event's results so far, read-only (safe while a tournament is running)."""
    store = Store.open_readonly(config.database)
    if store is None:
        return None
    try:
        return store.event_results()
    finally:
        store.close()


def damaged_state(path: Path, exc: BaseException) -> str:
    """The message for a state database whose content cannot be read as an event."""
    return (f"{path}: the state database is damaged or not this event's ({type(exc).__name__}: "
            f"{exc}); nothing was written: restore it from a backup or move it away to start "
            "a new event")

