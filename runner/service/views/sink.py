"""What every view of the game event stream shares: the Sink protocol, the one report of a
view's failure (ViewErrors), a reader thread's own connection, and the record's failure."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from runner.domain.events import GameEvent
from runner.errors import RecordInvalid, StopEvent, ViewError
from runner.errors import print_error as err
from runner.store.database import Store


class ThreadReader:
    """A view's own read-only connection to the database, opened on first use (in the
    view's thread) and kept between its reads; :meth:`close` after a failed read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._store: Store | None = None

    def get(self) -> Store | None:
        """The connection (None: the database does not exist yet)."""
        if self._store is None:
            self._store = Store.open_readonly(self.path, threads=True)
        return self._store

    def close(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            with contextlib.suppress(sqlite3.Error):
                store.close()


#: what a view's update never swallows: the event stops, the run is interrupted or cancelled
PASSED: tuple[type[BaseException], ...] = (StopEvent, KeyboardInterrupt, SystemExit,
                                          asyncio.CancelledError)


class ViewErrors:
    """Reports the errors of the views: each distinct one once (a view that fails at every
    game would otherwise print the same lines all event long), saying what failed and that
    the record is intact. The view is tried again at its next update; it never ends the run."""

    def __init__(self, record: Path | str):
        self.record = record
        self.seen: set[tuple[str, str, str]] = set()

    def report(self, what: str, exc: BaseException) -> None:
        cause = exc.cause if isinstance(exc, ViewError) else exc
        key = (what, type(cause).__name__, str(cause))
        if key in self.seen:
            return
        self.seen.add(key)
        bug = ("" if isinstance(cause, OSError | sqlite3.Error | RecordInvalid)
               else "this is a bug in swiss-runner (please report it), not damage: ")
        err(f"{what} failed: {type(cause).__name__}: {cause}; {bug}the record in {self.record} "
            "is intact, the event goes on and this view is tried again at its next update "
            "(reported once)")

    @contextlib.contextmanager
    def guard(self, what: str, store_errors: bool = False) -> Iterator[None]:
        """Run a view's update; report (not raise) its error. The store's own errors
        (RecordError: a game could not be committed) still stop the event, and with
        ``store_errors`` so does everything but a :class:`ViewError` (at start-up: errors
        of reading the record, reported by the caller as damage)."""
        try:
            yield
        except PASSED:
            raise
        except Exception as exc:  # noqa: BLE001 - a view never costs the event
            if store_errors and not isinstance(exc, ViewError):
                raise  # at start-up: reading the record (its damage is reported as such)
            self.report(what, exc)


class Sink(Protocol):
    """A view of the event stream. One whose class sets ``moves = False`` is not handed the
    MovePlayed events (one every ply: most views only show game starts and ends)."""

    def handle(self, event: GameEvent) -> None: ...


# what runs in a game record's transaction (a TD decision's mark: runner.store.decisions)
Then = Callable[[sqlite3.Connection], None]


class RecordError(StopEvent):
    """A finished game could not be committed (disk full, I/O error)."""
