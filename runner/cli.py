"""Command line: argument parsing and dispatch to the modules that do the work.

Exit codes (all subcommands): 0 success; 1 the command ran but the answer is "no"
(audit mismatch, engine probe failed, tournament stopped early); 2 bad input (config, PGN,
state from another event, ...); 130 interrupted by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from runner import __version__
from runner.config import Config, ConfigError, advice, load_config

EXIT_OK, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def _load(path: str) -> Config | None:
    try:
        return load_config(path)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"{path}: {len(exc.problems)} problem(s); nothing was run or written", file=sys.stderr)
        return None


def cmd_validate(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return EXIT_BAD_INPUT
    problems: list[str] = []
    if config.openings is not None:
        from runner.openings import check_book, event_matches

        # as `run` reads it: the polyglot walk depends on RandomSeed, and without
        # UniquePerMatchOnly the book must hold an opening for every match
        problems += check_book(config.openings, config.swiss.random_seed,
                               matches=event_matches(config),
                               unique_per_match_only=config.swiss.unique_per_match_only)
    if config.backend == "cutechess":
        from runner.cutechess import check_binary

        error = check_binary(config.cutechess_path)
        if error:
            problems.append(f"{config.path}: CutechessPath: {error}")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return EXIT_BAD_INPUT
    status = EXIT_OK
    if args.probe:
        from runner.engines import probe_engine

        for engine in config.engines:
            result = probe_engine(engine, timeout=args.timeout)
            if result.error:
                print(f"FAIL {engine.name}: {result.error}")
                status = EXIT_FAIL
                continue
            print(f"ok   {engine.name}: {result.id_name} ({engine.protocol}, {engine.command})")
            for option in result.unknown_options:
                print(f"FAIL {engine.name}: Engines[{config.engines.index(engine)}].Options.{option}: "
                      f"the engine has no option {option!r}")
                status = EXIT_FAIL
    for note in advice(config):
        print(f"warning: {config.path}: {note}")
    games = len(config.engines) // 2 * config.swiss.games_per_match * config.swiss.rounds
    verdict = "OK" if status == EXIT_OK else "config OK, but the engine probe FAILED (see above)"
    print(f"{config.path}: {verdict}: {len(config.engines)} engines, {config.swiss.rounds} "
          f"round(s) x {config.swiss.games_per_match} game(s) per match = {games} games, "
          f"time control {config.time_control} ({config.time_control.human()})")
    return status


def _with_config(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    """A subcommand that loads and validates ``args.config``, then calls module.function(config, args).

    The module is imported only when the command runs, so ``--help`` and ``validate`` never
    depend on the rest of the package.
    """

    def command(args: argparse.Namespace) -> int:
        config = _load(args.config)
        if config is None:
            return EXIT_BAD_INPUT
        return int(getattr(importlib.import_module(module), function)(config, args))

    return command


cmd_run = _with_config("runner.orchestrator", "cli_run")
cmd_status = _with_config("runner.orchestrator", "cli_status")
cmd_standings = _with_config("runner.standings", "cli_standings")
cmd_play = _with_config("runner.referee", "cli_play")


def cmd_audit(args: argparse.Namespace) -> int:
    from runner.audit import cli_audit

    return cli_audit(args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="swiss-runner",
        description="Run chess-engine tournaments with the TCEC Swiss system.",
        epilog="Exit codes: 0 ok, 1 failed/mismatch, 2 bad input, 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"swiss-runner {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("validate", help="check a config file (and optionally start every engine)")
    p.add_argument("config", help="tournament YAML file")
    p.add_argument("--probe", action="store_true", help="start each engine and complete the handshake")
    p.add_argument("--timeout", type=float, default=10.0, help="handshake timeout in seconds (default 10)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("run", help="run (or resume) the tournament described by a config")
    p.add_argument("config", help="tournament YAML file")
    p.add_argument("--finish-games", action="store_true",
                   help="on SIGINT/SIGTERM let games in progress finish instead of aborting them")
    p.add_argument("--quiet", action="store_true", help="print only round summaries and standings")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("status", help="show the progress of a tournament from its state")
    p.add_argument("config", help="tournament YAML file")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("standings", help="print standings, tiebreaks and crosstable")
    p.add_argument("config", help="tournament YAML file")
    p.add_argument("--format", choices=("text", "markdown", "json", "csv"), default="text")
    p.set_defaults(func=cmd_standings)

    p = sub.add_parser("play", help="play one game between two engines of a config and print its PGN")
    p.add_argument("config", help="tournament YAML file")
    p.add_argument("--white", required=True, help="engine name for White")
    p.add_argument("--black", required=True, help="engine name for Black")
    start = p.add_mutually_exclusive_group()
    start.add_argument("--fen", help="start position")
    start.add_argument("--moves", help='book moves from the start, SAN or UCI: "e4 e5 Nf3"')
    p.add_argument("--tc", help="time control overriding the config (cutechess syntax)")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("ratings", help="Elo with error margins, pairs and how games ended")
    importlib.import_module("runner.ratings_cli").add_arguments(p)
    p.set_defaults(func=lambda a: importlib.import_module("runner.ratings_cli").cli_ratings(a))

    p = sub.add_parser("audit", help="replay a finished event's PGN through the TCEC Swiss rules")
    p.add_argument("pgn", help="PGN file of the event (tags Round, White, Black, Result)")
    p.add_argument("--seeds", required=True, help="file with one engine name per line, seed 1 first")
    p.add_argument("--games-per-match", type=int, choices=(1, 2), help="default: inferred from the PGN")
    p.add_argument("--schedule", choices=("split", "consecutive"), help="default: inferred from the PGN")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_audit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # Output piped into `head` or a closed pager: not an error of ours. Point stdout at
        # /dev/null so the interpreter's final flush does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
