"""The event fingerprint: everything that defines an event, recorded when it starts.

On resume the config must give the same fingerprint (TCEC rule 8: no engine updates once an
event has started); :func:`fingerprint_changes` lists what differs, for the refusal message.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import threading
from pathlib import Path
from typing import Any

from runner.config.typed import Config

_UNSET = object()


def _file_sha256(path: str | Path) -> str:
    """The file's SHA-256, hashed from a read-only map of it where the file can be mapped
    (no copy of a 47 MB engine into Python's memory: about 10% less CPU), else read."""
    try:
        with open(path, "rb") as handle:
            try:
                with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                    return hashlib.sha256(mapped).hexdigest()
            except (OSError, ValueError):  # empty, a pipe, a file system without maps
                return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


_digests: dict[tuple[Any, ...], str] = {}
_digests_lock = threading.Lock()


class NotCached(Exception):
    """:func:`file_digest` with ``cached_only``: the file changed since it was hashed."""


def file_digest(path: str | Path, cached_only: bool = False) -> str:
    """The SHA-256 of a file, cached while the file is unchanged (its identity: device,
    inode, size, modification and change times), so that a process hashes each engine
    binary once (the fingerprint and the engine's build read the same files at start-up: a
    Stockfish with its network inside is 47 MB, ~30 ms of CPU each time). ``cached_only``:
    raise NotCached rather than read a file that changed."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    # the file itself (whatever names or links lead to it), in the version it has now
    key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _digests_lock:
        known = _digests.get(key)
    if known is None and cached_only:
        raise NotCached(str(path))
    if known is None:
        known = _file_sha256(path)
        with _digests_lock:
            _digests[key] = known
    return known


def event_fingerprint(config: Config) -> dict[str, Any]:
    """Everything that defines the event; a change here would alter games or pairings.

    Left out on purpose (may change between runs): Concurrency, Backend, CutechessPath,
    PgnOut, Database, StatePath, Event/Site tags, Tiebreaks (they only rank).
    """
    s = config.swiss
    engines = {}
    for e in config.engines:
        engines[e.name] = {
            "command": e.command, "binary_sha256": file_digest(e.command), "args": list(e.args),
            "protocol": e.protocol, "rating": e.rating, "options": dict(sorted(e.options.items())),
            "nodes": e.nodes, "depth": e.depth, "movetime_ms": e.movetime_ms,
            "working_dir": e.working_dir,
        }
    openings = None
    if config.openings is not None and config.openings.file is None:  # Openings.Positions
        o = config.openings
        openings = {"positions": "random" if o.positions is None else [
            list(pair) if pair[1] is not None else pair[0] for pair in o.positions],
            "order": o.order}
    elif config.openings is not None:
        o = config.openings
        openings = {"sha256": file_digest(o.file), "format": o.format, "plies": o.plies,
                    "order": o.order}
    adj = config.adjudication
    variant = {} if config.variant == "standard" else {"Variant": config.variant}
    return {
        **variant,  # only in a 960 event: a standard event keeps the fingerprint it had
        "Engines": engines,
        "TimeControl": str(config.time_control),
        "TimeMarginMs": config.time_margin_ms,
        "SwissOptions": {
            "GamesPerMatch": s.games_per_match, "Rounds": s.rounds,
            "SeedGroupCount": s.seed_group_count, "Seeding": s.seeding,
            "RandomSeed": s.random_seed, "DoubleRoundSchedule": s.double_round_schedule,
            "UniquePerMatchOnly": s.unique_per_match_only,
            "AllowExtraPairsOnTie": s.allow_extra_pairs_on_tie, "MaxExtraPairs": s.max_extra_pairs,
        },
        "Openings": openings,
        "Adjudication": {
            "TcecDraw": None if adj.tcec_draw is None else vars(adj.tcec_draw),
            "TcecWin": None if adj.tcec_win is None else vars(adj.tcec_win),
            "Tablebases": None if adj.tablebases is None else {
                "paths": [str(p) for p in adj.tablebases.paths],
                "max_pieces": adj.tablebases.max_pieces, "ignore50": adj.tablebases.ignore50},
            "MaxMoves": adj.max_moves,
        },
    }


def without_binaries(fingerprint: dict[str, Any], engines: set[str]) -> dict[str, Any]:
    """The fingerprint without the binary digest of ``engines``: those whose build is
    recorded apart (runner.store.buildrecords) and checked by it, with its own refusal."""
    if not engines:
        return fingerprint
    return {**fingerprint, "Engines": {
        name: ({k: v for k, v in e.items() if k != "binary_sha256"}
               if name in engines and isinstance(e, dict) else e)
        for name, e in fingerprint.get("Engines", {}).items()}}


def _diff(old: Any, new: Any, prefix: str, out: list[tuple[str, Any, Any]]) -> None:
    """Collect (key path, old, new) for every difference; descend only where both are dicts.

    A value that is a mapping on one side only (a book or a draw rule added or removed) is
    one difference shown whole, not a line per key against nothing.
    """
    if isinstance(old, dict) and isinstance(new, dict):
        for key in set(old) | set(new):
            _diff(old.get(key, _UNSET), new.get(key, _UNSET),
                  f"{prefix}.{key}" if prefix else str(key), out)
    elif old != new:
        out.append((prefix, old, new))


def _shown(value: Any) -> str:
    return "(unset)" if value is _UNSET else json.dumps(value, sort_keys=True)


def fingerprint_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable list of differences between two fingerprints (empty = same event)."""
    changes: list[str] = []
    old_engines, new_engines = set(old.get("Engines", {})), set(new.get("Engines", {}))
    for name in sorted(old_engines - new_engines):
        changes.append(f"Engines: {name!r} was removed")
    for name in sorted(new_engines - old_engines):
        changes.append(f"Engines: {name!r} was added")
    kept_old = {**old, "Engines": {n: v for n, v in old.get("Engines", {}).items() if n in new_engines}}
    kept_new = {**new, "Engines": {n: v for n, v in new.get("Engines", {}).items() if n in old_engines}}
    found: list[tuple[str, Any, Any]] = []
    _diff(kept_old, kept_new, "", found)
    for key, a, b in sorted(found, key=lambda item: item[0]):
        changes.append(f"{key}: {_shown(a)} -> {_shown(b)}")
    return changes
