"""`swiss-runner play CONFIG --white A --black B`: one game, its PGN on stdout."""

from __future__ import annotations

import argparse
import sys

import chess

from runner.config import Config
from runner.domain.models import GameSpec, Opening
from runner.domain.timecontrol import parse_time_control
from runner.domain.variant import is_960
from runner.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK
from runner.play.referee import RefereeError, play_game


def _opening_from_args(args: argparse.Namespace, chess960: bool = False) -> Opening | None:
    if getattr(args, "fen", None):
        try:
            board = chess.Board(args.fen, chess960=chess960)
        except ValueError as exc:
            raise ValueError(f"--fen: got {args.fen!r}, expected a valid FEN ({exc})") from None
        status = board.status()
        if status != chess.STATUS_VALID:
            why = ", ".join(flag.name.lower().replace("_", " ") for flag in chess.Status
                            if flag and flag.name and flag in status)
            raise ValueError(f"--fen: got {args.fen!r}, expected a legal position ({why})")
        outcome = board.outcome(claim_draw=False)
        if outcome is not None:
            raise ValueError(f"--fen: got {args.fen!r}, expected a position where the game is "
                             f"not over ({outcome.termination.name.lower().replace('_', ' ')})")
        return Opening(index=-1, name="", fen=board.fen())
    if getattr(args, "moves", None):
        board = chess.Board(chess960=chess960)
        ucis: list[str] = []
        for i, token in enumerate(args.moves.replace(",", " ").split(), 1):
            if token[0].isdigit() and token.rstrip(".").isdigit():
                continue  # move numbers "1." are allowed
            token = token.split(".")[-1]
            try:
                move = board.parse_san(token)
            except ValueError:
                try:
                    move = board.parse_uci(token)
                except ValueError:
                    raise ValueError(f"--moves: token {i} {token!r} is not a legal move (SAN or UCI) "
                                     f"in {board.fen()}") from None
            board.push(move)
            ucis.append(move.uci())
        return Opening(index=-1, name="", moves=tuple(ucis))
    return None


def cli_play(config: Config, args: argparse.Namespace) -> int:
    """``swiss-runner play``: one game between two engines of the config; print its PGN."""
    from runner.play import eventloop
    from runner.play.eventloop import referee_refused

    refused = referee_refused()  # the event loop it names
    if refused is not None:
        return refused
    names = [e.name for e in config.engines]
    for flag in ("white", "black"):
        if getattr(args, flag) not in names:
            print(f"error: --{flag}: got {getattr(args, flag)!r}, expected one of the engines in "
                  f"{config.path}: {', '.join(names)}", file=sys.stderr)
            return EXIT_BAD_INPUT
    tc = config.time_control
    if getattr(args, "tc", None):
        try:
            tc = parse_time_control(args.tc)
        except ValueError as exc:
            print(f"error: --tc: got {args.tc!r}, expected {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        opening = _opening_from_args(args, is_960(config.variant))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    spec = GameSpec(game_id=1, round=1, game_in_round=1, white=config.engine(args.white),
                    black=config.engine(args.black), time_control=tc,
                    adjudication=config.adjudication, opening=opening, event=config.event,
                    site=config.site, time_margin_ms=config.time_margin_ms,
                    variant=config.variant)
    try:
        record = eventloop.run(play_game(spec))
    except RefereeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("interrupted; engines stopped", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(record.pgn)
    print(f"{record.white} - {record.black}: {record.result} {{{record.reason}}}", file=sys.stderr)
    return EXIT_OK
