"""`swiss-runner td CONFIG ACTION ...`: the tournament director's commands (docs/td.md).

A command is checked against the event as recorded and written, pending, to the event's
database; the running runner applies it within a second (the next `run`, when none runs).
It never takes the event lock and writes nothing but its command.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from typing import TYPE_CHECKING, Any

from runner.cli.common import add_format, err
from runner.config import Config
from runner.domain.models import RESULTS
from runner.domain.text import printable
from runner.errors import EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from runner.store import decisions


# One meaning each across the actions (docs/td.md, "Timing: --now and --end-of-round")
NOW_HELP = "act on the game(s) in progress it touches at once"
END_OF_ROUND_HELP = "act at the end of the current round"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `td` (called by runner.cli.build_parser): its actions as subcommands."""
    p.add_argument("config", help="tournament YAML file")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, help_text: str, reason: bool = True) -> argparse.ArgumentParser:
        a = sub.add_parser(name, help=help_text)
        if reason:
            a.add_argument("--reason", required=True, metavar="TEXT",
                           help="why (kept in the decision log; required)")
        return a

    a = action("pause", "start no new game (default: the games in progress finish)")
    mode = a.add_mutually_exclusive_group()
    mode.add_argument("--now", dest="mode", action="store_const", const="now", help=NOW_HELP
                      + ": interrupted; on resume each is decided by TCEC rule 7.c (docs/resume.md), "
                      "and the runner says how")
    mode.add_argument("--end-of-round", "--after-round", dest="mode", action="store_const",
                      const="after-round", help=END_OF_ROUND_HELP
                      + ": the current round is played to its end, then the event pauses "
                        "(--after-round: an alias)")
    a.set_defaults(mode="finish")
    action("resume", "go on after a pause")
    a = action("withdraw", "withdraw an engine from the next pairing on (default: its game "
               "in progress finishes)")
    a.add_argument("engine", help="the engine's name")
    a.add_argument("--now", action="store_true",
                   help=NOW_HELP + ": its game in progress is lost by forfeit (rule 7.a)")
    a = action("adjudicate", "end a game in progress with this result")
    a.add_argument("game", help="game number (as status shows it) or R.G (the PGN's Round)")
    a.add_argument("result", help=f"one of {', '.join(RESULTS)}")
    a = action("restart", "play a game again from its start (rule 7.d; default: --now)")
    a.add_argument("game", help="game number or R.G")
    when = a.add_mutually_exclusive_group()
    when.add_argument("--now", dest="when", action="store_const", const="now",
                      help=NOW_HELP + ": stopped and played again at once (the default: a "
                           "restart exists to stop its game)")
    when.add_argument("--end-of-round", dest="when", action="store_const",
                      const="end-of-round", help=END_OF_ROUND_HELP
                      + ": stopped, and played again after the round's other games")
    a.set_defaults(when="now")
    a = action("rewind", "void a game and every game and pairing after it (rule 7.e)")
    a.add_argument("--to", required=True, dest="game", metavar="GAME",
                   help="the first game voided: number or R.G")
    a = action("note", "add a line to the event's log", reason=False)
    a.add_argument("text", help="the note")
    a = action("gpu", "take a GPU out of rotation (off) or back (on) (docs/gpus.md)")
    a.add_argument("state", choices=("off", "on"), help="off: no new game gets it; on: back")
    a.add_argument("device", help="the device index (one of the event's Gpus)")
    a = action("log", "print the decision log", reason=False)
    add_format(a)


def command_args(args: argparse.Namespace) -> dict[str, Any]:
    """The stored arguments of a parsed command."""
    action = args.action
    if action == "pause":
        return {"mode": args.mode}
    if action == "withdraw":
        return {"engine": args.engine, "now": bool(args.now)}
    if action == "adjudicate":
        return {"game": args.game, "result": args.result}
    if action == "restart":
        return {"game": args.game, "when": args.when}
    if action == "rewind":
        return {"game": args.game}
    if action == "note":
        return {"text": args.text}
    if action == "gpu":
        return {"state": args.state, "device": args.device}
    return {}


def cli_td(config: Config, args: argparse.Namespace) -> int:
    # here, not at the top: every command's parser imports this module (add_arguments)
    from runner.service.lock import runner_alive
    from runner.service.td.director import give_command, who_am_i

    if args.action == "log":
        return _log(config, getattr(args, "format", "text") == "json")
    action_args = command_args(args)
    reason = str(getattr(args, "reason", "") or "").strip()
    if args.action != "note" and not reason:
        err(f"td {args.action}: --reason must say why (it is kept in the decision log); nothing was "
            "recorded")
        return EXIT_BAD_INPUT
    cid, problem = give_command(config, args.action, action_args, reason, who_am_i())
    if not cid:
        err(f"td {args.action}: {problem}; nothing was recorded")
        return EXIT_BAD_INPUT
    alive = runner_alive(config.database)
    when = ("the running runner applies it within a second" if alive else
            "no runner is running: the next `swiss-runner run` applies it")
    print(f"TD command #{cid} recorded ({args.action}); {when}. "
          f"`swiss-runner td {config.path} log` shows it.", flush=True)
    return EXIT_OK


def log_lines(log: list[decisions.Command]) -> list[str]:
    lines = []
    for c in log:
        state = {"applied": "", "refused": " REFUSED", "failed": " FAILED",
                 "pending": " PENDING"}.get(c.state, "")
        line = f"#{c.id} {c.applied_at or c.time} {c.who}{state}: {c.text()}"
        if c.reason:
            line += f" -- {c.reason}"
        if c.outcome and c.action != "note":
            line += f" => {c.outcome}"
        lines.append(printable(line))
    return lines


def _log(config: Config, as_json: bool) -> int:
    from runner.service.td.director import open_event_store
    from runner.store import decisions
    from runner.store.database import damaged_state

    store = open_event_store(config)
    if isinstance(store, str):
        err(store)
        return EXIT_BAD_INPUT
    try:
        log = decisions.commands(store.conn)
    except sqlite3.Error as exc:
        err(damaged_state(config.database, exc))
        return EXIT_BAD_INPUT
    finally:
        store.close()
    if as_json:
        print(json.dumps({"format": "swiss-runner-td-log", "version": 1,
                          "commands": [c.doc() for c in log]}, indent=1), flush=True)
        return EXIT_OK
    if not log:
        print("No TD command given yet.", flush=True)
        return EXIT_OK
    for line in log_lines(log):
        print(line)
    return EXIT_OK
