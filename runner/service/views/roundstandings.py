"""The event's results and standings as the run loop shows them after each round (the
console's standings table, the ``round_ended`` alert), made without reading or ranking again
what a finished round cannot change.
"""

from __future__ import annotations

from typing import Any

from runner.config.typed import Config
from runner.domain.models import EventResults, RoundResult
from runner.domain.standings import Tally, tally
from runner.errors import RecordInvalid
from runner.render.standings_report import CellMemo
from runner.service.views.snapshotdoc import standings_text
from runner.store import queries
from runner.store.database import Store, results_of
from runner.store.tdstore import withdrawals


class RoundStandings:
    """The results of the rounds complete at the last look are kept; each look reads only
    the games of the later rounds, and the kept ones again when the store says one of
    their games changed (a TD rewind voided, put back or replayed it:
    :func:`queries.finished_mark`). The withdrawals and the rounds after the kept ones are
    read each time. The ranking goes on from a tally of the kept rounds and is shared with
    the snapshot (snapshotdoc.ranked); the table is rendered once per change of the
    results, with the cells of the rounds in the last one kept. One belongs to one event's
    store."""

    def __init__(self, config: Config, store: Store) -> None:
        self.config, self.store = config, store
        self._fixed: tuple[tuple[str, ...], int] | None = None  # seeds, games per match
        self._kept: tuple[RoundResult, ...] = ()  # rounds 1..n, complete when read
        self._mark: tuple[int, int, int] = (0, 0, 0)  # queries.finished_mark of them
        self._text: tuple[EventResults, str | None] | None = None  # the last table made
        self._tally: Tally | None = None  # the counts of the kept rounds (when made)
        self._cells: CellMemo = {}  # each round's cells in the last table

    def results(self) -> EventResults | None:
        """``store.event_results()``, equal to it (None before the event is seeded)."""
        fixed = self._fixed if self._fixed is not None else self._read_fixed()
        if fixed is None:
            return None
        conn = self.store.conn
        through = self._kept[-1].number if self._kept else 0
        if self._kept and queries.finished_mark(conn, through) != self._mark:
            self._kept, through, self._tally = (), 0, None  # a kept round changed: all read again
        stored = self.store.rounds(after=through)
        rows = queries.result_rows_after(conn, through)
        later = results_of(fixed[0], fixed[1], stored, rows, withdrawals(conn))
        results = EventResults(seeds=later.seeds, games_per_match=later.games_per_match,
                               rounds=self._kept + later.rounds, withdrawn=later.withdrawn)
        self._keep(later.rounds, [rd.state == "complete" for rd in stored], rows)
        return results

    def _read_fixed(self) -> tuple[tuple[str, ...], int] | None:
        """The seeds and games per match (kept once the event exists: written with it)."""
        gpm = self.store.meta("games_per_match")
        if gpm is None:
            return None
        fixed = (tuple(self.store.seeds()), int(gpm))
        if fixed[0]:
            self._fixed = fixed
        return fixed

    def _keep(self, rounds: tuple[RoundResult, ...], stored_complete: list[bool],
              rows: list[tuple[Any, ...]]) -> None:
        """Keep the leading rounds of ``rounds`` that are complete, with the mark of their
        games as read (``rows``: so a change after the read is seen at the next look)."""
        done = 0
        while done < len(rounds) and rounds[done].complete and stored_complete[done]:
            done += 1
        if not done:
            return
        through = rounds[done - 1].number
        seqs = [r[8] for r in rows if r[0] <= through]
        self._kept += rounds[:done]
        self._mark = (self._mark[0] + len(seqs), self._mark[1] + sum(s is not None for s in seqs),
                      max([self._mark[2], *(s for s in seqs if s is not None)]))

    def text(self, results: EventResults | None) -> str | None:
        """The standings table of ``results`` (:func:`standings_text`), made again only
        when they changed."""
        if results is None:
            return None
        if self._text is None or self._text[0] != results:
            self._text = (results, standings_text(self.config, self.store, results,
                                                  self._counted(), self._cells))
        return self._text[1]

    def _counted(self) -> Tally | None:
        """The tally of the kept rounds, made on from the last one (None when they cannot
        be counted: the ranking then counts every round, and says what is wrong)."""
        if not self._kept or self._fixed is None:
            return None
        if self._tally is None or len(self._tally.rounds) != len(self._kept):
            try:
                self._tally = tally(EventResults(*self._fixed, self._kept), self._tally)
            except RecordInvalid:
                self._tally = None
        return self._tally


__all__ = ["RoundStandings"]
