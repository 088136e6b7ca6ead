"""``swiss-runner ratings CONFIG | --pgn FILE``: Elo and match statistics (docs/ratings.md).

Glue only: reads the games (the event's state database, or any PGN with python-chess),
classifies how each game ended, and prints runner.domain.ratings' report. That module (numpy,
scipy: most of a second to import) is loaded only when the command runs: runner.cli builds
every command's options from this module, for ``run`` as much as for ``ratings``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from runner.cli.common import (
    add_format,
    load,
    no_event_yet,
    other_event,
    recorded_event_fingerprint,
)
from runner.domain.endings import classify_end
from runner.domain.text import printable, printable_lines

if TYPE_CHECKING:
    from runner.config import Config
    from runner.domain.ratings import Game, RatingOptions

# runner.domain.ratings.FORMATS, written out so that the parser does not import numpy/scipy
# (tests/test_ratings.py checks that the two agree)
FORMATS = ("text", "markdown", "json", "csv")

EXIT_OK, EXIT_NO_EVENT, EXIT_BAD_INPUT = 0, 1, 2
_REASON_START = re.compile(r"^(White|Black|Draw)\b")
_BOARD_REASONS = {
    "CHECKMATE": "{} mates", "STALEMATE": "Draw by stalemate",
    "INSUFFICIENT_MATERIAL": "Draw by insufficient mating material",
    "FIFTY_MOVES": "Draw by fifty moves rule", "SEVENTYFIVE_MOVES": "Draw by fifty moves rule",
    "THREEFOLD_REPETITION": "Draw by 3-fold repetition",
    "FIVEFOLD_REPETITION": "Draw by 3-fold repetition",
}


def _fit(value: float | None) -> str:
    return "fit" if value is None else f"{value:g}"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the ``ratings`` subcommand (called by runner.cli.build_parser). Each
    one overrides the config's ``Ratings`` block; the defaults said are those of a config
    without one (RatingsConfig, which tests/test_help_defaults.py compares them with)."""
    from runner.config.typed import RatingsConfig

    d = RatingsConfig()
    p.add_argument("config", nargs="?", help="tournament YAML file (or use --pgn)")
    p.add_argument("--pgn", metavar="FILE", help="rate the games of any PGN file instead")
    add_format(p, FORMATS)
    p.add_argument("--anchor", metavar="ENGINE", help="engine whose rating is fixed at --elo "
                   "(default: Ratings.Anchor, else none: the pool average is --elo)")
    p.add_argument("--elo", type=float, help="rating of the anchor, or of the pool average "
                   f"(default: Ratings.Elo / Average, else {d.elo:g})")
    p.add_argument("--white-advantage", metavar="fit|ELO",
                   help="fit, or a fixed value in Elo (default: Ratings.WhiteAdvantage, else "
                   f"{_fit(d.white_advantage)}, as Ordo)")
    p.add_argument("--draw-rate", metavar="fit|PCT", help="fit, or a fixed percentage "
                   f"(default: Ratings.DrawRate, else {_fit(d.draw_rate)})")
    p.add_argument("--simulations", type=int, help="simulations for the error margins, 0 = "
                   f"none (default: Ratings.Simulations, else {d.simulations})")
    p.add_argument("--seed", type=int, help="seed of the simulations (default: Ratings.Seed, "
                   f"else {d.seed})")
    p.add_argument("--confidence", type=float, help="confidence of the margins, percent "
                   f"(default: Ratings.Confidence, else {d.confidence:g})")


def _fit_or_number(text: str | None, name: str) -> tuple[bool, float | None]:
    """(given, value): value None means 'fit'."""
    if text is None:
        return False, None
    if text.strip().lower() == "fit":
        return True, None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--{name}: got {text!r}, expected 'fit' or a number") from None
    if not math.isfinite(value):
        raise ValueError(f"--{name}: got {text!r}, expected 'fit' or a finite number")
    return True, value


def _check_options(args: argparse.Namespace) -> None:
    """The command-line options within the bounds the config's ``Ratings`` block has
    (``--simulations 10**12`` asked numpy for terabytes; ``--elo inf`` printed nonsense)."""
    from runner.config.limits import (
        MAX_RATING,
        MAX_SEED,
        MAX_SIMULATIONS,
        MAX_WHITE_ADVANTAGE,
    )

    checks = [
        ("elo", lambda v: math.isfinite(v) and abs(v) <= MAX_RATING,
         f"a rating from -{MAX_RATING} to {MAX_RATING}"),
        ("simulations", lambda v: 0 <= v <= MAX_SIMULATIONS,
         f"a number of simulations from 0 to {MAX_SIMULATIONS} (0 = no error margins)"),
        ("seed", lambda v: 0 <= v <= MAX_SEED, "an integer from 0 to 2**63-1"),
        ("confidence", lambda v: 0 < v < 100, "a percentage between 0 and 100"),
    ]
    for name, ok, expected in checks:
        value = getattr(args, name, None)
        if value is not None and not ok(value):
            raise ValueError(f"--{name}: got {value!r}, expected {expected}")
    _, wa = _fit_or_number(getattr(args, "white_advantage", None), "white-advantage")
    if wa is not None and not abs(wa) < MAX_WHITE_ADVANTAGE:
        raise ValueError(f"--white-advantage: got {wa!r}, expected 'fit' or a fixed advantage "
                         f"in Elo (-{MAX_WHITE_ADVANTAGE}..{MAX_WHITE_ADVANTAGE})")


def options_from(config: Config | None, args: argparse.Namespace) -> RatingOptions:
    """The config's ``Ratings`` block, overridden by command-line options."""
    from runner.config.typed import RatingsConfig
    from runner.domain.ratings import RatingOptions

    _check_options(args)
    r = config.ratings if config is not None else RatingsConfig()
    anchor = args.anchor if getattr(args, "anchor", None) else r.anchor
    elo = args.elo if getattr(args, "elo", None) is not None else r.elo
    given, wa = _fit_or_number(getattr(args, "white_advantage", None), "white-advantage")
    if not given:
        wa = r.white_advantage  # as Ordo: no white advantage unless asked
    given, dr = _fit_or_number(getattr(args, "draw_rate", None), "draw-rate")
    if not given:
        dr = r.draw_rate
    if dr is not None and not 0 <= dr < 100:
        raise ValueError(f"draw rate {dr}: expected a percentage 0..100")
    sims = args.simulations if getattr(args, "simulations", None) is not None else r.simulations
    seed = args.seed if getattr(args, "seed", None) is not None else r.seed
    conf = args.confidence if getattr(args, "confidence", None) is not None else r.confidence
    return RatingOptions(anchor=anchor, elo=float(elo), white_advantage=wa,
                         draw_rate=None if dr is None else dr / 100, simulations=sims, seed=seed,
                         confidence=conf)


def _reason(comment: str) -> str | None:
    """cutechess puts the reason at the end of the last comment: '+M1/245 0.007s, White mates'."""
    comment = " ".join(comment.split())
    if _REASON_START.match(comment):
        return comment
    tail = comment.rsplit(", ", 1)[-1]
    return tail if _REASON_START.match(tail) else None


def _round(text: str, index: int) -> tuple[int, int]:
    """PGN Round 'R.G' -> (R, G); 'R' -> (R, index in the file); '?' -> (0, index)."""
    parts = text.split(".")
    try:
        rnd = int(parts[0])
    except ValueError:
        return 0, index
    try:
        return rnd, int(parts[1]) if len(parts) > 1 else index
    except ValueError:
        return rnd, index


def read_pgn(path: Path) -> tuple[list[Game], list[str]]:
    """Games of a PGN file, and notes about games left out (unfinished, unnamed players)."""

    from runner.domain.models import TIEBREAK_PAIR_TAG
    from runner.domain.pgn import read_game
    from runner.domain.ratings import Game

    games: list[Game] = []
    skipped: dict[str, int] = {}
    unreadable_moves = 0
    with _quiet("chess.pgn"), open(path, encoding="utf-8-sig", errors="replace") as handle:
        index = 0
        while True:
            game = read_game(handle)
            if game is None:
                break
            index += 1
            h = game.headers
            result = h.get("Result", "*")
            white, black = h.get("White", "?").strip(), h.get("Black", "?").strip()
            if result not in ("1-0", "0-1", "1/2-1/2"):
                skipped["unfinished (result '*' or missing)"] = skipped.get("unfinished (result '*' or missing)", 0) + 1
                continue
            if white in ("", "?") or black in ("", "?") or white == black:
                skipped["without two named players"] = skipped.get("without two named players", 0) + 1
                continue
            unreadable_moves += bool(game.errors)
            last = game.end()
            reason = _reason(last.comment) if last.comment else None
            if reason is None and game.comment:
                reason = _reason(game.comment)
            termination, details = h.get("Termination"), h.get("TerminationDetails")
            if reason is None and not details and last.move is not None:
                outcome = last.board().outcome(claim_draw=True)
                if outcome is not None:
                    side = "White" if outcome.winner else "Black"
                    reason = _BOARD_REASONS.get(outcome.termination.name, "").format(side) or None
            rnd, order = _round(h.get("Round", "?"), index)
            games.append(Game(white=white, black=black, result=result, round=rnd,
                              end=classify_end(result, termination, details, reason),
                              extra=TIEBREAK_PAIR_TAG in h, game=order))
    notes = [f"{path}: {n} game(s) left out: {why}" for why, n in skipped.items()]
    if unreadable_moves:
        notes.append(f"{path}: {unreadable_moves} game(s) with moves python-chess could not "
                     "read (illegal or not SAN): rated by their Result tag")
    return games, notes


@contextlib.contextmanager
def _quiet(logger: str) -> Iterator[None]:
    """No line per bad move from python-chess's PGN reader: read_pgn adds one note."""
    log = logging.getLogger(logger)
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)


def read_event(config: Config) -> tuple[list[Game], list[str]] | None:
    """Finished games of the event (extra tie-break games included; byes are not games)."""
    from runner.domain.ratings import Game
    from runner.store.database import Store

    st = Store.open_readonly(config.database)
    if st is None:
        return None
    try:
        seeds = st.seeds()
        games = [Game(white=g.white, black=g.black, result=g.result or "", round=g.round,
                      end=classify_end(g.result or "", reason=g.reason), extra=g.extra,
                      game=g.game_in_round)
                 for g in st.games() if g.status == "finished"]
    finally:
        st.close()
    return games, seeds


def cli_ratings(args: argparse.Namespace) -> int:
    """0 printed; 1 no event yet; 2 bad input (config, PGN, options, state)."""
    from runner.domain.ratings import compute_ratings
    from runner.errors import RecordInvalid, view
    from runner.render.ratings_report import render_ratings
    from runner.store.database import StoreError

    if bool(args.config) == bool(args.pgn):
        print("error: ratings: give either a CONFIG file or --pgn FILE (one of the two)", file=sys.stderr)
        return EXIT_BAD_INPUT
    source = args.pgn or args.config
    config = None
    try:
        if args.pgn:
            path = Path(args.pgn)
            if not path.is_file():
                why = ("not a regular file (a directory, device or pipe); expected a PGN file"
                       if path.exists() else "PGN file not found")
                print(f"error: {printable(path)}: {why}", file=sys.stderr)
                return EXIT_BAD_INPUT
            _check_options(args)  # before reading a big file
            games, notes = read_pgn(path)
            players: list[str] = []
            if not games:
                print(f"error: {path}: no finished games with two named players (is it a PGN file?)",
                      file=sys.stderr)
                return EXIT_BAD_INPUT
        else:
            config = load(args.config)
            if config is None:
                return EXIT_BAD_INPUT
            read = read_event(config)
            if read is None:
                return no_event_yet(config, args)
            games, players = read
            notes = []
            changed = other_event(config, recorded_event_fingerprint(config))
            if changed:
                print(f"error: {printable_lines(changed)}", file=sys.stderr)
                return EXIT_BAD_INPUT
        options = options_from(config, args)
        with view("the ratings", keep=(ValueError,)):  # a bad result or anchor: bad input
            ratings = compute_ratings(games, options, players)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"error: {source}: cannot read: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ValueError as exc:
        if isinstance(exc, RecordInvalid) and config is not None:  # a damaged row
            from runner.store.database import damaged_state

            print(f"error: {printable_lines(damaged_state(config.database, exc))}", file=sys.stderr)
            return EXIT_BAD_INPUT
        print(f"error: {source}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (sqlite3.Error, KeyError, TypeError, IndexError, AttributeError) as exc:
        if config is None:
            raise  # not the state: a bug, reported by runner.cli.main
        from runner.store.database import damaged_state

        print(f"error: {printable_lines(damaged_state(config.database, exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    ratings.notes[:0] = notes
    print(render_ratings(ratings, args.format), end="")
    return EXIT_OK
