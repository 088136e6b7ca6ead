"""`swiss-runner audit`: replay a finished event's PGN through the TCEC Swiss pairing rules.

For every round the pairing is computed from the seeds and the results of the earlier rounds
as actually played, and compared with the games of the round: pairs, colours, playing order
and (odd player counts) the bye. Only the tags Round "R.G", White, Black and Result are read.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import chess.pgn

from runner.cli import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK
from runner.models import RESULTS, TIEBREAK_PAIR_TAG, PlayedGame, RoundResult
from runner.pairing import PairingError, RoundRecord, pair_round, record_from_result

_ROUND_RE = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


class AuditInputError(ValueError):
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

    @property
    def match(self) -> bool:
        return self.error is None and self.computed == self.played and self.bye == self.played_bye

    def to_json(self) -> dict[str, object]:
        return {"round": self.number, "computed": [list(g) for g in self.computed],
                "bye": self.bye, "played": [list(g) for g in self.played],
                "dropped_history_rounds": list(self.dropped_history_rounds),
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
    for number, round_games in rounds.items():
        playing = {g.white for g in round_games} | {g.black for g in round_games}
        missing = [name for name in seeds if name not in playing]
        played_bye = missing[0] if len(missing) == 1 else None
        played = [(g.white, g.black) for g in round_games]
        try:
            plan = pair_round(seeds, history, number, gpm, sched, excluded)
        except PairingError as exc:
            # The games before this round break the rules so badly (e.g. colours) that no
            # pairing exists: a mismatch of this round, not bad input; later rounds go on.
            report.rounds.append(RoundAudit(number, [], played, None, played_bye, [],
                                            error=str(exc).removeprefix(f"round {number}: ")))
        else:
            excluded = plan.excluded
            report.rounds.append(RoundAudit(
                number=number, computed=[(g.white, g.black) for g in plan.games], played=played,
                bye=plan.bye, played_bye=played_bye,
                dropped_history_rounds=list(plan.dropped_history_rounds)))
        history.append(record_from_result(RoundResult(
            number=number,
            games=tuple(PlayedGame(g.round, g.game_in_round, g.white, g.black, g.result)
                        for g in round_games),
            bye=played_bye if len(seeds) % 2 else None)))
    return report


def describe_round(audit: RoundAudit) -> str:
    """One human line for a round."""
    games = len(audit.played)
    notes = []
    if audit.dropped_history_rounds:
        notes.append("encounter history dropped: round(s) "
                     + ", ".join(map(str, audit.dropped_history_rounds)))
    if audit.bye is not None or audit.played_bye is not None:
        notes.append(f"bye {audit.bye}")
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
