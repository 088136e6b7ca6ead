"""Standings, crosstable and rounds (runner.domain.standings' rows) as text, Markdown, JSON
or CSV (docs/standings.md)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from runner.config.typed import TIEBREAKS
from runner.domain.models import RESULTS, EventResults, PlayedGame, RoundResult, white_score
from runner.domain.standings import SHORT, StandingRow, round_numbers
from runner.domain.text import markdown_cell, printable
from runner.render.ratings_report import ratings_json, summary_line
from runner.render.tables import markdown_table, text_table

if TYPE_CHECKING:
    from runner.domain.ratings import Ratings

JSON_FORMAT = "swiss-runner-standings"


JSON_VERSION = 1


FORMATS = ("text", "markdown", "json", "csv")


def fmt_num(value: Fraction | None, digits: int = 6) -> str:
    """Exact decimal when it has at most ``digits`` decimals, else rounded; '' for None."""
    if value is None:
        return ""
    if value.denominator == 1:  # (a whole number: most scores and tiebreaks)
        return str(value.numerator)
    unit = 10**digits
    if unit % value.denominator:  # (more decimals than ``digits``)
        return f"{float(value):.{digits}f}"
    whole, part = divmod(abs(value.numerator) * (unit // value.denominator), unit)
    # as Decimal's fixed-point text of the scaled value, trailing zeros dropped
    return f"{'-' if value < 0 else ''}{whole}.{part:0{digits}d}".rstrip("0").rstrip(".")


def distinguishing_places(values: Sequence[Fraction | None], most: int = 12) -> int:
    """The fewest decimals (at most ``most``) at which values that differ still print
    differently, as TCEC's table shows r-mobility: 6, 5.5 and 2.4998 side by side, not
    6.00000000 beside 2.49975586."""
    known = [(v.numerator, v.denominator) for v in sorted({v for v in values if v is not None})]
    for places in range(most + 1):
        if len({_rounded(n * 10**places, d) for n, d in known}) == len(known):
            return places
    return most


def _rounded(numerator: int, denominator: int) -> int:
    """``round(Fraction(numerator, denominator))`` (half to even), in integers."""
    whole, rest = divmod(numerator, denominator)
    return whole + 1 if 2 * rest > denominator or (2 * rest == denominator and whole % 2) \
        else whole


def fmt_places(value: Fraction | None, places: int) -> str:
    """A whole number as it is; any other ``value`` rounded to ``places`` decimals (at least
    one, so 2.0078 is "2.0", never "2"); '' for None."""
    if value is None:
        return ""
    if value.denominator == 1:
        return str(value.numerator)
    places = max(1, places)
    return format(Decimal(_rounded(value.numerator * 10**places, value.denominator)
                          ).scaleb(-places), "f")


#: A game as a cell shows it ("1w": won with White, "½b": drawn with Black), by (result,
#: colour): a GameView's points are its side's score of its result (runner.domain.standings).
#: No Fraction is made or hashed per cell (a table of a long event has thousands of cells,
#: once a round).
_GAME_CELL = {(result, color): {1.0: "1", 0.0: "0", 0.5: "½"}[score] + color
              for result in RESULTS
              for color, score in (("w", white_score(result)), ("b", 1 - white_score(result)))}


#: What one round shows of each engine that played in it (:func:`_round_cells`): the
#: opponent of its first scheduled game, those games' cells, and its cells against each
#: opponent.
RoundCells = dict[str, tuple[str, str, dict[str, str]]]
#: The rounds' cells a caller keeps between two tables (runner.service.views.roundstandings),
#: by the identity of each round's RoundResult (never changed: a round played again is
#: another object); :func:`render_standings` keeps in it the rounds it was last handed.
CellMemo = dict[int, tuple[RoundResult, RoundCells]]


def _round_cells(rnd: RoundResult) -> RoundCells:
    played: dict[str, list[tuple[str, str]]] = {}  # engine: (opponent, cell) per game
    for g in rnd.games:
        if not g.extra:
            played.setdefault(g.white, []).append((g.black, _GAME_CELL[g.result, "w"]))
            played.setdefault(g.black, []).append((g.white, _GAME_CELL[g.result, "b"]))
    out: RoundCells = {}
    for name, games in played.items():
        per_opp: dict[str, list[str]] = {}
        for opp, cell in games:
            per_opp.setdefault(opp, []).append(cell)
        out[name] = (games[0][0], " ".join([cell for _, cell in games]),
                     {opp: " ".join(cells) for opp, cells in per_opp.items()})
    return out


def _cells_by_round(results: EventResults, memo: CellMemo | None = None) -> dict[int, RoundCells]:
    """Each round's cells, by number in number order (as each engine's history has its
    games); those of a round in ``memo`` taken from it, which then holds these rounds."""
    out: dict[int, RoundCells] = {}
    kept: CellMemo = {}
    for rnd in sorted(results.rounds, key=lambda r: r.number):
        entry = memo.get(id(rnd)) if memo is not None else None
        if entry is None or entry[0] is not rnd:
            entry = (rnd, _round_cells(rnd))
        kept[id(rnd)] = entry
        out[rnd.number] = entry[1]
    if memo is not None:
        memo.clear()
        memo.update(kept)
    return out


def standings_title(results: EventResults, numbers: Sequence[int] | None = None) -> str:
    """What the standings count, by rounds: "Standings after round 2, with 3 games of round
    3 (round 3 in progress)"; "Standings before round 1" only before any result."""
    shown = set(round_numbers(results) if numbers is None else numbers)  # (the caller's)
    complete = [r.number for r in results.rounds if r.complete and r.number in shown]
    running = sorted((r for r in results.rounds if not r.complete), key=lambda r: r.number)
    text = f"Standings after round {max(complete)}" if complete else "Standings"
    counted = [(r.number, sum(1 for g in r.games if not g.extra)) for r in running]
    with_games = [f"{n} game{'s' if n != 1 else ''} of round {number}"
                  for number, n in counted if n]
    if with_games:
        text += (", with " if complete else " with ") + " and ".join(with_games)
    elif not complete:
        text += " before round 1"
    if running:
        text += f" (round {running[0].number} in progress)"
    return text


def _summary(rows: Sequence[StandingRow], results: EventResults, numbers: Sequence[int]) -> str:
    kind = "double rounds" if results.games_per_match == 2 else "single rounds"
    return f"{standings_title(results, numbers)}: {len(rows)} engines, {kind}"


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


def _crosstable(rows: Sequence[StandingRow], cells: dict[int, RoundCells]
                ) -> tuple[list[str], list[list[str]]]:
    names = [r.name for r in rows]
    header = ["#", "Engine", *[str(r.rank) for r in rows]]
    body = []
    for i, r in enumerate(rows):
        per_opp: dict[str, list[str]] = {}  # the scheduled games, in the history's order
        for round_cells in cells.values():
            mine = round_cells.get(r.name)
            if mine is not None:
                for opp, text in mine[2].items():
                    per_opp.setdefault(opp, []).append(text)
        texts = {opp: " ".join(games) for opp, games in per_opp.items()}
        line = [texts.get(name, "") for name in names]
        line[i] = "*"
        body.append([str(r.rank), r.label, *line])
    return header, body


def _round_table(rows: Sequence[StandingRow], results: EventResults,
                 cells: dict[int, RoundCells], numbers: Sequence[int]
                 ) -> tuple[list[str], list[list[str]]]:
    index = {r.name: r.rank for r in rows}
    running = {r.number for r in results.rounds if not r.complete}
    header = ["#", "Engine", *[f"R{n}{'*' if n in running else ''}" for n in numbers]]
    body = []
    for r in rows:
        line = []
        for n in numbers:
            mine = cells[n].get(r.name)
            if n in r.bye_rounds:
                line.append("BYE")
            elif mine is not None:
                line.append(f"{index[mine[0]]}:{mine[1]}")
            elif r.withdrawn_from is not None and n >= r.withdrawn_from:
                line.append("WD")  # withdrawn: not paired
            else:
                line.append("-")
        body.append([str(r.rank), r.label, *line])
    return header, body


def _extra_games(results: EventResults) -> list[PlayedGame]:
    return [g for r in sorted(results.rounds, key=lambda r: r.number) for g in r.games if g.extra]


def _legend(tiebreaks: Sequence[str]) -> str:
    names = ", ".join(f"{SHORT[t]} = {t}" for t in _columns(tiebreaks) if SHORT[t] != t)
    return (f"Ranking: score, byes (fewer first), extra pairs for 1st, then {', '.join(tiebreaks) or 'nothing'}; "
            f"'Ahead by' = the tiebreak that puts an engine above the next one. {names}. "
            f"Crosstable/rounds cells: points and colour per game (1w = won with White, "
            f"5:½b = vs #5, drew with Black; WD = withdrawn by the TD, not paired).")


def _ratings_section(ratings: Ratings, fmt: str) -> str:
    header = ["Engine", "Elo", "+/-", "LOS%"]
    body = [[p.name, f"{p.rating:.0f}" if p.rating is not None else f"({p.unrated})",
             "" if p.error is None else f"{p.error:.0f}", "" if p.los is None else f"{p.los:.1f}"]
            for p in ratings.players]
    notes = [f"note: {n}" for n in ratings.notes]
    if fmt == "markdown":
        return "\n\n".join([f"### Ratings\n\n_{summary_line(ratings)}_", markdown_table(header, body),
                             *[f"- {n}" for n in ratings.notes]])
    return "\n\n".join(["Ratings", summary_line(ratings), text_table(header, body, right={1, 2, 3}),
                         *notes])


def render_standings(rows: Sequence[StandingRow], results: EventResults, fmt: str,
                     tiebreaks: Sequence[str] | None = None, ratings: Ratings | None = None,
                     cells: CellMemo | None = None) -> str:
    """Standings as text | markdown | json | csv (see docs/standings.md) of ``rows``, the
    ranking of ``results``.

    ``tiebreaks`` selects the tiebreak columns (default: the chain the rows were ranked with).
    ``ratings`` (from :func:`event_ratings`) adds an Elo section / key / columns.
    ``cells``: the rounds' cells kept by the caller between tables (:data:`CellMemo`): only
    the rounds not in it are made (the same text).
    """
    chain = tuple(tiebreaks) if tiebreaks is not None else (rows[0].chain if rows else ())
    if fmt == "json":
        doc = standings_json(rows, results, chain)
        if ratings is not None:
            doc["ratings"] = ratings_json(ratings)
        return json.dumps(doc, indent=2, ensure_ascii=False)
    if fmt == "csv":
        return _csv(rows, results, chain, ratings)
    if fmt not in ("text", "markdown"):
        raise ValueError(f"unknown standings format {fmt!r}: expected {' | '.join(FORMATS)}")
    by_round = _cells_by_round(results, cells)
    table, cross = _table(rows, chain), _crosstable(rows, by_round)
    numbers = round_numbers(results)
    rounds = _round_table(rows, results, by_round, numbers)
    extras = _extra_games(results)
    if fmt == "markdown":
        parts = [f"## {markdown_cell(_summary(rows, results, numbers))}", markdown_table(*table), "### Crosstable", markdown_table(*cross),
                 "### Rounds", markdown_table(*rounds)]
        if extras:
            parts += ["### Extra tie-break games",
                      markdown_table(["Game", "White", "Black", "Result"],
                                [[f"{g.round}.{g.game_in_round}", g.white, g.black, g.result] for g in extras])]
        if ratings is not None:
            parts.append(_ratings_section(ratings, fmt))
        parts.append(f"_{_legend(chain)}_")
        return "\n\n".join(parts) + "\n"
    numeric = {i for i, h in enumerate(table[0]) if h not in ("Place", "Engine", "Ahead by")}
    parts = [_summary(rows, results, numbers), text_table(*table, right=numeric), "Crosstable",
             text_table(*cross, right={0}), "Rounds", text_table(*rounds, right={0})]
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
    numbers = round_numbers(results)
    running = [r.number for r in results.rounds if not r.complete]
    cross_header, cross_body = _crosstable(rows, _cells_by_round(results))
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
        "title": standings_title(results),
    }


def _csv(rows: Sequence[StandingRow], results: EventResults, tiebreaks: Sequence[str],
         ratings: Ratings | None = None) -> str:
    chain = _columns(tiebreaks)
    numbers = round_numbers(results)
    _, rounds_body = _round_table(rows, results, _cells_by_round(results), numbers)
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
