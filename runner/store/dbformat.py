"""What a swiss-runner database is: its schema, the upgrades of older ones, and the checks
that refuse a file that is not ours (StoreError), all through an open SQLite connection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from runner.errors import BadInput
from runner.store.tdstore import FOLD_TD_APPLIED, TD_MIGRATION, TD_SCHEMA

SCHEMA_VERSION = 5  # 2: the per-move log (moves), game attempts and GameStarted; 3: record_sha256;
# 4: the tournament director's withdrawals and voided games (runner.store.tdstore); 5: a TD
# decision's mark in td_commands alone (td_applied folded into it)
APPLICATION_ID = 0x53575352  # "SWSR": marks the file as a swiss-runner database

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE players (seed INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE opening_order (position INTEGER PRIMARY KEY, book_index INTEGER NOT NULL);
CREATE TABLE rounds (
    number INTEGER PRIMARY KEY,
    pairs TEXT NOT NULL,            -- JSON [[first, second], ...]
    bye TEXT,
    dropped TEXT NOT NULL,          -- JSON rounds newly removed from the encounter history
    excluded TEXT NOT NULL,         -- JSON all removed rounds after this round
    extra INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL DEFAULT 'playing',   -- playing | complete
    created TEXT NOT NULL
);
CREATE TABLE games (
    game_id INTEGER PRIMARY KEY,
    round INTEGER NOT NULL REFERENCES rounds(number),
    game_in_round INTEGER NOT NULL,
    pair_index INTEGER NOT NULL,
    leg INTEGER NOT NULL,
    white TEXT NOT NULL,
    black TEXT NOT NULL,
    match_index INTEGER NOT NULL,
    opening_index INTEGER,
    opening TEXT,                   -- JSON {index, name, fen, moves}
    extra INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'scheduled',   -- scheduled | running | finished
    started TEXT,
    finish_seq INTEGER UNIQUE,      -- order in which games finished (PGN order)
    result TEXT, reason TEXT, termination TEXT, termination_details TEXT, rmobility TEXT,
    moves TEXT, start_fen TEXT, pgn TEXT,
    start_time TEXT, end_time TEXT, duration_s REAL,
    attempt INTEGER NOT NULL DEFAULT 0,   -- times the game was started
    started_event TEXT,             -- JSON GameStarted of the current attempt
    record_sha256 TEXT,             -- checksum of the finished game's record (_record_digest)
    UNIQUE (round, game_in_round)
);
CREATE TABLE moves (                -- the per-move log: JSON MovePlayed per ply
    game_id INTEGER NOT NULL,
    ply INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (game_id, ply)
) WITHOUT ROWID;
CREATE TABLE processes (
    pid INTEGER NOT NULL, create_time REAL NOT NULL, game_id INTEGER,
    PRIMARY KEY (pid, create_time)
);
""" + TD_SCHEMA


# Upgrades of an existing event's database, applied by `run` (one transaction each).
MIGRATIONS = {
    2: [
        "ALTER TABLE games ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE games ADD COLUMN started_event TEXT",
        "CREATE TABLE moves (game_id INTEGER NOT NULL, ply INTEGER NOT NULL, "
        "attempt INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (game_id, ply)) WITHOUT ROWID",
    ],
    3: [  # games recorded before have no checksum; they are checked for NUL bytes instead
        "ALTER TABLE games ADD COLUMN record_sha256 TEXT",
    ],
    4: TD_MIGRATION,
    5: FOLD_TD_APPLIED,
}


class StoreError(BadInput):
    """The state cannot be used; the message says which file and why (nothing was changed)."""


CORE_TABLES = ("meta", "players", "opening_order", "rounds", "games")


def check_identity(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse a database that is not swiss-runner's, or is from a newer swiss-runner."""
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if app != APPLICATION_ID:
        raise StoreError(f"{path}: not a swiss-runner state database (application_id "
                         f"{app:#x}); it was left untouched")
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path}: written by a newer swiss-runner (schema {version}, "
                         f"this one knows {SCHEMA_VERSION}); upgrade swiss-runner")
    # swiss-runner marks a file in the transaction that creates its tables: marked without
    # them, it was emptied by hand (tables dropped), and holds no event to resume or replace
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    missing = [t for t in CORE_TABLES if t not in tables]
    if len(missing) == len(CORE_TABLES):  # some missing: damaged, as any read then says
        raise StoreError(f"{path}: a swiss-runner state database without its tables "
                         f"({', '.join(missing)} missing: dropped by hand?); it holds no event "
                         "and was left untouched: restore it from a backup to resume, or move "
                         "it away (with the JSON snapshot and the PGN) to start a new event")


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    if problems != ["ok"]:
        raise StoreError(f"{path}: the state database is damaged "
                         f"({'; '.join(problems[:3])}); it was left untouched: restore "
                         "it from a backup or move it away to start a new event")
