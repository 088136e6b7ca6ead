"""What to play next: a round's pairing and playing order, its openings, the extra pairs of a
tie for first place, and the games of engines the TD withdrew (all read from the store; the
pairing itself is a pure rule, runner.domain.pairing).

Every decision is written before anything depends on it (through runner.service.writes) and
reused unchanged on resume.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runner.books.openings import opening_for_match
from runner.config.typed import Config, EngineConfig
from runner.domain.models import GameSpec, Opening
from runner.domain.pairing import RoundRecord, ScheduledGame, extra_pair_games, pair_round
from runner.domain.standings import first_place_tie
from runner.play.gpus import GpuPool
from runner.service.gamespec import game_spec
from runner.service.results import KeptResults
from runner.service.td.rules import forfeits_due
from runner.service.writes import EventWrites
from runner.store import queries
from runner.store.database import Store, StoredGame, StoredRound, scheduled_game
from runner.store.tdstore import swiss_games, withdrawn_before

Say = Callable[..., None]


def games_text(rows: Sequence[dict[str, Any]]) -> str:
    """A round's games as the console names them, White first as in every game line:
    "game 1 HoiChess vs Toga II, game 2 Toga II vs HoiChess"."""
    return ", ".join(f"game {r['game_id']} {r['white']} vs {r['black']}" for r in rows)


@dataclass
class Schedule:
    """The event's plan as stored: rounds, their games and openings, the games still due."""

    config: Config
    store: Store
    writes: EventWrites
    say: Say
    book: list[Opening] = field(default_factory=list)
    builds: dict[str, str] = field(default_factory=dict)  # engine -> allowed build digest
    gpus: GpuPool | None = None  # the event's devices on this machine (None: no Gpus here)
    _total_games: int | None = None  # total_games() as last read (None: read it again)

    def __post_init__(self) -> None:
        # the results as the loop reads them after each round (its pairings' history, the
        # round's summary and standings: runner.service.views.roundstandings)
        self.results = KeptResults(self.store)
        self._records: dict[int, tuple[StoredRound, RoundRecord]] = {}  # history(), by round
        # the round last scheduled here, its games as stored, and the store's change mark
        # once they were (None: not yet written): unfinished() without reading them back
        self._scheduled: tuple[int, list[StoredGame], tuple[int, int] | None] | None = None
        self._order: list[int] | None = None  # the event's opening order (read once)
        # the last unfinished(): its round, its games' ids, the store's change mark then
        self._listed: tuple[int, set[int], tuple[int, int]] | None = None

    async def written(self) -> None:
        """Wait until the schedule's writes (a round paired) are committed; the counts are
        read again."""
        await self.writes.written()
        self.changed()
        if self._scheduled is not None and self._scheduled[2] is None:
            self._scheduled = (*self._scheduled[:2], queries.change_mark(self.store.conn))

    def changed(self) -> None:
        """The schedule may have changed (a round paired, a TD withdrawal or rewind)."""
        self._total_games = None

    def total_games(self) -> int:
        """The event's games: the Swiss rounds' (fewer after a withdrawal) and the extra
        tie-break games scheduled; read again after :meth:`changed`, else from memory (every
        game's start line asks for it)."""
        if self._total_games is None:
            s = self.config.swiss
            self._total_games = queries.extra_game_count(self.store.conn) + swiss_games(
                self.store.conn, len(self.config.engines), s.games_per_match, s.rounds)
        return self._total_games

    def spec_for(self, game: StoredGame) -> GameSpec:
        """The game's spec; with the event's GPUs, the devices its game holds handed to its
        engines and named in its record (none held: every engine gets none; docs/gpus.md)."""
        spec = game_spec(self.config, self.store, game, self.builds)
        return self.gpus.hand_over(spec) if self.gpus is not None else spec

    async def next_with_devices(self, game: StoredGame, queue: list[StoredGame],
                           stopping: Callable[[], bool]) -> StoredGame:
        """The game to start now: ``game`` without the event's GPUs; with them, the first of
        ``game`` and ``queue`` whose devices are free, its devices held until
        :meth:`free_devices` (waits until some are; taken out of ``queue``; ``game`` when
        ``stopping``)."""
        if self.gpus is None:
            return game
        queue.insert(0, game)
        picked = await self.gpus.next_game(queue, self._engines_of, lambda g: g.game_id,
                                           stopping, lambda text: self.say(text, always=True))
        return picked if picked is not None else game

    def free_devices(self, game_id: int) -> None:
        """The game ended or was not started: its GPUs (if any) are free again."""
        if self.gpus is not None:
            self.gpus.give_back(game_id)

    def _engines_of(self, game: StoredGame) -> tuple[EngineConfig, EngineConfig]:
        return self.config.engine(game.white), self.config.engine(game.black)

    def history(self, rounds: Sequence[StoredRound]) -> list[RoundRecord]:
        """Finished scheduled rounds as pairing's RoundRecords (their finished games in
        playing order: game_in_round follows the game ids within a round); a round's record
        is made again only when its stored round or its games are other objects (kept ones
        are the same: :class:`KeptResults`)."""
        results = self.results.read()
        played = {r.number: r.games for r in results.rounds} if results is not None else {}
        records: dict[int, tuple[StoredRound, RoundRecord]] = {}
        for rd in rounds:
            if rd.extra:
                continue
            games = played.get(rd.number, ())
            entry = self._records.get(rd.number)
            if entry is None or entry[0] is not rd or entry[1].games is not games:
                entry = (rd, RoundRecord(number=rd.number, pairs=rd.pairs, games=games,
                                         bye=rd.bye))
            records[rd.number] = entry
        self._records = records
        return [record for _, record in records.values()]

    def first_open_round(self) -> int | None:
        """The first Swiss round not complete (None: all are), read from the store each
        time: a TD decision applied during a round may have voided rounds."""
        states = queries.round_states(self.store.conn)
        return next((n for n in range(1, self.config.swiss.rounds + 1)
                     if states.get(n) != "complete"), None)

    def is_paired(self, number: int) -> bool:
        return queries.round_state(self.store.conn, number) is not None

    def schedule_games(self, number: int, games: Sequence[ScheduledGame],
                       pairs: Sequence[tuple[str, str]], bye: str | None, dropped: Sequence[int],
                       excluded: frozenset[int], extra: bool) -> str:
        """Assign ids and openings (one per match, in playing order) and store the round;
        returns its games as the console names them (:func:`games_text`)."""
        if self.book and self._order is None:  # (stored with the event, never changed)
            self._order = self.store.opening_order()
        order = self._order if self.book and self._order is not None else []
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
        self.writes.write(lambda store: store.add_round(number, pairs, bye, dropped, excluded,
                                                        rows, extra=extra))
        self._total_games = None
        self._scheduled = (number, [scheduled_game(number, row, extra) for row in rows], None)
        return games_text(rows)

    def pair(self, number: int) -> None:
        """Pair Swiss round ``number`` (runner.domain.pairing) and store it."""
        stored = self.results.rounds()  # store.rounds(), as the history's results were read
        excluded = stored[-1].excluded if stored else frozenset()
        s = self.config.swiss
        records = self.history(stored)
        # the seeds and withdrawals as the same read has them (else read here)
        results = self.results.read()
        seeds = list(results.seeds) if results is not None else self.store.seeds()
        withdrawn = frozenset(engine for engine, first in results.withdrawn
                              if first <= number) if results is not None \
            else withdrawn_before(self.store.conn, number)
        plan = pair_round(seeds, records, number, s.games_per_match,
                          s.double_round_schedule, excluded, withdrawn)
        text = self.schedule_games(number, plan.games, plan.pairs, plan.bye,
                                   plan.dropped_history_rounds, frozenset(plan.excluded),
                                   extra=False)
        self.say(f"Round {number} pairings, White vs Black: {text}"
                 + (f"; bye: {plan.bye}" if plan.bye else ""))
        if withdrawn:
            self.say(f"Round {number}: not paired (withdrawn by the TD): "
                     f"{', '.join(sorted(withdrawn))}")
        if plan.dropped_history_rounds:
            self.say(f"Round {number}: no viable pairing without repeats; removed round(s) "
                     f"{', '.join(map(str, plan.dropped_history_rounds))} from the encounter "
                     "history")

    def pair_extra(self, k: int) -> bool:
        """Schedule extra pair ``k`` when two engines share first place (seed 003); False
        when no extra pair is due (no such tie, or a tied engine was withdrawn)."""
        s = self.config.swiss
        number = s.rounds + k
        results = self.results.read()
        tie = first_place_tie(results) if results is not None else None
        out = set(tie or ()) & withdrawn_before(self.store.conn, number)
        if tie is not None and out:
            self.say(f"{' and '.join(tie)} share first place, but the TD withdrew "
                     f"{' and '.join(sorted(out))}: no extra pair, the tiebreaks decide",
                     always=True)
            return False
        if tie is None:
            if k > 1:
                self.say(f"Extra pairs decided the tie for first place after {k - 1} "
                         "pair(s)", always=True)
            return False
        a, b = sorted(tie, key=self.store.seeds().index)
        if k == 1:
            self.say(f"{a} and {b} share first place: extra pairs decide the winner "
                     f"(at most {s.max_extra_pairs})", always=True)
        games = extra_pair_games(a, b, s.games_per_match, k)
        text = self.schedule_games(number, games, ((a, b),), None, (), frozenset(), extra=True)
        self.say(f"Extra pair {k}, White vs Black: {text}", always=True)
        return True

    def tie_left(self) -> bool:
        """Do two or more engines still share first place?"""
        results = self.results.read()
        return results is not None and first_place_tie(results) is not None

    def unfinished(self, number: int) -> list[StoredGame]:
        """Round ``number``'s games not finished, in playing order: those this schedule
        just stored when nothing was written since (:func:`queries.change_mark`), else read."""
        known, mark = self._scheduled, queries.change_mark(self.store.conn)
        if known is not None and known[0] == number and known[2] == mark:
            games = list(known[1])
        else:
            self._scheduled = None
            games = [g for g in self.store.games(number) if g.status != "finished"]
        self._listed = (number, {g.game_id for g in games}, mark)
        return games

    def listed_unchanged(self, game: StoredGame) -> bool:
        """Was ``game`` among the games the last :meth:`unfinished` listed, with nothing
        written to the store since? (It is then still scheduled, and no forfeit is due for
        it that the loop's check right after the listing did not find.)"""
        listed = self._listed
        return listed is not None and listed[0] == game.round and game.game_id in listed[1] \
            and listed[2] == queries.change_mark(self.store.conn)

    def round_done(self, number: int) -> bool:
        return queries.unfinished_count(self.store.conn, number) == 0

    def forfeits(self, games: list[StoredGame]) -> dict[int, str]:
        """game_id -> the engine that loses it by forfeit (withdrawn by the TD with --now)."""
        return forfeits_due(self.store, games)

    def still_scheduled(self, game: StoredGame) -> bool:
        """False when a TD decision applied during the round settled the game: recorded (a
        forfeit) or voided with its round (a rewind)."""
        status = queries.game_status(self.store.conn, game.game_id, game.round, game.white,
                                     game.black)
        return status is not None and status != "finished"


__all__ = ["Schedule"]
