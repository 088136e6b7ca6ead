"""The tournament loop: next games from the schedule, dispatch them, route their events.

All tournament truth lives in the store (runner.store); pairing, standings and openings are
pure rules (runner.domain, runner.books); a backend (runner.play) plays each game and emits
its events, which the sinks (runner.service.sinks) record and show. Every decision that must
survive a crash (seeds, opening order, each round's pairs and playing order, each finished
game, each move) is committed before anything depends on it, and reused unchanged on resume.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sqlite3
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TextIO

from runner.config.schema import Config, EngineConfig
from runner.domain.events import GameEvent, GameFinished, GameStarted, parse_utc, workers_tag
from runner.domain.interruption import Decision, played_by
from runner.domain.models import GameRecord, GameSpec, Opening, PlayedGame
from runner.domain.variant import is_960, replay_960
from runner.errors import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, ReplayGame, StopEvent
from runner.play import eventloop
from runner.play.gpus import GpuPool, local_pool
from runner.service.alerts import Alerter, brief_standings
from runner.service.gpualerts import gpu_sinks
from runner.service.livesink import LivePgnSink
from runner.service.setup import open_event
from runner.service.sinks import (
    Console,
    EventRouter,
    PgnSink,
    RecordError,
    SnapshotSink,
    StoreSink,
    ViewErrors,
    err,
)
from runner.service.state import StateCache, check_snapshot, standings_text, write_snapshot
from runner.store.database import (
    Store,
    StoredGame,
    StoredRound,
    StoreError,
    remove_stale_temp_files,
)
from runner.store.decisions import offline_gpus
from runner.store.movelog import DiskFull, MoveLog
from runner.store.tdstore import swiss_games, withdrawn_before

# A backend: play_game(spec, *, emit, on_process, attempt[, resume]) -> GameRecord (runner.play)
PlayGame = Callable[..., Awaitable[GameRecord]]


@dataclass
class Tournament:
    config: Config
    store: Store
    finish_games: bool = False
    quiet: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    play_game: PlayGame | None = None
    book: list[Opening] = field(default_factory=list)
    stopping: bool = False
    interrupted: bool = False
    failure: str | None = None
    running: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    pgn: PgnSink = field(init=False)
    router: EventRouter | None = None
    movelog: MoveLog | None = None
    snapshot: SnapshotSink | None = None
    resources: Any = None  # runner.service.operations.GameResources, made on first use
    alerts: Alerter = field(default_factory=lambda: Alerter(None))  # runner.service.alerts
    _state_cache: StateCache = field(default_factory=StateCache)  # kept between snapshots
    _reader: Store | None = None  # the snapshot thread's read-only connection
    _total_games: int | None = None  # total_games() as last read (None: read it again)
    td: Any = None  # runner.service.td.Director: the TD's commands, made by run()
    view_errors: ViewErrors = field(init=False)
    _writes: list[Any] = field(default_factory=list)  # futures of the loop's own writes
    _console: Console | None = None  # the console view (say)
    accept_build: tuple[str, ...] = ()  # run --accept-build ENGINE ... --reason TEXT
    build_reason: str = ""
    builds: dict[str, str] = field(default_factory=dict)  # engine -> allowed build digest
    gpus: GpuPool | None = None  # GPU hook: the event's devices (runner.play.gpus), by run()

    def __post_init__(self) -> None:
        self.pgn = PgnSink(self.config.pgn_out, self.store, self.say)
        self.view_errors = ViewErrors(self.store.path)  # each view's error reported once
        self._state_cache.on_view_error = lambda exc: self.view_errors.report(
            f"{exc.what} in the JSON snapshot (StatePath)", exc)

    # ---- output --------------------------------------------------------------------------

    def say(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            if self._console is None or self._console.stream is not self.out:
                self._console = Console(self.out)
            self._console.say(text)

    # ---- setup ---------------------------------------------------------------------------

    def prepare(self) -> int | None:
        """Create or check the event; sweep leftovers. Return an exit code to stop early."""
        new_event = not self.store.has_event()
        self.book, code = open_event(self.config, self.store, self.say, self.total_games)
        if code is not None:
            return code
        from runner.service.builds import open_builds
        from runner.service.setup import event_needs_games

        self.builds, code = open_builds(self.config, self.store, self.say, new_event=new_event,
                                        accept=self.accept_build, reason=self.build_reason,
                                        needs_games=lambda: event_needs_games(self.config))
        if code is not None:
            return code
        for path in (self.config.pgn_out, self.config.swiss.state_path,
                     *([self.config.live_pgn] if self.config.live_pgn else [])):
            remove_stale_temp_files(path)  # a kill inside their atomic rewrite left these
        # the views: an error of one is reported and the event goes on (never "damaged")
        with self.view_errors.guard(f"the PGN file {self.config.pgn_out}", store_errors=True):
            self.pgn.sync()
        from runner.service.tdrules import sync_voided_pgn, voided_pgn_path

        with self.view_errors.guard(f"the voided games' PGN {voided_pgn_path(self.config)}"):
            sync_voided_pgn(self.store, self.config)  # a TD rewind's voided games
        with self.view_errors.guard("the JSON snapshot (StatePath)", store_errors=True):
            if check_snapshot(self.config.swiss.state_path):
                self.say(f"{self.config.swiss.state_path}: the JSON snapshot was unreadable or "
                         f"cut short; rebuilt from {self.store.path}")
            write_snapshot(self.config, self.store, self._state_cache)  # the run goes on from it
        # the backend's modules and the spawner thread now, not at the first game's start
        # (the loop stalls for their imports while another game's engine may be thinking)
        self.backend()
        if self.play_game is None:
            from runner.play import spawn

            spawn.warm_up()
        return None

    def set_meta(self, key: str, value: str) -> None:
        """Store a metadata value: through the writer thread while the event runs (a failure
        is reported, as a view's), else at once."""
        if self.router is None or not self.router.store.movelog.running:
            self.store.set_meta(key, value)
            return
        writer = self.router.store.writer
        future = self.router.store.movelog.submit(lambda conn: writer.set_meta(key, value))
        future.add_done_callback(lambda f: f.exception() is None or err(
            f"{self.store.path}: cannot store {key} ({f.exception()}); the games are not "
            "affected"))

    def write(self, job: Callable[[Store], Any]) -> None:
        """A write of the loop's own (a round's pairing): through the store's one writer
        while the event runs, in order with the games' writes (a full disk is waited out
        there), else at once. :meth:`written` waits for it."""
        if self.router is not None and self.router.store.movelog.gave_up:
            raise DiskFull(f"{self.store.path}: not written, the disk is full")
        if self.router is None or not self.router.store.movelog.running:
            job(self.store)
            return
        writer = self.router.store.writer
        self._writes.append(self.router.store.movelog.submit(lambda conn: job(writer)))

    async def written(self) -> list[Any]:
        """Wait for the loop's writes (their results, in order); the loop's connection then
        reads them."""
        writes, self._writes = self._writes, []
        done = [await asyncio.wrap_future(f) for f in writes]
        if writes:
            self._total_games = None  # the schedule may have changed: total_games reads it again
        return done

    def total_games(self) -> int:
        """The event's games: the Swiss rounds' (fewer after a withdrawal) and the extra
        tie-break games scheduled. Read again after the schedule changed (a round paired,
        a TD withdrawal or rewind: ``_total_games`` is reset), else from memory: every
        game's start line asks for it."""
        if self._total_games is None:
            s = self.config.swiss
            extra = int(self.store.conn.execute(
                "SELECT COUNT(*) FROM games WHERE extra=1").fetchone()[0])
            self._total_games = extra + swiss_games(self.store.conn, len(self.config.engines),
                                                    s.games_per_match, s.rounds)
        return self._total_games

    # ---- the JSON state document --------------------------------------------------------

    def _snapshot_in_thread(self) -> bool:
        """Write the snapshot from a read-only connection (kept open between snapshots, and
        read in one transaction: a consistent view); False when it failed."""
        try:
            if self._reader is None:
                self._reader = Store.open_readonly(self.store.path, threads=True)
                if self._reader is None:
                    return True
            reader = self._reader
            reader.conn.execute("BEGIN")
            try:
                return write_snapshot(self.config, reader, self._state_cache,
                                      runner_running=True)  # this runner holds the lock
            finally:
                reader.conn.execute("COMMIT")
        except (StoreError, sqlite3.Error) as exc:
            self._close_reader()
            # The snapshot is derived from the database: a failed read costs one dashboard
            # update, never the event (every game is committed through the main connection).
            safe = (f"the games are safe in {self.store.path}"
                    if self.store.files_problem(save=False) is None else
                    f"{self.store.path} is not the file this run writes any more")
            err(f"{self.config.swiss.state_path}: cannot update the JSON snapshot ({exc}); the "
                f"previous snapshot is intact and {safe}")
            return False

    def _close_reader(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(sqlite3.Error):
                reader.close()

    # ---- rounds --------------------------------------------------------------------------

    def history(self, rounds: Sequence[StoredRound]) -> list[Any]:
        """Finished scheduled rounds as pairing's RoundRecords."""
        from runner.domain.pairing import RoundRecord

        played: dict[int, list[PlayedGame]] = {}
        for g in self.store.games():  # one query for every round
            if g.status == "finished":
                played.setdefault(g.round, []).append(_played(g))
        return [RoundRecord(number=rd.number, pairs=rd.pairs, games=tuple(played.get(rd.number, ())),
                            bye=rd.bye)
                for rd in rounds if not rd.extra]

    def played(self, number: int) -> list[PlayedGame]:
        return [_played(g) for g in self.store.games(number) if g.status == "finished"]

    def schedule_games(self, number: int, games: Sequence[Any], pairs: Sequence[tuple[str, str]],
                       bye: str | None, dropped: Sequence[int], excluded: frozenset[int],
                       extra: bool) -> None:
        """Assign ids and openings (one per match, in playing order) and store the round."""
        from runner.books.openings import opening_for_match

        order = self.store.opening_order() if self.book else []
        first_match = self.store.next_match_index()
        next_id = self.store.next_game_id()
        match_of_pair: dict[int, int] = {}
        rows = []
        for i, g in enumerate(games):
            match = match_of_pair.setdefault(g.pair_index, first_match + len(match_of_pair))
            opening = None
            if self.book:
                opening = opening_for_match(order, match, self.book,
                                            repeat=self.config.swiss.unique_per_match_only)
            rows.append({"game_id": next_id + i, "game_in_round": g.game_in_round,
                         "pair_index": g.pair_index, "leg": g.leg, "white": g.white,
                         "black": g.black, "match_index": match, "opening": opening})
        self.write(lambda store: store.add_round(number, pairs, bye, dropped, excluded, rows,
                                                 extra=extra))
        self._total_games = None

    def pair(self, number: int) -> None:
        from runner.domain.pairing import pair_round

        stored = self.store.rounds()
        excluded = stored[-1].excluded if stored else frozenset()
        s = self.config.swiss
        withdrawn = withdrawn_before(self.store.conn, number)
        plan = pair_round(self.store.seeds(), self.history(stored), number, s.games_per_match,
                          s.double_round_schedule, excluded, withdrawn)
        self.schedule_games(number, plan.games, plan.pairs, plan.bye,
                            plan.dropped_history_rounds, frozenset(plan.excluded), extra=False)
        text = ", ".join(f"{a} - {b}" for a, b in plan.pairs)
        self.say(f"Round {number} pairings: {text}" + (f"; bye: {plan.bye}" if plan.bye else ""))
        if withdrawn:
            self.say(f"Round {number}: not paired (withdrawn by the TD): "
                     f"{', '.join(sorted(withdrawn))}")
        if plan.dropped_history_rounds:
            self.say(f"Round {number}: no viable pairing without repeats; removed round(s) "
                     f"{', '.join(map(str, plan.dropped_history_rounds))} from the encounter history")

    # ---- games ---------------------------------------------------------------------------

    def backend(self) -> PlayGame:
        if self.play_game is not None:
            return self.play_game
        if self.config.backend == "cutechess":
            from runner.play.cutechess import play_game as cutechess_play

            async def play(spec: GameSpec, **kwargs: Any) -> GameRecord:
                return await cutechess_play(spec, cutechess_path=self.config.cutechess_path,
                                            **kwargs)

            return play
        from runner.play.referee import play_game

        return play_game

    def spec_for(self, game: StoredGame) -> GameSpec:
        spec = game_spec(self.config, self.store, game, self.builds)
        return self.gpus.hand_over(spec) if self.gpus is not None else spec  # GPU hook

    async def play_one(self, game: StoredGame) -> None:
        """Play one game through the backend; its events go to the sinks as they come.

        A game interrupted earlier (it has a move log) is first decided by TCEC rule 7.c
        (runner.domain.interruption): finished from its log, continued from the position
        reached, or replayed from move one.
        """
        assert self.router is not None
        spec = self.spec_for(game)
        if self.play_game is None:  # engines started here: their files as the event's (rule 8)
            from runner.service.builds import check_local

            await check_local(spec, self.builds, self.store.builds)
        attempt = self.store.attempts(game.game_id) + 1
        seen: set[str] = set()
        router = self.router

        def emit(event: GameEvent) -> None:
            seen.add(event.kind)
            if isinstance(event, GameFinished) and self.td is not None:
                event = replace(event, record=self.td.annotate(game.game_id, event.record))
            router.publish(event)

        def on_process(pid: int, create_time: float) -> Any:  # a future (awaited by start_engine)
            return router.store.record_process(pid, create_time, game.game_id)

        if self.resources is None:  # CPU slots (Affinity) and engine logs (EngineLogs)
            from runner.service.operations import GameResources

            self.resources = GameResources(
                self.config, self.play_game is None and self.config.backend == "python-chess",
                record=lambda pid, created: router.store.record_process(pid, created, None))
        from_start = False  # the logged position failed: replayed from move one
        while True:
            decision = self.decide_interrupted(game, spec) if attempt > 1 and not from_start \
                else None
            extra: dict[str, Any] = {}
            if decision is not None and decision.action == "finish":
                try:
                    self.finish_from_log(spec, game, decision, attempt, emit)
                except (RecordError, asyncio.CancelledError):
                    raise
                except Exception as exc:  # noqa: BLE001 - one game's log never stops the event
                    self.say(f"Game {game.game_id} ({game.white} vs {game.black}) could not be "
                             f"decided from its log ({type(exc).__name__}: {exc}); it is played "
                             "again from its start", always=True)
                    decision = None
                else:
                    await router.store.settled(game.game_id)
                    return
            if decision is not None and decision.action == "resume":
                extra["resume"] = decision.resume
            try:
                with self.resources.for_game(
                        game.game_id, attempt, f"game {game.game_id}, {game.white} vs "
                        f"{game.black}", self.gpus.numa_cores(game.game_id)  # GPU hook
                        if self.gpus is not None and self.resources.pool else ()) as more:
                    record = await self.backend()(spec, emit=emit, on_process=on_process,
                                                  attempt=attempt, **extra, **more)
                break
            except asyncio.CancelledError:
                # stopped by the TD (runner.service.td): its effect, then maybe played again
                hook = self.td.stops.pop(game.game_id, None) if self.td is not None else None
                if hook is None:
                    raise
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
                if not await hook():
                    return
                attempt = max(attempt, self.store.attempts(game.game_id)) + 1
                seen.clear()
            except ReplayGame as exc:
                # The backend lost the game (a cluster worker died): decide it again from
                # its move log, as after a crash (TCEC rule 7.c), and go on. No one loses.
                self.say(f"Game {game.game_id} ({game.white} vs {game.black}): {exc}",
                         always=True)
                await router.store.settled(game.game_id)
                if self.movelog is not None:
                    await asyncio.to_thread(self.movelog.flush)
                attempt = max(attempt, self.store.attempts(game.game_id)) + 1
                seen.clear()
            except StopEvent:  # (a cancellation is handled above)
                raise
            except Exception as exc:
                if "resume" not in extra:
                    raise
                # the position the log gave could not be played on: from the start instead
                self.say(f"Game {game.game_id} ({game.white} vs {game.black}) could not go on "
                         f"from its logged position ({type(exc).__name__}: {exc}); it is played "
                         "again from its start", always=True)
                await router.store.settled(game.game_id)
                attempt = max(attempt, self.store.attempts(game.game_id)) + 1
                seen.clear()
                from_start = True
        # a backend that reports only its result still goes through every sink
        if "started" not in seen:
            emit(GameStarted(game_id=game.game_id, white=game.white, black=game.black,
                             white_id="", black_id="", start_time=record.start_time,
                             start_fen=record.start_fen or "", book_plies=0,
                             white_clock_ms=None, black_clock_ms=None, attempt=attempt))
        if "finished" not in seen:
            emit(GameFinished(game.game_id, record, attempt))
        await router.store.settled(game.game_id)  # recorded before the loop reads it back

    def can_resume(self) -> bool:
        """Only the built-in referee continues a game from a position (cutechess-cli cannot
        be handed the clocks of a game in progress: docs/resume.md)."""
        if self.play_game is not None:
            return bool(getattr(self.play_game, "can_resume", False))
        return self.config.backend == "python-chess"

    def decide_interrupted(self, game: StoredGame, spec: GameSpec | None = None
                           ) -> Decision | None:
        """TCEC rule 7.c for a game that was started before (None: nothing was logged).

        A game that continues from its position gets the comments of its logged moves as
        the PGN writes them (``PgnComments: extended``, ``PgnExtras: [TCEC]``: clocks,
        evaluations, rule counts), from the move log: the backend has the data of the moves
        it plays itself only, and the PGN must be what an uninterrupted game gives.
        """
        try:
            return self._decide_interrupted(game, spec)
        except Exception as exc:  # noqa: BLE001 - one game's bad log never stops the event
            self.say(f"Game {game.game_id} ({game.white} vs {game.black}): its move log could "
                     f"not be read ({type(exc).__name__}: {exc}); it is played again from its "
                     "start", always=True)
            return Decision("replay", "replay", problem=str(exc))

    def _decide_interrupted(self, game: StoredGame, spec: GameSpec | None) -> Decision | None:
        from runner.domain.adjudication import open_tablebase
        from runner.domain.interruption import decide, parse_log
        from runner.domain.pgnextended import enrich_comments

        rows = self.store.logged_rows(game.game_id)
        if not rows:
            return None
        moves, unreadable = parse_log(rows)
        started: dict[str, Any] | None = None
        try:
            started = self.store.started_event(game.game_id)
        except ValueError as exc:
            unreadable = unreadable or f"its GameStarted is not valid JSON ({exc})"
            moves = []
        config = self.config
        interruption = config.interruption
        if not self.can_resume() and interruption.mode == "resume":
            interruption = replace(interruption, mode="replay")
        tbc = config.adjudication.tablebases
        tablebase = open_tablebase(tbc) if tbc is not None and tbc.paths else None
        decision = decide(started, moves, interruption=interruption,
                          adjudication=config.adjudication, time_control=config.time_control,
                          tablebase=tablebase)
        problem = decision.problem or unreadable
        if problem:
            kept = len(decision.moves)
            self.say(f"Game {game.game_id} ({game.white} vs {game.black}): its move log does "
                     f"not replay past ply {kept}: {problem}; "
                     + (f"it is decided from its first {kept} plies (TCEC rule 7.c)" if kept
                        and decision.action != "replay" else "it is played again from its start"),
                     always=True)
        moves = list(decision.moves)
        if decision.action == "resume":
            assert decision.resume is not None and decision.board is not None
            point = decision.resume
            spec = spec or self.spec_for(game)
            comments = enrich_comments(spec, decision.board.root(), point.moves,
                                       point.comments, moves)
            if tuple(comments) != point.comments:
                point = replace(point, comments=tuple(comments))
                decision = replace(decision, resume=point)
            self.say(f"Game {game.game_id} ({game.white} vs {game.black}) was interrupted at "
                     f"ply {point.ply}: it continues from there (TCEC rule 7.c.v), each clock "
                     f"+{point.compensation_ms / 1000:g}s")
        elif decision.action == "replay":
            why = "Interruption.Mode is replay" if config.interruption.mode == "replay" else (
                "no engine move was logged" if interruption.mode == "resume"
                else f"the {config.backend} backend cannot continue a game from a position")
            if not problem:
                self.say(f"Game {game.game_id} ({game.white} vs {game.black}) was interrupted "
                         f"at ply {len(rows)}: it is played again from its start ({why})")
        return decision

    def finish_from_log(self, spec: GameSpec, game: StoredGame, decision: Decision,
                        attempt: int, emit: Callable[[GameEvent], None]) -> None:
        """An interrupted game decided from its log (TCEC rule 7.c.ii-iv, or an end the log
        already shows): recorded without starting an engine."""
        from runner.play.referee import finish_record

        assert decision.board is not None and decision.end is not None
        try:
            started = self.store.started_event(game.game_id) or {}
        except ValueError:
            started = {}
        board = decision.board
        if is_960(spec.variant) and not board.chess960:  # a 960 start that reads as standard
            board = replay_960(board)
        start_board = board.root()
        moves = [m.uci() for m in board.move_stack]
        logged = list(decision.moves)
        comments = [m.get("comment", "") for m in logged]
        start = parse_utc(started.get("start_time")) or datetime.now(UTC)
        rule = {"log": "the end its move log shows", "7.c.ii": "TCEC rule 7.c.ii",
                "7.c.iii": "TCEC rule 7.c.iii", "7.c.iv": "TCEC rule 7.c.iv"}[decision.rule]
        self.say(f"Game {game.game_id} ({game.white} vs {game.black}) was interrupted at ply "
                 f"{len(moves)}: decided by {rule}")
        workers = played_by(started, logged)  # the PGN still names who played the moves
        record = finish_record(spec, start_board, moves, comments, decision.end, start,
                               resumed_from=len(moves), move_data=logged,
                               worker=workers_tag(workers))
        emit(GameStarted(game_id=game.game_id, white=game.white, black=game.black,
                         white_id=started.get("white_id", ""), black_id=started.get("black_id", ""),
                         start_time=started.get("start_time", record.start_time),
                         start_fen=start_board.fen(), book_plies=started.get("book_plies", 0),
                         white_clock_ms=None, black_clock_ms=None, resumed_from_ply=len(moves),
                         attempt=attempt, played_by=workers))
        emit(GameFinished(game.game_id, record, attempt))

    async def play_round(self, number: int) -> bool:
        """Play the round's unfinished games in playing order; True when all are recorded."""
        pending = [g for g in self.store.games(number) if g.status != "finished"]
        if pending:
            pending = await self.forfeit_withdrawn(pending)
        if not pending:
            return all(g.status == "finished" for g in self.store.games(number))
        eventloop.collect_garbage()  # now, while no engine of the round is on the clock
        slots = asyncio.Semaphore(max(1, self.config.concurrency))
        tasks: list[asyncio.Task[None]] = []
        queue = list(pending)
        while queue:
            game = queue.pop(0)
            if self.td is not None and self.td.blocks(game.game_id):
                continue  # paused, rewound or restarted at the end of the round by the TD
            await slots.acquire()
            if self.gpus is not None:  # GPU hook: the first game whose devices are free
                queue.insert(0, game)
                game = await self.gpus.next_game(queue, self._engines_of, lambda g: g.game_id,
                                                 lambda: self.stopping,
                                                 lambda text: self.say(text, always=True)) \
                    or game
            if self.stopping:
                slots.release()
                if self.gpus is not None:  # GPU hook
                    self.gpus.give_back(game.game_id)
                break
            if (self.td is not None and self.td.blocks(game.game_id)) \
                    or not await self.still_to_play(game):
                slots.release()
                if self.gpus is not None:  # GPU hook
                    self.gpus.give_back(game.game_id)
                continue
            task = asyncio.create_task(self.play_one(game), name=f"game {game.game_id}")
            self.running[game.game_id] = task
            task.add_done_callback(lambda t, gid=game.game_id: self._done(gid, t, slots))
            tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)
        assert self.router is not None
        lost = await self.router.store.drain()  # the loop's connection reads what was written
        if lost is not None:
            self.fail(lost)
        self.write(lambda store: store.reset_running())
        aborted = (await self.written())[0]
        if aborted:
            self.write(lambda store: store.clear_processes())
            await self.written()
            self.say(f"{aborted} game(s) aborted; they will be played again on resume",
                     always=True)
        return all(g.status == "finished" for g in self.store.games(number))

    async def play_round_td(self, number: int) -> bool:
        """play_round, again while games the TD stopped are left (a pause, a restart at the
        end of the round), waiting while the TD has paused the event; False when the run
        stops or the TD rewound the event."""
        while True:
            if self.td is not None and not await self.td.hold():
                return False
            if await self.play_round(number):
                return True
            if self.stopping or self.td is None or self.td.rewound:
                return False
            self.td.deferred.clear()
            await asyncio.sleep(0.05)

    async def reset_schedule(self) -> None:
        """The TD changed recorded games (rewind, withdraw): counts read again, PGN synced."""
        self._total_games = None
        await asyncio.to_thread(self.pgn.sync)  # (reports its own failure)

    async def still_to_play(self, game: StoredGame) -> bool:
        """False when a TD decision applied during the round settled the game: recorded
        (a forfeit), voided with its round (a rewind), or now lost by forfeit (its engine
        was withdrawn with --now: recorded here)."""
        row = self.store.conn.execute("SELECT status FROM games WHERE game_id=? AND round=? "
                                      "AND white=? AND black=?", (game.game_id, game.round,
                                                                  game.white, game.black)).fetchone()
        if row is None or row[0] == "finished":
            return False
        return bool(await self.forfeit_withdrawn([game]))

    async def forfeit_withdrawn(self, pending: list[StoredGame]) -> list[StoredGame]:
        """Record as lost by forfeit the games of engines the TD withdrew with --now (a
        rewind, or a crash before the withdrawal finished, leaves such games scheduled);
        returns the games left to play."""
        from runner.service.tdrules import forfeit_record, forfeits_due

        due = forfeits_due(self.store, pending)
        if not due:
            return pending
        assert self.router is not None
        for game in pending:
            if game.game_id in due:
                record = forfeit_record(self.store, self.config, game, due[game.game_id])
                attempt = self.store.attempts(game.game_id) + 1
                self.router.publish(GameStarted(
                    game_id=game.game_id, white=game.white, black=game.black, white_id="",
                    black_id="", start_time=record.start_time, start_fen=record.start_fen or "",
                    book_plies=0, white_clock_ms=None, black_clock_ms=None, attempt=attempt))
                self.router.publish(GameFinished(game.game_id, record, attempt))
                await self.router.store.settled(game.game_id)
                self.say(f"Game {game.game_id} ({game.white} vs {game.black}): {record.reason}",
                         always=True)
        return [g for g in pending if g.game_id not in due]

    def _engines_of(self, game: StoredGame) -> tuple[EngineConfig, EngineConfig]:
        return self.config.engine(game.white), self.config.engine(game.black)

    def _done(self, game_id: int, task: asyncio.Task[None], slots: asyncio.Semaphore) -> None:
        self.running.pop(game_id, None)
        slots.release()
        if self.gpus is not None:  # GPU hook: its devices are free again
            self.gpus.give_back(game_id)
        if task.cancelled():
            return
        exc = task.exception()
        from runner.service.builds import BuildChanged

        if isinstance(exc, BuildChanged):  # no new game; the games in progress finish
            self.fail(str(exc), cancel=False)
        elif isinstance(exc, RecordError):
            self.fail(str(exc))
        elif exc is not None:
            self.fail(f"game {game_id} could not be played: {type(exc).__name__}: {exc}; "
                      "it will be played again when you run the same command again")

    def fail(self, message: str, cancel: bool = True) -> None:
        if self.failure is None:
            self.failure = message
            err(message)
        self.stop(cancel=cancel)

    def stop(self, cancel: bool) -> None:
        self.stopping = True
        if cancel and self.movelog is not None and self.movelog.waiting is not None:
            self.movelog.give_up()  # waiting for disk space: what is not written is not
        if cancel:
            for task in list(self.running.values()):
                task.cancel()

    def on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        self.interrupted = True
        if self.stopping or not self.finish_games:
            self.say(f"{name}: stopping; aborting {len(self.running)} game(s) in progress "
                     "(played again on resume)", always=True)
            self.stop(cancel=True)
        else:
            self.say(f"{name}: stopping after the {len(self.running)} game(s) in progress "
                     "finish (--finish-games); send the signal again to abort them", always=True)
            self.stop(cancel=False)

    def round_summary(self, number: int, label: str = "Round") -> None:
        games = self.played(number)
        counts = {"1-0": 0, "0-1": 0, "1/2-1/2": 0}
        for g in games:
            counts[g.result] = counts.get(g.result, 0) + 1
        rd = next(r for r in self.store.rounds() if r.number == number)
        bye = f"; bye: {rd.bye}" if rd.bye else ""
        self.say(f"{label} {number} complete: {len(games)} games, white wins {counts['1-0']}, "
                 f"black wins {counts['0-1']}, draws {counts['1/2-1/2']}{bye}", always=True)
        self.show_standings()
        if self.alerts.enabled:
            self.alerts.emit("round_ended", round=number, extra=label != "Round",
                             games=len(games), white_wins=counts["1-0"],
                             black_wins=counts["0-1"], draws=counts["1/2-1/2"], bye=rd.bye,
                             standings=brief_standings(self.config, self.store))

    def show_standings(self) -> None:
        table = None
        with self.view_errors.guard("the standings table"):
            table = standings_text(self.config, self.store)
        if table:
            self.say(table.rstrip("\n"), always=True)

    # ---- extra pairs ---------------------------------------------------------------------

    async def extra_pairs(self) -> bool:
        """Two engines tied for first play extra pairs until one wins a pair (seed 003).

        The tie is read from the standings (score, then BYEs, then extra games so far);
        three or more engines tied for first are left to the tiebreaks. Returns False when
        the run stopped before the tie was settled.
        """
        from runner.domain.pairing import extra_pair_games
        from runner.domain.standings import first_place_tie

        s = self.config.swiss
        stored = {r.number: r for r in self.store.rounds()}
        for k in range(1, s.max_extra_pairs + 1):
            number = s.rounds + k
            if number not in stored:
                results = self.store.event_results()
                tie = first_place_tie(results) if results is not None else None
                if tie is not None and set(tie) & withdrawn_before(self.store.conn, number):
                    self.say(f"{' and '.join(tie)} share first place, but the TD withdrew "
                             f"{' and '.join(sorted(set(tie) & withdrawn_before(self.store.conn, number)))}"
                             ": no extra pair, the tiebreaks decide", always=True)
                    return True
                if tie is None:
                    if k > 1:
                        self.say(f"Extra pairs decided the tie for first place after {k - 1} "
                                 "pair(s)", always=True)
                    return True
                a, b = sorted(tie, key=self.store.seeds().index)
                if k == 1:
                    self.say(f"{a} and {b} share first place: extra pairs decide the winner "
                             f"(at most {s.max_extra_pairs})", always=True)
                games = extra_pair_games(a, b, s.games_per_match, k)
                self.schedule_games(number, games, ((a, b),), None, (), frozenset(), extra=True)
                await self.written()
            was_complete = number in stored and stored[number].state == "complete"
            if not await self.play_round_td(number):
                return False
            if not was_complete:
                self.round_summary(number, label="Extra pair round")
        results = self.store.event_results()
        if results is not None and first_place_tie(results) is not None:
            self.say(f"{s.max_extra_pairs} extra pair(s) did not separate the leaders: "
                     "the tiebreaks decide", always=True)
        return True

    # ---- main loop -----------------------------------------------------------------------

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        for sig in before:
            loop.add_signal_handler(sig, self.on_signal, sig)
        from runner.service.setup import stop_requested

        if stop_requested() is not None:  # a stop signal whose KeyboardInterrupt was swallowed
            self.on_signal(stop_requested())
        self.snapshot = SnapshotSink(self._snapshot_in_thread, self.config.snapshot_interval_s,
                                     self.view_errors)
        snapshot = self.snapshot
        live = LivePgnSink(self.config, self.config.live_pgn, errors=self.view_errors) if self.config.live_pgn else None

        def moves_written() -> None:  # called on the move-log thread
            loop.call_soon_threadsafe(snapshot.request)
            if live is not None:
                loop.call_soon_threadsafe(live.request)

        def log_failed(exc: BaseException) -> None:
            if isinstance(exc, DiskFull):  # stopped while waiting for space
                err(f"{self.store.path}: {exc}")
                return
            err(f"{self.store.path}: cannot write the move log ({exc}); finished games are "
                "still recorded, the moves are kept in memory and written when possible")

        def no_space(text: str) -> None:  # on the writer thread: once, then every 5 min
            err(text)

        def space_again(text: str) -> None:
            loop.call_soon_threadsafe(lambda: self.say(text, always=True))

        self.movelog = MoveLog(self.store.path, on_flush=moves_written, on_error=log_failed,
                               on_wait=no_space, on_space=space_again).start()
        from runner.service.operations import run_views

        views = run_views(self)  # console lines with progress/ETA, EPD file, live view
        gpu_views = gpu_sinks(self.config, self.alerts)  # GPU hook: a failing device alerts
        self.router = EventRouter(StoreSink(self.store, self.movelog),
                                  [*views.sinks(), *gpu_views, self.pgn, snapshot,
                                   *([live] if live else [])], self.view_errors)
        if live is not None:
            live.request(now=True)  # the round so far, before its next game starts
        # GPU hook: None without Gpus or on a cluster; the TD's `gpu off` devices left out
        self.gpus = local_pool(self.config, offline_gpus(self.store.conn))
        from runner.service.td import Director

        self.td = Director(self)
        await self.td.load()
        poll: asyncio.Task[None] | None = None
        try:
            await self.td.apply_pending()  # given while no runner ran
            poll = asyncio.create_task(self.td.poll(), name="td commands")
            return await self._run()
        finally:
            if poll is not None:
                poll.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poll
            close = getattr(self.play_game, "aclose", None)  # a cluster backend's connection
            if close is not None:
                await close()
            if self.resources is not None:
                await self._close_resources()
            views.close()
            for view in gpu_views:
                view.close()
            await asyncio.to_thread(self.movelog.close)
            await snapshot.flush()
            await self.pgn.flush()
            self._close_reader()
            if live is not None:
                await live.flush()
                live.close()
            for sig, handler in before.items():
                loop.remove_signal_handler(sig)
                if handler is not None:  # what run had (asyncio would leave SIGTERM's default)
                    signal.signal(sig, handler)

    async def _close_resources(self) -> None:
        """Close the engines kept between games; no engine process of this run is left, so
        none is left recorded for the orphan sweep either."""
        await self.resources.aclose()
        if self.router is not None:  # the rows of the engines just closed are written first
            with contextlib.suppress(StoreError, sqlite3.Error):
                await self.router.store.drain()
        if self.resources.engines is not None and not self.running:
            with contextlib.suppress(StoreError, sqlite3.Error):
                self.store.clear_processes()

    async def _run(self) -> int:
        try:
            return await self._rounds()
        except DiskFull:
            if not self.stopping:
                raise
            return self._stopped()

    def _stopped(self) -> int:
        counts = self.store.counts()
        self.say(f"Stopped: {counts.get('finished', 0)} of {self.total_games()} games "
                 f"recorded; run the same command to resume", always=True)
        return EXIT_INTERRUPTED if self.interrupted else EXIT_FAIL

    async def _rounds(self) -> int:
        s = self.config.swiss
        while not self.stopping:
            # the first round not complete, read from the store each time: a TD decision
            # applied during a round (a rewind, a withdrawal) may have voided rounds
            stored = {r.number: r for r in self.store.rounds()}
            number = next((n for n in range(1, s.rounds + 1)
                           if n not in stored or stored[n].state != "complete"), None)
            if number is None:
                if s.allow_extra_pairs_on_tie:
                    await self.extra_pairs()
                break
            if self.td is not None:
                if not await self.td.hold():
                    break  # stopped while the TD paused the event (no pairing while paused)
                if self.td.rewound:  # decided while paused: the rounds are read again
                    self.td.rewound = False
                    continue
            if number not in stored:
                self.pair(number)
                await self.written()
            if not await self.play_round_td(number):
                if self.stopping:
                    break
                continue  # a TD decision changed the round: go on from what is stored
            if any(r.number == number for r in self.store.rounds()):
                self.round_summary(number)
        if self.failure:
            return EXIT_FAIL
        if self.stopping:
            return self._stopped()
        self.say("Event complete. Final standings:", always=True)
        self.show_standings()
        return EXIT_OK


def game_spec(config: Config, store: Store, game: StoredGame,
              builds: dict[str, str] | None = None) -> GameSpec:
    """Everything a backend needs to play ``game``; the engines the TD withdrew before its
    round was paired are named in its PGN (tag Withdrawn, read by `audit`); ``builds``: the
    build digest each engine must play with (runner.play.builds)."""
    builds = builds or {}
    withdrawn: tuple[str, ...] = ()
    if not game.extra:
        out = withdrawn_before(store.conn, game.round)
        withdrawn = tuple(name for name in store.seeds() if name in out) if out else ()
    return GameSpec(
        game_id=game.game_id, round=game.round, game_in_round=game.game_in_round,
        white=config.engine(game.white), black=config.engine(game.black),
        time_control=config.time_control, adjudication=config.adjudication,
        opening=game.opening, event=config.event, site=config.site,
        time_margin_ms=config.time_margin_ms,
        extra_pair=game.round - config.swiss.rounds if game.extra else 0,
        pgn_comments=config.pgn_comments, pgn_extras=config.pgn_extras,
        variant=config.variant, withdrawn=withdrawn,
        white_build=builds.get(game.white, ""), black_build=builds.get(game.black, ""),
    )


def _played(g: StoredGame) -> PlayedGame:
    return PlayedGame(round=g.round, game_in_round=g.game_in_round, white=g.white, black=g.black,
                      result=g.result or "", rmobility=g.rmobility, extra=g.extra)


__all__ = ["PlayGame", "RecordError", "Tournament"]
