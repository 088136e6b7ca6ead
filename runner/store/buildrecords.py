"""The engines' builds of an event (TCEC rule 8), kept apart from the config fingerprint.

One row per build an engine was allowed to play with: the one it had when the event started
(or when a run of this version first met an older event), then each one an organiser
accepted with ``run --accept-build ENGINE --reason TEXT``. The current build of an engine is
its row with the highest ``seq``. The table is created by the first write (``CREATE TABLE
IF NOT EXISTS``): an older database gains it without a schema upgrade, and a reader of a
database without it sees no builds.

Writes happen only while a run opens its event (before the writer thread starts): at the
event's start and for ``--accept-build``.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from runner.clock import utc_now
from runner.store.queries import table_rows

TABLE = """CREATE TABLE IF NOT EXISTS builds (
    engine TEXT NOT NULL,
    seq INTEGER NOT NULL,           -- 1: the event's start; 2, 3, ...: accepted later
    digest TEXT NOT NULL,           -- runner.play.enginebuild.Build.digest
    files TEXT NOT NULL,            -- JSON {path: sha256}, the executable first
    recorded TEXT NOT NULL,         -- ISO 8601 UTC
    reason TEXT NOT NULL,           -- "event start", or the organiser's reason
    PRIMARY KEY (engine, seq)
)"""


def builds(conn: sqlite3.Connection) -> dict[str, list[dict[str, Any]]]:
    """Every engine's builds, oldest first ({} when none was recorded)."""
    rows = table_rows(conn, "SELECT engine, seq, digest, files, recorded, reason FROM builds "
                            "ORDER BY engine, seq")
    if rows is None:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for engine, seq, digest, files, recorded, reason in rows:
        out.setdefault(engine, []).append({"seq": seq, "digest": digest,
                                           "files": json.loads(files), "recorded": recorded,
                                           "reason": reason})
    return out


def current(conn: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Each engine's build now allowed to play (its latest)."""
    return {engine: rows[-1] for engine, rows in builds(conn).items()}


def record(conn: sqlite3.Connection, entries: dict[str, dict[str, Any]], reason: str) -> None:
    """Record a new build for each engine of ``entries`` (name -> Build.to_json()); the
    caller holds the transaction (Store.record_builds)."""
    now = utc_now()
    conn.execute(TABLE)
    for engine, build in entries.items():
        seq = conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM builds WHERE engine=?",
                           (engine,)).fetchone()[0]
        conn.execute("INSERT INTO builds VALUES (?, ?, ?, ?, ?, ?)",
                     (engine, seq, build["digest"], json.dumps(build["files"]), now, reason))
