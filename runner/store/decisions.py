"""The tournament director's commands (``swiss-runner td``) and their decision log.

A command is one row of ``td_commands``: written ``pending`` by the command line or the
dashboard (which never take the event lock and write nothing else), then ``applied`` (or
``refused``, with why) by the runner, in the same transaction as its effect, so that a
kill -9 at any moment never applies it twice. The applied rows, in order, are the event's
append-only decision log (docs/td.md).

The table is created on first use (``CREATE TABLE IF NOT EXISTS``) by whoever writes first;
readers of a database without it see an empty log.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner.clock import utc_now
from runner.store.forensics import connect
from runner.store.queries import table_rows
from runner.store.tdstore import TD_COMMANDS_TABLE

TABLE = TD_COMMANDS_TABLE  # runner.store.tdstore: the schema's migration 5 creates it too

ACTIONS = ("pause", "resume", "withdraw", "adjudicate", "restart", "rewind", "note", "gpu")


@dataclass(frozen=True)
class Command:
    id: int
    time: str
    action: str
    args: dict[str, Any]
    reason: str
    who: str
    state: str
    applied_at: str | None
    outcome: str | None

    def doc(self) -> dict[str, Any]:
        return {"id": self.id, "time": self.time, "action": self.action, "args": self.args,
                "reason": self.reason, "who": self.who, "state": self.state,
                "applied_at": self.applied_at, "outcome": self.outcome}

    def text(self) -> str:
        """``pause (now)``, ``adjudicate game 5 1-0``, ``note: text``: one line of the log."""
        a = self.args
        if self.action == "note":
            return f"note: {a.get('text', '')}"
        detail = {
            "pause": f"({a.get('mode', 'finish')})",
            "withdraw": f"{a.get('engine')}" + (" now" if a.get("now") else ""),
            "adjudicate": f"game {a.get('game')} {a.get('result')}",
            "restart": f"game {a.get('game')} ({a.get('when', 'now')})",
            "rewind": f"to game {a.get('game')}",
            "gpu": f"{a.get('state')} {a.get('device')}",  # a device out of rotation (docs/gpus.md)
        }.get(self.action, "")
        return f"{self.action} {detail}".rstrip()


def ensure_table(conn: sqlite3.Connection) -> None:
    conn.execute(TABLE)


def _has_table(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                        "name='td_commands'").fetchone() is not None


def _command(row: Iterable[Any]) -> Command:
    r = tuple(row)
    try:
        args = json.loads(r[3])
    except ValueError:
        args = {}
    return Command(id=r[0], time=r[1], action=r[2], args=args if isinstance(args, dict) else {},
                   reason=r[4], who=r[5], state=r[6], applied_at=r[7], outcome=r[8])


_COLUMNS = "id, time, action, args, reason, who, state, applied_at, outcome"


def commands(conn: sqlite3.Connection, state: str | None = None) -> list[Command]:
    """Every command in the order given (only those in ``state`` if set); [] without the
    table (nothing was ever given)."""
    if not _has_table(conn):
        return []
    if state is None:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM td_commands ORDER BY id")
    else:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM td_commands WHERE state=? ORDER BY id",
                            (state,))
    return [_command(r) for r in rows]


def pending_ids(conn: sqlite3.Connection) -> list[int]:
    """The cheap poll of the runner: ids of the commands waiting to be applied (one
    query: no look for the table first, [] when it is not there)."""
    rows = table_rows(conn, "SELECT id FROM td_commands WHERE state='pending' ORDER BY id")
    return [r[0] for r in rows or ()]


def log_key(conn: sqlite3.Connection) -> tuple[Any, ...]:
    """Changes whenever a command is given, applied or refused (the dashboard's cue)."""
    if not _has_table(conn):
        return ()
    return tuple(conn.execute("SELECT COUNT(*), SUM(state!='pending') FROM td_commands")
                 .fetchone())


def add_command(conn: sqlite3.Connection, action: str, args: dict[str, Any], reason: str,
                who: str) -> int:
    """Record a command (pending) in its own transaction; its id. ``conn`` is in autocommit
    mode (``isolation_level=None``)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown TD action {action!r}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        ensure_table(conn)
        cur = conn.execute("INSERT INTO td_commands (time, action, args, reason, who) "
                           "VALUES (?, ?, ?, ?, ?)",
                           (utc_now(), action, json.dumps(args, sort_keys=True), reason, who))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return int(cur.lastrowid or 0)


def record_command(database: Path, action: str, args: dict[str, Any], reason: str,
                   who: str) -> int:
    """Record a command (pending) in the event's database through a connection of its own
    (fully synced: a command acknowledged is on disk); its id."""
    conn = connect(database, database, isolation_level=None, timeout=30.0)
    try:
        conn.execute("PRAGMA synchronous=FULL")
        return add_command(conn, action, args, reason, who)
    finally:
        conn.close()


def set_args(conn: sqlite3.Connection, command_id: int, args: dict[str, Any]) -> None:
    """Replace a command's arguments as applied (inside the caller's transaction)."""
    conn.execute("UPDATE td_commands SET args=? WHERE id=?",
                 (json.dumps(args, sort_keys=True), command_id))


def mark(conn: sqlite3.Connection, command_id: int, state: str, outcome: str) -> None:
    """Mark a pending command applied, refused or failed (applying it raised: nothing of it
    was committed), inside the caller's transaction (the one of its effect). Raises if it
    was not pending: it is then never applied twice."""
    assert state in ("applied", "refused", "failed")
    cur = conn.execute("UPDATE td_commands SET state=?, applied_at=?, outcome=? "
                       "WHERE id=? AND state='pending'", (state, utc_now(), outcome, command_id))
    if cur.rowcount != 1:
        raise AlreadyDone(f"TD command {command_id} is not pending any more")


class AlreadyDone(Exception):
    """The command was applied or refused already (by an earlier run)."""


# --------------------------------------------------------------------------- derived state


@dataclass(frozen=True)
class PauseState:
    """The TD's last pause that no resume followed: ``mode`` finish (no new game), now
    (games interrupted) or after-round (no new round after ``round``)."""

    mode: str
    reason: str
    since: str
    round: int | None
    command_id: int

    def doc(self, active: bool) -> dict[str, Any]:
        return {"mode": self.mode, "reason": self.reason, "since": self.since,
                "round": self.round, "active": active, "command": self.command_id}


def offline_gpus(conn: sqlite3.Connection, pending: bool = False) -> dict[int, str]:
    """The GPU devices the TD took out of rotation (``td gpu off``, not yet back ``on``):
    device -> the reason; the applied commands (``pending``: the pending ones too)."""
    out: dict[int, str] = {}
    for c in commands(conn):
        if c.action != "gpu" or c.state in ("refused", "failed") \
                or (c.state == "pending" and not pending):
            continue
        device = int(c.args.get("device", -1))
        if c.args.get("state") == "off":
            out[device] = c.reason
        else:
            out.pop(device, None)
    return out


def pause_state(log: Iterable[Command]) -> PauseState | None:
    """From the applied commands in order: the pause in force, or None."""
    state: PauseState | None = None
    for c in log:
        if c.state != "applied":
            continue
        if c.action == "pause":
            rnd = c.args.get("round")
            state = PauseState(mode=str(c.args.get("mode", "finish")), reason=c.reason,
                               since=c.applied_at or c.time, command_id=c.id,
                               round=int(rnd) if isinstance(rnd, int) else None)
        elif c.action == "resume":
            state = None
    return state


def intended_pause(log: Iterable[Command]) -> bool:
    """Paused once every command given so far (applied or pending) is applied?"""
    paused = False
    for c in log:
        if c.state in ("refused", "failed"):
            continue
        if c.action == "pause":
            paused = True
        elif c.action == "resume":
            paused = False
    return paused


def td_doc(conn: sqlite3.Connection, round_complete: Any = None) -> dict[str, Any]:
    """The ``td`` part of the state document (docs/state.md): the pause in force, the
    decision log (applied and refused commands, in order) and the commands pending.
    ``round_complete(number) -> bool`` tells whether an after-round pause is active yet."""
    log = commands(conn)
    pause = pause_state(log)
    active = pause is not None and (
        pause.mode != "after-round" or pause.round is None or round_complete is None
        or bool(round_complete(pause.round)))
    return {"paused": None if pause is None else pause.doc(active),
            "decisions": [c.doc() for c in log if c.state != "pending"],
            "pending": [c.doc() for c in log if c.state == "pending"],
            "notes": [{"time": c.applied_at or c.time, "text": c.args.get("text", ""),
                       "who": c.who} for c in log
                      if c.action == "note" and c.state not in ("refused", "failed")]}
