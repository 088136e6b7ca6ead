"""Read-only queries of the event's database for the dashboard (runner.web): each takes an
open connection (read-only is enough) and changes nothing."""

from __future__ import annotations

import sqlite3
from typing import Any

from runner.store.decisions import log_key

#: A game's row as its page shows it, in this order (:func:`game_row`).
GAME_COLUMNS = ("game_id", "round", "game_in_round", "white", "black", "status", "result",
                "reason", "termination", "pgn", "start_fen", "opening", "duration_s",
                "start_time", "end_time", "extra")


def begin_read(conn: sqlite3.Connection) -> None:
    """Start a read transaction: what follows reads one consistent snapshot of the database."""
    conn.execute("BEGIN")


def data_version(conn: sqlite3.Connection) -> int:
    """SQLite's ``data_version``: changes when another connection commits."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])


def structure_key(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """What decides whether the pages other than the live boards change: the games'
    states and attempts and the rounds (a few hundred rows, well under a millisecond)."""
    games = conn.execute(
        "SELECT COUNT(*), SUM(status='finished'), MAX(finish_seq), "
        "group_concat(CASE WHEN status='running' THEN game_id || '.' || attempt END) "
        "FROM games").fetchone()
    rounds = conn.execute("SELECT COUNT(*), group_concat(state) FROM rounds").fetchone()
    meta = conn.execute("SELECT COUNT(*) FROM meta").fetchone()
    return (tuple(games), tuple(rounds), meta[0], log_key(conn))


def running_games(conn: sqlite3.Connection) -> dict[int, str | None]:
    """Each running game's id and its recorded GameStarted event (JSON text, or None)."""
    return {r[0]: r[1] for r in conn.execute(
        "SELECT game_id, started_event FROM games WHERE status='running'")}


def recent_durations(conn: sqlite3.Connection, limit: int = 100) -> list[float]:
    """The lengths in seconds of the last ``limit`` finished games (known, above 0), newest first."""
    rows = conn.execute(
        "SELECT duration_s FROM games WHERE status='finished' AND duration_s IS NOT NULL "
        "AND duration_s > 0 ORDER BY finish_seq DESC LIMIT ?", (limit,)).fetchall()
    return [float(r[0]) for r in rows]


def last_record_times(conn: sqlite3.Connection) -> tuple[str | None, str | None]:
    """(the latest game end time, the latest round creation time) as recorded, or None."""
    end = conn.execute("SELECT MAX(end_time) FROM games").fetchone()
    created = conn.execute("SELECT MAX(created) FROM rounds").fetchone()
    return (end[0] if end else None, created[0] if created else None)


def game_row(conn: sqlite3.Connection, game_id: int) -> dict[str, Any] | None:
    """The game's row by :data:`GAME_COLUMNS`, or None when the event has no such game."""
    row = conn.execute(f"SELECT {', '.join(GAME_COLUMNS)} FROM games WHERE game_id=?",
                       (game_id,)).fetchone()
    return None if row is None else dict(zip(GAME_COLUMNS, row, strict=True))
