"""The files an event writes and reads: outputs must be distinct from each other and from
every input, regular files, and (for `run` and `validate`) writable by this user. Checked before
anything is written."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from runner.config.paths import resolve_path
from runner.config.typed import Config
from runner.config.values import path_problem


def _output_files(config: Config) -> list[tuple[str, str, Path]]:
    """Every file the runner writes: (config key, what it is, path)."""
    db = config.database
    return [
        ("SwissOptions.StatePath", "the JSON snapshot", config.swiss.state_path),
        ("Database", "the state database", db),
        ("Database", "the state database's WAL journal", db.with_name(db.name + "-wal")),
        ("Database", "the state database's shared-memory file", db.with_name(db.name + "-shm")),
        ("Database", "the state database's rollback journal", db.with_name(db.name + "-journal")),
        ("Database", "the state database's lock file", db.with_name(db.name + ".lock")),
        ("PgnOut", "the PGN of the games", config.pgn_out),
        *([("EpdOut", "the final positions (EPD)", config.epd_out)] if config.epd_out else []),
        *([("LivePgn", "the live PGN", config.live_pgn)] if config.live_pgn else []),
    ]


def _input_files(config: Config) -> list[tuple[str, str, Path]]:
    """Every file or directory the event reads: (config key, what it is, path)."""
    inputs: list[tuple[str, str, Path]] = [("(config file)", "the config file itself", config.path)]
    if config.openings is not None and config.openings.file is not None:
        inputs.append(("Openings.File", "the opening book", config.openings.file))
    base = config.path.resolve().parent
    for i, engine in enumerate(config.engines):
        key = f"Engines[{i}]"
        inputs.append((f"{key}.Command", f"the executable of engine {engine.name!r}",
                       Path(engine.command)))
        if engine.working_dir:
            inputs.append((f"{key}.WorkingDir", f"the working directory of engine {engine.name!r}",
                           Path(engine.working_dir)))
        for j, arg in enumerate(engine.args):  # a script or network file the engine reads
            if path_problem(arg) or not arg.strip():
                continue
            for folder in (Path(engine.working_dir) if engine.working_dir else base, base):
                candidate = resolve_path(folder, arg)
                if os.path.lexists(candidate):
                    inputs.append((f"{key}.Args[{j}]", f"a file engine {engine.name!r} reads",
                                   candidate))
                    break
    tb = config.adjudication.tablebases
    for i, folder in enumerate(tb.paths if tb is not None else ()):
        inputs.append((f"Adjudication.Tablebases.Paths[{i}]", "a tablebase directory", folder))
    if os.sep in config.cutechess_path:
        inputs.append(("CutechessPath", "cutechess-cli", Path(config.cutechess_path)))
    return inputs


_BACKUP_SUFFIX = r"\.\d{8}T\d{6}Z(?:-\d+)?\.bak"  # PgnOut kept aside: <name>.<UTC time>.bak


def check_distinct_outputs(c: Any, config: Config) -> None:
    """StatePath, Database (with its SQLite and lock side files), PgnOut and every input (the
    config file, the book, engine executables and the files they read, tablebases) must be
    different files, and an output must not be a directory or a device: the snapshot's
    rename would replace the database or the config, the PGN would be appended to the book,
    and the event's record or the user's files would be lost. Checked before anything is
    written."""
    files = _output_files(config)
    book = [("Openings.File", "the opening book", config.openings.file)
            ] if config.openings and config.openings.file is not None else []
    seen: dict[str, tuple[str, str]] = {}
    for key, role, path in files + book:
        real = os.path.realpath(path)  # the same file through a symlink is the same file
        if real in seen and seen[real][0] != key:
            other_key, other_role = seen[real]
            default = " (Database defaults to StatePath with the suffix .sqlite3)" if (
                "Database" in (key, other_key) and "Database" not in config.raw) else ""
            c.problem(key, f"{path}: {role} would be the same file as {other_role} "
                      f"({other_key}){default}; StatePath, Database, PgnOut and Openings.File "
                      "must name different files, or one overwrites the other")
        seen.setdefault(real, (key, role))
    reported: set[str] = set()
    outputs = {os.path.realpath(path): (key, role, path) for key, role, path in reversed(files)}
    for in_key, in_role, in_path in _input_files(config):
        if in_key == "Openings.File":
            continue  # the book against the outputs was checked above with its usual wording
        real_in = os.path.realpath(in_path)
        hit = outputs.get(real_in)
        if hit is None:
            pgn = os.path.realpath(config.pgn_out)
            if os.path.dirname(real_in) == os.path.dirname(pgn) and re.fullmatch(
                    re.escape(os.path.basename(pgn)) + _BACKUP_SUFFIX, os.path.basename(real_in)):
                hit = ("PgnOut", "a backup name of the PGN of the games", config.pgn_out)
        if hit is None or hit[0] in reported:
            continue
        key, role, path = hit
        reported.add(key)
        c.problem(key, f"{path}: {role} would be {in_role} ({in_key}); an output must never "
                  "overwrite an input: name a file of its own")
    for key, role, path in files:
        if key in reported:
            continue
        problem = _not_a_file(path)
        if problem:
            reported.add(key)
            c.problem(key, f"{path}: {role} cannot be written there: {problem}")


def check_writable_outputs(c: Any, config: Config) -> None:
    """Every output can be created or written by this user: a PGN, EPD or engine-log
    directory that is read-only would otherwise be found game after game while the event
    plays on without them (and a read-only state directory only once the run has started).
    Side files that do not exist need only their directory."""
    outputs = [(key, role, path, key != "SwissOptions.StatePath")
               for key, role, path in _output_files(config)]
    if config.engine_logs is not None:
        outputs.append(("EngineLogs.Dir", "the directory of the engine logs",
                        config.engine_logs.dir, True))
    reported: set[str] = set()
    for key, role, path, file_too in outputs:
        if key in reported:
            continue
        problem = _unwritable(path, file_too)
        if problem:
            reported.add(key)
            c.problem(key, f"{path}: {role} cannot be written: {problem}; expected a place "
                      "this user can write to")


def _unwritable(path: Path, file_too: bool) -> str | None:
    """Why this process cannot create (or, ``file_too``, write) ``path``, or None."""
    if file_too and os.path.lexists(path) and not os.access(path, os.W_OK):
        return "it is read-only for this user (or on a read-only file system)"
    for parent in path.parents:
        if os.path.isdir(parent):
            if not os.access(parent, os.W_OK | os.X_OK):
                return (f"the directory {parent} is not writable by this user (or on a "
                        "read-only file system)")
            return None
        if os.path.lexists(parent):
            return None  # not a directory: _not_a_file reports it
    return None


def _not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be a regular file the runner creates and replaces, or None."""
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            return "it is an existing directory; expected a file name in a directory"
        if not stat.S_ISREG(info.st_mode):
            return "it is a device, pipe or socket, not a regular file"
    for parent in path.parents:
        try:
            info = os.stat(parent)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            return f"{parent} is a file, not a directory"
        break
    return None

