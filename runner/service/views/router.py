"""Sinks of the game event stream: the store, the console, the PGN file, the JSON state.

The loop hands every event a backend emits to :class:`EventRouter.publish`. The store comes
first and must succeed (a finished game that cannot be committed stops the event); the other
sinks are views that report their own failures and never lose a game (compare fastchess's
``IOutput`` and cutechess's signals, which the CLI and GUI both watch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runner.domain.events import GameEvent, MovePlayed
from runner.service.views.sink import PASSED, Sink, Then, ViewErrors
from runner.service.views.storesink import StoreSink


class EventRouter:
    """Hands each event to the store first, then to the views."""

    def __init__(self, store: StoreSink, views: Sequence[Sink], errors: ViewErrors | None = None):
        self.store = store
        self.views = list(views)
        self.errors = errors or ViewErrors(store.store.path)
        self.move_views = [v for v in self.views if getattr(v, "moves", True)]
        # a move (one every ply): queued for the store's writer, then handed to the views
        # that show moves; with none, the writer's queue is all there is to it
        self.move: Callable[[MovePlayed], None] = self._move_shown if self.move_views \
            else store.move

    def publish(self, event: GameEvent, then: Then | None = None) -> None:
        """A finished game reaches the views once its record is committed (never, if it
        could not be: the game's task learns that from StoreSink.settled); ``then``: see
        :meth:`StoreSink.handle`. A move (one every ply) is queued for the store's writer
        and handed to the views that show moves, if any, without more."""
        if isinstance(event, MovePlayed):
            self.move(event)
            return
        # RecordError propagates: the event must stop; a record's views: once committed
        if self.store.handle(event, then, lambda: self.show(event)) is None:
            self.show(event)

    def _move_shown(self, event: MovePlayed) -> None:
        self.store.move(event)
        self.show(event)

    def show(self, event: GameEvent) -> None:
        """Hand ``event`` to the views that take it: ``ViewErrors.guard``'s rule, written out
        (no context manager per view and event): a view's error is reported, not raised."""
        for view in self.move_views if isinstance(event, MovePlayed) else self.views:
            try:
                view.handle(event)
            except PASSED:
                raise
            except Exception as exc:  # noqa: BLE001 - a view never costs the event
                self.errors.report(type(view).__name__, exc)
