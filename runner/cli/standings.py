"""`swiss-runner standings CONFIG [--format ...]`."""

from __future__ import annotations

import argparse
import sqlite3
import sys

from runner.cli.common import no_event_yet, other_event, recorded_event_fingerprint
from runner.config import Config
from runner.domain.standings import compute_standings, event_ratings
from runner.domain.text import printable_lines
from runner.errors import EXIT_BAD_INPUT, EXIT_OK, view
from runner.render.standings_report import render_standings


def cli_standings(config: Config, args: argparse.Namespace) -> int:
    """``swiss-runner standings CONFIG [--format ...]``: 0 printed, 1 no state yet, 2 bad state."""
    from runner.store import database as store

    errors: tuple[type[BaseException], ...] = (OSError, store.StoreError)
    damage: tuple[type[BaseException], ...] = (sqlite3.Error, ValueError, KeyError, TypeError,
                                               IndexError, AttributeError)
    try:
        results = store.load_results(config)
        if results is None:
            return no_event_yet(config, args)  # as `status`: the command ran, no event yet
        changed = other_event(config, recorded_event_fingerprint(config))
        if changed:
            print(f"error: {printable_lines(changed)}", file=sys.stderr)
            return EXIT_BAD_INPUT
        with view("the standings"):  # the record was read: an error here is not damage
            rows = compute_standings(results, config.tiebreaks)
        with view("the ratings"):
            ratings = event_ratings(results, config)
    except errors as exc:
        print(f"error: {printable_lines(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except damage as exc:
        print(f"error: {printable_lines(store.damaged_state(config.database, exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(render_standings(rows, results, getattr(args, "format", "text") or "text", config.tiebreaks,
                           ratings), end="")
    return EXIT_OK
