"""The JSON snapshot as the last witness of a recorded event (issue 38 item 8, issue 48).

When the state database is missing or holds no event, the snapshot beside it may still say
that games were finished: starting a new event would then overwrite that witness. The
snapshot is read as plain JSON here; nothing is written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

SNAPSHOT_FORMAT = "swiss-runner-state"  # the "format" of runner.service.views.snapshotdoc's snapshot


@dataclass(frozen=True)
class Witness:
    """What a snapshot says about the event it was written for."""

    finished: int  # games it says were finished
    database: str  # the database it names ("" when it names none)
    moved: bool  # it names another database path (the directory was moved or restored)


def snapshot_witness(snapshot: Path, database: Path, event: str) -> Witness | None:
    """The snapshot's account of this event when it says games were finished, else None.

    It is this event's when it names this database, or names another path for an event of
    the same name (an event directory moved, copied or restored elsewhere keeps its old
    absolute path in the snapshot). A snapshot of another event, unreadable or of another
    format witnesses nothing."""
    try:
        snap = json.loads(snapshot.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(snap, dict) or snap.get("format", SNAPSHOT_FORMAT) != SNAPSHOT_FORMAT:
        return None
    named = str(snap.get("database") or "")
    same = named == str(database)
    if not same and (snap.get("event") != event or "format" not in snap):
        return None
    try:
        finished = int(snap.get("games_finished") or 0)
    except (TypeError, ValueError):
        return None
    if finished <= 0:
        return None
    return Witness(finished=finished, database=named, moved=not same)
