"""What the tournament director's withdrawals and rewinds keep in the event's database.

Tables (schema 4, runner.store.dbformat):

* ``withdrawals``: one row per withdrawn engine: the first round paired without it, whether
  its unfinished games are forfeited (``withdraw --now``), the decision and its reason.
* ``voided_games``: every game a rewind invalidated (rule 7.e), kept whole: the game's row as
  JSON, its PGN block when it had finished, its logged moves, the decision that voided it.
* ``voided_rounds``: every pairing a rewind (or a withdrawal before a round's first game)
  invalidated, its row as JSON.
* ``td_commands``: the TD's commands (runner.store.decisions); a withdrawal or rewind is
  marked applied there in the transaction that applies it, so it is never applied twice
  (runner.service.td.rules). Schema 4 kept that mark in a table of its own, ``td_applied``:
  migration 5 folds its rows into ``td_commands`` and drops it (:data:`FOLD_TD_APPLIED`).

Every function takes the connection of an open transaction (``Store.transaction()``, or the
store writer's), so that a decision is applied in one commit; nothing here commits.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from runner.clock import utc_now
from runner.store.queries import table_rows

TD_SCHEMA = """
CREATE TABLE withdrawals (
    engine TEXT PRIMARY KEY,
    from_round INTEGER NOT NULL,    -- the first round paired without the engine
    forfeit INTEGER NOT NULL,       -- 1: its unfinished games are lost by forfeit (--now)
    decision_id INTEGER NOT NULL,
    reason TEXT NOT NULL,
    created TEXT NOT NULL
);
CREATE TABLE voided_games (
    void_id INTEGER PRIMARY KEY,
    decision_id INTEGER NOT NULL,
    game_id INTEGER NOT NULL,
    round INTEGER NOT NULL,
    game_in_round INTEGER NOT NULL,
    white TEXT NOT NULL,
    black TEXT NOT NULL,
    status TEXT NOT NULL,           -- what the game was: scheduled | running | finished
    result TEXT,
    pgn TEXT,                       -- the finished game's PGN block, as it was recorded
    row TEXT NOT NULL,              -- JSON: the game's whole row in games
    moves TEXT NOT NULL,            -- JSON: its logged moves [[ply, attempt, data], ...]
    reason TEXT NOT NULL,
    voided TEXT NOT NULL
);
CREATE TABLE voided_rounds (
    void_id INTEGER PRIMARY KEY,
    decision_id INTEGER NOT NULL,
    number INTEGER NOT NULL,
    row TEXT NOT NULL,              -- JSON: the round's whole row in rounds
    reason TEXT NOT NULL,
    voided TEXT NOT NULL
);
"""

TD_COMMANDS_TABLE = """
CREATE TABLE IF NOT EXISTS td_commands (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time TEXT NOT NULL,             -- when it was given (ISO 8601 UTC)
    action TEXT NOT NULL,           -- pause | resume | withdraw | adjudicate | restart | rewind | note | gpu
    args TEXT NOT NULL,             -- JSON object
    reason TEXT NOT NULL,           -- '' for a note
    who TEXT NOT NULL,              -- user@host, or "web"
    state TEXT NOT NULL DEFAULT 'pending',   -- pending | applied | refused | failed
    applied_at TEXT,
    outcome TEXT                    -- what applying it did, or why it was refused
)"""

# schema 4's table of the applied withdrawals and rewinds (migration 4 makes it, 5 folds it)
TD_APPLIED_4 = """CREATE TABLE td_applied (
    decision_id INTEGER PRIMARY KEY,
    action TEXT NOT NULL,
    outcome TEXT NOT NULL,
    applied TEXT NOT NULL
)"""

TD_MIGRATION = [*(s.strip() for s in TD_SCHEMA.split(";") if s.strip()), TD_APPLIED_4]

# migration 5: a decision's mark in one table: td_applied's rows become td_commands' marks
# (a command left pending by a runner killed between its two transactions is applied; a
# decision with no command row, applied by a tool, gets one), then td_applied is dropped
FOLD_TD_APPLIED = [
    TD_COMMANDS_TABLE.strip(),
    "UPDATE td_commands SET state='applied', "
    "applied_at=(SELECT a.applied FROM td_applied a WHERE a.decision_id=td_commands.id), "
    "outcome=(SELECT a.outcome FROM td_applied a WHERE a.decision_id=td_commands.id) "
    "WHERE state='pending' AND id IN (SELECT decision_id FROM td_applied)",
    "INSERT INTO td_commands (id, time, action, args, reason, who, state, applied_at, outcome) "
    "SELECT decision_id, applied, action, '{}', '', 'runner', 'applied', applied, outcome "
    "FROM td_applied WHERE decision_id NOT IN (SELECT id FROM td_commands)",
    "DROP TABLE td_applied",
]


def has_td_tables(conn: sqlite3.Connection) -> bool:
    """False for a database from before schema 4 opened read-only (never migrated)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                        "name='withdrawals'").fetchone() is not None


@dataclass(frozen=True)
class Withdrawal:
    engine: str
    from_round: int
    forfeit: bool
    decision_id: int
    reason: str


def withdrawals(conn: sqlite3.Connection) -> list[Withdrawal]:
    """The withdrawn engines, in the order they were withdrawn (none before schema 4)."""
    rows = table_rows(conn, "SELECT engine, from_round, forfeit, decision_id, reason "
                            "FROM withdrawals ORDER BY decision_id, engine")
    return [Withdrawal(r[0], r[1], bool(r[2]), r[3], r[4]) for r in rows or ()]


def withdrawn_before(conn: sqlite3.Connection, round_number: int) -> frozenset[str]:
    """The engines not paired in round ``round_number``."""
    return frozenset(w.engine for w in withdrawals(conn) if w.from_round <= round_number)


def applied(conn: sqlite3.Connection, decision_id: int) -> str | None:
    """The outcome of a decision already applied here (its mark in td_commands), or None."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                    "name='td_commands'").fetchone() is None:
        return None
    row = conn.execute("SELECT outcome FROM td_commands WHERE id=? AND state='applied'",
                       (decision_id,)).fetchone()
    return None if row is None else str(row[0] or "")


def mark_applied(conn: sqlite3.Connection, decision_id: int, action: str, reason: str,
                 outcome: str) -> None:
    """Mark decision ``decision_id`` applied in td_commands, in the caller's transaction (the
    one of its effect); a decision applied by a tool without a command row gets one."""
    conn.execute(TD_COMMANDS_TABLE)
    now = utc_now()
    cur = conn.execute("UPDATE td_commands SET state='applied', applied_at=?, outcome=? "
                       "WHERE id=? AND state='pending'", (now, outcome, decision_id))
    if cur.rowcount == 0:
        conn.execute("INSERT INTO td_commands (id, time, action, args, reason, who, state, "
                     "applied_at, outcome) VALUES (?, ?, ?, '{}', ?, 'runner', 'applied', ?, ?)",
                     (decision_id, now, action, reason, now, outcome))


def add_withdrawal(conn: sqlite3.Connection, engine: str, from_round: int, forfeit: bool,
                   decision_id: int, reason: str) -> None:
    conn.execute("INSERT INTO withdrawals VALUES (?, ?, ?, ?, ?, ?)",
                 (engine, from_round, int(forfeit), decision_id, reason, utc_now()))


def _rows(conn: sqlite3.Connection, sql: str, args: tuple[Any, ...]) -> list[dict[str, Any]]:
    cursor = conn.execute(sql, args)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def void_rounds(conn: sqlite3.Connection, first: int, decision_id: int, reason: str) -> list[int]:
    """Keep, then delete, the rounds numbered ``first`` and after and all their games (the
    games are kept by :func:`void_games` first). Returns the round numbers."""
    rounds = _rows(conn, "SELECT * FROM rounds WHERE number>=? ORDER BY number", (first,))
    now = utc_now()
    conn.executemany("INSERT INTO voided_rounds (decision_id, number, row, reason, voided) "
                     "VALUES (?, ?, ?, ?, ?)",
                     [(decision_id, r["number"], json.dumps(r), reason, now) for r in rounds])
    conn.execute("DELETE FROM games WHERE round>=?", (first,))
    conn.execute("DELETE FROM rounds WHERE number>=?", (first,))
    return [r["number"] for r in rounds]


def void_games(conn: sqlite3.Connection, first_game: int, decision_id: int,
               reason: str) -> list[dict[str, Any]]:
    """Keep every game numbered ``first_game`` and after in voided_games (with its logged
    moves), drop their logged moves and engine processes, and reset them to unplayed; the
    caller deletes the rows of the rounds voided as a whole. Returns the games' rows."""
    games = _rows(conn, "SELECT * FROM games WHERE game_id>=? ORDER BY game_id", (first_game,))
    now = utc_now()
    for g in games:
        moves = conn.execute("SELECT ply, attempt, data FROM moves WHERE game_id=? ORDER BY ply",
                             (g["game_id"],)).fetchall()
        conn.execute(
            "INSERT INTO voided_games (decision_id, game_id, round, game_in_round, white, black,"
            " status, result, pgn, row, moves, reason, voided) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (decision_id, g["game_id"], g["round"], g["game_in_round"], g["white"], g["black"],
             g["status"], g["result"], g["pgn"], json.dumps(g), json.dumps(moves), reason, now))
    conn.execute("DELETE FROM moves WHERE game_id>=?", (first_game,))
    conn.execute("DELETE FROM processes WHERE game_id>=?", (first_game,))
    conn.execute(
        "UPDATE games SET status='scheduled', started=NULL, finish_seq=NULL, result=NULL, "
        "reason=NULL, termination=NULL, termination_details=NULL, rmobility=NULL, moves=NULL, "
        "start_fen=NULL, pgn=NULL, start_time=NULL, end_time=NULL, duration_s=NULL, attempt=0, "
        "started_event=NULL, record_sha256=NULL WHERE game_id>=?", (first_game,))
    conn.execute("UPDATE rounds SET state='playing' WHERE number IN "
                 "(SELECT DISTINCT round FROM games WHERE game_id>=?)", (first_game,))
    return games


def move_withdrawals(conn: sqlite3.Connection, next_round: int) -> int:
    """After a rewind: a withdrawal that took effect in a voided round takes effect from the
    next round paired (the engine stays withdrawn). Returns how many moved."""
    return conn.execute("UPDATE withdrawals SET from_round=? WHERE from_round>?",
                        (next_round, next_round)).rowcount


def swiss_games(conn: sqlite3.Connection, players: int, games_per_match: int,
                rounds: int) -> int:
    """The games of the Swiss rounds, one player fewer in the rounds after a withdrawal."""
    starts = [w.from_round for w in withdrawals(conn)]
    return sum((players - sum(1 for s in starts if s <= r)) // 2 * games_per_match
               for r in range(1, rounds + 1))


def td_counts(conn: sqlite3.Connection) -> tuple[int, int]:
    """(withdrawals, voided games): what changes the JSON state besides the games."""
    if not has_td_tables(conn):
        return (0, 0)
    row = conn.execute("SELECT (SELECT COUNT(*) FROM withdrawals), "
                       "(SELECT COUNT(*) FROM voided_games)").fetchone()
    return (int(row[0]), int(row[1]))


@dataclass(frozen=True)
class VoidedGame:
    decision_id: int
    game_id: int
    round: int
    game_in_round: int
    white: str
    black: str
    status: str
    result: str | None
    pgn: str | None
    reason: str
    voided: str


def voided_games(conn: sqlite3.Connection) -> list[VoidedGame]:
    """Every voided game, in the order they were voided."""
    if not has_td_tables(conn):
        return []
    return [VoidedGame(*r) for r in conn.execute(
        "SELECT decision_id, game_id, round, game_in_round, white, black, status, result, pgn,"
        " reason, voided FROM voided_games ORDER BY void_id")]


__all__ = ["FOLD_TD_APPLIED", "TD_APPLIED_4", "TD_COMMANDS_TABLE", "TD_MIGRATION", "TD_SCHEMA", "VoidedGame", "Withdrawal", "add_withdrawal", "applied",
           "has_td_tables", "mark_applied", "swiss_games", "td_counts", "move_withdrawals", "void_games", "void_rounds",
           "voided_games", "withdrawals", "withdrawn_before"]
