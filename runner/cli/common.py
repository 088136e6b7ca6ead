"""What every command shares: loading the config with its problems printed, error lines."""

from __future__ import annotations

import sys

from runner.config import Config, ConfigError, load_config
from runner.domain.text import printable_lines


def err(message: str) -> None:
    print(f"error: {printable_lines(message)}", file=sys.stderr, flush=True)


def load(path: str) -> Config | None:
    """The validated config, or None after printing every problem (the caller exits 2)."""
    try:
        return load_config(path)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"{path}: {len(exc.problems)} problem(s); nothing was run or written", file=sys.stderr)
        return None
