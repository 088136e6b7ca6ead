"""Command line: argument parsing and dispatch to the modules that do the work.

Exit codes (all subcommands): 0 success; 1 the command ran but the answer is "no"
(audit mismatch, engine probe failed, tournament stopped early); 2 bad input (config, PGN,
state from another event, ...); 130 interrupted by SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from runner import __version__
from runner.cli.common import (
    add_format,
    err,
    escaped_output,
    load,
    one_line_logs,
    quiet_unraisable,
)
from runner.errors import (
    EXIT_BAD_INPUT,
    EXIT_CODES_HELP,
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    TRACEBACK_ENV,
    BadInput,
    SwissRunnerError,
    unexpected_error,
)
from runner.play.eventloop import defer_collection


def _with_config(module: str, function: str,
                 writes: bool = False) -> Callable[[argparse.Namespace], int]:
    """A subcommand that loads and validates ``args.config``, then calls module.function(config, args).

    The module is imported only when the command runs, so ``--help`` never depends on the
    rest of the package. ``writes``: the outputs must be writable (run, validate).
    """

    def command(args: argparse.Namespace) -> int:
        config = load(args.config, writes=writes)
        if config is None:
            return EXIT_BAD_INPUT
        return int(getattr(importlib.import_module(module), function)(config, args))

    return command


def _without_config(module: str, function: str) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        return int(getattr(importlib.import_module(module), function)(args))

    return command


cmd_validate = _with_config("runner.cli.validate", "cli_validate", writes=True)
cmd_run = _with_config("runner.cli.run", "cli_run", writes=True)
cmd_status = _with_config("runner.cli.status", "cli_status")
cmd_standings = _with_config("runner.cli.standings", "cli_standings")
cmd_play = _with_config("runner.cli.play", "cli_play")
cmd_audit = _without_config("runner.cli.audit", "cli_audit")
cmd_engines_json = _without_config("runner.cli.enginesjson", "cli_engines_json")
cmd_serve = _with_config("runner.cli.serve", "cli_serve")
cmd_worker = _without_config("runner.cluster.worker", "cli_worker")
cmd_td = _with_config("runner.cli.td", "cli_td")
cmd_schema = _without_config("runner.cli.schema", "cli_schema")
cmd_scheduler = _without_config("runner.cluster.scheduler", "cli_scheduler")


def _seconds(text: str) -> float:
    """``--wait``: finite seconds >= 0 ('nan' waited for ever, '-1' gave up at once)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"got {text!r}, expected seconds >= 0 (0 = never give up)")
    return value


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. ``command``: the subcommand about to run; only its own
    arguments are then built (every subcommand's cost 2-3 ms of CPU at each start, and
    `ratings` and `td` a module each to import); None or a name that is no subcommand:
    every subcommand's, as --help and the refusal of an unknown command need."""
    parser = argparse.ArgumentParser(
        prog="swiss-runner",
        description="Run chess-engine tournaments with the TCEC Swiss system.",
        epilog=EXIT_CODES_HELP,
    )
    parser.add_argument("--version", action="version", version=f"swiss-runner {__version__}")
    sub = _Commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
                    command)
    _event_commands(sub)
    _report_commands(sub)
    _cluster_commands(sub)
    _tool_commands(sub)
    _serve_command(sub)
    if command is not None and command not in sub.names:
        return build_parser(None)
    return parser


class _Commands:
    """The subcommands' parsers as they are added: all of them, or only ``only``'s."""

    def __init__(self, sub: argparse._SubParsersAction[argparse.ArgumentParser],
                 only: str | None) -> None:
        self.sub, self.only = sub, only
        self.names: list[str] = []

    def add(self, name: str, **kwargs: Any) -> argparse.ArgumentParser | None:
        """The parser of the subcommand ``name``, to build its arguments on; None when
        another subcommand runs."""
        self.names.append(name)
        if self.only is not None and name != self.only:
            return None
        return self.sub.add_parser(name, **kwargs)


def _event_commands(sub: _Commands) -> None:
    """validate, run and play: the commands that start engines."""
    if p := sub.add("validate", help="check a config file (and optionally start every engine)"):
        p.add_argument("config", help="tournament YAML file")
        p.add_argument("--probe", action="store_true", help="start each engine and complete the handshake")
        p.add_argument("--timeout", type=float, default=None,
                       help="handshake timeout in seconds (default: the engine's StartupTimeoutS, else 10)")
        p.set_defaults(func=cmd_validate)

    if p := sub.add("run", help="run (or resume) the tournament described by a config"):
        p.add_argument("config", help="tournament YAML file")
        p.add_argument("--finish-games", action="store_true",
                       help="on SIGINT/SIGTERM let games in progress finish instead of aborting them")
        p.add_argument("--quiet", action="store_true", help="print only round summaries and standings")
        p.add_argument("--scheduler", metavar="ADDRESS",
                       help="play the games on Dask workers of this scheduler (tcp://HOST:PORT); "
                            "overrides Cluster.Scheduler")
        p.add_argument("--insecure", action="store_true",
                       help="allow a plain tcp:// scheduler on another machine (a private network; "
                            "as Cluster.Insecure: true)")
        p.add_argument("--accept-build", action="append", metavar="ENGINE", default=[],
                       help="record ENGINE's new build (its files changed since the event started: "
                            "TCEC rule 8) so that it plays on; needs --reason (repeatable)")
        p.add_argument("--reason", metavar="TEXT",
                       help="why the builds of --accept-build may play (recorded with them)")
        p.add_argument("--live-pgn", metavar="FILE",
                       help="rewrite FILE with the current round's games (live PGN for relays, "
                            "docs/broadcast.md) at most every 0.1 s; overrides LivePgn")
        p.set_defaults(func=cmd_run)

    if p := sub.add("play", help="play one game between two engines of a config and print its PGN"):
        p.add_argument("config", help="tournament YAML file")
        p.add_argument("--white", required=True, help="engine name for White")
        p.add_argument("--black", required=True, help="engine name for Black")
        start = p.add_mutually_exclusive_group()
        start.add_argument("--fen", help="start position")
        start.add_argument("--moves", help='book moves from the start, SAN or UCI: "e4 e5 Nf3"')
        p.add_argument("--tc", help="time control overriding the config (cutechess syntax)")
        p.set_defaults(func=cmd_play)


def _report_commands(sub: _Commands) -> None:
    """The commands that print data (``--format``, ``--json`` its alias) and `td`."""
    if p := sub.add("status", help="show the progress of a tournament from its state"):
        p.add_argument("config", help="tournament YAML file")
        add_format(p)
        p.set_defaults(func=cmd_status)

    if p := sub.add("standings", help="print standings, tiebreaks and crosstable"):
        p.add_argument("config", help="tournament YAML file")
        add_format(p, ("text", "markdown", "json", "csv"))
        p.set_defaults(func=cmd_standings)

    if p := sub.add("ratings", help="Elo with error margins, pairs and how games ended"):
        importlib.import_module("runner.cli.ratings").add_arguments(p)
        p.set_defaults(func=lambda a: importlib.import_module("runner.cli.ratings").cli_ratings(a))

    if p := sub.add("td", help="the tournament director's commands: pause, resume, withdraw, "
                    "adjudicate, restart, rewind, note, log (docs/td.md)"):
        importlib.import_module("runner.cli.td").add_arguments(p)
        p.set_defaults(func=cmd_td)

    if p := sub.add("audit", help="replay a finished event's PGN through the TCEC Swiss rules"):
        p.add_argument("pgn", help="PGN file of the event (tags Round, White, Black, Result)")
        p.add_argument("--seeds", required=True, help="file with one engine name per line, seed 1 first")
        p.add_argument("--games-per-match", type=int, choices=(1, 2), help="default: inferred from the PGN")
        p.add_argument("--schedule", choices=("split", "consecutive"), help="default: inferred from the PGN")
        add_format(p)
        p.set_defaults(func=cmd_audit)


def _cluster_commands(sub: _Commands) -> None:
    """worker and scheduler: a runner on several machines (docs/cluster.md)."""
    if p := sub.add("worker", help="play games for a runner on several machines (Dask worker)"):
        p.add_argument("scheduler", help="the Dask scheduler's address, tcp://HOST:PORT")
        p.add_argument("--slots", type=int, default=1, help="games played at once (default 1)")
        p.add_argument("--name", help="the worker's name in status and PGN (default: host name)")
        p.add_argument("--engine", action="append", metavar="NAME=COMMAND",
                       help="run the event's engine NAME with this command on this machine "
                            "(repeatable; default: the config's command)")
        p.add_argument("--wait", type=_seconds, default=0.0,
                       help="give up after this many seconds without a scheduler (default 0: never)")
        p.add_argument("--listen", metavar="HOST[:PORT]",
                       help="listen on this address only (default: the local address that reaches "
                            "the scheduler; 0.0.0.0 = every interface)")
        p.add_argument("--insecure", action="store_true",
                       help="allow a plain tcp:// scheduler on another machine (a private network)")
        p.add_argument("--gpus", metavar="0,1|auto",
                       help="this machine's GPUs for GPU engines' games: device indices or auto "
                            "(nvidia-smi -L); shared out among --slots (docs/gpus.md)")
        p.add_argument("--slot", action="store_true", help=argparse.SUPPRESS)  # a supervisor's slot
        p.set_defaults(func=cmd_worker)

    if p := sub.add("scheduler", help="start the Dask scheduler of a cluster, safely "
                    "(one address, TLS, no dashboard)"):
        p.add_argument("--listen", metavar="[tls://]HOST[:PORT]", default="127.0.0.1:8786",
                       help="listen on this address only (default 127.0.0.1:8786; tls:// when the "
                            "Dask configuration has the scheduler's certificate)")
        p.add_argument("--insecure", action="store_true",
                       help="allow plain tcp:// beyond loopback (a private network)")
        p.add_argument("--dashboard", metavar="HOST:PORT",
                       help="serve Dask's dashboard there (default: none)")
        p.set_defaults(func=cmd_scheduler)


def _tool_commands(sub: _Commands) -> None:
    """engines-json and schema: helpers for writing a config."""
    if p := sub.add("engines-json", help="print cutechess's engines.json as the config's Engines (YAML)"):
        p.add_argument("file", help="cutechess engines.json")
        p.add_argument("--engine", action="append", metavar="NAME", help="only this engine (repeatable)")
        p.set_defaults(func=cmd_engines_json)
    if p := sub.add("schema", help="print the config's JSON Schema (draft 2020-12), for "
                    "editors: docs/config.schema.json"):
        p.set_defaults(func=cmd_schema)


def _serve_command(sub: _Commands) -> None:
    """serve: the live web dashboard (docs/dashboard.md); the TD's actions only with an
    admin token (docs/td.md)."""
    if p := sub.add(
        "serve", help="serve the event's live web dashboard (standings, games, boards, PGN); "
        "read-only unless started with an admin token, which turns on the TD's actions",
        description="Serve the live web dashboard of the event of CONFIG: standings, rounds, "
        "games, boards, PGN downloads and JSON (docs/dashboard.md). It only reads the event, "
        "unless --admin-token-file (or $SWISS_RUNNER_ADMIN_TOKEN) is given: then its page "
        "admin lets the holders of those tokens act as the TD (pause, adjudicate, ...: "
        "docs/td.md)."):
        p.add_argument("config", help="tournament YAML file")
        p.add_argument("--listen", metavar="HOST[:PORT]",
                       help="listen on this address only (default 127.0.0.1:8080; PORT 0 = any "
                            "free; other hosts than loopback need an access token)")
        p.add_argument("--host", help="alias: the HOST of --listen")
        p.add_argument("--port", type=int, help="alias: the PORT of --listen")
        p.add_argument("--token", help="access token required on every request (refused unless "
                       "bound to localhost: other users see it in ps; use --token-file or "
                       "$SWISS_RUNNER_TOKEN)")
        p.add_argument("--token-file", metavar="FILE",
                       help="read the access token from FILE's first line (required unless bound "
                            "to localhost, or $SWISS_RUNNER_TOKEN)")
        p.add_argument("--secure-cookie", action="store_true",
                       help="mark the token cookie Secure (https only) even without "
                            "X-Forwarded-Proto: https from a trusted proxy")
        p.add_argument("--trusted-proxy", action="append", metavar="ADDRESS",
                       help="a reverse proxy whose X-Forwarded-For and X-Forwarded-Proto are "
                            "believed (repeatable; default none: those headers are ignored)")
        p.add_argument("--allowed-host", action="append", metavar="NAME",
                       help="a name the dashboard answers to (the Host header; repeatable; "
                            "*.example.org for its subdomains); always: the --listen address, "
                            "localhost, 127.0.0.1, ::1; others get 421")
        for flag, default, what in (
                ("--max-connections", 1000, "open connections at most (event streams included); "
                 "more are answered 503"),
                ("--max-per-client", 16, "open connections at most from one client address (an "
                 "IPv6 one by its /64; through a --trusted-proxy: requests in flight of each "
                 "client it names); more are answered 429"),
                ("--max-streams-per-client", 8, "live event streams at most of one client (a "
                 "client as just above); more are answered 429")):
            p.add_argument(flag, type=int, default=default, metavar="N",
                           help=f"{what} (default {default})")
        p.add_argument("--nice", type=int, default=10, metavar="N",
                       help="lower the dashboard's scheduling priority by N (0-19, default 10): "
                            "beside a running event, its engines and runner get the CPU first")
        p.add_argument("--client-timeout", type=float, default=10.0, metavar="SECONDS",
                       help="close a connection on which no request is in flight for this long "
                            "(a request's head sent slowly, an idle one; default 10)")
        p.add_argument("--admin-token-file", metavar="FILE",
                       help="turn on the TD's actions (pause, adjudicate, ...: docs/td.md), one "
                            "admin token per person: lines 'NAME TOKEN' (a file of one bare token: "
                            "the person 'admin'), distinct from the access token (default: "
                            "$SWISS_RUNNER_ADMIN_TOKEN; read-only without either)")
        p.set_defaults(func=cmd_serve)


def _before_exit() -> None:
    """The process is about to exit: its garbage is collected once (finalizers run as ever),
    then what is left is frozen, so that the interpreter's finalization does not walk every
    object of python-chess, PyYAML and the runner again in each of its own collections
    (about 13 ms of CPU for `validate` or `status`: bench/bench_config.py)."""
    gc.collect()
    gc.freeze()


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names first (None before any: --help, --version)."""
    for word in argv:
        if word.startswith("-"):
            return None
        return word
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` (None: the process's own command line, as the console script
    and ``python -m runner`` call it) and return its exit code."""
    if argv is None:
        if _command(sys.argv[1:]) == "run":
            defer_collection()  # until the run's event loop starts
        try:
            return main(sys.argv[1:])
        finally:
            _before_exit()
    one_line_logs()
    quiet_unraisable()
    with escaped_output():  # no control character reaches a terminal (docs/operators.md)
        return _run(argv)


def _run(argv: Sequence[str]) -> int:
    """Parse ``argv`` and run its command; every error as one line, never a traceback."""
    args = build_parser(_command(argv)).parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # Output piped into `head` or a closed pager: not an error of ours. Point stdout at
        # /dev/null so the interpreter's final flush does not complain again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    except SwissRunnerError as exc:  # a command that let one of ours through
        err(str(exc))
        return EXIT_BAD_INPUT if isinstance(exc, BadInput) else EXIT_FAIL
    except (Exception, RecursionError) as exc:
        # The last resort: a user never gets a Python traceback. Whatever a command
        # recorded before this point is committed (every game in its own transaction).
        if os.environ.get(TRACEBACK_ENV):
            raise
        err(unexpected_error(args.command, exc))
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
