"""Final ranking and TCEC tiebreaks (pure, no I/O; runner.render.standings_report shows them).

Ranking (seed 000 "final ranking", seed 002 section 3, tcec-rules.md section 5):

1. Score, descending (a BYE is worth 1 point per game of the match).
2. BYEs received, ascending.
3. Extra tie-break pairs: only for two engines tied for first place on score and BYEs that
   played extra games against each other; the extra-game score decides.
4. The configured tiebreak chain (``Tiebreaks:``), TCEC default SonnebornBerger, RMobility,
   Wins, DirectEncounter. Each criterion is applied to the group still tied at that point;
   DirectEncounter is re-applied to every smaller group it splits off.
5. Engines tied after everything share the place ("2-3"); the next place skips.

Every tiebreak sees only the scheduled games: extra pairs never count. All values are exact
``Fraction``s. Bye treatment of each tiebreak is documented in docs/standings.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from runner.config.typed import TIEBREAKS
from runner.domain.models import RESULTS, EventResults, PlayedGame, RoundResult, white_score
from runner.domain.rmobility import bye_points, rmobility_points
from runner.errors import RecordInvalid

if TYPE_CHECKING:
    from runner.config.typed import Config
    from runner.domain.ratings import RatingOptions, Ratings

SHORT = {
    "SonnebornBerger": "SB", "RMobility": "RMob", "Wins": "Wins", "DirectEncounter": "DE",
    "Buchholz": "Buch", "MedianBuchholz": "MBuch", "ProgressiveScore": "Prog",
    "BlackGames": "Black", "Score": "Score", "Byes": "Byes", "ExtraPairs": "Extra",
}


# --------------------------------------------------------------------------- data


class GameView(NamedTuple):
    """One game from one player's side (a named tuple: the standings make one per game and
    side each time they are computed, after every game and round)."""

    round: int
    game_in_round: int
    opponent: str
    color: str  # "w" | "b"
    points: Fraction
    result: str
    rmobility: str | None
    extra: bool


@dataclass(frozen=True)
class StandingRow:
    """One engine in the final ranking. ``tiebreaks`` holds every name of config.TIEBREAKS."""

    rank: int  # 1-based row number in the ranking (unique)
    place: int  # shared place: 1 + number of engines ranked strictly above
    place_label: str  # "3" or "2-3" when shared
    name: str
    seed: int
    score: Fraction
    games: int
    wins: int
    draws: int
    losses: int
    byes: int
    white_games: int
    black_games: int
    tiebreaks: dict[str, Fraction | None]
    decided_by: str | None  # criterion that ranks this engine above the next row (None: tied/last)
    extra_score: Fraction | None = None  # points in extra tie-break games (None: played none)
    extra_games: int = 0
    history: tuple[GameView, ...] = field(default=(), repr=False)
    bye_rounds: tuple[int, ...] = ()
    chain: tuple[str, ...] = ()  # the tiebreak chain the ranking used (for rendering)
    withdrawn_from: int | None = None  # withdrawn by the TD: the first round it was not paired

    @property
    def shared(self) -> bool:
        return "-" in self.place_label

    @property
    def label(self) -> str:
        """The engine's name as the tables show it: a withdrawn engine is marked."""
        return self.name if self.withdrawn_from is None else f"{self.name} (withdrawn)"


@dataclass
class _Player:
    name: str
    seed: int
    score: Fraction = Fraction(0)
    halves: int = 0  # the score in half points while the games are added (_collect)
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    byes: int = 0
    white: int = 0
    black: int = 0
    sb: Fraction = Fraction(0)
    rmob: Fraction = Fraction(0)
    rmob_wins: int = 0  # decisive games won: a whole r-mobility point each (beside rmob)
    extra_score: Fraction = Fraction(0)
    extra_halves: int = 0
    extra_games: int = 0
    history: list[GameView] = field(default_factory=list)
    bye_rounds: list[int] = field(default_factory=list)
    round_halves: dict[int, int] = field(default_factory=lambda: defaultdict(int))  # points x 2
    round_opponent: dict[int, str] = field(default_factory=dict)
    points_vs: dict[str, int] = field(default_factory=lambda: defaultdict(int))  # half points

    def copy(self) -> _Player:
        """A copy to add games to (this one is left as it is): its fields as they are, its
        lists and dicts copied (made without ``dataclasses.replace``, which calls
        ``__init__`` through every field's default: the runner copies each engine's counts
        after every round)."""
        new = object.__new__(_Player)
        new.__dict__.update(self.__dict__)
        new.history, new.bye_rounds = list(self.history), list(self.bye_rounds)
        new.round_halves = defaultdict(int, self.round_halves)
        new.round_opponent = dict(self.round_opponent)
        new.points_vs = defaultdict(int, self.points_vs)
        return new


@dataclass(frozen=True)
class Tally:
    """Every engine's counts after ``rounds`` (:func:`tally`): what :func:`compute_standings`
    goes on from when the results it ranks begin with the same rounds, so a caller that
    ranks an event after each round adds only the new rounds' games. Its counts are never
    changed (a ranking of exactly its rounds uses its players as they are, and sets only
    what it derives from their counts: the same values each time)."""

    seeds: tuple[str, ...]
    games_per_match: int
    rounds: tuple[RoundResult, ...]  # in number order
    players: dict[str, _Player]


def tally(results: EventResults, base: Tally | None = None) -> Tally:
    """The counts of ``results`` (its rounds in number order), going on from ``base`` when
    its rounds are the first of them. Raises RecordInvalid as :func:`compute_standings`."""
    rounds = tuple(sorted(results.rounds, key=lambda r: r.number))
    return Tally(results.seeds, results.games_per_match, rounds, _counted(results, rounds, base))


# --------------------------------------------------------------------------- statistics


# Game and bye points are whole or half points: they are added up as half points (ints),
# which gives exactly the Fractions adding them up as Fractions would, several times faster
# (the runner ranks the event after every game).
_HALVES = {r: (round(2 * white_score(r)), 2 - round(2 * white_score(r))) for r in RESULTS}
_POINTS = {h: Fraction(h, 2) for h in (0, 1, 2)}


def _counted(results: EventResults, rounds: tuple[RoundResult, ...], base: Tally | None,
             shared: bool = False) -> dict[str, _Player]:
    """The players with the games and byes of ``rounds`` (``results``' rounds in number
    order) counted: those of ``base`` copied when its rounds are the first of them (with
    ``shared``, ``base``'s own when the later rounds add nothing to count)."""
    k = len(base.rounds) if base is not None else 0
    if base is not None and base.seeds == results.seeds \
            and base.games_per_match == results.games_per_match and rounds[:k] == base.rounds:
        if shared and not any(r.games or r.bye is not None for r in rounds[k:]):
            return base.players  # (counted as they are: nothing to add)
        players = {name: p.copy() for name, p in base.players.items()}
    else:
        players, k = {name: _Player(name, i + 1) for i, name in enumerate(results.seeds)}, 0
    if len(players) != len(results.seeds):
        raise RecordInvalid(f"duplicate engine name in the seeds: {list(results.seeds)}")
    bye_halves = int(2 * bye_points(results.games_per_match))  # whole points
    for rnd in rounds[k:]:
        if rnd.bye is not None:
            if rnd.bye not in players:
                raise RecordInvalid(f"round {rnd.number}: bye for {rnd.bye!r}, which is not a seeded engine")
            p = players[rnd.bye]
            p.byes += 1
            p.bye_rounds.append(rnd.number)
            p.halves += bye_halves
            p.round_halves[rnd.number] += bye_halves
        for g in rnd.games:
            _add_game(players, g)
    return players


def _halves(halves: int) -> Fraction:
    """``Fraction(halves, 2)``: one of a table made once for the usual values (a ranking
    makes several per engine after every game)."""
    return _HALF[halves] if 0 <= halves < len(_HALF) else Fraction(halves, 2)


_HALF = tuple(Fraction(h, 2) for h in range(256))


def _collect(results: EventResults, base: Tally | None = None) -> dict[str, _Player]:
    """The players of ``results`` counted (``base``'s own when it counts all of them: only
    the values derived from the counts are set, never a count)."""
    players = _counted(results, tuple(sorted(results.rounds, key=lambda r: r.number)), base,
                       shared=True)
    for p in players.values():
        p.score = _halves(p.halves)
        p.extra_score = _halves(p.extra_halves)
    for p in players.values():  # SB needs everyone's final score: sum of score x points
        p.sb = Fraction(sum(players[o].halves * h for o, h in p.points_vs.items()), 4)
    return players


def _game_problem(players: dict[str, _Player], g: PlayedGame) -> str | None:
    """What makes ``g`` impossible to count (None: nothing)."""
    where = f"game {g.round}.{g.game_in_round} ({g.white} - {g.black})"
    for name in (g.white, g.black):
        if name not in players:
            return f"{where}: {name!r} is not a seeded engine"
    if g.white == g.black:
        return f"{where}: an engine cannot play itself"
    if g.result not in RESULTS:
        return f"{where}: bad result {g.result!r}, expected one of {', '.join(RESULTS)}"
    return None


def _add_game(players: dict[str, _Player], g: PlayedGame) -> None:
    if g.white not in players or g.black not in players or g.white == g.black \
            or g.result not in RESULTS:
        raise RecordInvalid(str(_game_problem(players, g)))
    wh, bh = _HALVES[g.result]
    # a decisive game is a whole r-mobility point to its winner (counted without a Fraction)
    rw, rb = rmobility_points(g.rmobility, g.result) if wh == 1 else (wh // 2, bh // 2)
    for name, opp, color, halves, rm in ((g.white, g.black, "w", wh, rw), (g.black, g.white, "b", bh, rb)):
        p = players[name]
        p.history.append(GameView(g.round, g.game_in_round, opp, color, _POINTS[halves], g.result,
                                  g.rmobility, g.extra))
        if g.extra:
            p.extra_games += 1
            p.extra_halves += halves
            continue
        p.games += 1
        p.halves += halves
        if type(rm) is int:
            p.rmob_wins += rm
        elif rm:
            p.rmob += rm
        p.round_halves[g.round] += halves
        p.round_opponent[g.round] = opp
        p.points_vs[opp] += halves
        if color == "w":
            p.white += 1
        else:
            p.black += 1
        if halves == 2:
            p.wins += 1
        elif halves == 0:
            p.losses += 1
        else:
            p.draws += 1


def _opponent_halves(p: _Player, players: dict[str, _Player]) -> list[int]:
    """Final score (half points) of each opponent, once per match (round); byes have no opponent."""
    return [players[o].halves for _, o in sorted(p.round_opponent.items())]


def round_numbers(results: EventResults) -> list[int]:
    """Rounds shown as columns: those with a bye or a finished scheduled game (not extra rounds)."""
    return sorted(r.number for r in results.rounds
                  if r.bye is not None or not all(map(_EXTRA, r.games)))


_EXTRA = attrgetter("extra")  # (a game's extra flag, read in C: round_numbers runs per table)


def _values(players: dict[str, _Player], results: EventResults) -> dict[str, dict[str, Fraction]]:
    """Every numeric tiebreak for every player (DirectEncounter is group-relative: not here)."""
    numbered = round_numbers(results)
    bye = bye_points(results.games_per_match)
    out: dict[str, dict[str, Fraction]] = {}
    for name, p in players.items():
        opp = _opponent_halves(p, players)
        median = sorted(opp)[1:-1] if len(opp) >= 3 else opp
        running = progressive = 0  # half points
        for number in numbered:
            running += p.round_halves.get(number, 0)
            progressive += running
        rmob = p.rmob + p.rmob_wins if p.rmob_wins else p.rmob
        out[name] = {
            "SonnebornBerger": p.sb,
            "RMobility": rmob + bye * p.byes if p.byes else rmob,
            "Wins": _halves(2 * p.wins),
            "Buchholz": _halves(sum(opp)),
            "MedianBuchholz": _halves(sum(median)),
            "ProgressiveScore": _halves(progressive),
            "BlackGames": _halves(2 * p.black),
        }
    return out


# --------------------------------------------------------------------------- ranking


def _mini_table(group: Sequence[str], players: dict[str, _Player]) -> dict[str, Fraction] | None:
    """Points of each engine in the scheduled games among ``group``; None unless all met."""
    members = set(group)
    met: set[frozenset[str]] = set()
    points = {name: Fraction(0) for name in group}
    for name in group:
        for v in players[name].history:
            if not v.extra and v.opponent in members:
                met.add(frozenset((name, v.opponent)))
                points[name] += v.points
    pairs = len(group) * (len(group) - 1) // 2
    return points if len(met) == pairs else None


def _split(group: list[str], key: Callable[[str], Any]) -> list[list[str]]:
    """Split into sub-groups of equal key, best (largest key) first."""
    buckets: dict[Any, list[str]] = defaultdict(list)
    for name in group:
        buckets[key(name)].append(name)
    return [buckets[k] for k in sorted(buckets, reverse=True)]


class _Ranker:
    def __init__(self, players: dict[str, _Player], values: dict[str, dict[str, Fraction]]):
        self.players = players
        self.values = values
        self.de_value: dict[str, Fraction] = {}

    def parts(self, criterion: str, group: list[str], offset: int) -> list[list[str]]:
        p = self.players
        if criterion == "Score":
            return _split(group, lambda n: p[n].score)
        if criterion == "Byes":
            return _split(group, lambda n: -p[n].byes)
        if criterion == "ExtraPairs":
            if offset != 0 or len(group) != 2 or not any(
                    v.extra and v.opponent in group for v in p[group[0]].history):
                return [group]
            return _split(group, lambda n: p[n].extra_score)
        if criterion == "DirectEncounter":
            table = _mini_table(group, p)
            if table is None:
                return [group]
            for name, value in table.items():
                self.de_value.setdefault(name, value)
            return _split(group, lambda n: table[n])
        return _split(group, lambda n: self.values[n][criterion])

    def rank(self, group: list[str], criteria: Sequence[str], offset: int = 0
             ) -> list[tuple[list[str], str | None]]:
        """Final tied groups in order, each with the criterion separating it from the next."""
        if len(group) <= 1 or not criteria:
            return [(sorted(group, key=lambda n: self.players[n].seed), None)]
        criterion, rest = criteria[0], criteria[1:]
        parts = self.parts(criterion, group, offset)
        if len(parts) == 1:
            return self.rank(group, rest, offset)
        again = criteria if criterion == "DirectEncounter" else rest
        out: list[tuple[list[str], str | None]] = []
        for i, part in enumerate(parts):
            sub = self.rank(part, again, offset)
            if i < len(parts) - 1:
                sub[-1] = (sub[-1][0], criterion)
            out += sub
            offset += len(part)
        return out


def compute_standings(results: EventResults, tiebreaks: Sequence[str],
                      base: Tally | None = None) -> list[StandingRow]:
    """Rank every seeded engine; raise ValueError on an unknown tiebreak or inconsistent results.
    ``base``: a :func:`tally` of earlier results, used when its rounds are the first of
    ``results``' (the same standings, with only the later rounds' games counted here)."""
    for name in tiebreaks:
        if name not in TIEBREAKS:
            raise ValueError(f"unknown tiebreak {name!r}: expected one of {', '.join(TIEBREAKS)}")
    players = _collect(results, base)
    values = _values(players, results)
    ranker = _Ranker(players, values)
    withdrawn = dict(results.withdrawn)
    unknown = sorted(set(withdrawn) - set(players))
    if unknown:
        raise RecordInvalid(f"withdrawn engine(s) {', '.join(map(repr, unknown))} not seeded")
    groups = ranker.rank(list(players), ["Score", "Byes", "ExtraPairs", *tiebreaks])
    rows: list[StandingRow] = []
    for group, decided_by in groups:
        place = len(rows) + 1
        label = f"{place}-{place + len(group) - 1}" if len(group) > 1 else str(place)
        for i, name in enumerate(group):
            p = players[name]
            tb: dict[str, Fraction | None] = {k: values[name].get(k) for k in TIEBREAKS}
            tb["DirectEncounter"] = ranker.de_value.get(name)
            rows.append(StandingRow(
                rank=len(rows) + 1, place=place, place_label=label, name=name, seed=p.seed,
                score=p.score, games=p.games, wins=p.wins, draws=p.draws, losses=p.losses,
                byes=p.byes, white_games=p.white, black_games=p.black, tiebreaks=tb,
                decided_by=decided_by if i == len(group) - 1 else None,
                extra_score=p.extra_score if p.extra_games else None, extra_games=p.extra_games,
                history=tuple(p.history), bye_rounds=tuple(p.bye_rounds), chain=tuple(tiebreaks),
                withdrawn_from=withdrawn.get(name),
            ))
    return rows


def first_place_tie(results: EventResults) -> tuple[str, str] | None:
    """The two engines tied for first on score and BYEs whose extra games (if any) are level.

    For the orchestrator (``AllowExtraPairsOnTie``): play another extra pair while this is
    not None. Three or more engines tied for first are left to the tiebreak chain (None).
    """
    players = _collect(results)
    ranker = _Ranker(players, {})
    top = ranker.rank(list(players), ["Score", "Byes", "ExtraPairs"])[0][0]
    if len(top) != 2:
        return None
    return top[0], top[1]


# --------------------------------------------------------------------------- formatting


def rating_options(config: Config | None) -> RatingOptions:
    """The config's ``Ratings`` block as the rating model's options."""
    from runner.domain.ratings import RatingOptions  # numpy/scipy: only when ratings are asked for

    if config is None:
        return RatingOptions()
    rc = config.ratings
    return RatingOptions(anchor=rc.anchor, elo=rc.elo, white_advantage=rc.white_advantage,
                         draw_rate=None if rc.draw_rate is None else rc.draw_rate / 100,
                         simulations=rc.simulations, seed=rc.seed, confidence=rc.confidence)


def event_ratings(results: EventResults, config: Config | None = None) -> Ratings:
    """Elo of the event's engines (every played game, extra ones included; byes are not games)."""
    from runner.domain.ratings import Game, compute_ratings  # numpy/scipy: only when asked for

    games = [Game(g.white, g.black, g.result, g.round, extra=g.extra, game=g.game_in_round)
             for r in results.rounds for g in r.games]
    return compute_ratings(games, rating_options(config), results.seeds)


# --------------------------------------------------------------------------- CLI


