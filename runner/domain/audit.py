"""`swiss-runner audit`: replay a finished event's PGN through the TCEC Swiss pairing rules.

For every round the pairing is computed from the seeds and the results of the earlier rounds
as actually played, and compared with the games of the round: pairs, colours, playing order
and (odd player counts) the bye. Only the tags Round "R.G", White, Black and Result are read.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from runner.domain.models import PlayedGame, RoundResult
from runner.domain.pairing import PairingError, RoundRecord, pair_round, record_from_result
from runner.errors import BadInput

_ROUND_RE = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


class AuditInputError(BadInput, ValueError):
    """Bad input for the audit; the message names the file and the game."""


@dataclass(frozen=True)
class PgnGame:
    index: int  # 1-based position of the game in the PGN file
    round: int
    game_in_round: int
    white: str
    black: str
    result: str
    extra: bool = False  # a game of an extra tie-break pair (TieBreakPair tag)
    withdrawn: tuple[str, ...] = ()  # engines the TD withdrew before the round (Withdrawn tag)

    @property
    def label(self) -> str:
        return f'game {self.index} (Round "{self.round}.{self.game_in_round}")'


@dataclass
class RoundAudit:
    number: int
    computed: list[tuple[str, str]]
    played: list[tuple[str, str]]
    bye: str | None  # computed bye
    played_bye: str | None
    dropped_history_rounds: list[int]
    error: str | None = None  # the rules cannot pair this round from the games before it
    withdrawn: tuple[str, ...] = ()  # engines the TD withdrew (Withdrawn tags): not paired

    @property
    def match(self) -> bool:
        return self.error is None and self.computed == self.played and self.bye == self.played_bye

    def to_json(self) -> dict[str, object]:
        return {"round": self.number, "computed": [list(g) for g in self.computed],
                "bye": self.bye, "played": [list(g) for g in self.played],
                "dropped_history_rounds": list(self.dropped_history_rounds),
                **({"withdrawn": list(self.withdrawn)} if self.withdrawn else {}),
                "match": self.match}


@dataclass
class AuditReport:
    players: int
    games_per_match: int
    schedule: str
    rounds: list[RoundAudit] = field(default_factory=list)
    extra_games: int = 0  # extra tie-break games set aside (not in the JSON, as specified)

    @property
    def all_match(self) -> bool:
        return all(r.match for r in self.rounds)

    def to_json(self) -> dict[str, object]:
        return {"players": self.players, "games_per_match": self.games_per_match,
                "schedule": self.schedule, "rounds": [r.to_json() for r in self.rounds],
                "all_match": self.all_match}


# --------------------------------------------------------------------------------- input






def _group_rounds(games: Sequence[PgnGame], seeds: Sequence[str],
                  source: str) -> dict[int, list[PgnGame]]:
    seed_set = set(seeds)
    rounds: dict[int, list[PgnGame]] = defaultdict(list)
    labels: dict[tuple[int, int], PgnGame] = {}
    for game in games:
        for name in (game.white, game.black):
            if name not in seed_set:
                raise AuditInputError(f"{source}: {game.label}: player {name!r} is not in the "
                                      f"seeds file")
        if game.white == game.black:
            raise AuditInputError(f"{source}: {game.label}: {game.white!r} plays itself")
        key = (game.round, game.game_in_round)
        if key in labels:
            raise AuditInputError(f"{source}: {game.label}: Round \"{game.round}."
                                  f"{game.game_in_round}\" already used by game "
                                  f"{labels[key].index}")
        labels[key] = game
        rounds[game.round].append(game)
    numbers = sorted(rounds)
    for expected, number in enumerate(numbers, 1):
        if number != expected:
            raise AuditInputError(f"{source}: round {expected} has no games but round {number} "
                                  f"has (game {rounds[number][0].index})")
    for number in numbers:
        rounds[number].sort(key=lambda g: g.game_in_round)
    return dict(sorted(rounds.items()))


def infer_format(rounds: dict[int, list[PgnGame]]) -> tuple[int, str]:
    """games per match: 2 when some pair meets twice in a round, else 1 (a double-round
    event with a game missing is still double, and the missing game is then reported).
    Schedule: consecutive when every pair's games are back to back, else split."""
    double = any(
        any(c >= 2 for c in Counter(frozenset((g.white, g.black)) for g in games).values())
        for games in rounds.values())
    if not double:
        return 1, "split"
    consecutive = all(
        all(frozenset((games[i].white, games[i].black))
            == frozenset((games[i + 1].white, games[i + 1].black))
            for i in range(0, len(games) - 1, 2))
        for games in rounds.values())
    return 2, "consecutive" if consecutive else "split"


def _check_round(number: int, games: Sequence[PgnGame], games_per_match: int,
                 source: str) -> None:
    """Every player of the round meets one opponent, exactly games_per_match times."""
    opponent: dict[str, str] = {}
    count: Counter[frozenset[str]] = Counter()
    for game in games:
        for me, other in ((game.white, game.black), (game.black, game.white)):
            if me in opponent and opponent[me] != other:
                raise AuditInputError(f"{source}: {game.label}: {me!r} already plays "
                                      f"{opponent[me]!r} in round {number}")
            opponent[me] = other
        pair = frozenset((game.white, game.black))
        count[pair] += 1
        if count[pair] > games_per_match:
            raise AuditInputError(f"{source}: {game.label}: {game.white!r} and {game.black!r} "
                                  f"meet more than {games_per_match} time(s) in round {number}")
    for pair, c in count.items():
        if c != games_per_match:
            first = next(g for g in games if frozenset((g.white, g.black)) == pair)
            raise AuditInputError(f"{source}: {first.label}: {first.white!r} and {first.black!r} "
                                  f"play {c} game(s) in round {number}, expected "
                                  f"{games_per_match} per match")


# --------------------------------------------------------------------------------- audit


def audit_event(games: Sequence[PgnGame], seeds: Sequence[str], games_per_match: int | None = None,
                schedule: str | None = None, source: str = "PGN") -> AuditReport:
    """Replay the event round by round; raises AuditInputError on bad input.

    Games of extra tie-break pairs (PGN tag TieBreakPair) are set aside: they are played
    after the Swiss rounds between two engines tied for first, not paired by the rules.
    """
    extra_games = sum(1 for g in games if g.extra)
    games = [g for g in games if not g.extra]
    if not games:
        raise AuditInputError(f"{source}: no Swiss games found (only extra tie-break games)")
    rounds = _group_rounds(games, seeds, source)
    inferred_gpm, inferred_schedule = infer_format(rounds)
    gpm = games_per_match or inferred_gpm
    sched = schedule or (inferred_schedule if gpm == inferred_gpm else "split")
    for number, round_games in rounds.items():
        _check_round(number, round_games, gpm, source)
    report = AuditReport(players=len(seeds), games_per_match=gpm, schedule=sched,
                         extra_games=extra_games)
    history: list[RoundRecord] = []
    excluded: frozenset[int] = frozenset()
    withdrawn: frozenset[str] = frozenset()
    for number, round_games in rounds.items():
        # a withdrawal stands for the rest of the event, whether or not a game repeats it
        withdrawn = withdrawn.union(*(g.withdrawn for g in round_games))
        for name in withdrawn:
            if name not in seeds:
                raise AuditInputError(f"{source}: round {number}: withdrawn engine {name!r} "
                                      "is not in the seeds file")
        playing = {g.white for g in round_games} | {g.black for g in round_games}
        missing = [name for name in seeds if name not in playing and name not in withdrawn]
        played_bye = missing[0] if len(missing) == 1 else None
        played = [(g.white, g.black) for g in round_games]
        try:
            plan = pair_round(seeds, history, number, gpm, sched, excluded, withdrawn)
        except PairingError as exc:
            # The games before this round break the rules so badly (e.g. colours) that no
            # pairing exists: a mismatch of this round, not bad input; later rounds go on.
            report.rounds.append(RoundAudit(number, [], played, None, played_bye, [],
                                            error=str(exc).removeprefix(f"round {number}: "),
                                            withdrawn=_in_seed_order(withdrawn, seeds)))
        else:
            excluded = plan.excluded
            report.rounds.append(RoundAudit(
                number=number, computed=[(g.white, g.black) for g in plan.games], played=played,
                bye=plan.bye, played_bye=played_bye,
                dropped_history_rounds=list(plan.dropped_history_rounds),
                withdrawn=_in_seed_order(withdrawn, seeds)))
        history.append(record_from_result(RoundResult(
            number=number,
            games=tuple(PlayedGame(g.round, g.game_in_round, g.white, g.black, g.result)
                        for g in round_games),
            bye=played_bye if (len(seeds) - len(withdrawn)) % 2 else None)))
    return report


def _in_seed_order(names: frozenset[str], seeds: Sequence[str]) -> tuple[str, ...]:
    return tuple(s for s in seeds if s in names)


def parse_withdrawn(value: str, seeds: Sequence[str]) -> tuple[str, ...]:
    """The engines of a ``Withdrawn`` tag: seed names joined by ", " in seed order (names
    may hold ", " themselves: they are matched against the seeds, longest first). A part
    that is no seed is kept as it is, for the audit to name it."""
    names: list[str] = []
    rest = value.strip()
    by_length = sorted(seeds, key=len, reverse=True)
    while rest:
        name = next((s for s in by_length if rest == s or rest.startswith(s + ", ")), None)
        if name is None:
            name, _, _ = rest.partition(", ")
        names.append(name.strip())
        rest = rest[len(name):].removeprefix(",").strip()
    return tuple(n for n in names if n)


def describe_round(audit: RoundAudit) -> str:
    """One human line for a round."""
    games = len(audit.played)
    notes = []
    if audit.dropped_history_rounds:
        notes.append("encounter history dropped: round(s) "
                     + ", ".join(map(str, audit.dropped_history_rounds)))
    if audit.bye is not None or audit.played_bye is not None:
        notes.append(f"bye {audit.bye}")
    if audit.withdrawn:
        notes.append(f"withdrawn: {', '.join(audit.withdrawn)}")
    if audit.error is not None:
        return (f"round {audit.number}: mismatch: the rules cannot pair this round from the "
                f"games before it ({audit.error})")
    if audit.match:
        extra = f"; {'; '.join(notes)}" if notes else ""
        return f"round {audit.number}: match ({games} games{extra})"
    diffs = []
    for i in range(max(len(audit.computed), len(audit.played))):
        c = audit.computed[i] if i < len(audit.computed) else None
        p = audit.played[i] if i < len(audit.played) else None
        if c != p:
            cs = f"{c[0]} - {c[1]}" if c else "(none)"
            ps = f"{p[0]} - {p[1]}" if p else "(none)"
            diffs.append(f"game {audit.number}.{i + 1} computed {cs}, played {ps}")
    if audit.bye != audit.played_bye:
        diffs.append(f"bye computed {audit.bye}, played {audit.played_bye}")
    extra = f" ({'; '.join(notes)})" if audit.dropped_history_rounds else ""
    return f"round {audit.number}: MISMATCH{extra}: " + "; ".join(diffs)


