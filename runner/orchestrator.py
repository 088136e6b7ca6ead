"""The tournament loop: seed, pair, play, record, repeat; resume after any crash.

All tournament truth lives in the store (runner.store); this module is a thin loop over
pairing, the game backend, openings and standings. Every decision that must survive a crash
(seeds, opening order, each round's pairs and playing order, each finished game) is
committed before anything depends on it, and reused unchanged on resume.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from runner.cli import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK
from runner.config import Config
from runner.models import GameRecord, GameSpec, Opening, PlayedGame
from runner.openings import BookError
from runner.store import (
    Store,
    StoredGame,
    StoredRound,
    StoreError,
    append_pgn,
    atomic_write,
    event_fingerprint,
    fingerprint_changes,
)

PlayGame = Callable[..., Awaitable[GameRecord]]


def _err(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- standings glue


def _standings(config: Config, store: Store, fmt: str) -> str | None:
    """Rendered standings of the recorded games (None if the event has no results yet)."""
    from runner.standings import compute_standings, render_standings

    results = store.event_results()
    if results is None:
        return None
    rows = compute_standings(results, config.tiebreaks)
    return render_standings(rows, results, fmt)


def _standings_json(config: Config, store: Store) -> Any:
    """Compact standings for the snapshot and `status --json` (full tables: `standings`)."""
    from runner.standings import compute_standings

    results = store.event_results()
    if results is None:
        return None
    rows = compute_standings(results, config.tiebreaks)
    return [{"place": r.place_label, "engine": r.name, "seed": r.seed, "score": float(r.score),
             "games": r.games, "wins": r.wins, "draws": r.draws, "losses": r.losses,
             "byes": r.byes, "tiebreaks": {k: None if r.tiebreaks.get(k) is None
                                           else float(r.tiebreaks[k]) for k in config.tiebreaks},
             "extra_games": r.extra_games,
             "extra_score": None if r.extra_score is None else float(r.extra_score)}
            for r in rows]


# --------------------------------------------------------------------------- lock


@contextlib.contextmanager
def _event_lock(database: Path):
    """Exclusive lock so two runners never drive the same event at once."""
    lock_path = database.with_name(database.name + ".lock")
    handle = open(lock_path, "a+")  # noqa: SIM115 - held for the whole run
    try:
        for attempt in range(20):  # `status` may hold a shared lock for an instant
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if attempt < 19:
                    time.sleep(0.1)
        else:
            handle.seek(0)
            owner = handle.read().strip() or "?"
            raise StoreError(f"{database}: another swiss-runner (pid {owner}) is running this "
                             "event; use `swiss-runner status` to watch it") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


# --------------------------------------------------------------------------- the run


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
    pgn_dirty: bool = False
    running: dict[int, asyncio.Task[None]] = field(default_factory=dict)
    _snapshot_task: asyncio.Task[None] | None = None
    _snapshot_again: bool = False

    # ---- output --------------------------------------------------------------------------

    def say(self, text: str, *, always: bool = False) -> None:
        if always or not self.quiet:
            print(text, file=self.out, flush=True)

    # ---- setup ---------------------------------------------------------------------------

    def prepare(self) -> int | None:
        """Create or check the event; sweep leftovers. Return an exit code to stop early."""
        config, store = self.config, self.store
        fingerprint = event_fingerprint(config)
        if store.has_event():
            changes = fingerprint_changes(store.fingerprint() or {}, fingerprint)
            if changes:
                _err(f"{config.path}: this config does not describe the event recorded in "
                     f"{store.path}; an event cannot change once started (TCEC rule 8). Changed:")
                for change in changes:
                    print(f"  {change}", file=sys.stderr)
                print("Restore the old settings to resume, or point SwissOptions.StatePath "
                      "(and Database) somewhere else to start a new event.", file=sys.stderr,
                      flush=True)
                return EXIT_BAD_INPUT
        book_lines: str | None = None
        if config.openings is not None:
            from runner.openings import book_fingerprint, load_book

            try:
                self.book = load_book(config.openings, config.swiss.random_seed)
            except BookError as exc:
                _err(str(exc))
                return EXIT_BAD_INPUT
            book_lines = book_fingerprint(self.book)
        if not store.has_event():
            from runner.openings import check_book_size, event_matches, opening_order
            from runner.pairing import seed_players

            s = config.swiss
            seeds = seed_players([(e.name, e.rating) for e in config.engines], s.seeding,
                                 s.seed_group_count, s.random_seed)
            order: list[int] = []
            if self.book and config.openings is not None:
                check_book_size(len(self.book), event_matches(config),
                                s.unique_per_match_only, config.openings.file)
                order = opening_order(len(self.book), config.openings.order, s.random_seed)
            store.init_event(fingerprint, seeds, order, event=config.event,
                             games_per_match=s.games_per_match, rounds=s.rounds,
                             book_fingerprint=book_lines)
            self.say(f"New event {config.event!r}: {len(seeds)} engines, {s.rounds} rounds, "
                     f"{self.total_games()} games; state in {store.path}")
            self.say("Seeds: " + ", ".join(f"{i}. {n}" for i, n in enumerate(seeds, 1)))
        else:
            if book_lines is not None:
                # The fingerprint covers the book file, not the lines read from it: another
                # python-chess could walk a polyglot book (or read a PGN) differently.
                recorded = store.meta("book_fingerprint")
                if recorded is None:  # an event started before the lines were recorded
                    store.set_meta("book_fingerprint", book_lines)
                elif recorded != book_lines:
                    _err(f"{config.openings.file}: the opening book now gives other lines than "
                         f"when the event recorded in {store.path} started (lines {recorded}, now "
                         f"{book_lines}) although the file is the same: was python-chess or "
                         "swiss-runner upgraded? The remaining matches would not get the openings "
                         "of an uninterrupted run; resume with the versions the event started with.")
                    return EXIT_BAD_INPUT
            counts = store.counts()
            self.say(f"Resuming event {config.event!r}: {counts.get('finished', 0)} of "
                     f"{self.total_games()} games recorded; state in {store.path}")
        leftovers = store.processes()
        if leftovers:
            from runner.engines import sweep_orphans

            killed = sweep_orphans(leftovers)
            store.clear_processes()
            self.say(f"Engine processes of the previous run: {len(leftovers)} recorded, "
                     f"{killed} still running and killed")
        replay = store.reset_running()
        if replay:
            self.say(f"{replay} game(s) interrupted by the previous run will be replayed from "
                     "the start with the same opening and colours")
        self.sync_pgn()
        self.check_snapshot()
        self.write_snapshot()
        return None

    def total_games(self) -> int:
        s = self.config.swiss
        scheduled = len(self.config.engines) // 2 * s.games_per_match * s.rounds
        extra = self.store.conn.execute("SELECT COUNT(*) FROM games WHERE extra=1").fetchone()[0]
        return scheduled + extra

    # ---- views kept in step with the database -------------------------------------------

    def sync_pgn(self) -> None:
        path = self.config.pgn_out
        if self.store.pgn_matches(path):
            self.pgn_dirty = False
            return
        try:
            backup = self.store.rebuild_pgn(path)
            self.pgn_dirty = False
            if backup is not None:
                self.say(f"{path} held games that are not this event's; kept it as {backup}",
                         always=True)
            self.say(f"Rebuilt {path} from the database "
                     f"({self.store.counts().get('finished', 0)} games)")
        except OSError as exc:
            self.pgn_dirty = True
            _err(f"{path}: cannot write the PGN ({exc.strerror}); the games are safe in "
                 f"{self.store.path} and the PGN will be rebuilt on the next try")

    def check_snapshot(self) -> None:
        path = self.config.swiss.state_path
        if not path.exists():
            return
        try:
            json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            self.say(f"{path}: the JSON snapshot was unreadable or cut short; rebuilt from "
                     f"{self.store.path}")

    def write_snapshot(self, store: Store | None = None) -> None:
        path = self.config.swiss.state_path
        store = store or self.store
        try:
            data = store.snapshot(_standings_json(self.config, store))
            atomic_write(path, json.dumps(data, separators=(",", ":")) + "\n")
        except OSError as exc:
            _err(f"{path}: cannot write the JSON snapshot ({exc.strerror}); the previous "
                 f"snapshot is intact and the games are safe in {self.store.path}")

    def _snapshot_in_thread(self) -> None:
        try:
            reader = Store.open_readonly(self.store.path)
            if reader is not None:
                try:
                    self.write_snapshot(reader)
                finally:
                    reader.close()
        except (StoreError, sqlite3.Error) as exc:
            # The snapshot is derived from the database: a failed read costs one dashboard
            # update, never the event (every game is committed through the main connection).
            _err(f"{self.config.swiss.state_path}: cannot update the JSON snapshot ({exc}); the "
                 f"previous snapshot is intact and the games are safe in {self.store.path}")

    def request_snapshot(self) -> None:
        """Rewrite the snapshot off the event loop (standings of big events take a while and
        must not delay the engines' clocks); requests during a write are coalesced."""
        if self._snapshot_task is not None and not self._snapshot_task.done():
            self._snapshot_again = True
            return
        self._snapshot_task = asyncio.create_task(self._snapshot_worker())

    async def _snapshot_worker(self) -> None:
        while True:
            self._snapshot_again = False
            await asyncio.to_thread(self._snapshot_in_thread)
            if not self._snapshot_again:
                return

    async def flush_snapshot(self) -> None:
        if self._snapshot_task is not None:
            await asyncio.shield(self._snapshot_task)

    # ---- rounds --------------------------------------------------------------------------

    def history(self, rounds: Sequence[StoredRound]) -> list[Any]:
        """Finished scheduled rounds as pairing's RoundRecords."""
        from runner.pairing import RoundRecord

        records = []
        for rd in rounds:
            if rd.extra:
                continue
            games = tuple(self.played(rd.number))
            records.append(RoundRecord(number=rd.number, pairs=rd.pairs, games=games, bye=rd.bye))
        return records

    def played(self, number: int) -> list[PlayedGame]:
        return [PlayedGame(round=g.round, game_in_round=g.game_in_round, white=g.white,
                           black=g.black, result=g.result or "", rmobility=g.rmobility,
                           extra=g.extra)
                for g in self.store.games(number) if g.status == "finished"]

    def schedule_games(self, number: int, games: Sequence[Any], pairs: Sequence[tuple[str, str]],
                       bye: str | None, dropped: Sequence[int], excluded: frozenset[int],
                       extra: bool) -> None:
        """Assign ids and openings (one per match, in playing order) and store the round."""
        from runner.openings import opening_for_match

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
        self.store.add_round(number, pairs, bye, dropped, excluded, rows, extra=extra)

    def pair(self, number: int) -> None:
        from runner.pairing import pair_round

        stored = self.store.rounds()
        excluded = stored[-1].excluded if stored else frozenset()
        s = self.config.swiss
        plan = pair_round(self.store.seeds(), self.history(stored), number, s.games_per_match,
                          s.double_round_schedule, excluded)
        self.schedule_games(number, plan.games, plan.pairs, plan.bye,
                            plan.dropped_history_rounds, frozenset(plan.excluded), extra=False)
        text = ", ".join(f"{a} - {b}" for a, b in plan.pairs)
        self.say(f"Round {number} pairings: {text}" + (f"; bye: {plan.bye}" if plan.bye else ""))
        if plan.dropped_history_rounds:
            self.say(f"Round {number}: no viable pairing without repeats; removed round(s) "
                     f"{', '.join(map(str, plan.dropped_history_rounds))} from the encounter history")

    # ---- games ---------------------------------------------------------------------------

    def backend(self) -> PlayGame:
        if self.play_game is not None:
            return self.play_game
        if self.config.backend == "cutechess":
            from runner.cutechess import play_game as cutechess_play

            async def play(spec: GameSpec, *, on_process: Any = None) -> GameRecord:
                return await cutechess_play(spec, on_process=on_process,
                                            cutechess_path=self.config.cutechess_path)

            return play
        from runner.referee import play_game

        return play_game

    async def play_one(self, game: StoredGame) -> None:
        config = self.config
        spec = GameSpec(
            game_id=game.game_id, round=game.round, game_in_round=game.game_in_round,
            white=config.engine(game.white), black=config.engine(game.black),
            time_control=config.time_control, adjudication=config.adjudication,
            opening=game.opening, event=config.event, site=config.site,
            time_margin_ms=config.time_margin_ms,
            extra_pair=game.round - config.swiss.rounds if game.extra else 0,
        )
        self.store.mark_running(game.game_id)
        self.say(f"Started game {game.game_id} of {self.total_games()} "
                 f"({game.white} vs {game.black})")

        def on_process(pid: int, create_time: float) -> None:
            self.store.record_process(pid, create_time, game.game_id)

        record = await self.backend()(spec, on_process=on_process)
        try:
            self.store.record_game(game.game_id, record)
        except Exception as exc:  # noqa: BLE001 - disk full, I/O error, integrity: stop cleanly
            raise RecordError(f"{self.store.path}: could not record game {game.game_id} "
                              f"({exc}); everything recorded before it is intact and game "
                              f"{game.game_id} will be replayed when you run the same command "
                              "again (free disk space first if the disk is full)") from exc
        self.say(f"Finished game {game.game_id} ({record.white} vs {record.black}): "
                 f"{record.result} {{{record.reason}}}")
        self.after_game(record)

    def after_game(self, record: GameRecord) -> None:
        if self.pgn_dirty:
            self.sync_pgn()
        else:
            try:
                append_pgn(self.config.pgn_out, record.pgn)
            except OSError as exc:
                self.pgn_dirty = True
                _err(f"{self.config.pgn_out}: cannot append the game ({exc.strerror}); it is "
                     f"safe in {self.store.path} and the PGN will be rebuilt from there")
        self.request_snapshot()

    async def play_round(self, number: int) -> bool:
        """Play the round's unfinished games in playing order; True when all are recorded."""
        pending = [g for g in self.store.games(number) if g.status != "finished"]
        if not pending:
            return True
        slots = asyncio.Semaphore(max(1, self.config.concurrency))
        tasks: list[asyncio.Task[None]] = []
        for game in pending:
            await slots.acquire()
            if self.stopping:
                slots.release()
                break
            task = asyncio.create_task(self.play_one(game), name=f"game {game.game_id}")
            self.running[game.game_id] = task
            task.add_done_callback(lambda t, gid=game.game_id: self._done(gid, t, slots))
            tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)
        aborted = self.store.reset_running()
        if aborted:
            self.store.clear_processes()
            self.say(f"{aborted} game(s) aborted; they will be replayed from the start on resume",
                     always=True)
        return all(g.status == "finished" for g in self.store.games(number))

    def _done(self, game_id: int, task: asyncio.Task[None], slots: asyncio.Semaphore) -> None:
        self.running.pop(game_id, None)
        slots.release()
        if task.cancelled():
            return
        exc = task.exception()
        if isinstance(exc, RecordError):
            self.fail(str(exc))
        elif exc is not None:
            self.fail(f"game {game_id} could not be played: {type(exc).__name__}: {exc}; "
                      "it will be replayed from the start when you run the same command again")

    def fail(self, message: str) -> None:
        if self.failure is None:
            self.failure = message
            _err(message)
        self.stop(cancel=True)

    def stop(self, cancel: bool) -> None:
        self.stopping = True
        if cancel:
            for task in list(self.running.values()):
                task.cancel()

    def on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        self.interrupted = True
        if self.stopping or not self.finish_games:
            self.say(f"{name}: stopping; aborting {len(self.running)} game(s) in progress "
                     "(replayed from the start on resume)", always=True)
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
        table = _standings(self.config, self.store, "text")
        if table:
            self.say(table.rstrip("\n"), always=True)

    # ---- extra pairs ---------------------------------------------------------------------

    async def extra_pairs(self) -> bool:
        """Two engines tied for first play extra pairs until one wins a pair (seed 003).

        The tie is read from the standings (score, then BYEs, then extra games so far);
        three or more engines tied for first are left to the tiebreaks. Returns False when
        the run stopped before the tie was settled.
        """
        from runner.pairing import extra_pair_games
        from runner.standings import first_place_tie

        s = self.config.swiss
        stored = {r.number: r for r in self.store.rounds()}
        for k in range(1, s.max_extra_pairs + 1):
            number = s.rounds + k
            if number not in stored:
                results = self.store.event_results()
                tie = first_place_tie(results) if results is not None else None
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
            was_complete = number in stored and stored[number].state == "complete"
            if not await self.play_round(number):
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
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.on_signal, sig)
        try:
            return await self._run()
        finally:
            await self.flush_snapshot()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    async def _run(self) -> int:
        s = self.config.swiss
        for number in range(1, s.rounds + 1):
            if self.stopping:
                break
            stored = {r.number: r for r in self.store.rounds()}
            if number in stored and stored[number].state == "complete":
                continue
            if number not in stored:
                self.pair(number)
            if not await self.play_round(number):
                break
            self.round_summary(number)
        else:
            if s.allow_extra_pairs_on_tie and not self.stopping:
                await self.extra_pairs()
        if self.failure:
            return EXIT_FAIL
        if self.stopping:
            counts = self.store.counts()
            self.say(f"Stopped: {counts.get('finished', 0)} of {self.total_games()} games "
                     f"recorded; run the same command to resume", always=True)
            return EXIT_INTERRUPTED if self.interrupted else EXIT_FAIL
        self.say("Event complete. Final standings:", always=True)
        table = _standings(self.config, self.store, "text")
        if table:
            self.say(table.rstrip("\n"), always=True)
        return EXIT_OK


class RecordError(Exception):
    """A finished game could not be committed (disk full, I/O error)."""


def cli_run(config: Config, args: argparse.Namespace, *, play_game: PlayGame | None = None) -> int:
    """`swiss-runner run CONFIG`: run or resume the event; exit code per runner.cli."""
    chess_log = logging.getLogger("chess.engine")
    if chess_log.level == logging.NOTSET:
        # python-chess warns about every line it does not parse (xboard engines' "tellics
        # whisper", "post on", ...): harmless, and it would drown the progress output.
        chess_log.setLevel(logging.ERROR)
    if config.backend == "cutechess" and play_game is None:
        from runner.cutechess import check_binary

        problem = check_binary(config.cutechess_path)
        if problem:  # refuse before any state is created or touched
            _err(f"{config.path}: CutechessPath: {problem}")
            return EXIT_BAD_INPUT
    try:
        store = Store.open(config.database)
    except StoreError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    try:
        with _event_lock(config.database):
            tournament = Tournament(config, store, finish_games=getattr(args, "finish_games", False),
                                    quiet=getattr(args, "quiet", False), play_game=play_game)
            try:
                code = tournament.prepare()
            except BookError as exc:
                _err(str(exc))
                return EXIT_BAD_INPUT
            if code is not None:
                return code
            return asyncio.run(tournament.run())
    except StoreError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except BookError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except (OSError, sqlite3.Error) as exc:
        _err(f"{getattr(exc, 'filename', None) or config.database}: "
             f"{getattr(exc, 'strerror', None) or exc}; nothing recorded was lost")
        return EXIT_FAIL
    except KeyboardInterrupt:
        _err("interrupted; run the same command to resume")
        return EXIT_INTERRUPTED
    finally:
        store.close()


# --------------------------------------------------------------------------- status


def runner_alive(database: Path) -> bool | None:
    """Is a runner driving this event right now? (None: cannot tell.) Never blocks it."""
    lock_path = database.with_name(database.name + ".lock")
    try:
        handle = open(lock_path)  # noqa: SIM115
    except FileNotFoundError:
        return False
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def status_data(config: Config, store: Store) -> dict[str, Any]:
    rounds = store.rounds()
    games = store.games()
    s = config.swiss
    current = rounds[-1] if rounds else None
    scheduled_total = len(store.seeds()) // 2 * s.games_per_match * s.rounds
    extra = sum(1 for g in games if g.extra)
    finished = sum(1 for g in games if g.status == "finished")
    complete_rounds = sum(1 for r in rounds if r.state == "complete" and not r.extra)
    return {
        "event": store.meta("event"),
        "database": str(store.path),
        "rounds_total": s.rounds,
        "rounds_complete": complete_rounds,
        "current_round": None if current is None else {
            "number": current.number, "extra": current.extra, "state": current.state,
            "pairs": [list(p) for p in current.pairs], "bye": current.bye},
        "games_finished": finished,
        "games_total": scheduled_total + extra,
        "in_progress": [{"game_id": g.game_id, "round": g.round, "white": g.white,
                         "black": g.black} for g in games if g.status == "running"],
        "complete": complete_rounds == s.rounds and all(g.status == "finished" for g in games),
        "runner_running": runner_alive(config.database),
    }


def cli_status(config: Config, args: argparse.Namespace) -> int:
    """`swiss-runner status CONFIG`: progress from the state, read-only."""
    try:
        store = Store.open_readonly(config.database)
    except StoreError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    if store is None or not store.has_event():
        print(f"{config.path}: no event recorded yet ({config.database} does not exist or is "
              "empty); start it with `swiss-runner run`", flush=True)
        return EXIT_FAIL
    try:
        data = status_data(config, store)
        if getattr(args, "json", False):
            data["standings"] = _standings_json(config, store)
            print(json.dumps(data, indent=1), flush=True)
            return EXIT_OK
        cur = data["current_round"]
        print(f"Event: {data['event']}  ({data['database']})")
        if cur is None:
            print("Round: not paired yet")
        else:
            kind = "extra pair round" if cur["extra"] else f"round {cur['number']} of {data['rounds_total']}"
            print(f"Round: {kind} ({cur['state']})")
        print(f"Games: {data['games_finished']} of {data['games_total']} finished"
              + ("; event complete" if data["complete"] else ""))
        if data["in_progress"]:
            stale = " (the runner is not running: they will be replayed on resume)" \
                if data["runner_running"] is False else ""
            print("In progress: " + ", ".join(
                f"game {g['game_id']} ({g['white']} vs {g['black']})"
                for g in data["in_progress"]) + stale)
        if data["runner_running"] is not None:
            print("Runner: " + ("running" if data["runner_running"] else "not running"))
        table = _standings(config, store, "text")
        if table:
            print(table.rstrip("\n"))
        sys.stdout.flush()
        return EXIT_OK
    except StoreError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    finally:
        store.close()
