"""`swiss-runner audit PGN --seeds FILE`: replay an event's PGN through the TCEC Swiss rules.

Reading the files is here; the comparison itself is pure (runner.domain.audit).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import chess.pgn

from runner.domain.audit import _ROUND_RE, AuditInputError, PgnGame, audit_event, describe_round
from runner.domain.models import RESULTS, TIEBREAK_PAIR_TAG
from runner.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK


def read_seeds(path: str | Path) -> list[str]:
    """One engine name per line, seed 1 first; blank lines are ignored."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditInputError(f"{path}: cannot read the seeds file: {exc}") from exc
    seeds: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        name = line.strip()
        if not name:
            continue
        if name in seen:
            raise AuditInputError(f"{path}: line {lineno}: {name!r} is already seed {seen[name]}")
        seen[name] = len(seeds) + 1
        seeds.append(name)
    if not seeds:
        raise AuditInputError(f"{path}: no engine names (expected one name per line)")
    return seeds


def read_pgn_games(path: str | Path) -> list[PgnGame]:
    """The games' Round, White, Black and Result tags, in file order."""
    games: list[PgnGame] = []
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            while True:
                headers = chess.pgn.read_headers(handle)
                if headers is None:
                    break
                index = len(games) + 1
                round_tag = headers.get("Round", "?")
                match = _ROUND_RE.match(round_tag)
                if not match:
                    raise AuditInputError(f'{path}: game {index} (Round "{round_tag}"): '
                                          f'Round tag {round_tag!r}: expected "R.G" (round.game)')
                number, game_in_round = int(match.group(1)), int(match.group(2))
                if number < 1 or game_in_round < 1:
                    raise AuditInputError(f'{path}: game {index} (Round "{round_tag}"): round '
                                          f"and game numbers start at 1")
                white = headers.get("White", "").strip()
                black = headers.get("Black", "").strip()
                result = headers.get("Result", "*").strip()
                game = PgnGame(index, number, game_in_round, white, black, result,
                               extra=bool(headers.get(TIEBREAK_PAIR_TAG, "").strip()))
                if not white or not black or white == "?" or black == "?":
                    raise AuditInputError(f"{path}: {game.label}: missing White or Black tag")
                if result not in RESULTS:
                    raise AuditInputError(f"{path}: {game.label}: Result {result!r}: expected "
                                          f"one of {', '.join(RESULTS)} (a finished game)")
                games.append(game)
    except OSError as exc:
        raise AuditInputError(f"{path}: cannot read the PGN: {exc}") from exc
    if not games:
        raise AuditInputError(f"{path}: no games found (expected PGN with Round/White/Black/"
                              f"Result tags)")
    return games


def cli_audit(args: argparse.Namespace) -> int:
    """Entry point of `swiss-runner audit`; returns the exit code."""
    try:
        seeds = read_seeds(args.seeds)
        games = read_pgn_games(args.pgn)
        report = audit_event(games, seeds, args.games_per_match, args.schedule, source=args.pgn)
    except AuditInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        kind = "single rounds" if report.games_per_match == 1 else \
            f"double rounds, {report.schedule} schedule"
        print(f"{args.pgn}: {report.players} players, {len(report.rounds)} rounds, {kind}")
        if report.extra_games:
            print(f"{report.extra_games} extra tie-break game(s) (tag {TIEBREAK_PAIR_TAG}) set aside: "
                  "they are not paired by the Swiss rules")
        for audit in report.rounds:
            print(describe_round(audit))
        bad = [a.number for a in report.rounds if not a.match]
        if bad:
            print(f"{len(bad)} of {len(report.rounds)} rounds differ: "
                  + ", ".join(map(str, bad)))
            if bad[0] < report.rounds[-1].number:
                print(f"note: each round is paired from the games as played, so a difference "
                      f"in round {bad[0]} can carry over to the rounds after it")
        else:
            print(f"all {len(report.rounds)} rounds match")
    return EXIT_OK if report.all_match else EXIT_FAIL
