"""Opening an event for a run: create it, or check that the config still describes it
(TCEC rule 8), read the book, and clean up what a dead run left behind."""

from __future__ import annotations

import sys
from collections.abc import Callable

from runner.books.openings import BookError
from runner.config.fingerprint import event_fingerprint, fingerprint_changes
from runner.config.schema import Config
from runner.domain.models import Opening
from runner.errors import EXIT_BAD_INPUT
from runner.store.database import Store

Say = Callable[..., None]


def _err(message: str) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)


def open_event(config: Config, store: Store, say: Say, total_games: Callable[[], int]) -> tuple[list[Opening], int | None]:
    """Create the event or check that the config still describes it; sweep what a dead run
    left behind. Returns the book's lines and an exit code when the run must not start."""
    book: list[Opening] = []
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
            return book, EXIT_BAD_INPUT
    book_lines: str | None = None
    if config.openings is not None:
        from runner.books.openings import book_fingerprint, load_book

        try:
            book = load_book(config.openings, config.swiss.random_seed)
        except BookError as exc:
            _err(str(exc))
            return book, EXIT_BAD_INPUT
        book_lines = book_fingerprint(book)
    if not store.has_event():
        from runner.books.openings import check_book_size, event_matches, opening_order
        from runner.domain.pairing import seed_players

        s = config.swiss
        seeds = seed_players([(e.name, e.rating) for e in config.engines], s.seeding,
                             s.seed_group_count, s.random_seed)
        order: list[int] = []
        if book and config.openings is not None:
            check_book_size(len(book), event_matches(config),
                            s.unique_per_match_only, config.openings.file)
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
                _err(f"{config.openings.file}: the opening book now gives other lines than "
                     f"when the event recorded in {store.path} started (lines {recorded}, now "
                     f"{book_lines}) although the file is the same: was python-chess or "
                     "swiss-runner upgraded? The remaining matches would not get the openings "
                     "of an uninterrupted run; resume with the versions the event started with.")
                return book, EXIT_BAD_INPUT
        counts = store.counts()
        say(f"Resuming event {config.event!r}: {counts.get('finished', 0)} of "
                 f"{total_games()} games recorded; state in {store.path}")
    leftovers = store.processes()
    if leftovers:
        from runner.play.engines import sweep_orphans

        killed = sweep_orphans(leftovers)
        store.clear_processes()
        say(f"Engine processes of the previous run: {len(leftovers)} recorded, "
                 f"{killed} still running and killed")
    replay = store.reset_running()
    if replay:
        say(f"{replay} game(s) interrupted by the previous run will be played again "
            "with the same opening and colours")
    return book, None
