"""Engine logs (``EngineLogs`` in the config): every line to and from both engines of a game,
time-stamped, in one file per game.

Lines go through a 64 KiB buffered file (a ``write`` copies into the buffer; the buffer is
handed to the kernel when full, never fsynced), so logging costs the engines' event loop
microseconds per line. Where engines' pipes are read by the compiled reader
(runner.play.pipes) the file is its ``LogFile``: the same buffer, shared under a mutex with
the reader threads, which write an engine's lines during its moves themselves. With ``Keep: failures`` the file of a game is deleted when the game
ends, unless it ended by a crash (disconnect or failed start), a stalled connection, an
illegal move or a time forfeit.

Line format: ``+<ms since the log opened> <engine name> <direction> <line>``, where the
direction is ``>`` for a line sent to the engine and ``<`` for a line it printed, e.g.
``   +1532.104 Stockfish(white) > go wtime 9850 btime 10000 winc 100 binc 100``.

A log is a view of the game, never part of it: the first error writing it (ENOSPC, EIO, a
directory removed under it) turns that game's log off, reported once (a warning naming the
file and the error); the game goes on, and the engines' output is delivered as before.
"""

from __future__ import annotations

import contextlib
import logging
import time
from io import TextIOBase
from pathlib import Path
from typing import Any

from runner.clock import utc_now
from runner.domain.gamerecord import LOG_TAG  # the PGN tag naming a kept log
from runner.play import pipes

# PGN Termination values of the games whose logs Keep: failures keeps
FAILURES = ("abandoned", "stalled connection", "illegal move", "time forfeit")

LOG = logging.getLogger(__name__)


def log_name(game_id: int, attempt: int) -> str:
    return f"game-{game_id:05d}.log" if attempt <= 1 else f"game-{game_id:05d}.{attempt}.log"


class LineWriter:
    """``(direction, line)``: one engine's lines into a game's log. ``native``, ``prefix``
    and ``t0`` let the compiled reader (runner.play.pipes) write the engine's lines of a
    move into the same file itself, in the same format (``native`` None: Python's file)."""

    __slots__ = ("write", "who", "t0", "native", "prefix")

    def __init__(self, log: GameLog, who: str):
        self.write = log._write
        self.who = who
        self.t0 = log._t0
        self.native = log.native_file()
        self.prefix = f" {who} < ".encode("utf-8", "replace")

    def __call__(self, direction: str, line: str) -> None:
        self.write(f"{(time.monotonic() - self.t0) * 1000:+12.3f} {self.who} {direction} {line}\n")


class GameLog:
    """The engine I/O log of one game (both engines, interleaved as it happened)."""

    closed = False

    def __init__(self, path: Path, keep: str = "failures", title: str = ""):
        self.path = path
        self.keep = keep
        self.failed: str | None = None  # why the log was turned off (None: it is on)
        self._file: Any = None  # a text file, or the compiled reader's LogFile
        self._t0 = time.monotonic()
        now = utc_now()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = pipes.log_file(path) or open(  # noqa: SIM115
                path, "w", buffering=1 << 16, encoding="utf-8", errors="replace")
            self._file.write(f"# swiss-runner engine log{': ' + title if title else ''}; "
                             f"opened {now}; times are ms since then; > to the engine, < from it\n")
        except OSError as exc:
            self._off(exc)

    def _off(self, exc: OSError) -> None:
        """The first write error: the log is off for the rest of the game (said once)."""
        if self.failed is not None:
            return
        self.failed = f"{type(exc).__name__}: {exc.strerror or exc}"
        LOG.warning("engine log %s turned off for the rest of its game: %s (the game goes on)",
                    self.path, self.failed)
        handle, self._file = self._file, None
        if handle is not None:
            with contextlib.suppress(OSError, ValueError):
                handle.close()  # what is still buffered may be lost with it

    def _write(self, text: str) -> None:
        handle = self._file
        if handle is None:
            return
        try:
            handle.write(text)
        except OSError as exc:  # a full disk, an I/O error, a vanished directory
            self._off(exc)

    def writer(self, who: str) -> LineWriter:
        """A function ``(direction, line)`` that logs lines of engine ``who``; it never
        raises (the log turns itself off instead)."""
        return LineWriter(self, who)

    def native_file(self) -> Any:
        """The compiled reader's LogFile this log writes to (None: a Python file or off)."""
        handle = self._file
        return None if handle is None or isinstance(handle, TextIOBase) else handle

    def note(self, text: str) -> None:
        self._write(f"{(time.monotonic() - self._t0) * 1000:+12.3f} # {text}\n")

    def close(self, termination: str | None, reason: str = "") -> Path | None:
        """Close the log; return its path when it is kept, else delete it and return None.

        Never raises. A log that was turned off by a write error is kept as far as it got
        (when its game's log would be kept and the file is there). Only the first call
        counts (later ones return its answer)."""
        if self._file is not None:
            if reason:
                self.note(f"game over: {reason}")
            handle, self._file = self._file, None
            if handle is not None:
                try:
                    handle.close()
                except (OSError, ValueError) as exc:
                    if isinstance(exc, OSError):
                        self._off(exc)
        elif self.closed:
            return self.path if self.path.exists() else None
        self.closed = True
        if self.keep == "all" or (termination or "") in FAILURES:
            return self.path if self.path.exists() else None
        with contextlib.suppress(OSError):
            self.path.unlink()
        return None

    def discard(self) -> None:
        """The game did not end (aborted): keep the file only with Keep: all."""
        self.close(None, "aborted (the game is played again)")


__all__ = ["FAILURES", "LOG_TAG", "GameLog", "log_name"]
