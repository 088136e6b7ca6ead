"""`swiss-runner audit PGN --seeds FILE`: replay an event's PGN through the TCEC Swiss rules.

Reading the files is here; the comparison itself is pure (runner.domain.audit).
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import chess.pgn

from runner.domain.audit import (
    _ROUND_RE,
    AuditInputError,
    PgnGame,
    audit_event,
    describe_round,
    parse_withdrawn,
)
from runner.domain.models import RESULTS, TIEBREAK_PAIR_TAG, WITHDRAWN_TAG
from runner.domain.pgn import unescape_tag
from runner.domain.text import printable, printable_lines
from runner.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK

MAX_SEEDS_CHARS = 1 << 20


def read_seeds(path: str | Path) -> list[str]:
    """One engine name per line, seed 1 first; blank lines are ignored."""
    try:
        with _open_regular(path, "seeds file", encoding="utf-8") as handle:
            text = handle.read(MAX_SEEDS_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise AuditInputError(f"{path}: cannot read the seeds file: {exc}") from exc
    if len(text) > MAX_SEEDS_CHARS:
        raise AuditInputError(f"{path}: larger than {MAX_SEEDS_CHARS >> 10} KiB: expected one "
                              "engine name per line")
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


MAX_LINE_CHARS = 64 * 1024  # a PGN line is at most a few hundred characters
MAX_CHARS_BEFORE_A_GAME = 1 << 20  # this much text without a game: it is not PGN


class _BoundedLines:
    """The file's lines for python-chess (which calls only ``readline``), streamed with
    bounds: an endless line (``/dev/zero``, a binary) or a megabyte without a single game
    is refused instead of read into memory."""

    def __init__(self, handle: TextIO, path: str | Path):
        self.handle = handle
        self.path = path
        self.chars = 0
        self.games = 0

    def readline(self) -> str:
        line = self.handle.readline(MAX_LINE_CHARS + 1)
        if len(line) > MAX_LINE_CHARS:
            raise AuditInputError(f"{self.path}: a line longer than {MAX_LINE_CHARS} characters "
                                  f"after {self.chars} characters: this is not PGN")
        self.chars += len(line)
        if not self.games and self.chars > MAX_CHARS_BEFORE_A_GAME:
            raise AuditInputError(f"{self.path}: no PGN game in the first "
                                  f"{MAX_CHARS_BEFORE_A_GAME >> 20} MiB: this is not PGN")
        return line


def _open_regular(path: str | Path, what: str, **kwargs: Any) -> TextIO:
    """Open a regular file for reading; a directory, FIFO or device is refused unread."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except ValueError as exc:  # NUL in the name
        raise AuditInputError(f"{printable(str(path))}: cannot read the {what}: {exc}") from None
    except OSError as exc:
        raise AuditInputError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise AuditInputError(f"{path}: not a regular file (a directory, device or pipe); "
                              f"expected the {what}")
    os.set_blocking(fd, True)
    return open(fd, **kwargs)  # noqa: SIM115 - the caller closes it


def read_pgn_games(path: str | Path, seeds: Sequence[str] = ()) -> list[PgnGame]:
    """The games' Round, White, Black and Result tags, in file order."""
    games: list[PgnGame] = []
    try:
        with _open_regular(path, "PGN", encoding="utf-8-sig", errors="replace") as raw:
            handle = _BoundedLines(raw, path)
            while True:
                headers = chess.pgn.read_headers(handle)  # type: ignore[arg-type]
                if headers is None:
                    break
                handle.games += 1
                index = len(games) + 1
                round_tag = unescape_tag(headers.get("Round", "?"))
                match = _ROUND_RE.match(round_tag)
                if not match:
                    raise AuditInputError(f'{path}: game {index} (Round "{round_tag}"): '
                                          f'Round tag {round_tag!r}: expected "R.G" (round.game)')
                number, game_in_round = int(match.group(1)), int(match.group(2))
                if number < 1 or game_in_round < 1:
                    raise AuditInputError(f'{path}: game {index} (Round "{round_tag}"): round '
                                          f"and game numbers start at 1")
                white = unescape_tag(headers.get("White", "")).strip()
                black = unescape_tag(headers.get("Black", "")).strip()
                result = headers.get("Result", "*").strip()
                game = PgnGame(index, number, game_in_round, white, black, result,
                               extra=bool(headers.get(TIEBREAK_PAIR_TAG, "").strip()),
                               withdrawn=parse_withdrawn(
                                   unescape_tag(headers.get(WITHDRAWN_TAG, "")), seeds))
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


def say(text: str) -> None:
    """Print a line of the report; names come from the PGN, so never raw escapes."""
    print(printable_lines(text))


def cli_audit(args: argparse.Namespace) -> int:
    """Entry point of `swiss-runner audit`; returns the exit code."""
    try:
        seeds = read_seeds(args.seeds)
        games = read_pgn_games(args.pgn, seeds)
        report = audit_event(games, seeds, args.games_per_match, args.schedule, source=args.pgn)
    except AuditInputError as exc:
        print(f"error: {printable_lines(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if getattr(args, "format", "text") == "json":
        print(json.dumps(report.to_json()))
    else:
        kind = "single rounds" if report.games_per_match == 1 else \
            f"double rounds, {report.schedule} schedule"
        say(f"{args.pgn}: {report.players} players, {len(report.rounds)} rounds, {kind}")
        if report.extra_games:
            say(f"{report.extra_games} extra tie-break game(s) (tag {TIEBREAK_PAIR_TAG}) set aside: "
                "they are not paired by the Swiss rules")
        for audit in report.rounds:
            say(describe_round(audit))
        bad = [a.number for a in report.rounds if not a.match]
        if bad:
            say(f"{len(bad)} of {len(report.rounds)} rounds differ: "
                + ", ".join(map(str, bad)))
            if bad[0] < report.rounds[-1].number:
                say(f"note: each round is paired from the games as played, so a difference "
                    f"in round {bad[0]} can carry over to the rounds after it")
        else:
            say(f"all {len(report.rounds)} rounds match")
    return EXIT_OK if report.all_match else EXIT_FAIL
