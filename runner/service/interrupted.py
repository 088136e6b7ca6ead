"""What becomes of the event's interrupted games, read from the store and decided by
:func:`runner.domain.interruption.foresee`: the one reading that the run's lines, ``status``,
the dashboard and the TD's messages share (docs/resume.md)."""

from __future__ import annotations

from typing import Any

import chess.syzygy

from runner.config.typed import Config
from runner.domain.interruption import Decision, foresee
from runner.play.tablebases import open_tablebase
from runner.store import queries
from runner.store.database import Store


def backend_resumes(config: Config) -> bool:
    """Whether the configured backend continues a game from a position: the built-in
    referee does, here or on cluster workers; cutechess-cli cannot (docs/resume.md)."""
    return config.cluster is not None or config.backend == "python-chess"


def event_tablebase(config: Config) -> chess.syzygy.Tablebase | None:
    """The Syzygy tables rule 7.c.iv consults (None: none configured)."""
    tbc = config.adjudication.tablebases
    return open_tablebase(tbc) if tbc is not None and tbc.paths else None


def foresee_game(config: Config, store: Store, game_id: int, *, backend: str | None = None,
                 resumes: bool | None = None,
                 tablebase: chess.syzygy.Tablebase | None = None) -> Decision:
    """What becomes of game ``game_id`` when it is next played (its move log as stored);
    ``backend``/``resumes``: the backend that plays it (default: the configured one)."""
    unreadable = None
    started = None
    try:
        started = store.started_event(game_id)
    except ValueError as exc:
        unreadable = f"its GameStarted is not valid JSON ({exc})"
    return foresee(started, store.logged_rows(game_id), interruption=config.interruption,
                   adjudication=config.adjudication, time_control=config.time_control,
                   tablebase=tablebase, backend=backend or config.backend,
                   resumes=backend_resumes(config) if resumes is None else resumes,
                   unreadable=unreadable)


def interrupted_games(config: Config, store: Store, *, runner_running: bool | None,
                      resumes: bool | None = None) -> list[dict[str, Any]]:
    """The games interrupted and not played on yet, each with what becomes of it: those put
    back with a move log (a ``td pause --now``, a stop), and those left running by a runner
    that is not running. ``resumes``: whether the backend that plays them continues a game
    from a position (default: the configured backend's)."""
    return _foreseen(config, store, queries.interrupted_games(
        store.conn, running_too=runner_running is False), resumes)


def foreseen(config: Config, store: Store, game_ids: list[int], resumes: bool | None = None
             ) -> list[dict[str, Any]]:
    """What becomes of each of ``game_ids``: its names, the plies it logged and ``words``
    (:meth:`Decision.words`), as the state document's ``interrupted`` (docs/state.md)."""
    return _foreseen(config, store, queries.interrupted_games(store.conn, running_too=True,
                                                              ids=game_ids), resumes)


def _foreseen(config: Config, store: Store, games: list[tuple[int, int, str, str]],
              resumes: bool | None) -> list[dict[str, Any]]:
    if not games:
        return []
    tablebase = event_tablebase(config)
    try:
        out = []
        for game_id, number, white, black in games:
            decision = foresee_game(config, store, game_id, resumes=resumes,
                                    tablebase=tablebase)
            out.append({"game_id": game_id, "round": number, "white": white,
                        "black": black, "logged_plies": len(store.logged_rows(game_id)),
                        "action": decision.action, "rule": decision.rule,
                        "words": decision.words()})
        return out
    finally:
        if tablebase is not None:
            tablebase.close()


def interrupted_lines(games: list[dict[str, Any]]) -> list[str]:
    """One line per interrupted game: ``game 3 (A vs B), interrupted at ply 105: continues
    from ply 105 (TCEC rule 7.c.v)``."""
    return [f"game {g['game_id']} ({g['white']} vs {g['black']}), interrupted at ply "
            f"{g['logged_plies']}: {g['words']}" for g in games]


__all__ = ["backend_resumes", "event_tablebase", "foresee_game", "foreseen", "interrupted_games",
           "interrupted_lines"]
