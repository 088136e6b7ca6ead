"""`swiss-runner validate CONFIG [--probe]`: check a config, its book and (probe) its engines."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from runner.config import Config, advice, tablebase_gap
from runner.domain.text import printable
from runner.domain.variant import is_960
from runner.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK

if TYPE_CHECKING:
    from runner.config import EngineConfig
    from runner.play.engines import ProbeResult


def cli_validate(config: Config, args: argparse.Namespace) -> int:
    problems: list[str] = []
    if args.probe and args.timeout is not None and not (
            isinstance(args.timeout, float) and 0 < args.timeout <= 3600):
        print(f"error: --timeout {args.timeout:g}: expected seconds above 0 and at most 3600",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    if config.openings is not None:
        from runner.books.openings import check_book, event_matches

        # as `run` reads it: the polyglot walk depends on RandomSeed, and without
        # UniquePerMatchOnly the book must hold an opening for every match
        problems += check_book(config.openings, config.swiss.random_seed,
                               matches=event_matches(config),
                               unique_per_match_only=config.swiss.unique_per_match_only)
    problems += _recorded_event_problems(config)
    if config.backend == "cutechess":
        from runner.play.cutechess import check_binary

        error = check_binary(config.cutechess_path)
        if error:
            problems.append(f"{config.path}: CutechessPath: {error}")
    for problem in problems:
        print(f"error: {problem}", file=sys.stderr)
    if problems:
        return EXIT_BAD_INPUT
    status = EXIT_OK
    if args.probe:
        from runner.cli.common import quiet_engine_logs
        from runner.play.gpus import probe_on_devices

        quiet_engine_logs()

        # each GPU engine probed on its own devices (docs/gpus.md)
        status = _probe_report(config, probe_on_devices(config, args.timeout))
    if config.backend == "cutechess" and config.interruption.mode == "resume":
        print(f"note: {config.path}: Interruption.Mode: resume: with Backend: cutechess an "
              "interrupted game is played again from its start (cutechess-cli cannot be given "
              "the clocks of a game in progress); the built-in referee continues it from its "
              "position (TCEC rule 7.c.v)")
    if config.affinity is not None:
        plan = "; ".join(f"slot {i} -> cores {', '.join(map(str, cores))}"
                         for i, cores in enumerate(config.affinity.slots, 1))
        pondering = " (engines that ponder: White on the first half, Black on the second)" \
            if any(e.ponder for e in config.engines) else ""
        print(f"Affinity ({config.affinity.mode}): {plan}{pondering}")
    if config.alerts is not None:
        from runner.service.views.alerts import describe

        for line in describe(config.alerts, config.path):
            print(line)
    for note in [*filter(None, [tablebase_gap(config)]), *advice(config)]:
        print(f"warning: {config.path}: {note}")
    games = len(config.engines) // 2 * config.swiss.games_per_match * config.swiss.rounds
    verdict = "OK" if status == EXIT_OK else "config OK, but the engine probe FAILED (see above)"
    print(f"{config.path}: {verdict}: {len(config.engines)} engines, {config.swiss.rounds} "
          f"round(s) x {config.swiss.games_per_match} game(s) per match = {games} games, "
          f"time control {config.time_control} ({config.time_control.human()})")
    return status


def _probe_report(config: Config, results: list[ProbeResult]) -> int:
    """One verdict per probed engine (`validate --probe`): ok, or FAIL with each key and why
    (an unknown option with the closest of the engine's own); EXIT_FAIL when any failed."""
    status = EXIT_OK
    for i, (engine, result) in enumerate(zip(config.engines, results, strict=True)):
        failures, warnings = _probe_findings(config, f"Engines[{i}]", engine, result)
        if failures:
            status = EXIT_FAIL
            if result.error:
                said = f"; it printed: {printable(result.output[:500])}" if result.output else ""
                print(f"FAIL {engine.name}: {failures[0]} (command: "
                      f"{' '.join([engine.command, *engine.args])}){said}")
                continue
            print(f"FAIL {engine.name}: {'; '.join(failures)} ({result.id_name}, "
                  f"{engine.protocol}, {engine.command})")
        else:
            print(f"ok   {engine.name}: {result.id_name} ({engine.protocol}, {engine.command})")
        for warning in warnings:
            print(f"warning: {engine.name}: {warning}")
    return status


def _probe_findings(config: Config, where: str, engine: EngineConfig, result: ProbeResult
                    ) -> tuple[list[str], list[str]]:
    """(what makes the engine unfit for this event, what only deserves a warning)."""
    from runner.play.engines import ignored_limit_text, unknown_option_text

    if result.error:
        return [result.error], []
    failures = [f"{where}.Options.{option}: {unknown_option_text(option, result)}"
                for option in result.unknown_options]
    if result.no_chess960 and is_960(config.variant):
        failures.append(f"{where}: cannot play Variant: {config.variant}: {result.no_chess960}")
    said = ignored_limit_text(engine, result.limit_ignored) if result.limit_ignored else ""
    if said and config.time_control.infinite:  # nothing else ends its moves: games stall
        failures.append(f"{where}: {said}; with TimeControl 'inf' its moves would never end "
                        "(set MoveTime, or Depth if it honours that)")
    elif said:
        return failures, [f"{where}: {said}; it will move on its clock "
                          f"({config.time_control}) instead"]
    return failures, []


def _recorded_event_problems(config: Config) -> list[str]:
    """What `run` would refuse in the event already recorded in the config's database: a
    config that no longer describes it, a database that is damaged or not an event's."""
    if not config.database.exists():  # no event yet: nothing to compare (nor to import)
        return []
    import sqlite3

    from runner.cli.common import other_event, recorded_event_fingerprint
    from runner.store.database import StoreError, damaged_state

    try:
        changed = other_event(config, recorded_event_fingerprint(config))
    except StoreError as exc:
        return [str(exc)]
    except (sqlite3.Error, ValueError, TypeError, KeyError) as exc:
        return [damaged_state(config.database, exc)]
    return [changed] if changed else []
