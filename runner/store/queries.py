"""Named reads and small writes of the event database for the service layer (the run loop,
the views, the director, the runner lock) and the command line: the only SQL they need.

Each function takes an open connection (a Store's ``conn``, a read-only one, or the writer's
connection inside its transaction) and runs one statement; none commits on its own.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def read_snapshot(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A read transaction (BEGIN ... COMMIT): every read inside sees one consistent state."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


def table_rows(conn: sqlite3.Connection, sql: str, params: tuple[Any, ...] = ()
               ) -> list[Any] | None:
    """The rows of one read; None when its table is not there (a database from before the
    table existed, or nothing ever created it): one statement, no look at the schema first."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise


def meta_value(conn: sqlite3.Connection, key: str) -> str | None:
    """The ``meta`` table's value for ``key`` (None when absent)."""
    row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return row[0] if row else None


def put_meta(conn: sqlite3.Connection, key: str, value: str) -> None:
    """Set a ``meta`` value (inside the caller's transaction)."""
    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def extra_game_count(conn: sqlite3.Connection) -> int:
    """How many extra tie-break games are scheduled (finished or not)."""
    return int(conn.execute("SELECT COUNT(*) FROM games WHERE extra=1").fetchone()[0])


def game_status(conn: sqlite3.Connection, game_id: int, round_number: int, white: str,
                black: str) -> str | None:
    """The status of the game ``game_id`` if it is still the same pairing (None: voided or
    replaced by a TD decision)."""
    row = conn.execute("SELECT status FROM games WHERE game_id=? AND round=? AND white=? "
                       "AND black=?", (game_id, round_number, white, black)).fetchone()
    return None if row is None else str(row[0])


def round_states(conn: sqlite3.Connection) -> dict[int, str]:
    """Each stored round's state ("playing", "complete"), by number."""
    return dict(conn.execute("SELECT number, state FROM rounds"))


def round_state(conn: sqlite3.Connection, number: int) -> str | None:
    """Round ``number``'s state ("playing", "complete"; None: not stored)."""
    row = conn.execute("SELECT state FROM rounds WHERE number=?", (number,)).fetchone()
    return None if row is None else str(row[0])


def unfinished_count(conn: sqlite3.Connection, round_number: int) -> int:
    """How many games of round ``round_number`` are not finished (scheduled or running)."""
    return int(conn.execute("SELECT COUNT(*) FROM games WHERE round=? AND status!='finished'",
                            (round_number,)).fetchone()[0])


def change_mark(conn: sqlite3.Connection) -> tuple[int, int]:
    """A mark that differs after anything was written to the database since it was taken:
    committed by another connection (``PRAGMA data_version``) or written by this one (its
    total changes)."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0]), conn.total_changes


def running_game_ids(conn: sqlite3.Connection) -> list[int]:
    """The games marked running (being played, or left so by an aborted attempt), by id.

    Found through finish_seq's index (a game not finished has none: Store.record_game sets
    it with the 'finished' status, a TD rewind clears both), not by a pass over every game's
    row: the loop asks after every round."""
    return [int(r[0]) for r in conn.execute(
        "SELECT game_id FROM games WHERE finish_seq IS NULL AND status='running' "
        "ORDER BY game_id")]


#: The columns of a game as the standings read it (runner.store.database.results_of), and
#: its finish_seq (what :func:`kept_mark` is taken up to).
RESULT_COLUMNS = "round, game_in_round, white, black, result, rmobility, extra, status, finish_seq"


def result_rows_after(conn: sqlite3.Connection, round_number: int) -> list[tuple[Any, ...]]:
    """The games of the rounds after ``round_number`` as the standings read them
    (:data:`RESULT_COLUMNS`), in (round, game_in_round) order."""
    return conn.execute(f"SELECT {RESULT_COLUMNS} FROM games WHERE round>? "
                        "ORDER BY round, game_in_round", (round_number,)).fetchall()


def kept_mark(conn: sqlite3.Connection, through_round: int, top_seq: int,
              after_seq: int = 0) -> tuple[int, str]:
    """(games of the rounds up to ``through_round``, the finish_seq and game id of every game
    with a finish_seq above ``after_seq`` and up to ``top_seq``, in finish_seq order), read
    from two indexes only (no game's row: a pass over them reads the pages of every recorded
    game). With the rounds' games all finished and ``top_seq`` their highest finish_seq, it
    changes whenever one of them is voided, put back or recorded again with another
    finish_seq: a finished game is never changed in place, and a game recorded gets a
    finish_seq above every other one left. (With ``after_seq``: the pairs of the mark up to
    ``after_seq`` are left out, to be put before them, space-separated.)"""
    row = conn.execute(
        "SELECT (SELECT COUNT(*) FROM games WHERE round<=?), (SELECT group_concat("
        "finish_seq || ':' || game_id, ' ') FROM (SELECT finish_seq, game_id FROM games "
        "WHERE finish_seq>? AND finish_seq<=? ORDER BY finish_seq))",
        (through_round, after_seq, top_seq)).fetchone()
    return int(row[0]), str(row[1] or "")


def finished_durations(conn: sqlite3.Connection) -> list[float]:
    """Lengths (s) of the finished games that recorded one."""
    rows = conn.execute("SELECT duration_s FROM games WHERE status='finished' "
                        "AND duration_s IS NOT NULL").fetchall()
    return [float(r[0]) for r in rows if r[0] is not None and r[0] > 0]


def finished_terminations(conn: sqlite3.Connection) -> list[tuple[int, str | None, str | None]]:
    """(game id, reason, termination) of every finished game, by game id."""
    return [(int(r[0]), r[1], r[2]) for r in conn.execute(
        "SELECT game_id, reason, termination FROM games WHERE status='finished' "
        "ORDER BY game_id").fetchall()]


def structure_counts(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """What changes when games are added, started, finished or put back and rounds are added
    or completed: the state document's cache key (runner.service.views.snapshotdoc)."""
    games = conn.execute(
        "SELECT COUNT(*), SUM(status='finished'), MAX(finish_seq), SUM(attempt), "
        "group_concat(CASE WHEN status='running' THEN game_id || '.' || attempt END) "
        "FROM games").fetchone()
    rounds = conn.execute("SELECT COUNT(*), SUM(state='complete') FROM rounds").fetchone()
    return (*games, *rounds)


def interrupted_games(conn: sqlite3.Connection, *, running_too: bool,
                      ids: list[int] | None = None) -> list[tuple[int, int, str, str]]:
    """(game id, round, white, black) of the games not finished that were interrupted: put
    back to scheduled with a move log, and (``running_too``: the runner is not running)
    those left running; or those of ``ids`` not finished."""
    columns = "SELECT game_id, round, white, black FROM games g WHERE "
    logged = "(status='scheduled' AND EXISTS (SELECT 1 FROM moves m WHERE m.game_id=g.game_id))"
    if ids is not None:
        where, params = "status!='finished' AND game_id IN (SELECT value FROM json_each(?))", \
            (json.dumps(ids),)
    else:
        where, params = logged + (" OR status='running'" if running_too else ""), ()
    try:
        rows = conn.execute(columns + where + " ORDER BY game_id", params).fetchall()
    except sqlite3.OperationalError:  # a state of format 1 logs no moves
        rows = conn.execute(columns + "status='running' AND ? ORDER BY game_id",
                            (running_too,)).fetchall()
    return [(int(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in rows]


def last_round_number(conn: sqlite3.Connection) -> int | None:
    """The last paired round's number, None before the first pairing."""
    row = conn.execute("SELECT MAX(number) FROM rounds").fetchone()
    return None if row is None or row[0] is None else int(row[0])


def round_exists(conn: sqlite3.Connection, number: int) -> bool:
    return conn.execute("SELECT 1 FROM rounds WHERE number=?", (number,)).fetchone() is not None


ROUND_GAME_KEYS = ("game_id", "round", "game_in_round", "white", "black", "status", "reason",
                   "finish_seq", "attempt", "started_event")


def started_games_of_round(conn: sqlite3.Connection, number: int, version: int
                           ) -> list[dict[str, Any]]:
    """The round's games that started (running or finished), in board order, as dicts with
    the keys of ``ROUND_GAME_KEYS`` (``attempt`` 0 and no ``started_event`` before schema 2)."""
    extra = "attempt, started_event" if version >= 2 else "0, NULL"
    rows = conn.execute(
        "SELECT game_id, round, game_in_round, white, black, status, reason, finish_seq, "
        f"{extra} FROM games WHERE round=? AND status!='scheduled' ORDER BY game_in_round",
        (number,)).fetchall()
    return [dict(zip(ROUND_GAME_KEYS, row, strict=True)) for row in rows]


def game_text(conn: sqlite3.Connection, game_id: int) -> tuple[str | None, str | None,
                                                               str | None]:
    """(pgn, moves, start_fen) as recorded for a finished game."""
    row = conn.execute("SELECT pgn, moves, start_fen FROM games WHERE game_id=?",
                       (game_id,)).fetchone()
    return (row[0], row[1], row[2]) if row else (None, None, None)


def restart_game(conn: sqlite3.Connection, game_id: int) -> bool:
    """Put a game not finished back to scheduled and drop its move log (TD restart, rule
    7.d), inside the caller's transaction; False when the game has ended."""
    cur = conn.execute("UPDATE games SET status='scheduled', started=NULL "
                       "WHERE game_id=? AND status!='finished'", (game_id,))
    if cur.rowcount != 1:
        return False
    conn.execute("DELETE FROM moves WHERE game_id=?", (game_id,))
    return True


__all__ = ["ROUND_GAME_KEYS", "extra_game_count", "finished_durations", "finished_terminations",
           "game_status", "game_text", "interrupted_games", "last_round_number", "meta_value", "put_meta",
           "read_snapshot", "restart_game", "round_exists", "started_games_of_round",
           "structure_counts"]
