"""``run --live-pgn FILE`` / ``LivePgn:``: the dashboard's ``/live.pgn`` as a file.

A sink of the runner's event stream that rewrites the file (atomically: a reader sees the
old text or the new one, never a mix) at every game start and end and at most every 0.1 s
while moves come in (a move is in it within about 0.2 s of being played), when its text
changed. The text is built from the database by the same
code as the dashboard's (runner.service.views.livepgntext), from a thread with its own read-only
connection, never on the engines' event loop: the file and ``/live.pgn`` are the same.
"""

from __future__ import annotations

from pathlib import Path

from runner.config import Config
from runner.service.views.livepgntext import LivePgnBuilder, read_live
from runner.service.views.rewrite import RewriteSink
from runner.service.views.sink import ThreadReader, ViewErrors
from runner.store.database import atomic_write


class LivePgnSink(RewriteSink):
    """Rewrites ``path`` with the current round's live PGN; ``request()`` when moves were
    committed (the move log's flush), game starts and ends by themselves."""

    what = "the live PGN"

    def __init__(self, config: Config, path: Path, interval: float = 0.1,
                 errors: ViewErrors | None = None):
        super().__init__(self._rewrite, interval, errors)
        self.config = config
        self.path = path
        self.builder = LivePgnBuilder(config.event, config.site)
        self.text: str | None = None  # what the file holds (None: not written yet)
        self.writes = 0
        self.reader = ThreadReader(config.database)

    def _rewrite(self) -> bool:
        """Build and write (in a worker thread); False when it failed (tried again later)."""
        try:
            reader = self.reader.get()
            if reader is None:
                return True
            text = read_live(reader, self.builder) or ""
        except Exception as exc:  # noqa: BLE001 - a view never costs the event
            self.close()
            self.errors.report(f"the live PGN {self.path}", exc)
            return False
        if text == self.text:
            return True
        try:
            atomic_write(self.path, text, durable=False)
        except OSError as exc:
            self.errors.report(f"writing the live PGN {self.path}", exc)
            return False
        self.text = text
        self.writes += 1
        return True

    def close(self) -> None:
        self.reader.close()


__all__ = ["LivePgnSink"]
