"""Paths in a config: relative to the config file's folder, ``~`` expanded."""

from __future__ import annotations

import os
from pathlib import Path


def resolve_path(base: Path, value: str | os.PathLike[str]) -> Path:
    """``value`` as an absolute, normalised path; a relative one is taken from ``base``."""
    p = Path(os.path.expanduser(str(value)))
    return Path(os.path.normpath(p if p.is_absolute() else base / p))
