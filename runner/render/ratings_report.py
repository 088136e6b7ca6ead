"""The ratings report (runner.domain.ratings' result) as text, Markdown, JSON or CSV
(docs/ratings.md). Imports no numpy/scipy: a report of computed ratings needs neither."""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from runner.domain.endings import LABELS, GameEnd
from runner.domain.text import fixed_text, printable
from runner.render.tables import markdown_table, text_table

if TYPE_CHECKING:
    from runner.domain.ratings import Ratings

JSON_FORMAT = "swiss-runner-ratings"


JSON_VERSION = 1


FORMATS = ("text", "markdown", "json", "csv")


def _r(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def ratings_json(ratings: Ratings) -> dict[str, Any]:
    """JSON-able document (schema in docs/ratings.md); keys and their order are stable."""
    o = ratings.options
    players = []
    for rank, p in enumerate(ratings.players, 1):
        players.append({
            "rank": rank if p.rating is not None else None,
            "engine": p.name,
            "elo": _r(p.rating), "error": _r(p.error), "los_next": _r(p.los),
            "rated": p.rating is not None, "unrated_reason": p.unrated, "estimate": _r(p.estimate),
            "group": p.group,
            "games": p.games, "points": p.points, "wins": p.wins, "draws": p.draws,
            "losses": p.losses, "score_pct": _r(p.score_pct), "draw_pct": _r(p.draw_pct),
            "performance": _r(p.performance), "opponents_avg": _r(p.opponents),
            "white": {"games": p.white.games, "points": p.white.points, "wins": p.white.wins,
                      "draws": p.white.draws, "losses": p.white.losses},
            "black": {"games": p.black.games, "points": p.black.points, "wins": p.black.wins,
                      "draws": p.black.draws, "losses": p.black.losses},
            "pairs": {"pairs": p.pairs.pairs, "won": p.pairs.won, "drawn": p.pairs.drawn,
                      "lost": p.pairs.lost, "pentanomial": list(p.pairs.pentanomial)},
            "ends": {str(k): {"won": v[0], "drawn": v[1], "lost": v[2]}
                     for k, v in sorted(p.ends.items(), key=lambda kv: str(kv[0]))},
        })
    return {
        "format": JSON_FORMAT,
        "version": JSON_VERSION,
        "model": {
            "scale": o.scale, "anchor": o.anchor, "elo": o.elo,
            "anchored": o.anchor is not None and ratings.anchor_unrated is None,
            "anchor_unrated": ratings.anchor_unrated,
            "white_advantage": _r(ratings.white_advantage, 2),
            "white_advantage_error": _r(ratings.white_advantage_error, 2),
            "white_advantage_fitted": o.white_advantage is None,
            "draw_rate": _r(100 * ratings.draw_rate, 2), "draw_rate_fitted": o.draw_rate is None,
            "simulations": o.simulations, "seed": o.seed, "confidence": o.confidence,
        },
        "games": ratings.games,
        "players": players,
        "groups": ratings.groups,
        "notes": ratings.notes,
        "ends": {str(k): dict(v, total=sum(v.values()))
                 for k, v in sorted(ratings.ends.items(), key=lambda kv: str(kv[0]))},
    }


def _pct(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}"


def _table_rows(ratings: Ratings) -> tuple[list[str], list[list[str]]]:
    has_pairs = any(p.pairs.pairs for p in ratings.players)
    header = ["#", "Engine", "Elo", "+/-", "LOS%", "Games", "Score%", "Draw%", "W: +=-", "B: +=-", "Perf"]
    if has_pairs:
        header += ["Pairs +=-", "Penta 0-½-1-1½-2"]
    body = []
    for rank, p in enumerate(ratings.players, 1):
        elo = fixed_text(p.rating) if p.rating is not None else f"({p.unrated}; est. {fixed_text(p.estimate)})" if p.estimate is not None else f"({p.unrated})"
        row = [str(rank) if p.rating is not None else "-", p.name, elo, fixed_text(p.error), _pct(p.los),
               str(p.games), _pct(p.score_pct), _pct(p.draw_pct),
               f"{p.white.wins}-{p.white.draws}-{p.white.losses}",
               f"{p.black.wins}-{p.black.draws}-{p.black.losses}", fixed_text(p.performance)]
        if has_pairs:
            row += [f"{p.pairs.won}-{p.pairs.drawn}-{p.pairs.lost}", "-".join(map(str, p.pairs.pentanomial))]
        body.append(row)
    return header, body


def _ends_rows(ratings: Ratings) -> tuple[list[str], list[list[str]]]:
    classes = [e for e in GameEnd if e in ratings.ends]
    header = ["How games ended", "Games", "1-0", "½-½", "0-1"]
    body = [[LABELS[e], str(sum(ratings.ends[e].values())), str(ratings.ends[e]["1-0"]),
             str(ratings.ends[e]["1/2-1/2"]), str(ratings.ends[e]["0-1"])] for e in classes]
    return header, body


def _engine_ends_rows(ratings: Ratings) -> tuple[list[str], list[list[str]]]:
    classes = [e for e in GameEnd if e in ratings.ends]
    header = ["Engine", *[LABELS[e] for e in classes]]
    body = []
    for p in ratings.players:
        body.append([p.name, *["-".join(map(str, p.ends[e])) if e in p.ends else "" for e in classes]])
    return header, body


def summary_line(ratings: Ratings) -> str:
    o = ratings.options
    where = f"anchor {o.anchor} = {fixed_text(o.elo)}" if o.anchor else f"pool average {fixed_text(o.elo)}"
    if o.anchor and ratings.anchor_unrated:
        where = (f"pool average {fixed_text(o.elo)} (the anchor {o.anchor} cannot be rated yet: "
                 f"{ratings.anchor_unrated})")
    wa = f"white advantage {ratings.white_advantage:.1f}"
    if ratings.white_advantage_error is not None:
        wa += f" +/- {ratings.white_advantage_error:.1f}"
    wa += " (fitted)" if o.white_advantage is None else " (fixed)"
    margins = (f"{o.confidence:g}% margins from {o.simulations} simulations (seed {o.seed})"
               if o.simulations > 1 else "no error margins (simulations off)")
    return (f"Ratings from {ratings.games} games: {where}, {wa}, draw rate between equals "
            f"{100 * ratings.draw_rate:.1f}% ({'fitted' if o.draw_rate is None else 'fixed'}), "
            f"{margins}; scale {o.scale:g} Elo = 76%")


def render_ratings(ratings: Ratings, fmt: str) -> str:
    """The ratings report as text | markdown | json | csv."""
    if fmt == "json":
        return json.dumps(ratings_json(ratings), indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        return ratings_csv(ratings)
    if fmt not in ("text", "markdown"):
        raise ValueError(f"unknown ratings format {fmt!r}: expected {' | '.join(FORMATS)}")
    legend = ("LOS% = likelihood that the engine is stronger than the next one; W/B: wins-draws-"
              "losses with White/Black; Perf = opponents' average + the Elo of the score; Pairs: "
              "double-round pairs won-drawn-lost; Penta: pairs scoring 0, ½, 1, 1½, 2 points; "
              "ends: won-drawn-lost")
    parts: list[tuple[str, tuple[list[str], list[list[str]]]]] = [
        ("", _table_rows(ratings)), ("How games ended", _ends_rows(ratings)),
        ("How games ended, per engine (won-drawn-lost)", _engine_ends_rows(ratings))]
    if fmt == "markdown":
        out = [f"## {summary_line(ratings)}"]
        for title, (h, b) in parts:
            if title:
                out.append(f"### {title}")
            out.append(markdown_table(h, b))
        out += [printable(f"- {n}") for n in ratings.notes]
        out.append(f"_{legend}_")
        return "\n\n".join(out) + "\n"
    out = [summary_line(ratings)]
    for title, (h, b) in parts:
        if title:
            out.append(title)
        out.append(text_table(h, b, right=range(1 if title else 2, len(h))))
    out += [printable(f"note: {n}") for n in ratings.notes]
    out.append(legend)
    return "\n\n".join(out) + "\n"


def ratings_csv(ratings: Ratings) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    classes = [e for e in GameEnd if e in ratings.ends]
    w.writerow(["rank", "engine", "elo", "error", "los_next", "unrated_reason", "estimate", "group",
                "games", "points", "wins", "draws", "losses", "score_pct", "draw_pct",
                "white_games", "white_points", "black_games", "black_points", "performance",
                "opponents_avg", "pairs_won", "pairs_drawn", "pairs_lost",
                "penta_0", "penta_1", "penta_2", "penta_3", "penta_4",
                *[f"end_{e}" for e in classes]])
    for rank, p in enumerate(ratings.players, 1):
        w.writerow([rank if p.rating is not None else "", p.name, fixed_text(p.rating, 1), fixed_text(p.error, 1),
                    fixed_text(p.los, 1), p.unrated or "", fixed_text(p.estimate, 1), p.group, p.games,
                    p.points, p.wins, p.draws, p.losses, fixed_text(p.score_pct, 1), fixed_text(p.draw_pct, 1),
                    p.white.games, p.white.points, p.black.games, p.black.points,
                    fixed_text(p.performance, 1), fixed_text(p.opponents, 1), p.pairs.won, p.pairs.drawn,
                    p.pairs.lost, *p.pairs.pentanomial,
                    *["-".join(map(str, p.ends[e])) if e in p.ends else "" for e in classes]])
    return buf.getvalue()
