"""A game as a stream of events: GameStarted, MovePlayed ... MovePlayed, GameFinished.

A backend (the built-in referee, cutechess-cli, later a worker on another machine) emits
these while a game runs; the store, the console, the PGN file and the JSON state document
are sinks of the stream (runner.service.views). Every event and everything a backend needs
to play a game (the GameSpec, and when resuming, the position reached) are plain values that
round-trip through JSON (:func:`event_to_json` / :func:`event_from_json`,
:func:`spec_to_json` / :func:`spec_from_json`), so the stream can cross a process or a
network. The wire form carries ``"v": EVENT_VERSION``; docs/state.md documents it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.config.typed import (
    AdjudicationConfig,
    EngineConfig,
    TablebaseConfig,
    TcecDrawRule,
    TcecWinRule,
)
from runner.domain.models import GameRecord, GameSpec, Opening
from runner.domain.timecontrol import TimeControl

EVENT_VERSION = 1


def parse_utc(text: str | None) -> datetime | None:
    """An event's ISO 8601 time (``start_time``, ...) as an aware datetime, UTC when it
    names no zone (a trailing " UTC" is read as +00:00); None when missing or unreadable."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace(" UTC", "+00:00"))
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class GameStarted:
    """The engines are up (or failed to start) and the first move is about to be asked for."""

    game_id: int
    white: str  # the engines' names in the event (Engines[i].Name)
    black: str
    white_id: str  # the engines' own names (UCI ``id name`` / XBoard ``myname``), "" if unknown
    black_id: str
    start_time: str  # ISO 8601 UTC
    start_fen: str  # the position the game starts from (before the book moves)
    book_plies: int  # book moves played before the engines' first move
    white_clock_ms: int | None  # clocks when the first engine move is asked for (None: no clock)
    black_clock_ms: int | None
    resumed_from_ply: int = 0  # > 0: the game continues from this ply of its move log
    attempt: int = 1  # how many times this game has been started (in this event)
    spec: dict[str, Any] | None = None  # the GameSpec as JSON (spec_to_json)
    worker: str = ""  # where the game is played ("" = this machine)
    at_ms: int = 0  # wall time it was sent (Unix epoch ms): the first clock ticks from here
    played_by: tuple[str, ...] = ()  # workers that played the logged moves it continues from
    kind: str = field(default="started", init=False)


@dataclass(frozen=True, init=False)
class MovePlayed:
    """One ply: the move, the position after it, both clocks and what the mover reported.

    Scores are from the mover's point of view, in centipawns (``score_cp``) or moves to mate
    (``mate``, + for the mover). Book plies have ``book`` set and no engine data.
    """

    game_id: int
    ply: int  # 1-based ply number in the game (book plies included)
    uci: str
    san: str
    fen: str  # after the move
    white_clock_ms: int | None  # after the move (increment added); None without a clock
    black_clock_ms: int | None
    time_ms: int = 0  # time the mover used
    book: bool = False
    score_cp: int | None = None
    mate: int | None = None
    depth: int | None = None
    seldepth: int | None = None
    nodes: int | None = None
    nps: int | None = None
    tbhits: int | None = None
    pv: tuple[str, ...] = ()  # UCI moves as the engine sent them
    comment: str = ""  # the PGN comment of the move ("book", "+0.35/16 5.1s")
    at_ms: int = 0  # wall time the move arrived (Unix epoch, ms): clocks tick from here
    draw_plies: int = 0  # TCEC draw rule: consecutive qualifying plies so far
    win_plies: int = 0  # TCEC win rule: consecutive plies both agree one side is winning
    attempt: int = 1
    kind: str = field(default="move", init=False)

    def __init__(self, game_id: int, ply: int, uci: str, san: str, fen: str,
                 white_clock_ms: int | None, black_clock_ms: int | None, time_ms: int = 0,
                 book: bool = False, score_cp: int | None = None, mate: int | None = None,
                 depth: int | None = None, seldepth: int | None = None, nodes: int | None = None,
                 nps: int | None = None, tbhits: int | None = None, pv: tuple[str, ...] = (),
                 comment: str = "", at_ms: int = 0, draw_plies: int = 0, win_plies: int = 0,
                 attempt: int = 1) -> None:
        """The dataclass's own ``__init__``, its fields set in one step: a frozen dataclass's
        generated one sets each of them through ``object.__setattr__`` (22 calls, every ply).
        tests/test_events.py checks it takes the fields, with their defaults."""
        self.__dict__.update(
            game_id=game_id, ply=ply, uci=uci, san=san, fen=fen, white_clock_ms=white_clock_ms,
            black_clock_ms=black_clock_ms, time_ms=time_ms, book=book, score_cp=score_cp,
            mate=mate, depth=depth, seldepth=seldepth, nodes=nodes, nps=nps, tbhits=tbhits, pv=pv,
            comment=comment, at_ms=at_ms, draw_plies=draw_plies, win_plies=win_plies,
            attempt=attempt)  # (``kind``, as a dataclass leaves it: the class's attribute)


@dataclass(frozen=True)
class GameFinished:
    """The game is over; ``record`` is everything it produced."""

    game_id: int
    record: GameRecord
    attempt: int = 1
    kind: str = field(default="finished", init=False)


GameEvent = GameStarted | MovePlayed | GameFinished


@dataclass(frozen=True)
class ResumePoint:
    """Where an interrupted game continues (TCEC rule 7.c.v): what a backend needs besides
    the GameSpec to go on from the position the engines reached."""

    moves: tuple[str, ...]  # every ply so far, book plies included (UCI)
    comments: tuple[str, ...]  # their PGN comments
    book_plies: int
    white_clock_ms: int | None  # as after the last logged move, compensation included
    black_clock_ms: int | None
    white_moves: int  # engine moves each side has made (for moves-per-period clocks)
    black_moves: int
    compensation_ms: int = 0
    draw_plies: int = 0  # the TCEC draw rule's count after the last logged ply
    win_plies: int = 0  # the TCEC win rule's count ...
    win_side: str | None = None  # ... and the side it counts for ("white" / "black")
    start_time: str = ""  # when the game first started (ISO 8601 UTC)
    workers: tuple[str, ...] = ()  # the cluster workers that played these moves, in order
    played_s: float | None = None  # the engines' time on these moves (None: not known)

    @property
    def ply(self) -> int:
        return len(self.moves)


def resume_to_json(point: ResumePoint) -> dict[str, Any]:
    data = _plain(point)
    data["v"] = EVENT_VERSION
    return data


def resume_from_json(data: dict[str, Any]) -> ResumePoint:
    if data.get("v") != EVENT_VERSION:
        raise EventFormatError(f"not a resume point of version {EVENT_VERSION}")
    body = {k: v for k, v in data.items() if k != "v"}
    body["moves"] = tuple(body["moves"])
    body["comments"] = tuple(body["comments"])
    body["workers"] = tuple(body.get("workers", ()))
    return ResumePoint(**body)


def workers_tag(played_by: tuple[str, ...] | list[str], worker: str = "") -> str:
    """The PGN ``Worker`` tag of a game: every cluster worker that played its moves, in the
    order they played, once each (``"w1, w2"``); "" for a game played on this machine."""
    names = dict.fromkeys(n for n in (*played_by, worker) if n)
    return ", ".join(names)

# --------------------------------------------------------------------------- JSON codec

_SIMPLE = (str, int, float, bool, type(None))
_SIMPLE_TYPES = frozenset(_SIMPLE)
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's field names, by its type


def _plain(value: Any) -> Any:
    """``value`` as plain JSON values (a simple value inside a container is taken as it is,
    without a call for it: a game's moves, a spec's fields)."""
    simple = _SIMPLE_TYPES
    if type(value) in simple:  # most values: before the costlier tests
        return value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [v if type(v) in simple else _plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): v if type(v) in simple else _plain(v) for k, v in value.items()}
    names = _FIELDS.get(type(value))
    if names is None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = _FIELDS[type(value)] = tuple(f.name for f in dataclasses.fields(value))
    if names is not None:
        plain: dict[str, Any] = {}
        for name in names:
            v = getattr(value, name)
            plain[name] = v if type(v) in simple else _plain(v)
        return plain
    return value


def record_to_json(record: GameRecord) -> dict[str, Any]:
    return _plain(record)


def record_from_json(data: dict[str, Any]) -> GameRecord:
    return GameRecord(**data)




def event_to_json(event: GameEvent) -> dict[str, Any]:
    """The wire form of an event: a flat JSON object with ``kind`` and ``v``.

    (Called for every ply: field names are cached per class and simple values copied as
    they are, which costs a fifth of the generic conversion.)
    """
    names = _FIELDS.get(type(event))
    if names is None:
        names = _FIELDS[type(event)] = tuple(f.name for f in dataclasses.fields(event))
    data: dict[str, Any] = {}
    for name in names:
        value = getattr(event, name)
        # GameStarted.spec is JSON already (spec_to_json): not walked again
        data[name] = value if isinstance(value, _SIMPLE) or name == "spec" else _plain(value)
    data["v"] = EVENT_VERSION
    return data


class EventFormatError(ValueError):
    """A message that is not a game event of a version this code reads."""


def event_from_json(data: dict[str, Any]) -> GameEvent:
    if not isinstance(data, dict) or data.get("v") != EVENT_VERSION:
        raise EventFormatError(f"not a game event of version {EVENT_VERSION}: {str(data)[:200]}")
    body = {k: v for k, v in data.items() if k not in ("v", "kind")}
    kind = data.get("kind")
    try:
        if kind == "started":
            body["played_by"] = tuple(body.get("played_by", ()))
            return GameStarted(**body)
        if kind == "move":
            body["pv"] = tuple(body.get("pv", ()))
            return MovePlayed(**body)
        if kind == "finished":
            body["record"] = record_from_json(body["record"])
            return GameFinished(**body)
    except TypeError as exc:
        raise EventFormatError(f"game event {kind!r}: {exc}") from None
    raise EventFormatError(f"unknown game event kind {kind!r}")


PartsMemo = MutableMapping[int, tuple[Any, dict[str, Any]]]  # spec_to_json's ``parts``
_SPEC_PARTS = frozenset(("white", "black", "time_control", "adjudication"))


def spec_to_json(spec: GameSpec, parts: PartsMemo | None = None) -> dict[str, Any]:
    """Everything a backend needs to play the game, as plain JSON (no paths resolved anew).

    ``parts``: the caller's memo of the event's config parts as JSON (the engines, the time
    control, the adjudication: the same objects in every game's spec), by the part's id
    with the part kept beside its JSON (so that its id is no other object's meanwhile);
    each part is then converted once, and every spec gets a copy of its top level (what is
    nested in it, an engine's options or arguments, is shared: JSON to read, not change).
    """
    names = _FIELDS.get(GameSpec)
    if names is None:
        names = _FIELDS[GameSpec] = tuple(f.name for f in dataclasses.fields(GameSpec))
    simple = _SIMPLE_TYPES
    data: dict[str, Any] = {}
    for name in names:
        v = getattr(spec, name)
        if type(v) in simple:
            data[name] = v
        elif parts is None or name not in _SPEC_PARTS:
            data[name] = _plain(v)
        else:
            kept = parts.get(id(v))
            if kept is None or kept[0] is not v:
                kept = parts[id(v)] = (v, _plain(v))
            data[name] = dict(kept[1])
    data["v"] = EVENT_VERSION
    return data


def _engine(d: dict[str, Any]) -> EngineConfig:
    d = dict(d)
    d["args"] = tuple(d.get("args", ()))
    d["options"] = dict(d.get("options", {}))
    d["start_retry_s"] = tuple(d.get("start_retry_s", ()))
    d["gpu_devices"] = tuple(d.get("gpu_devices", ()))
    d["env"] = tuple((str(k), str(v)) for k, v in d.get("env", ()))
    return EngineConfig(**d)


def _adjudication(d: dict[str, Any]) -> AdjudicationConfig:
    tb = d.get("tablebases")
    return AdjudicationConfig(
        tcec_draw=None if d.get("tcec_draw") is None else TcecDrawRule(**d["tcec_draw"]),
        tcec_win=None if d.get("tcec_win") is None else TcecWinRule(**d["tcec_win"]),
        tablebases=None if tb is None else TablebaseConfig(
            paths=tuple(Path(p) for p in tb.get("paths", ())), max_pieces=tb["max_pieces"],
            ignore50=tb["ignore50"]),
        max_moves=d.get("max_moves", 0))


def spec_from_json(data: dict[str, Any]) -> GameSpec:
    if data.get("v") != EVENT_VERSION:
        raise EventFormatError(f"not a game spec of version {EVENT_VERSION}")
    opening = data.get("opening")
    return GameSpec(
        game_id=data["game_id"], round=data["round"], game_in_round=data["game_in_round"],
        white=_engine(data["white"]), black=_engine(data["black"]),
        time_control=TimeControl(**data["time_control"]),
        adjudication=_adjudication(data["adjudication"]),
        opening=None if opening is None else Opening(
            index=opening["index"], name=opening.get("name", ""), fen=opening.get("fen"),
            moves=tuple(opening.get("moves", ()))),
        event=data.get("event", "?"), site=data.get("site", "?"),
        time_margin_ms=data.get("time_margin_ms", 0), extra_pair=data.get("extra_pair", 0),
        pgn_comments=data.get("pgn_comments", "cutechess"),
        pgn_extras=tuple(data.get("pgn_extras", ())), variant=data.get("variant", "standard"),
        withdrawn=tuple(data.get("withdrawn", ())),
        white_build=data.get("white_build", ""), black_build=data.get("black_build", ""),
        white_gpus=data.get("white_gpus", ""), black_gpus=data.get("black_gpus", ""))
