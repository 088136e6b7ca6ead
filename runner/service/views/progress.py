"""Progress a person can follow: games done/total and an ETA from the measured game lengths.

The ETA (runner.domain.eta): the expected game length from the games recorded so far (this
run and earlier ones), the games in progress (each lasts at least what it has run) and the
time control's prior; the rounds left played one after the other, each on ``Concurrency``
slots. Shown on every ``Finished game`` line, by ``status``, and on a terminal in a live
progress bar (tqdm) under the plain lines.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from runner.config import Config
from runner.domain.eta import eta_seconds, expected_game_s
from runner.domain.events import GameEvent, GameFinished, GameStarted, MovePlayed
from runner.service.views.console import ConsoleSink
from runner.store import queries


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA unknown (no game finished yet)"
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    return f"ETA {hours}:{rest // 60:02d}:{rest % 60:02d}"


def halted(state: dict[str, Any]) -> str | None:
    """Why no game is played now: "stopped" (the runner is not running), "paused" (by the
    TD), else None; the ETA is then the play left, not a time of day."""
    if state["runner_running"] is False:
        return "stopped"
    pause = (state.get("td") or {}).get("paused")
    return "paused" if pause and pause.get("active") else None


def format_left(seconds: float | None, why: str) -> str:
    """The play left while no game is played (``why``: "stopped", "paused"), never a time
    of day: "stopped: 0:06:41 of play left"."""
    return why + ("" if seconds is None else
                  f": {format_eta(seconds).removeprefix('ETA ')} of play left")


def rounds_eta(durations: Sequence[float], total: int, finished: int,
               running_elapsed: Sequence[float], concurrency: int, prior_s: float | None,
               rounds: int) -> float | None:
    """The ETA of ``total`` games in ``rounds`` rounds (0: not in rounds) of equal size."""
    return eta_seconds(durations, total - finished, running_elapsed, concurrency,
                       prior_s=prior_s, round_games=-(-total // rounds) if rounds > 0 else 0,
                       finished=finished)


def event_pace(config: Config) -> dict[str, Any]:
    """What ``config`` tells the ETA: ``concurrency``, its time control's prior game length
    (``prior_s``) and its Swiss ``rounds`` (each the event's games over ``Rounds``)."""
    return {"concurrency": config.concurrency, "prior_s": expected_game_s(config.time_control),
            "rounds": config.swiss.rounds}


def event_eta(config: Config, durations: Sequence[float], total: int, finished: int,
              running_elapsed: Sequence[float]) -> float | None:
    """The ETA of ``config``'s event (runner.domain.eta)."""
    return rounds_eta(durations, total, finished, running_elapsed, **event_pace(config))


def recorded_durations(conn: sqlite3.Connection) -> list[float]:
    """Lengths (s) of the games recorded in a state database (read-only query)."""
    try:
        return queries.finished_durations(conn)
    except sqlite3.Error:
        return []


class Progress:
    """What the ETA needs, kept up to date from the event stream; ``prior_s`` and ``rounds``
    as runner.domain.eta and ``event_eta`` take them."""

    def __init__(self, durations: Sequence[float], done: int, total: Callable[[], int],
                 concurrency: int, clock: Callable[[], float] = time.monotonic, *,
                 prior_s: float | None = None, rounds: int = 0):
        self.durations = list(durations)
        self.done = done
        self.total = total
        self.concurrency = concurrency
        self.prior_s = prior_s
        self.rounds = rounds
        self.clock = clock
        self.running: dict[int, float] = {}  # game id -> when it started (clock)

    def handle(self, event: GameEvent) -> None:
        if isinstance(event, GameStarted):
            self.running[event.game_id] = self.clock()
        elif isinstance(event, GameFinished):
            started = self.running.pop(event.game_id, None)
            length = event.record.duration_s
            if length == 0:  # a backend that measures none: this run's clock
                length = self.clock() - started if started else None
            if length is not None and length > 0:  # None: not known, never guessed
                self.durations.append(length)
            self.done += 1

    def eta(self) -> float | None:
        now = self.clock()
        return rounds_eta(self.durations, self.total(), self.done,
                          [now - t for t in self.running.values()], self.concurrency,
                          self.prior_s, self.rounds)

    def summary(self) -> str:
        return f"{self.done}/{self.total()} games, {format_eta(self.eta())}"


class ProgressConsoleSink(ConsoleSink):
    """cutechess's lines, the ``Finished game`` one ending with ``[done/total games, ETA]``."""

    def __init__(self, say: Callable[[str], None], total_games: Callable[[], int],
                 progress: Progress):
        super().__init__(say, total_games)
        self.progress = progress

    def handle(self, event: GameEvent) -> None:
        self.progress.handle(event)
        if isinstance(event, GameFinished):
            r = event.record
            self.say(f"Finished game {event.game_id} ({r.white} vs {r.black}): "
                     f"{r.result} {{{r.reason}}} [{self.progress.summary()}]")
        else:
            super().handle(event)


class ProgressBar:
    """The live progress bar on a terminal: games done/total, ETA, the games in progress."""

    def __init__(self, stream: TextIO, progress: Progress, refresh_s: float = 0.5):
        from tqdm import tqdm

        self.progress = progress
        self.refresh_s = refresh_s
        self._last = 0.0
        self.plies: dict[int, tuple[str, int]] = {}
        self.bar: Any = tqdm(total=progress.total(), initial=progress.done, file=stream,
                             dynamic_ncols=True, leave=False, unit="game",
                             bar_format="{n_fmt}/{total_fmt} games |{bar}| {postfix}")
        self._show()

    def handle(self, event: GameEvent) -> None:
        if isinstance(event, GameStarted):
            self.plies[event.game_id] = (f"{event.white}-{event.black}", 0)
        elif isinstance(event, MovePlayed):
            names = self.plies.get(event.game_id, ("", 0))[0]
            self.plies[event.game_id] = (names, event.ply)
            if time.monotonic() - self._last < self.refresh_s:
                return
        elif isinstance(event, GameFinished):
            self.plies.pop(event.game_id, None)
            self.bar.total = self.progress.total()
            self.bar.n = self.progress.done
        self._show()

    def _show(self) -> None:
        self._last = time.monotonic()
        playing = ", ".join(f"#{gid} {names} ply {ply}" for gid, (names, ply)
                            in sorted(self.plies.items()))
        self.bar.set_postfix_str(f"{format_eta(self.progress.eta())}"
                                 + (f" | {playing}" if playing else ""), refresh=True)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.bar.close()


__all__ = ["ProgressBar", "Progress", "ProgressConsoleSink", "event_eta", "event_pace",
           "format_eta", "format_left", "halted", "recorded_durations", "rounds_eta"]
