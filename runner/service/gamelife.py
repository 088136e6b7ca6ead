"""One game's life: its attempts (started, resumed by TCEC rule 7.c, replayed, restarted by
the TD), each through a backend (runner.play), until its record is committed.

The attempt numbers come from runner.service.recording (one place); a game whose backend
reports no GameStarted (or that is recorded without an engine: decided from its log, lost by
forfeit) gets one from :func:`placeholder_started`; every event goes out through the
:class:`Recorder`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import chess

from runner.config.typed import Config
from runner.domain.adjudication import End
from runner.domain.events import (
    GameEvent,
    GameFinished,
    ResumePoint,
    parse_utc,
    workers_tag,
)
from runner.domain.gamerecord import game_record
from runner.domain.interruption import Decision, played_by, played_seconds
from runner.domain.models import GameRecord, GameSpec
from runner.domain.pgnextended import enrich_comments
from runner.domain.variant import is_960, replay_960
from runner.errors import ReplayGame, StopEvent
from runner.play.backend import Backend
from runner.play.gpus import GpuPool
from runner.service.builds import check_local
from runner.service.interrupted import event_tablebase, foresee_game
from runner.service.recording import GameEmit, Recorder, next_attempt, placeholder_started
from runner.service.resources import GameResources
from runner.service.running import Effect, RunningGames
from runner.service.schedule import Schedule
from runner.service.views.sink import RecordError
from runner.service.writes import EventWrites
from runner.store.database import Store, StoredGame

Say = Callable[..., None]


def record_from_log(spec: GameSpec, board: chess.Board, started: dict[str, Any],
                    logged: list[dict[str, Any]], end: End, *, resumed_from: int = 0
                    ) -> GameRecord:
    """The record of a game ended by ``end`` after the moves of its log (``board``: the
    position they reach): decided by rule 7.c from its log, or adjudicated by the TD."""
    if is_960(spec.variant) and not board.chess960:  # a 960 start that reads as standard
        board = replay_960(board)
    moves = [m.uci() for m in board.move_stack]
    comments = [m.get("comment", "") for m in logged]
    now = datetime.now(UTC)
    return game_record(spec, board.root(), moves, comments, end,
                       parse_utc(started.get("start_time")) or now, played_seconds(logged),
                       finished=now, resumed_from=resumed_from, move_data=logged,
                       worker=workers_tag(played_by(started, logged)))


def _cancelling() -> int:
    """How many cancellations of the current task are asked and not over (Task.cancelling)."""
    task = asyncio.current_task()
    return 0 if task is None else task.cancelling()


def started_event(store: Store, game_id: int) -> dict[str, Any]:
    """The GameStarted its latest attempt logged ({} when none, or unreadable)."""
    try:
        return store.started_event(game_id) or {}
    except ValueError:
        return {}


class Again(Exception):
    """The attempt ended without a record: the game is played again (a new attempt)."""

    def __init__(self, from_start: bool = False):
        super().__init__()
        self.from_start = from_start


@dataclass
class GameLife:
    """Plays the event's games, one :meth:`play` per game task."""

    config: Config
    store: Store
    schedule: Schedule
    writes: EventWrites
    running: RunningGames
    say: Say
    backend: Backend
    recorder: Recorder  # the one way a game's events reach the store and the views
    resources: GameResources  # CPU slots, engine logs, kept engines (per game)
    gpus: GpuPool | None = None  # the event's devices here

    def next_attempt(self, game: StoredGame, previous: int = 0) -> int:
        """The number of the game's next attempt: one more than any attempt it had."""
        return next_attempt(self.store, game.game_id, previous)

    def can_resume(self) -> bool:
        """Does the backend continue a game from a position (the built-in referee does;
        cutechess-cli cannot be handed the clocks of a game in progress: docs/resume.md)?"""
        return self.backend.can_resume

    async def play(self, game: StoredGame) -> None:
        """Play one game until its record is committed (or a TD decision ends it). A game
        interrupted earlier (it has a move log) is first decided by TCEC rule 7.c: finished
        from its log, continued from the position reached, or replayed from move one."""
        spec = self.schedule.spec_for(game)
        if self.backend.local_engines:  # engines started here: their files as the event's (8)
            await check_local(spec, self.schedule.builds, self.store.builds)
        attempt, from_start = self.next_attempt(game), False
        while True:
            seen: set[str] = set()
            try:
                record = await self._attempt(game, spec, attempt, from_start, seen)
            except Again as again:
                attempt = self.next_attempt(game, attempt)
                from_start = from_start or again.from_start
                continue
            if record is None:
                return
            break
        # a backend that reports only its result still goes through every sink
        if "started" not in seen:
            self._emit(game, placeholder_started(game, record, attempt), seen)
        if "finished" not in seen:
            self._emit(game, GameFinished(game.game_id, record, attempt), seen)
        await self.writes.settled(game.game_id)  # recorded before the loop reads it back

    def _emit(self, game: StoredGame, event: GameEvent, seen: set[str]) -> None:
        GameEmit(self.recorder, seen)(event)

    async def _attempt(self, game: StoredGame, spec: GameSpec, attempt: int, from_start: bool,
                       seen: set[str]) -> GameRecord | None:
        """One attempt: its record, None when it ended the game's life without one (decided
        from its log, or a TD decision's effect), Again when the game is played again."""
        decision = None if attempt == 1 or from_start else self.decide_interrupted(game, spec)
        if decision is not None and decision.action == "finish":
            if await self._finish_from_log(spec, game, decision, attempt, seen):
                return None
            decision = None
        resume = decision.resume if decision is not None and decision.action == "resume" \
            else None
        try:
            outcome = await self._backend_or_order(game, spec, attempt, resume, seen)
        except ReplayGame as exc:
            # The backend lost the game (a cluster worker died): decide it again from its
            # move log, as after a crash (TCEC rule 7.c), and go on. No one loses.
            self.say(f"Game {game.game_id} ({game.white} vs {game.black}): {exc}", always=True)
            await self.writes.settled(game.game_id)
            await self.writes.flush_moves()
            raise Again() from exc
        except StopEvent:
            raise
        except Exception as exc:
            if resume is None:
                raise
            # the position the log gave could not be played on: from the start instead
            self._replayed(game, "it could not go on from its logged position "
                                 f"({type(exc).__name__}: {exc})")
            await self.writes.settled(game.game_id)
            raise Again(from_start=True) from exc
        if isinstance(outcome, GameRecord):
            return outcome
        # stopped by a TD decision (runner.service.td.director): its effect, then maybe again
        if not await outcome():
            return None
        raise Again()

    async def _backend_or_order(self, game: StoredGame, spec: GameSpec, attempt: int,
                                resume: ResumePoint | None, seen: set[str]
                                ) -> GameRecord | Effect:
        """The backend's record, or the order a TD decision sent on the game's control
        channel (the backend's call then stopped: its engines killed)."""
        order = self.running.orders_for(game.game_id)
        if not order.done():
            play = asyncio.ensure_future(self._run_backend(game, spec, attempt, resume, seen))

            def stop(_: Any) -> None:  # an order came: the backend's call is stopped
                play.cancel()

            # (a callback on the order, not a wait on both: the game's task awaits its play,
            # and cancelling the game's task cancels the play and waits for it to end)
            order.add_done_callback(stop)
            asked = _cancelling()
            try:
                record = await play
            except asyncio.CancelledError:
                if not order.done() or _cancelling() > asked:  # the game's task, or the backend
                    raise
            else:
                if _cancelling() > asked:  # the game's task was cancelled as its play ended
                    raise asyncio.CancelledError
                return record  # (its order, if one came too, is run by the Director)
            finally:
                order.remove_done_callback(stop)
        self.running.taken(game.game_id)
        return order.result()

    async def _run_backend(self, game: StoredGame, spec: GameSpec, attempt: int,
                           resume: ResumePoint | None, seen: set[str]) -> GameRecord:
        def on_process(pid: int, create_time: float) -> Any:  # a future (start_engine awaits)
            return self.writes.record_process(pid, create_time, game.game_id)

        extra: dict[str, Any] = {} if resume is None else {"resume": resume}
        near = self.gpus.numa_cores(game.game_id) if self.gpus is not None \
            and self.resources.pool else ()  # a CPU slot near the game's GPUs
        with self.resources.for_game(game.game_id, attempt, f"game {game.game_id}, "
                                     f"{game.white} vs {game.black}", near) as more:
            return await self.backend(spec, emit=GameEmit(self.recorder, seen),
                                      on_process=on_process, attempt=attempt, **extra, **more)

    async def _finish_from_log(self, spec: GameSpec, game: StoredGame, decision: Decision,
                               attempt: int, seen: set[str]) -> bool:
        """Record the game as its log decides it (True), or say why it could not be and
        return False (it is then replayed from move 1)."""
        try:
            self.finish_from_log(spec, game, decision, attempt, seen)
        except (RecordError, asyncio.CancelledError):
            raise
        except Exception as exc:  # noqa: BLE001 - one game's log never stops the event
            self._replayed(game, "it could not be decided from its log "
                                 f"({type(exc).__name__}: {exc})")
            return False
        await self.writes.settled(game.game_id)
        return True

    def finish_from_log(self, spec: GameSpec, game: StoredGame, decision: Decision,
                        attempt: int, seen: set[str]) -> None:
        """An interrupted game decided from its log (TCEC rule 7.c.ii-iv, or an end the log
        already shows): recorded without starting an engine."""
        assert decision.board is not None and decision.end is not None
        started = started_event(self.store, game.game_id)
        logged = list(decision.moves)
        plies = len(decision.board.move_stack)
        self.say(f"Game {game.game_id} ({game.white} vs {game.black}): {decision.words()}")
        record = record_from_log(spec, decision.board, started, logged, decision.end,
                                 resumed_from=plies)
        board = decision.board
        if is_960(spec.variant) and not board.chess960:
            board = replay_960(board)
        self._emit(game, placeholder_started(
            game, record, attempt, started=started, start_fen=board.root().fen(),
            resumed_from_ply=plies, workers=played_by(started, logged)), seen)
        self._emit(game, GameFinished(game.game_id, record, attempt), seen)

    async def record_forfeits(self, games: list[StoredGame], due: dict[int, str],
                              forfeit: Callable[[StoredGame, str], GameRecord]) -> None:
        """Record ``games`` in ``due`` as lost by forfeit (their engine was withdrawn by the
        TD with --now): ``forfeit(game, loser)`` makes each record."""
        for game in games:
            if game.game_id in due:
                record = forfeit(game, due[game.game_id])
                await self.recorder.forfeit(game, record, self.next_attempt(game))
                self.say(f"Game {game.game_id} ({game.white} vs {game.black}): "
                         f"{record.reason}", always=True)

    def decide_interrupted(self, game: StoredGame, spec: GameSpec | None = None
                           ) -> Decision | None:
        """TCEC rule 7.c for a game that was started before (None: nothing was logged); a
        log that cannot be read: replayed from move 1."""
        try:
            return self._decide_interrupted(game, spec or self.schedule.spec_for(game))
        except Exception as exc:  # noqa: BLE001 - one game's bad log never stops the event
            return self._replayed(game, "its move log could not be read "
                                        f"({type(exc).__name__}: {exc})")

    def _replayed(self, game: StoredGame, why: str) -> Decision:
        """A game replayed from move 1 for ``why``, said in the words of every surface."""
        decision = Decision("replay", "replay", problem=why, why=why)
        self.say(f"Game {game.game_id} ({game.white} vs {game.black}): {decision.words()}",
                 always=True)
        return decision

    def _decide_interrupted(self, game: StoredGame, spec: GameSpec) -> Decision | None:
        if not self.store.logged_rows(game.game_id):
            return None
        tablebase = event_tablebase(self.config)
        try:
            decision = foresee_game(self.config, self.store, game.game_id,
                                    resumes=self.can_resume(), tablebase=tablebase)
        finally:
            if tablebase is not None:
                tablebase.close()
        self._tell_decision(game, decision)
        if decision.action == "resume":
            decision = self._with_logged_comments(spec, decision)
        return decision

    def _with_logged_comments(self, spec: GameSpec, decision: Decision) -> Decision:
        """A game that continues from its position gets the comments of its logged moves as
        the PGN writes them (``PgnComments: extended``, ``PgnExtras: [TCEC]``), from the
        move log: the PGN must be what an uninterrupted game gives."""
        assert decision.resume is not None and decision.board is not None
        point = decision.resume
        comments = enrich_comments(spec, decision.board.root(), point.moves, point.comments,
                                   list(decision.moves))
        if tuple(comments) != point.comments:
            decision = replace(decision, resume=replace(point, comments=tuple(comments)))
        return decision

    def _tell_decision(self, game: StoredGame, decision: Decision) -> None:
        """The console line of a rule 7.c decision (a finish says its own), in the words
        every surface uses (Decision.words)."""
        name = f"Game {game.game_id} ({game.white} vs {game.black})"
        if decision.problem and decision.action != "replay":
            self.say(f"{name}: its move log does not replay past ply {len(decision.moves)}: "
                     f"{decision.problem}; it is decided from its first {len(decision.moves)} "
                     "plies (TCEC rule 7.c)", always=True)
        if decision.action == "resume":
            assert decision.resume is not None
            self.say(f"{name}: {decision.words()}, each clock "
                     f"+{decision.resume.compensation_ms / 1000:g}s")
        elif decision.action == "replay":
            self.say(f"{name}: {decision.words()}", always=bool(decision.problem))


__all__ = ["Again", "GameLife", "placeholder_started", "record_from_log",
           "started_event"]
