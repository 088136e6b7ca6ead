"""Opening an event for a run: create it, or check that the config still describes it
(TCEC rule 8), read the book, and clean up what a dead run left behind."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType

from runner.books.openings import (
    BookError,
    book_fingerprint,
    check_book_size,
    event_matches,
    load_book,
    opening_order,
)
from runner.config.fingerprint import event_fingerprint, fingerprint_changes, without_binaries
from runner.config.typed import Config
from runner.domain.models import Opening
from runner.domain.pairing import seed_players
from runner.domain.pgn import escape_tag
from runner.domain.variant import is_960
from runner.errors import EXIT_BAD_INPUT
from runner.errors import print_error as _err
from runner.play.engines import ignored_limit_text, sweep_orphans, unknown_option_text
from runner.play.gpus import probe_on_devices
from runner.service.interrupted import interrupted_games, interrupted_lines
from runner.store.database import Store, StoreError, event_recorded
from runner.store.forensics import read_header
from runner.store.witness import snapshot_witness

Say = Callable[..., None]




def open_event(config: Config, store: Store, say: Say, total_games: Callable[[], int],
               resumes: bool | None = None) -> tuple[list[Opening], int | None]:
    """Create the event or check that the config still describes it; sweep what a dead run
    left behind. Returns the book's lines and an exit code when the run must not start.
    ``resumes``: whether the run's backend continues a game from a position (what it says
    becomes of the interrupted games; default: the configured backend's)."""
    book: list[Opening] = []
    fingerprint = event_fingerprint(config)
    if store.has_event():
        # an engine whose build is recorded (runner.store.buildrecords) is checked by its build,
        # which `run --accept-build` may change, not by the fingerprint's binary digest
        tracked = set(store.builds())
        changes = fingerprint_changes(without_binaries(store.fingerprint() or {}, tracked),
                                      without_binaries(fingerprint, tracked))
        if changes:
            _err(f"{config.path}: this config does not describe the event recorded in "
                 f"{store.path}; an event cannot change once started (TCEC rule 8). Changed:")
            for change in changes:
                print(f"  {change}", file=sys.stderr)
            print("Restore the old settings to resume, or point SwissOptions.StatePath "
                  "(and Database) somewhere else to start a new event.", file=sys.stderr,
                  flush=True)
            return book, EXIT_BAD_INPUT
    book_lines: str | None = None
    if config.openings is not None:
        try:
            book = load_book(config.openings, config.swiss.random_seed)
        except BookError as exc:
            _err(str(exc))
            return book, EXIT_BAD_INPUT
        book_lines = book_fingerprint(book)
    if not store.has_event():
        s = config.swiss
        seeds = seed_players([(e.name, e.rating) for e in config.engines], s.seeding,
                             s.seed_group_count, s.random_seed)
        order: list[int] = []
        if book and config.openings is not None:
            check_book_size(len(book), event_matches(config),
                            s.unique_per_match_only,
                            config.openings.file or "Openings.Positions")
            order = opening_order(len(book), config.openings.order, s.random_seed)
        store.init_event(fingerprint, seeds, order, event=config.event,
                         games_per_match=s.games_per_match, rounds=s.rounds,
                         book_fingerprint=book_lines)
        say(f"New event {config.event!r}: {len(seeds)} engines, {s.rounds} rounds, "
                 f"{total_games()} games; state in {store.path}")
        say("Seeds: " + ", ".join(f"{i}. {n}" for i, n in enumerate(seeds, 1)))
    else:
        if book_lines is not None:
            # The fingerprint covers the book file, not the lines read from it: another
            # python-chess could walk a polyglot book (or read a PGN) differently.
            recorded = store.meta("book_fingerprint")
            if recorded is None:  # an event started before the lines were recorded
                store.set_meta("book_fingerprint", book_lines)
            elif recorded != book_lines:
                _err(f"{config.openings.file or 'Openings.Positions'}: the opening book now gives other lines than "
                     f"when the event recorded in {store.path} started (lines {recorded}, now "
                     f"{book_lines}) although the file is the same: was python-chess or "
                     "swiss-runner upgraded? The remaining matches would not get the openings "
                     "of an uninterrupted run; resume with the versions the event started with.")
                return book, EXIT_BAD_INPUT
        store.verify_records()  # a damaged record is refused before anything is built on it
        counts = store.counts()
        say(f"Resuming event {config.event!r}: {counts.get('finished', 0)} of "
                 f"{total_games()} games recorded; state in {store.path}")
    leftovers = store.processes()
    if leftovers:
        killed = sweep_orphans(leftovers)
        store.clear_processes()
        say(f"Engine processes of the previous run: {len(leftovers)} recorded, "
                 f"{killed} still running and killed")
    store.remember_files()
    interrupted = interrupted_games(config, store, runner_running=False, resumes=resumes)
    store.reset_running()
    if interrupted:
        say(f"{len(interrupted)} game(s) interrupted, each played on with the same opening "
            "and colours:")
        for line in interrupted_lines(interrupted):
            say(f"  {line[0].upper()}{line[1:]}")
    return book, None


_stop_requested: int | None = None  # the signal that asked this run to stop (stop_signals)


def stop_requested() -> int | None:
    """The SIGINT/SIGTERM that asked the run to stop outside the tournament loop, if any."""
    return _stop_requested


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGINT and SIGTERM as one KeyboardInterrupt for the whole of ``run``.

    The tournament loop handles both signals itself (a clean stop); before it starts (the
    engine check, which takes seconds with engines that load a network, opening the event,
    rebuilding the PGN) and after it ends, SIGTERM (``systemctl stop``) would otherwise kill
    the runner on the spot, and SIGINT raise wherever it lands. Here the first signal raises
    a KeyboardInterrupt, which ``run`` turns into a clean exit 130, and is remembered
    (:func:`stop_requested`): where Python swallows the exception (a ``__del__``, a
    callback) the loop still stops when it starts. A second signal while that stop unwinds
    ends the runner at once with the signal's default action, as a crash would (nothing
    recorded is lost; a second KeyboardInterrupt in the clean-up would only end in a
    traceback). Only in the main thread (where Python runs signal handlers).
    """
    global _stop_requested
    _stop_requested = None
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        global _stop_requested
        if _stop_requested is None:
            _stop_requested = signum
            raise KeyboardInterrupt
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    previous = {sig: signal.signal(sig, interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _stop_requested = None


PREFLIGHT_TIMEOUT_S = 30.0


def engine_problems(config: Config, timeout: float | None = None) -> list[str]:
    """Start every engine once (concurrently), finish the handshake and apply its Options:
    one line per engine that cannot play, naming it, its command and what it printed. An
    engine that cannot even start would otherwise lose every game of the event by forfeit."""
    problems = []
    # GPU hook: each GPU engine alone on its devices (docs/gpus.md)
    results = probe_on_devices(config, timeout, default=PREFLIGHT_TIMEOUT_S)
    for i, (engine, result) in enumerate(zip(config.engines, results, strict=True)):
        where = f"{config.path}: Engines[{i}] {engine.name!r}"
        command = " ".join([engine.command, *engine.args])
        printed = f"; it printed: {result.output[:500]}" if result.output else ""
        if result.error:
            problems.append(f"{where}: cannot play: {result.error} (command: {command}){printed}")
        for option in result.unknown_options:
            problems.append(f"{where}: Options.{option}: "
                            f"{unknown_option_text(option, result)} (command: {command})")
        if result.no_chess960 and is_960(config.variant) and not result.error:
            problems.append(f"{where}: cannot play this Variant: {config.variant} event: "
                            f"{result.no_chess960} (command: {command})")
        if result.limit_ignored and config.time_control.infinite:
            problems.append(f"{where}: cannot play with TimeControl 'inf': "
                            f"{ignored_limit_text(engine, result.limit_ignored)}, so its "
                            "moves would never end (set MoveTime, or Depth if it honours that)")
    return problems


def event_needs_games(config: Config) -> bool:
    """False only for an event whose every scheduled game is recorded (read-only look)."""
    try:
        store = Store.open_readonly(config.database)
    except StoreError:
        return True  # `run` reports the damage itself
    if store is None:
        return True
    try:
        counts = store.counts()
        rounds = [r for r in store.rounds() if not r.extra and r.state == "complete"]
        return bool(set(counts) - {"finished"}) or len(rounds) < config.swiss.rounds or (
            config.swiss.allow_extra_pairs_on_tie)
    except Exception:  # noqa: BLE001 - damaged: `run` reports it with its own message
        return True
    finally:
        store.close()


def lost_database_problem(config: Config) -> str | None:
    """Why starting a new event here would replace a recorded one, or None.

    A database that is missing, 0 bytes, without a schema or without an event is normally
    a new event (or a first start that died before its event was committed). But when the
    JSON snapshot beside it says games of this database were finished, or the PGN holds
    games of this event, the database was lost, truncated or replaced: starting over would
    bury the event (and overwrite the snapshot).
    """
    db = config.database
    try:
        size = db.stat().st_size
    except FileNotFoundError:
        size = None
    except OSError:
        return None  # Store.open reports it
    if size and not _schemaless(db) and event_recorded(db) is not False:
        return None  # a database with an event (or damaged: Store.open says which)
    state = f"{'missing' if size is None else 'empty (no event recorded in it)'}"
    witness = snapshot_witness(config.swiss.state_path, db, config.event)
    finished = witness.finished if witness else 0
    pgn = size is not None and not finished and _pgn_holds_event(config)
    if not (finished or pgn):
        return None
    if witness:
        where = (f" (it names {witness.database}: the event's directory was moved or restored "
                 "here)" if witness.moved else "")
        return (f"{db}: the state database is {state}, but the JSON snapshot "
                f"{config.swiss.state_path} says {finished} game(s) of this event were recorded "
                f"in it{where}: the database was deleted, truncated or replaced. Restore it "
                "from a backup to resume; to start a new event instead, move the snapshot and "
                "the PGN away first.")
    return (f"{db}: the state database is {state}, but {config.pgn_out} holds games of "
            f"the event {config.event!r}: the database was truncated or replaced. Restore it "
            "from a backup to resume; to start a new event, move the PGN away first.")


def _schemaless(db: Path) -> bool:
    """An SQLite file with no table, as a first start leaves it, read from its header alone
    (opening it with SQLite would create its side files)."""
    wal = db.with_name(db.name + "-wal")
    try:
        if wal.exists() and wal.stat().st_size:
            return False  # the WAL may hold the schema: Store.open looks
    except OSError:
        return False
    head = read_header(db)  # None when SQLite has it open here (it is read through SQLite)
    if head is None or len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return False
    pages, user_version, application_id = (int.from_bytes(head[i:i + 4], "big") for i in (28, 60, 68))
    return pages <= 1 and user_version == 0 and application_id == 0


def _pgn_holds_event(config: Config) -> bool:
    tag = f'[Event "{escape_tag(config.event)}"]'.encode()
    try:
        with open(config.pgn_out, "rb") as handle:
            return any(line.rstrip(b"\r\n") == tag for line in handle)
    except OSError:
        return False
