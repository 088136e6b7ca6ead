"""Final ranking, TCEC tiebreaks, crosstable and per-round table (pure; no I/O but the CLI).

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

import csv
import io
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from runner.config.schema import TIEBREAKS
from runner.domain.models import RESULTS, EventResults, PlayedGame, white_score
from runner.domain.rmobility import bye_points, rmobility_points
from runner.domain.text import markdown_cell, printable
from runner.errors import RecordInvalid

if TYPE_CHECKING:
    from runner.config.schema import Config
    from runner.domain.ratings import RatingOptions, Ratings

JSON_FORMAT = "swiss-runner-standings"
JSON_VERSION = 1
FORMATS = ("text", "markdown", "json", "csv")
SHORT = {
    "SonnebornBerger": "SB", "RMobility": "RMob", "Wins": "Wins", "DirectEncounter": "DE",
    "Buchholz": "Buch", "MedianBuchholz": "MBuch", "ProgressiveScore": "Prog",
    "BlackGames": "Black", "Score": "Score", "Byes": "Byes", "ExtraPairs": "Extra",
}


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class GameView:
    """One game from one player's side."""

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
    extra_score: Fraction = Fraction(0)
    extra_halves: int = 0
    extra_games: int = 0
    history: list[GameView] = field(default_factory=list)
    bye_rounds: list[int] = field(default_factory=list)
    round_halves: dict[int, int] = field(default_factory=lambda: defaultdict(int))  # points x 2
    round_opponent: dict[int, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- statistics


# Game and bye points are whole or half points: they are added up as half points (ints),
# which gives exactly the Fractions adding them up as Fractions would, several times faster
# (the runner ranks the event after every game).
_HALVES = {r: (round(2 * white_score(r)), 2 - round(2 * white_score(r))) for r in RESULTS}
_POINTS = {h: Fraction(h, 2) for h in (0, 1, 2)}


def _collect(results: EventResults) -> dict[str, _Player]:
    players = {name: _Player(name, i + 1) for i, name in enumerate(results.seeds)}
    if len(players) != len(results.seeds):
        raise RecordInvalid(f"duplicate engine name in the seeds: {list(results.seeds)}")
    bye_halves = int(2 * bye_points(results.games_per_match))  # whole points
    for rnd in sorted(results.rounds, key=lambda r: r.number):
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
    for p in players.values():
        p.score = Fraction(p.halves, 2)
        p.extra_score = Fraction(p.extra_halves, 2)
    for p in players.values():  # SB needs everyone's final score: sum of score x points
        p.sb = Fraction(sum(players[v.opponent].halves * _HALF_POINTS[v.points]
                            for v in p.history if not v.extra), 4)
    return players


_HALF_POINTS = {points: h for h, points in _POINTS.items()}


def _add_game(players: dict[str, _Player], g: PlayedGame) -> None:
    where = f"game {g.round}.{g.game_in_round} ({g.white} - {g.black})"
    for name in (g.white, g.black):
        if name not in players:
            raise RecordInvalid(f"{where}: {name!r} is not a seeded engine")
    if g.white == g.black:
        raise RecordInvalid(f"{where}: an engine cannot play itself")
    if g.result not in RESULTS:
        raise RecordInvalid(f"{where}: bad result {g.result!r}, expected one of {', '.join(RESULTS)}")
    wh, bh = _HALVES[g.result]
    rw, rb = rmobility_points(g.rmobility, g.result)
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
        if rm:
            p.rmob += rm
        p.round_halves[g.round] += halves
        p.round_opponent[g.round] = opp
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


def _values(players: dict[str, _Player], results: EventResults) -> dict[str, dict[str, Fraction]]:
    """Every numeric tiebreak for every player (DirectEncounter is group-relative: not here)."""
    numbered = _round_numbers(results)
    out: dict[str, dict[str, Fraction]] = {}
    for name, p in players.items():
        opp = _opponent_halves(p, players)
        median = sorted(opp)[1:-1] if len(opp) >= 3 else opp
        running = progressive = 0  # half points
        for number in numbered:
            running += p.round_halves.get(number, 0)
            progressive += running
        out[name] = {
            "SonnebornBerger": p.sb,
            "RMobility": p.rmob + bye_points(results.games_per_match) * p.byes,
            "Wins": Fraction(p.wins),
            "Buchholz": Fraction(sum(opp), 2),
            "MedianBuchholz": Fraction(sum(median), 2),
            "ProgressiveScore": Fraction(progressive, 2),
            "BlackGames": Fraction(p.black),
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


def compute_standings(results: EventResults, tiebreaks: Sequence[str]) -> list[StandingRow]:
    """Rank every seeded engine; raise ValueError on an unknown tiebreak or inconsistent results."""
    for name in tiebreaks:
        if name not in TIEBREAKS:
            raise ValueError(f"unknown tiebreak {name!r}: expected one of {', '.join(TIEBREAKS)}")
    players = _collect(results)
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


def fmt_num(value: Fraction | None, digits: int = 6) -> str:
    """Exact decimal when it has at most ``digits`` decimals, else rounded; '' for None."""
    if value is None:
        return ""
    scaled = value * 10**digits
    if scaled.denominator != 1:
        return f"{float(value):.{digits}f}"
    text = format(Decimal(scaled.numerator).scaleb(-digits), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def distinguishing_places(values: Sequence[Fraction | None], most: int = 12) -> int:
    """The fewest decimals (at most ``most``) at which values that differ still print
    differently, as TCEC's table shows r-mobility: 6, 5.5 and 2.4998 side by side, not
    6.00000000 beside 2.49975586."""
    known = sorted({v for v in values if v is not None})
    for places in range(most + 1):
        if len({round(v * 10**places) for v in known}) == len(known):
            return places
    return most


def fmt_places(value: Fraction | None, places: int) -> str:
    """A whole number as it is; any other ``value`` rounded to ``places`` decimals (at least
    one, so 2.0078 is "2.0", never "2"); '' for None."""
    if value is None:
        return ""
    if value.denominator == 1:
        return str(value.numerator)
    places = max(1, places)
    return format(Decimal(round(value * 10**places)).scaleb(-places), "f")


def _pts(points: Fraction) -> str:
    return {Fraction(1): "1", Fraction(0): "0", Fraction(1, 2): "½"}[points]


def _cell_games(views: Sequence[GameView]) -> str:
    return " ".join(f"{_pts(v.points)}{v.color}" for v in views)


def _round_numbers(results: EventResults) -> list[int]:
    """Rounds shown as columns: those with a bye or a finished scheduled game (not extra rounds)."""
    return sorted(r.number for r in results.rounds
                  if r.bye is not None or any(not g.extra for g in r.games))


def _summary(rows: Sequence[StandingRow], results: EventResults) -> str:
    numbers = _round_numbers(results)
    complete = [r.number for r in results.rounds if r.complete and r.number in numbers]
    running = sorted(r.number for r in results.rounds if not r.complete)
    kind = "double rounds" if results.games_per_match == 2 else "single rounds"
    text = f"Standings after round {max(complete)}" if complete else "Standings before round 1"
    if running:
        text += f" (round {running[0]} in progress)"
    return f"{text}: {len(rows)} engines, {kind}"


def _columns(tiebreaks: Sequence[str]) -> list[str]:
    chain = list(tiebreaks)
    if "RMobility" not in chain:
        chain.append("RMobility")  # always shown per player
    return chain


def _table(rows: Sequence[StandingRow], tiebreaks: Sequence[str]) -> tuple[list[str], list[list[str]]]:
    chain = _columns(tiebreaks)
    header = ["#", "Place", "Engine", "Seed", "Score", "Games", "+", "=", "-", "Byes",
              *[SHORT[t] for t in chain], "Ahead by"]
    has_extra = any(r.extra_games for r in rows)
    if has_extra:
        header.insert(header.index("Byes") + 1, "Extra")
    rmob_places = distinguishing_places([r.tiebreaks.get("RMobility") for r in rows])
    body = []
    for r in rows:
        line = [str(r.rank), r.place_label, r.label, str(r.seed), fmt_num(r.score), str(r.games),
                str(r.wins), str(r.draws), str(r.losses), str(r.byes)]
        if has_extra:
            line.append(f"{fmt_num(r.extra_score)}/{r.extra_games}" if r.extra_games else "")
        line += [fmt_places(r.tiebreaks[t], rmob_places) if t == "RMobility"
                 else fmt_num(r.tiebreaks[t], 6) for t in chain]
        shown = r.decided_by if r.decided_by not in (None, "Score") else ""
        line.append(SHORT.get(shown, shown))
        body.append(line)
    return header, body


def _crosstable(rows: Sequence[StandingRow]) -> tuple[list[str], list[list[str]]]:
    index = {r.name: r.rank for r in rows}
    header = ["#", "Engine", *[str(r.rank) for r in rows]]
    body = []
    for r in rows:
        per_opp: dict[str, list[GameView]] = defaultdict(list)
        for v in r.history:
            if not v.extra:
                per_opp[v.opponent].append(v)
        cells = ["*" if o.name == r.name else _cell_games(per_opp.get(o.name, [])) for o in rows]
        body.append([str(index[r.name]), r.label, *cells])
    return header, body


def _round_table(rows: Sequence[StandingRow], results: EventResults) -> tuple[list[str], list[list[str]]]:
    index = {r.name: r.rank for r in rows}
    numbers = _round_numbers(results)
    running = {r.number for r in results.rounds if not r.complete}
    header = ["#", "Engine", *[f"R{n}{'*' if n in running else ''}" for n in numbers]]
    body = []
    for r in rows:
        cells = []
        for n in numbers:
            views = [v for v in r.history if v.round == n and not v.extra]
            if n in r.bye_rounds:
                cells.append("BYE")
            elif views:
                cells.append(f"{index[views[0].opponent]}:{_cell_games(views)}")
            elif r.withdrawn_from is not None and n >= r.withdrawn_from:
                cells.append("WD")  # withdrawn: not paired
            else:
                cells.append("-")
        body.append([str(r.rank), r.label, *cells])
    return header, body


def _extra_games(results: EventResults) -> list[PlayedGame]:
    return [g for r in sorted(results.rounds, key=lambda r: r.number) for g in r.games if g.extra]


def _text_table(header: list[str], body: list[list[str]], right: set[int]) -> str:
    body = [[printable(c) for c in row] for row in body]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        out = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(out).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, body)])


def _md_table(header: list[str], body: list[list[str]]) -> str:
    def esc(c: str) -> str:
        return markdown_cell(c)

    lines = ["| " + " | ".join(map(esc, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) or " " for c in row) + " |" for row in body]
    return "\n".join(lines)


def _legend(tiebreaks: Sequence[str]) -> str:
    names = ", ".join(f"{SHORT[t]} = {t}" for t in _columns(tiebreaks) if SHORT[t] != t)
    return (f"Ranking: score, byes (fewer first), extra pairs for 1st, then {', '.join(tiebreaks) or 'nothing'}; "
            f"'Ahead by' = the tiebreak that puts an engine above the next one. {names}. "
            f"Crosstable/rounds cells: points and colour per game (1w = won with White, "
            f"5:½b = vs #5, drew with Black; WD = withdrawn by the TD, not paired).")


def rating_options(config: Config | None) -> RatingOptions:
    """The config's ``Ratings`` block as the rating model's options."""
    from runner.domain.ratings import RatingOptions

    if config is None:
        return RatingOptions()
    rc = config.ratings
    return RatingOptions(anchor=rc.anchor, elo=rc.elo, white_advantage=rc.white_advantage,
                         draw_rate=None if rc.draw_rate is None else rc.draw_rate / 100,
                         simulations=rc.simulations, seed=rc.seed, confidence=rc.confidence)


def event_ratings(results: EventResults, config: Config | None = None) -> Ratings:
    """Elo of the event's engines (every played game, extra ones included; byes are not games)."""
    from runner.domain.ratings import Game, compute_ratings

    games = [Game(g.white, g.black, g.result, g.round, extra=g.extra, game=g.game_in_round)
             for r in results.rounds for g in r.games]
    return compute_ratings(games, rating_options(config), results.seeds)


def _ratings_section(ratings: Ratings, fmt: str) -> str:
    from runner.domain.ratings import summary_line

    header = ["Engine", "Elo", "+/-", "LOS%"]
    body = [[p.name, f"{p.rating:.0f}" if p.rating is not None else f"({p.unrated})",
             "" if p.error is None else f"{p.error:.0f}", "" if p.los is None else f"{p.los:.1f}"]
            for p in ratings.players]
    notes = [f"note: {n}" for n in ratings.notes]
    if fmt == "markdown":
        return "\n\n".join([f"### Ratings\n\n_{summary_line(ratings)}_", _md_table(header, body),
                             *[f"- {n}" for n in ratings.notes]])
    return "\n\n".join(["Ratings", summary_line(ratings), _text_table(header, body, right={1, 2, 3}),
                         *notes])


def render_standings(rows: Sequence[StandingRow], results: EventResults, fmt: str,
                     tiebreaks: Sequence[str] | None = None, ratings: Ratings | None = None) -> str:
    """Standings as text | markdown | json | csv (see docs/standings.md).

    ``tiebreaks`` selects the tiebreak columns (default: the chain the rows were ranked with).
    ``ratings`` (from :func:`event_ratings`) adds an Elo section / key / columns.
    """
    chain = tuple(tiebreaks) if tiebreaks is not None else (rows[0].chain if rows else ())
    if fmt == "json":
        doc = standings_json(rows, results, chain)
        if ratings is not None:
            from runner.domain.ratings import ratings_json

            doc["ratings"] = ratings_json(ratings)
        return json.dumps(doc, indent=2, ensure_ascii=False)
    if fmt == "csv":
        return _csv(rows, results, chain, ratings)
    if fmt not in ("text", "markdown"):
        raise ValueError(f"unknown standings format {fmt!r}: expected {' | '.join(FORMATS)}")
    table, cross, rounds = _table(rows, chain), _crosstable(rows), _round_table(rows, results)
    extras = _extra_games(results)
    if fmt == "markdown":
        parts = [f"## {markdown_cell(_summary(rows, results))}", _md_table(*table), "### Crosstable", _md_table(*cross),
                 "### Rounds", _md_table(*rounds)]
        if extras:
            parts += ["### Extra tie-break games",
                      _md_table(["Game", "White", "Black", "Result"],
                                [[f"{g.round}.{g.game_in_round}", g.white, g.black, g.result] for g in extras])]
        if ratings is not None:
            parts.append(_ratings_section(ratings, fmt))
        parts.append(f"_{_legend(chain)}_")
        return "\n\n".join(parts) + "\n"
    numeric = {i for i, h in enumerate(table[0]) if h not in ("Place", "Engine", "Ahead by")}
    parts = [_summary(rows, results), _text_table(*table, right=numeric), "Crosstable",
             _text_table(*cross, right={0}), "Rounds", _text_table(*rounds, right={0})]
    if extras:
        parts += ["Extra tie-break games",
                  "\n".join(printable(f"  {g.round}.{g.game_in_round}  {g.white} - {g.black}  {g.result}")
                            for g in extras)]
    if ratings is not None:
        parts.append(_ratings_section(ratings, fmt))
    parts.append(_legend(chain))
    return "\n\n".join(parts) + "\n"


def _exact(value: Fraction | None) -> str | None:
    return None if value is None else str(value)


def _float(value: Fraction | None) -> float | None:
    return None if value is None else float(value)


def standings_json(rows: Sequence[StandingRow], results: EventResults,
                   tiebreaks: Sequence[str]) -> dict[str, Any]:
    """The JSON document (schema in docs/standings.md); keys and their order are stable."""
    numbers = _round_numbers(results)
    running = [r.number for r in results.rounds if not r.complete]
    cross_header, cross_body = _crosstable(rows)
    out_rows = []
    for r in rows:
        rounds = []
        for n in numbers:
            views = [v for v in r.history if v.round == n and not v.extra]
            rounds.append({
                "round": n,
                "bye": n in r.bye_rounds,
                "opponent": views[0].opponent if views else None,
                "games": [{"game": f"{v.round}.{v.game_in_round}", "color": "white" if v.color == "w" else "black",
                           "points": float(v.points), "result": v.result, "rmobility": v.rmobility}
                          for v in views],
            })
        out_rows.append({
            "rank": r.rank, "place": r.place, "place_label": r.place_label, "shared": r.shared,
            "engine": r.name, "seed": r.seed, "score": float(r.score), "games": r.games,
            "wins": r.wins, "draws": r.draws, "losses": r.losses, "byes": r.byes,
            "white_games": r.white_games, "black_games": r.black_games,
            "tiebreaks": {k: _float(r.tiebreaks[k]) for k in TIEBREAKS},
            "tiebreaks_exact": {k: _exact(r.tiebreaks[k]) for k in TIEBREAKS},
            "decided_by": r.decided_by, "withdrawn_from_round": r.withdrawn_from,
            "extra_games": r.extra_games, "extra_score": _float(r.extra_score),
            "crosstable": dict(zip([o.name for o in rows], cross_body[r.rank - 1][2:], strict=True)),
            "rounds": rounds,
        })
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "games_per_match": results.games_per_match,
        "rounds": numbers,
        "round_in_progress": running[0] if running else None,
        "tiebreaks": list(tiebreaks),
        "standings": out_rows,
        "extra_games": [{"game": f"{g.round}.{g.game_in_round}", "white": g.white, "black": g.black,
                         "result": g.result} for g in _extra_games(results)],
    }


def _csv(rows: Sequence[StandingRow], results: EventResults, tiebreaks: Sequence[str],
         ratings: Ratings | None = None) -> str:
    chain = _columns(tiebreaks)
    _, rounds_body = _round_table(rows, results)
    numbers = _round_numbers(results)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["rank", "place", "engine", "seed", "score", "games", "wins", "draws", "losses",
                "byes", *chain, "decided_by", "extra_score", "extra_games",
                *(["elo", "elo_error"] if ratings is not None else []), *[f"R{n}" for n in numbers]])
    for r, rline in zip(rows, rounds_body, strict=True):
        elo: list[str] = []
        if ratings is not None:
            p = ratings.player(r.name)
            elo = ["" if p.rating is None else f"{p.rating:.1f}", "" if p.error is None else f"{p.error:.1f}"]
        w.writerow([r.rank, r.place_label, r.name, r.seed, fmt_num(r.score), r.games, r.wins,
                    r.draws, r.losses, r.byes, *[fmt_num(r.tiebreaks[t], 12) for t in chain],
                    r.decided_by or "", fmt_num(r.extra_score), r.extra_games, *elo, *rline[2:]])
    return buf.getvalue()


# --------------------------------------------------------------------------- CLI


