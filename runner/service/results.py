"""The event's results as the run loop reads them after each round (the next pairing's
history, the round's summary and standings), without reading again what a finished round
cannot change.
"""

from __future__ import annotations

from typing import Any

from runner.domain.models import EventResults, RoundResult
from runner.store import queries
from runner.store.database import Store, StoredRound, results_of
from runner.store.tdstore import withdrawals


class KeptResults:
    """``store.event_results()``, read in part: the results of the rounds complete at the
    last read are kept (with their stored rounds), and each read reads only the games of
    the later rounds, and the kept ones again when the store says one of their games changed
    (a TD rewind voided, put back or replayed it: :func:`queries.kept_mark`). The
    withdrawals and the rounds after the kept ones are read each time, unless nothing at all
    was written to the store since the last read (:func:`queries.change_mark`: the same
    results again). One belongs to one event's store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.fixed: tuple[tuple[str, ...], int] | None = None  # seeds, games per match
        self.kept: tuple[RoundResult, ...] = ()  # rounds 1..n, complete when read
        self._kept_rounds: tuple[StoredRound, ...] = ()  # their stored rounds
        # the highest finish_seq of their games, and queries.kept_mark of them up to it
        self._mark: tuple[int, tuple[int, str]] = (0, (0, ""))
        # the last read: the store's change mark before it, its results and stored rounds
        self._last: tuple[tuple[int, int], EventResults, tuple[StoredRound, ...]] | None = None

    def read(self) -> EventResults | None:
        """The event's results, equal to ``store.event_results()`` (None before the event
        is seeded)."""
        last = self._read()
        return None if last is None else last[1]

    def rounds(self) -> tuple[StoredRound, ...]:
        """The stored rounds, equal to ``store.rounds()``, as the results were read with
        (:meth:`read`; before the event is seeded, read from the store)."""
        last = self._read()
        return tuple(self.store.rounds()) if last is None else last[2]

    def _read(self) -> tuple[tuple[int, int], EventResults, tuple[StoredRound, ...]] | None:
        fixed = self.fixed if self.fixed is not None else self._read_fixed()
        if fixed is None:
            return None
        conn = self.store.conn
        changes = queries.change_mark(conn)  # before the reads: a write during them is seen
        if self._last is not None and self._last[0] == changes:
            return self._last
        through = self.kept[-1].number if self.kept else 0
        if self.kept and queries.kept_mark(conn, through, self._mark[0]) != self._mark[1]:
            # changed: all read again
            self.kept, self._kept_rounds, self._mark, through = (), (), (0, (0, "")), 0
        stored = self.store.rounds(after=through)
        rows = queries.result_rows_after(conn, through)
        later = results_of(fixed[0], fixed[1], stored, rows, withdrawals(conn))
        results = EventResults(seeds=later.seeds, games_per_match=later.games_per_match,
                               rounds=self.kept + later.rounds, withdrawn=later.withdrawn)
        self._last = (changes, results, self._kept_rounds + tuple(stored))
        self._keep(later.rounds, stored, rows, changes)
        return self._last

    def _read_fixed(self) -> tuple[tuple[str, ...], int] | None:
        """The seeds and games per match (kept once the event exists: written with it)."""
        gpm = self.store.meta("games_per_match")
        if gpm is None:
            return None
        fixed = (tuple(self.store.seeds()), int(gpm))
        if fixed[0]:
            self.fixed = fixed
        return fixed

    def _keep(self, rounds: tuple[RoundResult, ...], stored: list[StoredRound],
              rows: list[tuple[Any, ...]], changes: tuple[int, int]) -> None:
        """Keep the leading rounds of ``rounds`` (read from ``stored``, their games from
        ``rows``) that are complete, with the mark of their games; not when anything was
        written since ``changes`` (taken before the read: the mark must be that of the games
        read, so that a change after the read is seen at the next read)."""
        done = 0
        while done < len(rounds) and rounds[done].complete and stored[done].state == "complete":
            done += 1
        if not done:
            return
        through = rounds[done - 1].number
        top = max([self._mark[0], *(r[8] for r in rows if r[0] <= through and r[8] is not None)])
        # the pairs up to the last top are those the read found unchanged: only the new read
        count, added = queries.kept_mark(self.store.conn, through, top, self._mark[0])
        if queries.change_mark(self.store.conn) != changes:
            return  # written during the read: kept at a later read
        self.kept += rounds[:done]
        self._kept_rounds += tuple(stored[:done])
        self._mark = (top, (count, " ".join(p for p in (self._mark[1][1], added) if p)))


__all__ = ["KeptResults"]
