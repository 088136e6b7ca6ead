"""`swiss-runner run CONFIG`: run or resume the event."""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.books.openings import BookError
from runner.cli.common import err as _err
from runner.cli.common import quiet_engine_logs, referee_refused
from runner.config import Config, tablebase_gap
from runner.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_INTERRUPTED, missing_extra
from runner.play import eventloop
from runner.service.lock import event_lock as _event_lock
from runner.service.lock import runner_alive
from runner.service.setup import (
    engine_problems,
    event_needs_games,
    lost_database_problem,
    stop_signals,
)
from runner.service.tournament import PlayGame, Tournament
from runner.store.database import Store, StoreError, damaged_state

if TYPE_CHECKING:
    from runner.cluster.client import ClusterBackend
    from runner.service.lock import EventLock


def cli_run(config: Config, args: argparse.Namespace, *, play_game: PlayGame | None = None) -> int:
    """`swiss-runner run CONFIG`: run or resume the event; exit code per runner.cli.

    SIGINT or SIGTERM at any moment is a clean stop (exit 130): the loop stops the games
    itself, and before it starts (the engine check) or after it ends it is a
    KeyboardInterrupt here."""
    with stop_signals():
        try:
            return _run(config, args, play_game)
        except KeyboardInterrupt:
            _err("interrupted; run the same command to resume")
            return EXIT_INTERRUPTED


def _live_pgn(config: Config, given: str) -> Config | str:
    """``config`` with ``--live-pgn FILE``, or why FILE cannot be it."""
    path = Path(given).resolve()
    taken = {config.pgn_out: "PgnOut", config.database: "Database",
             config.swiss.state_path: "SwissOptions.StatePath", config.epd_out: "EpdOut",
             config.path: "the config file",
             config.openings.file if config.openings else None: "Openings.File"}
    for other, key in taken.items():
        if other is not None and os.path.realpath(other) == os.path.realpath(path):
            return (f"--live-pgn {given}: it is {key}; expected a file of its own (it is "
                    "rewritten with the current round's games)")
    if path.is_dir() or not path.parent.is_dir():
        return (f"--live-pgn {given}: expected a file name in an existing directory "
                f"({'it is a directory' if path.is_dir() else 'no directory ' + str(path.parent)})")
    return replace(config, live_pgn=path)


def _cluster_refused(config: Config, args: argparse.Namespace, address: str) -> int | None:
    """The exit code after saying why the Dask backend for ``address`` (docs/cluster.md)
    cannot be used (no distributed, cutechess-cli, plain tcp:// beyond loopback); None: it
    can."""
    try:
        import runner.cluster.client  # noqa: F401
    except ImportError:
        _err(f"{config.path}: Cluster: the 'distributed' package is not installed "
             f"({missing_extra('cluster')})")
        return EXIT_BAD_INPUT
    if config.backend != "python-chess":
        _err(f"{config.path}: Cluster: workers play with the built-in referee "
             "(Backend: python-chess), not cutechess-cli")
        return EXIT_BAD_INPUT
    cc = config.cluster
    from runner.cluster.network import plain_problem, plain_warning

    insecure = getattr(args, "insecure", False) or bool(cc and cc.insecure)
    problem = plain_problem(address, insecure, "run --insecure or Cluster.Insecure: true")
    if problem:
        _err(f"{config.path}: Cluster.Scheduler / --scheduler: {problem}")
        return EXIT_BAD_INPUT
    if insecure and plain_problem(address, False, ""):
        print(plain_warning(address), file=sys.stderr, flush=True)
    return None


def _cluster_backend(config: Config, address: str, say: Callable[..., None],
                     on_workers: Callable[[list[dict[str, Any]]], None],
                     alert: Callable[..., None]) -> ClusterBackend:
    """The Dask backend for ``address``, handed what it reports to."""
    from runner.cluster.client import ClusterBackend

    cc = config.cluster
    return ClusterBackend(address, wait_s=cc.wait_s if cc else 600.0,
                          overdue_s=cc.overdue_s if cc else 60.0,
                          **({"retry_refused_s": cc.retry_refused_s,
                              "lease_s": cc.lease_s,
                              "max_lost_attempts": cc.max_lost_attempts} if cc else {}),
                          say=say, on_workers=on_workers, alert=alert)


def _run(config: Config, args: argparse.Namespace, play_game: PlayGame | None) -> int:
    quiet_engine_logs()  # python-chess's warnings would drown the progress output
    if getattr(args, "live_pgn", None):
        live = _live_pgn(config, args.live_pgn)
        if isinstance(live, str):
            _err(live)
            return EXIT_BAD_INPUT
        config = live
    if config.backend == "cutechess" and play_game is None:
        from runner.play.cutechess import check_binary

        problem = check_binary(config.cutechess_path)
        if problem:  # refuse before any state is created or touched
            _err(f"{config.path}: CutechessPath: {problem}")
            return EXIT_BAD_INPUT
    from runner.service.builds import accept_problem

    problem = accept_problem(config, getattr(args, "accept_build", None) or (),
                             getattr(args, "reason", None))
    if problem:
        _err(problem)
        return EXIT_BAD_INPUT
    lost = lost_database_problem(config)
    if lost:
        _err(lost)
        return EXIT_BAD_INPUT
    address = getattr(args, "scheduler", None) or (config.cluster.scheduler if config.cluster
                                                    else None)
    if address and play_game is None:
        refused = _cluster_refused(config, args, address)
        if refused is not None:
            return refused
    else:
        address = None  # a backend handed in plays the games
    local = play_game is None and address is None  # the config's backend, on this machine
    if local and config.backend == "python-chess":
        refused = referee_refused()  # the event loop it names
        if refused is not None:
            return refused
    if local and not runner_alive(config.database) and event_needs_games(config):
        problems = engine_problems(config)
        if problems:  # refuse before any state is created or touched
            for problem in problems:
                _err(problem)
            _err(f"{config.path}: {len(problems)} engine problem(s); no game was played and "
                 "nothing was written (`swiss-runner validate --probe` checks the engines)")
            return EXIT_BAD_INPUT
    gap = tablebase_gap(config)
    if gap:  # adjudication covers less than the config says: the operator should know
        print(f"warning: {config.path}: {gap}", file=sys.stderr, flush=True)
    try:
        # the lock first, on the lock file only: nothing opens the database outside SQLite
        # while this run's connection is open (that would drop SQLite's locks)
        with _event_lock(config.database) as lock:
            store = Store.open(config.database)
            try:
                lock.check(store)
                return _play(config, args, play_game, address, store, lock)
            finally:
                store.close()  # before the lock is released
    except StoreError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except BookError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except (OSError, sqlite3.Error) as exc:
        _err(f"{getattr(exc, 'filename', None) or config.database}: "
             f"{getattr(exc, 'strerror', None) or exc}; nothing recorded was lost")
        return EXIT_FAIL
    except KeyboardInterrupt:
        _err("interrupted; run the same command to resume")
        return EXIT_INTERRUPTED


def _play(config: Config, args: argparse.Namespace, play_game: PlayGame | None,
          address: str | None, store: Store, lock: EventLock) -> int:
    """Prepare the tournament on the opened store, claim the event and run it."""
    from runner.service.views.alerts import Alerter, after_crash, after_run
    from runner.service.views.snapshotdoc import WORKERS_META

    # alerts raised from here on are queued, and sent once the run starts (docs/alerts.md)
    alerts = Alerter.for_config(config)  # does nothing without an Alerts block

    def say(text: str, **kwargs: Any) -> None:
        tournament.say(text, **kwargs)

    def workers_seen(rows: list[dict[str, Any]]) -> None:
        tournament.set_meta(WORKERS_META, json.dumps(rows))

    if address is not None:
        play_game = _cluster_backend(config, address, say, workers_seen, alerts.emit)
    tournament = Tournament(config, store, finish_games=getattr(args, "finish_games", False),
                            quiet=getattr(args, "quiet", False), play_game=play_game,
                            accept_build=tuple(getattr(args, "accept_build", None) or ()),
                            build_reason=getattr(args, "reason", None) or "", alerts=alerts)
    try:
        code = tournament.prepare()
    except BookError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except (sqlite3.DatabaseError, ValueError, KeyError, TypeError) as exc:
        if isinstance(exc, sqlite3.OperationalError) and "no such" not in str(exc):
            raise  # disk full, I/O: reported by the caller
        _err(damaged_state(config.database, exc))
        return EXIT_BAD_INPUT
    if code is not None:
        return code
    lock.claim(store)
    alerts.start()
    try:
        return after_run(alerts, tournament, eventloop.run(tournament.run()))
    except BaseException as exc:
        after_crash(alerts, tournament, exc)
        raise
    finally:
        alerts.close()
