"""The event's results and standings as the run loop shows them after each round (the
console's standings table, the ``round_ended`` alert), made without reading or ranking again
what a finished round cannot change.
"""

from __future__ import annotations

from runner.config.typed import Config
from runner.domain.models import EventResults
from runner.domain.standings import Tally, tally
from runner.errors import RecordInvalid
from runner.render.standings_report import CellMemo
from runner.service.results import KeptResults
from runner.service.views.snapshotdoc import standings_text
from runner.store.database import Store


class RoundStandings:
    """The standings table after each round, of the results the schedule keeps
    (:class:`KeptResults`): the ranking goes on from a tally of the kept rounds and is
    shared with the snapshot (snapshotdoc.ranked); the table is rendered once per change of
    the results, with the cells of the rounds in the last one kept."""

    def __init__(self, config: Config, store: Store, results: KeptResults) -> None:
        self.config, self.store, self.kept = config, store, results
        self._text: tuple[EventResults, str | None] | None = None  # the last table made
        self._tally: Tally | None = None  # the counts of the kept rounds (when made)
        self._cells: CellMemo = {}  # each round's cells in the last table

    def results(self) -> EventResults | None:
        """The event's results (:meth:`KeptResults.read`)."""
        return self.kept.read()

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
        kept, fixed = self.kept.kept, self.kept.fixed
        if not kept or fixed is None:
            return None
        if self._tally is None or self._tally.rounds != kept:
            try:
                self._tally = tally(EventResults(*fixed, kept), self._tally)
            except RecordInvalid:
                self._tally = None
        return self._tally


__all__ = ["RoundStandings"]
