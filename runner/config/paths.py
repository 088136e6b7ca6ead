"""Paths in a config: relative to the config file's folder, ``~`` expanded; engine commands."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from runner.config.typed import ENGINE_SEARCH_DIRS


def resolve_path(base: Path, value: str | os.PathLike[str]) -> Path:
    """``value`` as an absolute, normalised path; a relative one is taken from ``base``."""
    p = Path(os.path.expanduser(str(value)))
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def resolve_command(command: str, base: Path) -> str | None:
    """Absolute path of an engine executable: a path (relative to ``base``) or a PATH name."""
    if os.sep in command:
        p = resolve_path(base, command)
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    found = shutil.which(command)
    if found:
        return found
    extra = os.pathsep.join(ENGINE_SEARCH_DIRS)
    return shutil.which(command, path=extra)
