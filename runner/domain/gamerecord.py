"""A game's record and its PGN, as cutechess-cli writes them: built from the moves played,
their comments and how the game ended, by every path that ends a game (the referee, a game
decided from its log, the TD's adjudication, a forfeit). Pure: the times are handed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import chess

from runner.domain.adjudication import End
from runner.domain.fen import fen
from runner.domain.models import (
    BLACK_WIN,
    TIEBREAK_PAIR_TAG,
    WHITE_WIN,
    WITHDRAWN_TAG,
    GameRecord,
    GameSpec,
)
from runner.domain.pgn import write_game
from runner.domain.pgnextended import enrich_comments, extra_tags
from runner.domain.rmobility import RMobility, record_rmobility

LOG_TAG = "EngineLog"  # the PGN tag naming a kept engine log (runner.play.enginelog)


def _utc_tag(moment: datetime) -> str:
    """``%Y-%m-%dT%H:%M:%S.mmm UTC`` (strftime's fields, written out: one format, no parse
    of a format string per call)."""
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
            f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d} UTC")


def _duration_tag(seconds: float) -> str:
    total = int(seconds)
    return f"{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"


def build_pgn(spec: GameSpec, start_board: chess.Board, moves: list[str], comments: list[str],
              end: End, start: datetime, finish: datetime, rmobility: str | None,
              extra: dict[str, str] | None = None, sans: Sequence[str] | None = None,
              start_fen: str | None = None) -> str:
    """The game's PGN, as cutechess writes it (runner.domain.pgn, shared with the cutechess
    backend); ``start_fen``: ``fen(start_board)``, when the caller has it."""
    tags: dict[str, str] = {
        "Event": spec.event,
        "Site": spec.site,
        "Date": f"{start.year:04d}.{start.month:02d}.{start.day:02d}",  # %Y.%m.%d
        "Round": spec.round_label,
        "White": spec.white.name,
        "Black": spec.black.name,
        "Result": end.result,
        "GameDuration": _duration_tag((finish - start).total_seconds()),
        "GameEndTime": _utc_tag(finish),
        "GameStartTime": _utc_tag(start),
        "PlyCount": str(len(moves)),
        "TimeControl": spec.time_control.pgn_tag(),
    }
    if spec.opening is not None:
        if spec.opening.name:
            tags["Opening"] = spec.opening.name
        if spec.opening.index >= 0:
            tags["BookIndex"] = str(spec.opening.index)
    if end.termination:
        tags["Termination"] = end.termination
    if end.details:
        tags["TerminationDetails"] = end.details
    if rmobility:
        tags["RMobilityResult"] = rmobility
    if spec.extra_pair:
        tags[TIEBREAK_PAIR_TAG] = str(spec.extra_pair)
    if spec.withdrawn:
        tags[WITHDRAWN_TAG] = ", ".join(spec.withdrawn)
    tags.update(extra or {})
    return write_game(tags, fen(start_board) if start_fen is None else start_fen, moves, comments, end.reason, sans=sans,
                      chess960=start_board.chess960)



def game_record(spec: GameSpec, start_board: chess.Board, moves: list[str],
                  comments: list[str], end: End, started: datetime,
                  played_s: float | None = None, *, finished: datetime, resumed_from: int = 0,
                  resume_note: str = "", move_data: Sequence[Any] | None = None,
                  engine_log: Path | None = None, worker: str = "",
                  sans: Sequence[str] | None = None, mobility: RMobility | None = None
                  ) -> GameRecord:
    """The GameRecord (and its PGN) of a game that ended with ``end`` after ``moves``, at
    ``finished`` (a rule: the caller reads the clock).

    ``played_s``: how long the game took to play (a monotonic clock's measure, plus the
    engines' logged time before an interruption); None: not known (no duration recorded).

    ``resumed_from`` > 0: the game was continued from that ply after an interruption (or
    decided there, TCEC rule 7.c); the PGN gets a ``ResumedFromPly`` tag and ``resume_note``
    is added to the comment of the last move before the interruption. ``move_data`` (the
    MovePlayed events, or their JSON) feed ``PgnComments: extended`` and the TCEC fields;
    ``engine_log`` is named in an ``EngineLog`` tag. ``sans``: the moves' SAN, when known
    (the PGN is then written without replaying the game). ``mobility``: the r-mobility
    kept while the moves were played (else it is computed from them).
    """
    comments = list(comments)
    extra: dict[str, str] = {}
    if resumed_from:
        extra["ResumedFromPly"] = str(resumed_from)
        if resume_note and 0 < resumed_from <= len(comments):
            comments[resumed_from - 1] = ", ".join(c for c in (comments[resumed_from - 1],
                                                               resume_note) if c)
    if worker:
        extra["Worker"] = worker
    for tag, build in (("WhiteBuild", spec.white_build), ("BlackBuild", spec.black_build)):
        if build:  # which build of each engine played (TCEC rule 8: runner.play.enginebuild)
            extra[tag] = build
    for tag, gpus in (("WhiteGpus", spec.white_gpus), ("BlackGpus", spec.black_gpus)):
        if gpus:  # the devices each engine played on (docs/gpus.md)
            extra[tag] = gpus
    start_text = fen(start_board)
    start_fen = None if start_text == chess.STARTING_FEN and not start_board.chess960 else start_text
    if mobility is not None and mobility.plies == len(moves) \
            and (not mobility.pending or end.result in (WHITE_WIN, BLACK_WIN)):
        rmob: str | None = mobility.tag(end.result)
    else:
        rmob = record_rmobility(start_fen, moves, end.result)
    pgn_comments = comments
    if spec.pgn_comments != "cutechess" or spec.pgn_extras:
        pgn_comments = enrich_comments(spec, start_board, moves, comments, move_data or ())
        extra.update(extra_tags(spec, start_board, moves))
    if engine_log is not None:
        extra[LOG_TAG] = str(engine_log)
    if sans is not None and len(sans) != len(moves):
        sans = None  # not the moves played: the PGN replays them instead
    pgn = build_pgn(spec, start_board, moves, pgn_comments, end, started, finished, rmob, extra,
                    sans=sans, start_fen=start_text)
    return GameRecord(
        white=spec.white.name, black=spec.black.name, result=end.result, reason=end.reason,
        termination=end.termination, termination_details=end.details, moves=list(moves),
        comments=comments, pgn=pgn, start_time=started.isoformat(timespec="milliseconds"),
        end_time=finished.isoformat(timespec="milliseconds"),
        duration_s=None if played_s is None else round(played_s, 3),
        rmobility=rmob, opening_index=spec.opening.index if spec.opening else None,
        start_fen=start_fen,
    )


__all__ = ["LOG_TAG", "build_pgn", "game_record"]
