"""A game's specification for a backend, from the event's config and its stored row."""

from __future__ import annotations

from runner.config.typed import Config
from runner.domain.models import GameSpec
from runner.store.database import Store, StoredGame
from runner.store.tdstore import withdrawn_before


def game_spec(config: Config, store: Store, game: StoredGame,
              builds: dict[str, str] | None = None) -> GameSpec:
    """Everything a backend needs to play ``game``; the engines the TD withdrew before its
    round was paired are named in its PGN (tag Withdrawn, read by `audit`); ``builds``: the
    build digest each engine must play with (runner.play.enginebuild)."""
    builds = builds or {}
    withdrawn: tuple[str, ...] = ()
    if not game.extra:
        out = withdrawn_before(store.conn, game.round)
        withdrawn = tuple(name for name in store.seeds() if name in out) if out else ()
    return GameSpec(
        game_id=game.game_id, round=game.round, game_in_round=game.game_in_round,
        white=config.engine(game.white), black=config.engine(game.black),
        time_control=config.time_control, adjudication=config.adjudication,
        opening=game.opening, event=config.event, site=config.site,
        time_margin_ms=config.time_margin_ms,
        extra_pair=game.round - config.swiss.rounds if game.extra else 0,
        pgn_comments=config.pgn_comments, pgn_extras=config.pgn_extras,
        variant=config.variant, withdrawn=withdrawn,
        white_build=builds.get(game.white, ""), black_build=builds.get(game.black, ""),
    )


__all__ = ["game_spec"]
