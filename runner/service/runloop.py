"""The run loop: rounds in order, each round's games as tasks (at most ``Concurrency`` at a
time), signals and the TD's pause. Thin, and the only part that owns tasks and installs
signal handlers; it is handed its parts when built (runner.service.assembly):

- what to play next: runner.service.schedule (pairing, openings, extra pairs, withdrawals);
- one game's life: runner.service.gamelife (attempts, rule 7.c, replay, restart, record);
- the director: runner.service.td.director (a TD command applied as a store operation);
- the views: runner.service.views.runviews (console, PGN, snapshot, live feeds, alerts);
- the writer: runner.service.writes (the store's one writer thread while the event runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import time
from dataclasses import dataclass

from runner.config.typed import Config
from runner.errors import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, StopEvent
from runner.errors import print_error as err
from runner.play import eventloop
from runner.play.backend import Backend
from runner.play.tablebases import close_tablebases
from runner.service.builds import BuildChanged
from runner.service.gamelife import GameLife
from runner.service.held import HeldGames
from runner.service.interrupted import foreseen, interrupted_lines
from runner.service.resources import GameResources
from runner.service.running import RunFlags, RunningGames
from runner.service.schedule import Schedule
from runner.service.setup import stop_requested
from runner.service.td.director import Director
from runner.service.td.rules import forfeit_record
from runner.service.views.alerts import Alerter
from runner.service.views.console import ConsoleOut
from runner.service.views.runviews import EventViews
from runner.service.views.sink import RecordError
from runner.service.writes import EventWrites
from runner.store import queries
from runner.store.database import Store, StoredGame, StoreError
from runner.store.writer import DiskFull

# Raised inside a game, these stop the event: the store or its writer failing is no one
# game's trouble (a StopEvent: a record not committed, the cluster gone, a build changed).
EVENT_STOPS: tuple[type[BaseException], ...] = (StopEvent, StoreError, sqlite3.Error, DiskFull)


@dataclass
class RunLoop:
    """One run of the prepared event: its rounds until it is complete, stopped or failed."""

    config: Config
    store: Store
    console: ConsoleOut
    flags: RunFlags
    running: RunningGames
    writes: EventWrites
    schedule: Schedule
    views: EventViews
    director: Director
    games: GameLife
    backend: Backend
    resources: GameResources
    alerts: Alerter
    finish_games: bool = False

    def __post_init__(self) -> None:
        # games whose last attempt raised (one game's trouble)
        self.held = HeldGames(max(1.0, sum(self.config.start_retry_s)))
        # the loop's own flags, set from the TD's decisions (:meth:`_rewound`)
        self.rewound = False  # the rounds are read again
        self.deferred: set[int] = set()  # games left to the end of their round

    def _rewound(self) -> bool:
        """Take in the TD's decisions since the last look; has it rewound the event?"""
        for change in self.director.changes():
            self.rewound = self.rewound or change.rewound
            if change.deferred is not None:
                self.deferred.add(change.deferred)
        return self.rewound

    def say(self, text: str, *, always: bool = False) -> None:
        self.console.say(text, always=always)

    def total_games(self) -> int:
        return self.schedule.total_games()

    async def run(self) -> int:
        """The run, with SIGINT and SIGTERM as a clean stop while it lasts."""
        loop = asyncio.get_running_loop()
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in before:
            loop.add_signal_handler(sig, self.on_signal, sig)
        if stop_requested() is not None:  # a stop signal whose KeyboardInterrupt was swallowed
            self.on_signal(stop_requested())
        poll: asyncio.Task[None] | None = None
        try:
            await self.director.load()
            await self.director.apply_pending()  # given while no runner ran
            poll = asyncio.create_task(self.director.poll(), name="td commands")
            return await self._run()
        finally:
            if poll is not None:
                poll.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poll
            await self._close()
            close_tablebases()  # shared by every game: closed once, when the run ends
            for sig, handler in before.items():
                loop.remove_signal_handler(sig)
                if handler is not None:  # what run had (asyncio would leave SIGTERM's default)
                    signal.signal(sig, handler)

    async def _close(self) -> None:
        await self.backend.aclose()  # a cluster backend's connection
        await self._close_resources()
        self.views.close_progress()
        await self.writes.close()
        await self.views.close()

    async def _close_resources(self) -> None:
        """Close the engines kept between games; no engine process of this run is left, so
        none is left recorded for the orphan sweep either."""
        await self.resources.aclose()
        with contextlib.suppress(StoreError, sqlite3.Error):
            await self.writes.drain()  # the rows of the engines just closed first
        if self.resources.engines is not None and not self.running:
            with contextlib.suppress(StoreError, sqlite3.Error):
                self.writes.write(lambda store: store.clear_processes())
                await self.writes.written()


    async def _run(self) -> int:
        try:
            return await self._rounds()
        except DiskFull:
            if not self.flags.stopping:
                raise
            return self._stopped()

    def _stopped(self) -> int:
        counts = self.store.counts()
        self.say(f"Stopped: {counts.get('finished', 0)} of {self.total_games()} games "
                 f"recorded; run the same command to resume", always=True)
        return EXIT_INTERRUPTED if self.flags.interrupted else EXIT_FAIL

    async def _rounds(self) -> int:
        while not self.flags.stopping:
            number = self.schedule.first_open_round()
            if number is None:
                if self.config.swiss.allow_extra_pairs_on_tie:
                    await self.extra_pairs()
                break
            if not await self.director.wait_while_paused():
                break  # stopped while the TD paused the event (no pairing while paused)
            if self._rewound():  # decided while paused: the rounds are read again
                self.rewound = False
                continue
            if not self.schedule.is_paired(number):
                self.schedule.pair(number)
                await self.schedule.written()
            if not await self.play_round_td(number):
                if self.flags.stopping:
                    break
                continue  # a TD decision changed the round: go on from what is stored
            if self.schedule.is_paired(number):
                self.views.round_summary(number)
        if self.flags.failure:
            return EXIT_FAIL
        if self.flags.stopping:
            return self._stopped()
        self.say("Event complete. Final standings:", always=True)
        self.views.show_standings()
        return EXIT_OK

    async def extra_pairs(self) -> bool:
        """Two engines tied for first play extra pairs until one wins a pair (seed 003);
        three or more tied are left to the tiebreaks. False when the run stopped first."""
        s = self.config.swiss
        stored = {r.number: r for r in self.store.rounds()}
        for k in range(1, s.max_extra_pairs + 1):
            number = s.rounds + k
            if number not in stored:
                if not self.schedule.pair_extra(k):
                    return True
                await self.schedule.written()
            was_complete = number in stored and stored[number].state == "complete"
            if not await self.play_round_td(number):
                return False
            if not was_complete:
                self.views.round_summary(number, label="Extra pair round")
        if self.schedule.tie_left():
            self.say(f"{s.max_extra_pairs} extra pair(s) did not separate the leaders: "
                     "the tiebreaks decide", always=True)
        return True

    async def play_round_td(self, number: int) -> bool:
        """play_round, again while games the TD stopped are left (a pause, a restart at the
        end of the round), waiting while the TD has paused the event; False when the run
        stops or the TD rewound the event."""
        while True:
            if not await self.director.wait_while_paused():
                return False
            if await self.play_round(number):
                return True
            if self.flags.stopping or self._rewound():
                return False
            self.deferred.clear()
            await self._wait_for_held(number)

    async def play_round(self, number: int) -> bool:
        """Play the round's unfinished games in playing order; True when all are recorded."""
        pending = await self._forfeit_withdrawn(self.schedule.unfinished(number))
        if not pending:
            return self.schedule.round_done(number)
        eventloop.collect_garbage()  # now, while no engine of the round is on the clock
        slots = asyncio.Semaphore(max(1, self.config.concurrency))
        tasks: list[asyncio.Task[None]] = []
        queue = list(pending)
        while queue:
            game = queue.pop(0)
            if self._not_now(game.game_id):
                continue
            await slots.acquire()
            # with GPUs: the first game whose devices are free (held for it)
            game = await self.schedule.next_with_devices(game, queue, lambda: self.flags.stopping)
            if self.flags.stopping:
                slots.release()
                self.schedule.free_devices(game.game_id)
                break
            if self._not_now(game.game_id) or not await self._still_to_play(game):
                slots.release()
                self.schedule.free_devices(game.game_id)
                continue
            task = asyncio.create_task(self.games.play(game), name=f"game {game.game_id}")
            self.running.add(game.game_id, task)
            task.add_done_callback(lambda t, gid=game.game_id: self._done(gid, t, slots))
            tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)
        lost = await self.writes.drain()  # the loop's connection reads what was written
        if lost is not None:
            self.fail(lost)
        await self._put_back_aborted()
        return self.schedule.round_done(number)

    def _not_now(self, game_id: int) -> bool:
        """A game not to start now: paused, rewound or restarted at the end of the round by
        the TD, or held after its last attempt raised and not due again yet."""
        return self._rewound() or game_id in self.deferred \
            or self.director.pause_blocks_games() or self.held.waiting(game_id)

    async def _put_back_aborted(self) -> None:
        """Games left running (aborted, or held after an error) are scheduled again, their
        engines forgotten; only the aborted ones are announced. (None left running, the
        usual end of a round: nothing to write.)"""
        running = queries.running_game_ids(self.store.conn)
        if not running:
            return
        aborted = [game_id for game_id in running if game_id not in self.held]
        self.writes.write(lambda store: store.reset_running())
        reset = (await self.writes.written())[0]
        if reset:
            self.writes.write(lambda store: store.clear_processes())
            await self.writes.written()
        if aborted:
            self.say(f"{len(aborted)} game(s) stopped; when the event goes on, each is played "
                     "on with the same opening and colours:", always=True)
            for line in interrupted_lines(foreseen(self.config, self.store, aborted,
                                                   self.games.can_resume())):
                self.say(f"  {line[0].upper()}{line[1:]}", always=True)

    async def _still_to_play(self, game: StoredGame) -> bool:
        """False when a TD decision applied during the round settled the game: recorded
        (a forfeit), voided with its round (a rewind), or now lost by forfeit (its engine
        was withdrawn with --now: recorded here). Not asked of the store while nothing was
        written since the round's games were listed (Schedule.listed_unchanged)."""
        if self.schedule.listed_unchanged(game):
            return True
        return self.schedule.still_scheduled(game) and bool(
            await self._forfeit_withdrawn([game]))

    async def _forfeit_withdrawn(self, pending: list[StoredGame]) -> list[StoredGame]:
        """Record as lost by forfeit the games of engines the TD withdrew with --now;
        returns the games left to play."""
        due = self.schedule.forfeits(pending) if pending else {}
        if due:
            await self.games.record_forfeits(
                pending, due, lambda game, loser: forfeit_record(self.store, self.config,
                                                                 game, loser))
        return [g for g in pending if g.game_id not in due]

    def _done(self, game_id: int, task: asyncio.Task[None], slots: asyncio.Semaphore) -> None:
        self.running.remove(game_id)
        slots.release()
        self.schedule.free_devices(game_id)  # its GPUs are free again
        if task.cancelled():
            return
        exc = task.exception()
        if exc is None:
            return
        if isinstance(exc, BuildChanged):  # no new game; the games in progress finish
            self.fail(str(exc), cancel=False)
        elif isinstance(exc, RecordError):
            self.fail(str(exc))
        elif isinstance(exc, EVENT_STOPS) or not isinstance(exc, Exception):
            self.fail(f"game {game_id} could not be played: {type(exc).__name__}: {exc}; "
                      "it will be played again when you run the same command again")
        else:  # that game's trouble only (#48: an engine that cannot start, any other error)
            self.hold(game_id, exc)

    def hold(self, game_id: int, exc: Exception) -> None:
        """A game whose attempt raised (its engines both failed to start, or any error that
        is not EVENT_STOPS) is that game's trouble: it stays scheduled and is tried again
        (runner.service.held); the other games go on; its round, so the next pairing, waits
        for it or for a TD decision (docs/orchestrator.md)."""
        held, wait, tell = self.held.note(game_id, exc)
        if not tell:
            return
        game = next((g for g in self.store.games() if g.game_id == game_id), None)
        white, black = (game.white, game.black) if game is not None else ("?", "?")
        why = held.reason
        if held.tries == 1:
            self.say(f"Game {game_id} ({white} vs {black}) could not be played ({why}); it "
                     f"is held and tried again every {wait:g}s, the other games go on, and "
                     "the next round waits for it (or for `swiss-runner td ... adjudicate "
                     f"{game_id}`)", always=True)
        else:
            why = (f"{why} (failed {held.tries} times; now tried again every {wait:g}s until "
                   "it is played or the TD adjudicates it)")
            self.say(f"Game {game_id} ({white} vs {black}) is still held: {why}", always=True)
        self.alerts.emit("game_held", game_id=game_id, round=game.round if game else 0,
                         white=white, black=black, reason=why)

    async def _wait_for_held(self, number: int) -> None:
        """Between passes over a round with games left: a short wait, or while only held
        games are left, until the first is due again, the TD rewinds, or a TD decision
        settles one of them (an adjudication)."""
        left = {g.game_id for g in self.schedule.unfinished(number)}
        due = self.held.due_times(left)
        if not due or len(due) < len(left):
            await asyncio.sleep(0.05)
            return
        end = min(due)
        while time.monotonic() < end and not self.flags.stopping and not self._rewound() \
                and {g.game_id for g in self.schedule.unfinished(number)} == left:
            await asyncio.sleep(0.25)

    def fail(self, message: str, cancel: bool = True) -> None:
        if self.flags.failure is None:
            self.flags.failure = message
            err(message)
        self.stop(cancel=cancel)

    def stop(self, cancel: bool) -> None:
        self.flags.stopping = True
        if cancel:
            self.writes.give_up_waiting()  # for disk space: what is not written is not
        if cancel:
            self.running.cancel_all()

    def on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        self.flags.interrupted = True
        if self.flags.stopping or not self.finish_games:
            self.say(f"{name}: stopping; aborting {len(self.running)} game(s) in progress "
                     "(played again on resume)", always=True)
            self.stop(cancel=True)
        else:
            self.say(f"{name}: stopping after the {len(self.running)} game(s) in progress "
                     "finish (--finish-games); send the signal again to abort them", always=True)
            self.stop(cancel=False)


__all__ = ["EVENT_STOPS", "RunLoop"]
