"""The one way a finished game is recorded while the event runs: its events handed to the
router (the store's writer thread first, then the views), whoever ended it: a backend (the
referee, cutechess-cli, a cluster worker), a game decided from its log (rule 7.c), the TD's
adjudication, a forfeit. The attempt numbers are computed here only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from runner.domain.events import GameEvent, GameFinished, GameStarted, MovePlayed
from runner.domain.models import GameRecord
from runner.domain.pgn import escape_tag
from runner.service.views.router import EventRouter
from runner.service.views.sink import Then
from runner.store import decisions
from runner.store.database import Store, StoredGame


def next_attempt(store: Store, game_id: int, previous: int = 0) -> int:
    """The number of a game's next attempt: one more than any attempt it had."""
    return max(previous, store.attempts(game_id)) + 1


def last_attempt(store: Store, game_id: int) -> int:
    """The number of a game's latest attempt (1 when it had none)."""
    return max(1, store.attempts(game_id))


def placeholder_started(game: StoredGame, record: GameRecord, attempt: int, *,
                        started: dict[str, Any] | None = None, start_fen: str | None = None,
                        resumed_from_ply: int = 0, workers: tuple[str, ...] = ()
                        ) -> GameStarted:
    """The GameStarted of a game recorded without its backend's own (a backend that reports
    only its result, a game decided from its log, a forfeit); ``started``: the one its
    earlier attempt logged, whose engine names and book plies it keeps."""
    started = started or {}
    return GameStarted(
        game_id=game.game_id, white=game.white, black=game.black,
        white_id=started.get("white_id", ""), black_id=started.get("black_id", ""),
        start_time=started.get("start_time", record.start_time),
        start_fen=start_fen if start_fen is not None else record.start_fen or "",
        book_plies=started.get("book_plies", 0), white_clock_ms=None, black_clock_ms=None,
        resumed_from_ply=resumed_from_ply, attempt=attempt, played_by=workers)


class RestartTags:
    """A game the TD restarted (7.d) says so in its PGN: a ``TDRestart`` tag naming the
    decision (``#N by WHO: REASON``) after the game's other tags."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._restarts: dict[int, list[decisions.Command]] | None = None  # None: read again

    def changed(self) -> None:
        """A TD command was decided: the restarts are read again at the next record."""
        self._restarts = None

    def tagged(self, game_id: int, record: GameRecord) -> GameRecord:
        if self._restarts is None:
            self._restarts = {}
            for c in decisions.commands(self.store.conn, "applied"):
                if c.action == "restart":
                    self._restarts.setdefault(c.args.get("game"), []).append(c)
        restarts = self._restarts.get(game_id)
        if not restarts:  # (most games: their PGN is not read)
            return record
        head, sep, rest = record.pgn.partition("\n\n")
        if not sep or "[TDRestart " in head:
            return record
        text = "; ".join(f"#{c.id} by {c.who}: {c.reason}" for c in restarts)
        return replace(record, pgn=f'{head}\n[TDRestart "{escape_tag(text)}"]{sep}{rest}')


class GameEmit:
    """A game attempt's Emit (runner.play.backend): each event published through the
    :class:`Recorder`, its kind noted in ``seen``; a move (one every ply, with nothing to
    add on the way: no tags, no record) handed straight to the router's move path, which
    it carries as ``move`` for a backend to call directly (runner.play.backend.Emit)."""

    __slots__ = ("recorder", "seen", "move")

    def __init__(self, recorder: Recorder, seen: set[str]) -> None:
        self.recorder = recorder
        self.seen = seen
        self.move = recorder.router.move

    def __call__(self, event: GameEvent) -> None:
        if isinstance(event, MovePlayed):
            self.move(event)
            return
        self.seen.add(event.kind)
        self.recorder.publish(event)


class Recorder:
    """Publishes a game's events to the router (the store first, then the views); a
    GameFinished's record gets its TD tags (:class:`RestartTags`) on the way."""

    def __init__(self, router: EventRouter, tags: RestartTags) -> None:
        self.router = router
        self.tags = tags

    @property
    def record(self) -> Any:
        """The store's sink (its writes awaited by the game's task)."""
        return self.router.store

    def publish(self, event: GameEvent, then: Then | None = None) -> None:
        """One event of a game; ``then(connection)`` runs in a record's transaction."""
        if isinstance(event, GameFinished):
            record = self.tags.tagged(event.game_id, event.record)
            if record is not event.record:
                event = replace(event, record=record)
        self.router.publish(event, then)

    async def finish(self, game: StoredGame, record: GameRecord, attempt: int, *,
                     started: GameStarted | None = None, then: Then | None = None) -> None:
        """Record a game ended without a backend (decided from its log, adjudicated by the
        TD, lost by forfeit): its ``started`` event first when it has none stored, then
        its record (``then`` in its transaction); returns once it is committed
        (RecordError: it could not be; decisions.AlreadyDone from ``then``: nothing was)."""
        if started is not None:
            self.publish(started)
        self.publish(GameFinished(game.game_id, record, attempt), then)
        await self.record.settled(game.game_id)

    async def forfeit(self, game: StoredGame, record: GameRecord, attempt: int) -> None:
        """Record ``game`` lost by forfeit (its engine withdrawn by the TD with --now, TCEC
        7.a; ``record`` from runner.service.td.rules.forfeit_record) as attempt ``attempt``,
        a placeholder GameStarted first: its own commit, then the views."""
        await self.finish(game, record, attempt,
                          started=placeholder_started(game, record, attempt))


__all__ = ["GameEmit", "Recorder", "RestartTags", "last_attempt", "next_attempt", "placeholder_started"]
