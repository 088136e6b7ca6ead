"""The console: the runner's lines on stdout (above the progress bar on a terminal) and the
sink that prints each game's start and result."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from runner.domain.events import GameEvent, GameFinished, GameStarted
from runner.errors import print_error as err


class Console:
    """The console lines of a run (a view): a write that fails (stdout redirected to a full
    disk, a pipe whose reader went away) drops that line and is reported once on stderr;
    the next lines are tried again."""

    def __init__(self, stream: Any):
        self.stream = stream
        self.failing = False

    def say(self, text: str) -> None:
        try:
            print(text, file=self.stream, flush=True)
        except (OSError, ValueError) as exc:
            gone = isinstance(exc, BrokenPipeError)
            if gone:  # nobody reads it any more: its lines (and the final flush) go nowhere
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    os.dup2(os.open(os.devnull, os.O_WRONLY), self.stream.fileno())
            if not self.failing:
                self.failing = True
                err(f"the console (standard output) cannot be written ({exc}); its lines are "
                    + ("dropped from now on" if gone else "dropped until it can be")
                    + ", the event goes on and the record is intact (reported once)")
        else:
            self.failing = False


class LiveOut(io.TextIOBase):
    """A stream for the plain lines while a live bar is shown: each line is written above
    the bar (tqdm's external write mode), so lines and bar never mix."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        self._partial = ""

    def write(self, text: str) -> int:
        from tqdm import tqdm

        self._partial += text
        if "\n" in self._partial:
            lines, self._partial = self._partial.rsplit("\n", 1)
            with tqdm.external_write_mode(file=self.stream):
                self.stream.write(lines + "\n")
                self.stream.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return True


class ConsoleOut:
    """The console: lines on ``out`` (all of them, or with ``quiet`` only those said
    ``always``)."""

    def __init__(self, out: TextIO | None = None, quiet: bool = False) -> None:
        self.out: TextIO = out if out is not None else sys.stdout
        self.quiet = quiet
        self._console: Console | None = None

    def below_a_bar(self) -> TextIO | None:
        """On a terminal (and not quiet): the terminal, for a live progress bar; the lines
        said from now on go above it (:class:`LiveOut`). None otherwise."""
        stream = self.out
        if self.quiet or not getattr(stream, "isatty", lambda: False)():
            return None
        self.out = LiveOut(stream)
        return stream

    def say(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            if self._console is None or self._console.stream is not self.out:
                self._console = Console(self.out)
            self._console.say(text)


class ConsoleSink:
    """cutechess-style lines: ``Started game 3 of 18 (A vs B)``, ``Finished game 3 (...)``."""

    moves = False

    def __init__(self, say: Callable[[str], None], total_games: Callable[[], int]):
        self.say = say
        self.total_games = total_games

    def handle(self, event: GameEvent) -> None:
        if isinstance(event, GameStarted):
            resumed = f", resumed from ply {event.resumed_from_ply}" if event.resumed_from_ply else ""
            where = f" on {event.worker}" if event.worker else ""
            self.say(f"Started game {event.game_id} of {self.total_games()} "
                     f"({event.white} vs {event.black}){resumed}{where}")
        elif isinstance(event, GameFinished):
            r = event.record
            self.say(f"Finished game {event.game_id} ({r.white} vs {r.black}): "
                     f"{r.result} {{{r.reason}}}")
