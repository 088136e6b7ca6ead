"""What `status` adds for operators: the ETA and the engine logs kept for failed games."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from runner.config import Config
from runner.service.views.progress import (
    event_eta,
    format_eta,
    format_left,
    halted,
    recorded_durations,
)
from runner.store import queries
from runner.store.database import Store


def _elapsed(iso: str | None, now: float) -> float:
    try:
        return max(0.0, now - datetime.fromisoformat(iso or "").timestamp())
    except ValueError:
        return 0.0


def eta(config: Config, store: Store, data: dict[str, Any]) -> float | None:
    """Seconds to the end of the event (None: no game length measured yet)."""
    now = time.time()
    running = [_elapsed(g.get("started"), now) for g in data.get("in_progress", [])] \
        if data.get("runner_running") is not False else []
    return event_eta(config, recorded_durations(store.conn), data["games_total"],
                     data["games_finished"], running)


def failed_game_logs(config: Config, store: Store) -> list[tuple[int, str, Path]]:
    """(game id, reason, log file) for every recorded game whose engine log was kept."""
    if config.engine_logs is None:
        return []
    from runner.play.enginelog import FAILURES

    rows = queries.finished_terminations(store.conn)
    found = []
    for game_id, reason, termination in rows:
        if config.engine_logs.keep == "failures" and termination not in FAILURES:
            continue
        for path in sorted(config.engine_logs.dir.glob(f"game-{game_id:05d}*.log")):
            found.append((game_id, reason or "", path))
    return found


def status_lines(config: Config, store: Store, data: dict[str, Any]) -> list[str]:
    lines = []
    if not data.get("complete"):
        why = halted(data)
        left = format_eta(eta(config, store, data)) if why is None else format_left(
            eta(config, store, data), {"stopped": "stopped (the runner is not running)",
                                       "paused": "paused by the TD"}[why])
        lines.append(f"Progress: {data['games_finished']}/{data['games_total']} games, "
                     f"{left} (Concurrency {config.concurrency})")
    logs = failed_game_logs(config, store)
    if logs:
        lines.append("Engine logs of failed games:" if config.engine_logs
                     and config.engine_logs.keep == "failures" else "Engine logs:")
        lines += [f"  game {gid} ({reason}): {path}" for gid, reason, path in logs]
    return lines


__all__ = ["eta", "failed_game_logs", "status_lines"]
