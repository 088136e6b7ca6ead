"""How good the ETA was: replays a finished event's games through the ETA estimator.

Reads the state database of an event (its games' start and end times and lengths), and at
each game's end, the moment a ``Finished game`` line shows an ETA, computes the ETA the
runner's estimator (runner.service.views.progress.event_eta) gives from what was known then: the
lengths of the games finished so far, how long each game in progress had run, the config's
time control, Concurrency and rounds. Prints each ETA beside the time the event really took
from then on, and the error. The times are the database's wall-clock ones (fine for a
finished event on one machine, the run's monotonic clock is not recorded).

    python bench/eta_replay.py CONFIG        # the config of a finished event
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runner.config import load_config  # noqa: E402
from runner.service.views.progress import event_eta, format_eta  # noqa: E402


def games(database: Path) -> list[tuple[int, float, float, float]]:
    """(game id, start, end, duration_s) of the finished games, by end (Unix seconds)."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT game_id, start_time, end_time, duration_s FROM games "
                            "WHERE status='finished' AND start_time IS NOT NULL "
                            "AND end_time IS NOT NULL").fetchall()
    finally:
        conn.close()
    stamp = lambda text: datetime.fromisoformat(text).timestamp()  # noqa: E731
    return sorted(((gid, stamp(s), stamp(e), float(d or stamp(e) - stamp(s)))
                   for gid, s, e, d in rows), key=lambda g: g[2])


def replay(config_path: Path) -> list[tuple[float, int, float | None, float]]:
    """(seconds since the first start, games done, ETA, actual time left) at each end."""
    config = load_config(config_path)
    played = games(config.database)
    if not played:
        raise SystemExit(f"{config.database}: no finished game to replay")
    first, last = min(g[1] for g in played), max(g[2] for g in played)
    out = []
    for done, (_, _, now, _) in enumerate(played, 1):
        durations = [g[3] for g in played[:done]]
        running = [now - s for _, s, e, _ in played if s <= now < e]
        eta = event_eta(config, durations, len(played), done, running)
        out.append((now - first, done, eta, last - now))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", type=Path)
    args = parser.parse_args()
    print(f"{'at':>8} {'done':>5} {'ETA':>9} {'actual':>9} {'error':>7}")
    for at, done, eta, left in replay(args.config):
        if left <= 0:
            continue
        error = "" if eta is None else f"{100 * (eta - left) / left:+6.0f}%"
        print(f"{at:8.1f} {done:5d} {format_eta(eta).removeprefix('ETA '):>9} "
              f"{format_eta(left).removeprefix('ETA '):>9} {error:>7}")


if __name__ == "__main__":
    main()
