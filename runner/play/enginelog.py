"""Engine logs (``EngineLogs`` in the config): every line to and from both engines of a game,
time-stamped, in one file per game.

Lines go through a 64 KiB buffered file (a ``write`` copies into the buffer; the buffer is
handed to the kernel when full, never fsynced), so logging costs the engines' event loop
microseconds per line. With ``Keep: failures`` the file of a game is deleted when the game
ends, unless it ended by a crash (disconnect or failed start), a stalled connection, an
illegal move or a time forfeit.

Line format: ``+<ms since the log opened> <engine name> <direction> <line>``, where the
direction is ``>`` for a line sent to the engine and ``<`` for a line it printed, e.g.
``   +1532.104 Stockfish(white) > go wtime 9850 btime 10000 winc 100 binc 100``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

# PGN Termination values of the games whose logs Keep: failures keeps
FAILURES = ("abandoned", "stalled connection", "illegal move", "time forfeit")
LOG_TAG = "EngineLog"  # the PGN tag naming a kept log


def log_name(game_id: int, attempt: int) -> str:
    return f"game-{game_id:05d}.log" if attempt <= 1 else f"game-{game_id:05d}.{attempt}.log"


class GameLog:
    """The engine I/O log of one game (both engines, interleaved as it happened)."""

    def __init__(self, path: Path, keep: str = "failures", title: str = ""):
        self.path = path
        self.keep = keep
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "w", buffering=1 << 16, encoding="utf-8",  # noqa: SIM115
                          errors="replace")
        self._t0 = time.monotonic()
        now = datetime.now(UTC).isoformat(timespec="milliseconds")
        self._file.write(f"# swiss-runner engine log{': ' + title if title else ''}; opened "
                         f"{now}; times are ms since then; > to the engine, < from it\n")

    def writer(self, who: str) -> Callable[[str, str], None]:
        """A function ``(direction, line)`` that logs lines of engine ``who``."""
        write = self._file.write
        t0 = self._t0
        monotonic = time.monotonic

        def log(direction: str, line: str) -> None:
            if not self._file.closed:
                write(f"{(monotonic() - t0) * 1000:+12.3f} {who} {direction} {line}\n")

        return log

    def note(self, text: str) -> None:
        if not self._file.closed:
            self._file.write(f"{(time.monotonic() - self._t0) * 1000:+12.3f} # {text}\n")

    def close(self, termination: str | None, reason: str = "") -> Path | None:
        """Close the log; return its path when it is kept, else delete it and return None.

        Only the first call counts (later ones return its answer)."""
        if self._file.closed:
            return self.path if self.path.exists() else None
        if reason:
            self.note(f"game over: {reason}")
        with contextlib.suppress(OSError):
            self._file.close()
        if self.keep == "all" or (termination or "") in FAILURES:
            return self.path
        with contextlib.suppress(OSError):
            self.path.unlink()
        return None

    def discard(self) -> None:
        """The game did not end (aborted): keep the file only with Keep: all."""
        self.close(None, "aborted (the game is played again)")


__all__ = ["FAILURES", "LOG_TAG", "GameLog", "log_name"]
