"""The event's results as the run loop reads them after each round (the next pairing's
history, the round's summary and standings), without reading again what a finished round
cannot change.
"""

from __future__ import annotations

from typing import Any

from runner.domain.models import EventResults, RoundResult
from runner.store import queries
from runner.store.database import Store, results_of
from runner.store.tdstore import withdrawals


class KeptResults:
    """``store.event_results()``, read in part: the results of the rounds complete at the
    last read are kept, and each read reads only the games of the later rounds, and the
    kept ones again when the store says one of their games changed (a TD rewind voided,
    put back or replayed it: :func:`queries.finished_mark`). The withdrawals and the rounds
    after the kept ones are read each time. One belongs to one event's store."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.fixed: tuple[tuple[str, ...], int] | None = None  # seeds, games per match
        self.kept: tuple[RoundResult, ...] = ()  # rounds 1..n, complete when read
        self._mark: tuple[int, int, int] = (0, 0, 0)  # queries.finished_mark of them

    def read(self) -> EventResults | None:
        """The event's results, equal to ``store.event_results()`` (None before the event
        is seeded)."""
        fixed = self.fixed if self.fixed is not None else self._read_fixed()
        if fixed is None:
            return None
        conn = self.store.conn
        through = self.kept[-1].number if self.kept else 0
        if self.kept and queries.finished_mark(conn, through) != self._mark:
            self.kept, self._mark, through = (), (0, 0, 0), 0  # changed: all read again
        stored = self.store.rounds(after=through)
        rows = queries.result_rows_after(conn, through)
        later = results_of(fixed[0], fixed[1], stored, rows, withdrawals(conn))
        results = EventResults(seeds=later.seeds, games_per_match=later.games_per_match,
                               rounds=self.kept + later.rounds, withdrawn=later.withdrawn)
        self._keep(later.rounds, [rd.state == "complete" for rd in stored], rows)
        return results

    def _read_fixed(self) -> tuple[tuple[str, ...], int] | None:
        """The seeds and games per match (kept once the event exists: written with it)."""
        gpm = self.store.meta("games_per_match")
        if gpm is None:
            return None
        fixed = (tuple(self.store.seeds()), int(gpm))
        if fixed[0]:
            self.fixed = fixed
        return fixed

    def _keep(self, rounds: tuple[RoundResult, ...], stored_complete: list[bool],
              rows: list[tuple[Any, ...]]) -> None:
        """Keep the leading rounds of ``rounds`` that are complete, with the mark of their
        games as read (``rows``: so a change after the read is seen at the next read)."""
        done = 0
        while done < len(rounds) and rounds[done].complete and stored_complete[done]:
            done += 1
        if not done:
            return
        through = rounds[done - 1].number
        seqs = [r[8] for r in rows if r[0] <= through]
        self.kept += rounds[:done]
        self._mark = (self._mark[0] + len(seqs), self._mark[1] + sum(s is not None for s in seqs),
                      max([self._mark[2], *(s for s in seqs if s is not None)]))


__all__ = ["KeptResults"]
