"""An engine's build: the SHA-256 of its executable and of every existing file named in its
``Args`` and in its ``Options`` values (networks, books the engine loads itself).

TCEC rule 8: no engine update once the event has started. The runner records each
engine's build when the event starts (runner.store.buildrecords); before each local game it
checks the engine's files again, and a cluster worker computes the same for its own
commands (its ``--engine`` overrides included) and refuses an engine whose build differs.

The build's ``digest`` is over the files' contents only, in a fixed order (the executable,
the Args in order, then the Options by name), never over their paths: the same build
installed under another path on a worker is the same build. Digests are cached by the
file's identity (device, inode, size, modification and change times): a file replaced or
rewritten is hashed again, an unchanged one costs a ``stat``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass, field
from typing import Any

from runner.config.fingerprint import NotCached as _NotCached
from runner.config.fingerprint import file_digest


@dataclass(frozen=True)
class Build:
    """One engine's build on this machine: ``files`` maps each file (as named) to its
    SHA-256, executable first; ``digest`` is the SHA-256 of those digests in order."""

    digest: str
    files: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"digest": self.digest, "files": dict(self.files)}


def _named_files(engine: Any) -> list[str]:
    """The executable (resolved on PATH when it has no directory) and every existing file
    named in Args and in Options values (relative names from WorkingDir)."""
    command = str(engine.command)
    executable = command if os.sep in command else (shutil.which(command) or command)
    names = [executable]
    base = engine.working_dir or None
    values = [str(a) for a in engine.args]
    values += [str(v) for _, v in sorted(engine.options.items()) if isinstance(v, str)]
    for value in values:
        path = value if os.path.isabs(value) or base is None else os.path.join(base, value)
        if value and os.path.isfile(path) and path not in names:
            names.append(path)
    return names


def build_of(engine: Any) -> Build:
    """The build of an engine (EngineConfig) as this machine would start it."""
    return _build({path: file_digest(path) for path in _named_files(engine)})


def _build(files: dict[str, str]) -> Build:
    return Build(hashlib.sha256("\n".join(files.values()).encode()).hexdigest(), files)


_LAST: dict[tuple[str, ...], Build] = {}  # the last build of each list of files named


def cached_build(engine: Any) -> Build | None:
    """build_of when none of the engine's files changed since they were last hashed (a
    ``stat`` each: cheap enough for an event loop), else None (build_of must read them).
    The same files with the same digests as last time give the same Build (not hashed
    into a digest again: an event checks its engines' builds before every game)."""
    names = tuple(_named_files(engine))
    try:
        digests = [file_digest(path, cached_only=True) for path in names]
    except _NotCached:
        return None
    last = _LAST.get(names)
    if last is not None and list(last.files.values()) == digests:
        return last
    build = _LAST[names] = _build(dict(zip(names, digests, strict=True)))
    return build


def build_difference(name: str, recorded: dict[str, Any], now: Build, named: bool = True) -> str:
    """What differs, for a refusal: both digests and the files whose contents changed."""
    old_files = dict(recorded.get("files") or {})
    old_by_order, new_by_order = list(old_files.items()), list(now.files.items())
    changed = []
    for i, (path, digest) in enumerate(new_by_order):
        before = old_by_order[i][1] if i < len(old_by_order) else None
        if before != digest:
            changed.append(f"{path}: {before or '(none)'} -> {digest}")
    changed += [f"{path}: {digest} -> (none)" for path, digest in old_by_order[len(new_by_order):]]
    if not old_files:  # only the digest is known (a worker): this one's files
        changed = [f"{path}: {digest}" for path, digest in new_by_order]
    return ((f"engine {name}: " if named else "") + "its build differs from the event's "
            f"(TCEC rule 8): the event's build {recorded.get('digest')}, this one {now.digest}"
            + (f" ({'; '.join(changed)})" if changed else ""))
