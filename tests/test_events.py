"""Games as event streams: what the referee emits, and the JSON round trip of every event
and of the GameSpec (the boundary a game crosses to run in another process or machine)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import chess
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.config import AdjudicationConfig, EngineConfig, TablebaseConfig, TcecDrawRule
from runner.config.typed import TcecWinRule
from runner.domain.events import (
    EVENT_VERSION,
    EventFormatError,
    GameFinished,
    GameStarted,
    MovePlayed,
    event_from_json,
    event_to_json,
    spec_from_json,
    spec_to_json,
)
from runner.domain.models import GameRecord, GameSpec, Opening
from runner.domain.timecontrol import parse_time_control
from runner.play.referee import _pv, play_game

GAMES = "/usr/games"


def engine(name: str, command: str, protocol: str = "uci", **kw) -> EngineConfig:
    return EngineConfig(name=name, command=f"{GAMES}/{command}", protocol=protocol, **kw)


def full_spec() -> GameSpec:
    return GameSpec(
        game_id=7, round=2, game_in_round=3,
        white=EngineConfig("Stockfish", "/usr/games/stockfish", ("-x",), "uci", 3500.0,
                           {"Hash": 16, "Threads": 1, "UCI_Chess960": False}, nodes=3000),
        black=EngineConfig("Fairymax", "/usr/games/fairymax", (), "xboard", None, {},
                           depth=4, working_dir="/tmp"),
        time_control=parse_time_control("40/45:00+4.5"),
        adjudication=AdjudicationConfig(tcec_draw=TcecDrawRule(), tcec_win=TcecWinRule(700, 8),
                                        tablebases=TablebaseConfig((Path("/srv/tb"),), 5, True),
                                        max_moves=120),
        opening=Opening(index=12, name="Sicilian", fen=None, moves=("e2e4", "c7c5")),
        event='The "Event"', site="here", time_margin_ms=50, extra_pair=1)


def roundtrip(value):
    return json.loads(json.dumps(value))


def test_spec_survives_json() -> None:
    spec = full_spec()
    data = roundtrip(spec_to_json(spec))
    assert data["v"] == EVENT_VERSION
    assert spec_from_json(data) == spec
    assert spec_from_json(data).black.working_dir == "/tmp"


def test_every_event_kind_survives_json() -> None:
    record = GameRecord(white="A", black="B", result="1-0", reason="White mates",
                        moves=["e2e4", "e7e5"], comments=["book", "+0.10/3 0.1s"], pgn="[x]",
                        start_time="t0", end_time="t1", duration_s=1.5, rmobility="G1.5",
                        opening_index=3, termination=None)
    events = [
        GameStarted(game_id=1, white="A", black="B", white_id="Stockfish 15.1", black_id="",
                    start_time="2026-11-23T00:00:00.000+00:00", start_fen=chess.STARTING_FEN,
                    book_plies=2, white_clock_ms=2700000, black_clock_ms=2700000,
                    resumed_from_ply=0, attempt=2, spec=spec_to_json(full_spec()), worker="w1"),
        MovePlayed(game_id=1, ply=3, uci="g1f3", san="Nf3", fen="x", white_clock_ms=1000,
                   black_clock_ms=None, time_ms=120, score_cp=-35, depth=16, seldepth=22,
                   nodes=123456, nps=1000000, tbhits=0, pv=("g1f3", "b8c6"), comment="-0.35/16 0.12s",
                   draw_plies=3, win_plies=0, attempt=2, at_ms=1700000000000),
        MovePlayed(game_id=1, ply=1, uci="e2e4", san="e4", fen="y", white_clock_ms=None,
                   black_clock_ms=None, book=True, comment="book"),
        GameFinished(game_id=1, record=record, attempt=2),
    ]
    for event in events:
        data = roundtrip(event_to_json(event))
        assert data["v"] == EVENT_VERSION and data["kind"] == event.kind
        assert event_from_json(data) == event


def test_move_played_init_is_the_dataclass_one() -> None:
    """MovePlayed's own ``__init__`` (one dict update, not a frozen dataclass's setattr per
    field) takes exactly the dataclass's init fields, in order, with their defaults, and
    makes what the generated one makes: equal, hashed alike, frozen, ``replace`` working."""
    import dataclasses
    import inspect

    fields = [f for f in dataclasses.fields(MovePlayed) if f.init]
    params = list(inspect.signature(MovePlayed).parameters.values())
    assert [p.name for p in params] == [f.name for f in fields]
    assert [p.default for p in params] == [
        inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default for f in fields]
    generated = dataclasses.make_dataclass(
        "Generated", [(f.name, f.type, f) for f in dataclasses.fields(MovePlayed)], frozen=True)
    values = {f.name: (i, str(i)) for i, f in enumerate(fields)}
    move, twin = MovePlayed(**values), generated(**values)
    assert vars(move) == vars(twin) and list(vars(move)) == list(vars(twin))
    assert move.kind == "move" and hash(move) == hash(MovePlayed(**values))
    with pytest.raises(dataclasses.FrozenInstanceError):
        move.ply = 3  # type: ignore[misc]
    assert dataclasses.replace(move, ply=9) == MovePlayed(**{**values, "ply": 9})
    with pytest.raises(TypeError):
        MovePlayed(**values, kind="x")  # type: ignore[call-arg]


def test_move_log_rows_are_the_events_wire_form() -> None:
    """The move log's fast encoding writes exactly json.dumps(event_to_json(...)) compact."""
    from runner.store.writer import move_json, move_row

    moves = [
        MovePlayed(game_id=1, ply=3, uci="g1f3", san="Nf3", fen="x", white_clock_ms=1000,
                   black_clock_ms=None, time_ms=120, score_cp=-35, depth=16, seldepth=22,
                   nodes=123456, nps=1000000, tbhits=0, pv=("g1f3", "b8c6"),
                   comment='-0.35/16 0.12s "é" \u2603', draw_plies=3, win_plies=0, attempt=2,
                   at_ms=1700000000000),
        MovePlayed(game_id=1, ply=1, uci="e2e4", san="e4", fen="y", white_clock_ms=None,
                   black_clock_ms=None, book=True, comment="book"),
        MovePlayed(game_id=9, ply=80, uci="a7a8q", san="a8=Q+", fen="z", white_clock_ms=5,
                   black_clock_ms=6, mate=-3, pv=()),
    ]
    for move in moves:
        expected = json.dumps(event_to_json(move), separators=(",", ":"))
        assert move_json(move) == expected
        assert move_row(move) == (move.game_id, move.ply, move.attempt, expected)


_TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
_INT = st.none() | st.integers(-(1 << 70), 1 << 70) | st.floats(allow_nan=False) \
    | st.sampled_from([1e16, 1e-5, 1.5, True])  # a hostile worker's event may hold any


_ANY_MOVE = st.fixed_dictionaries({
    "game_id": st.integers(0, 1 << 40), "ply": st.integers(0, 1000), "uci": _TEXT,
    "san": _TEXT | st.tuples(st.floats()), "fen": _TEXT | st.just(chess.STARTING_FEN), "white_clock_ms": _INT,
    "black_clock_ms": _INT, "time_ms": st.integers(0, 1 << 64), "book": st.booleans(),
    "score_cp": _INT, "mate": _INT, "depth": _INT, "seldepth": _INT, "nodes": _INT,
    "nps": _INT, "tbhits": _INT, "pv": st.tuples() | st.lists(_TEXT | st.floats(), max_size=4).map(tuple)
    | st.lists(_TEXT, max_size=3),
    "comment": _TEXT | st.sampled_from(["book", "+0.35/16 5.1s", "\x7f", "é \u2028"]),
    "at_ms": st.integers(0, 1 << 45), "draw_plies": st.integers(0, 200),
    "win_plies": st.integers(0, 200), "attempt": st.integers(1, 9)})


@settings(max_examples=300, deadline=None)
@given(_ANY_MOVE)
def test_move_log_rows_equal_json_dumps_on_any_move(fields: dict) -> None:
    """Both encoders of a row (msgspec's where it writes the same text, json's otherwise)
    write json.dumps's text, whatever the strings and integers hold."""
    from runner.store.writer import move_json, move_json_generic

    move = MovePlayed(**fields)
    expected = json.dumps(event_to_json(move), separators=(",", ":"))
    assert move_json(move) == expected
    assert move_json_generic(move) == expected


@settings(max_examples=300, deadline=None)
@given(_ANY_MOVE)
def test_move_log_rows_read_back_as_json_loads_reads_them(fields: dict) -> None:
    """A logged move read back (msgspec's decoder where it takes the text, json's where it
    refuses it) holds what json.loads reads of it: the same values, types and key order."""
    from runner.store.database import move_data
    from runner.store.writer import move_json

    text = move_json(MovePlayed(**fields))
    assert repr(move_data(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", [
    '{"a":NaN,"b":-Infinity}', '{"a":"\\ud800"}', '{"a":1e400}', '{"a":-0.0,"b":-0}',
    '{"a":123456789012345678901234567890}', '{"a":1,"a":2,"b":1E5}', '[1,"\\u00e9"]',
    '{"a":0.1,"b":5e-324,"c":1.7976931348623157e308}'])
def test_a_logged_moves_text_reads_back_as_json_loads_reads_it(text: str) -> None:
    from runner.store.database import move_data

    assert repr(move_data(text)) == repr(json.loads(text))


@pytest.mark.parametrize("text", ['{"a":1', '{"a":1} x', "", "{'a':1}"])
def test_a_damaged_logged_move_fails_as_json_loads_fails(text: str) -> None:
    from runner.store.database import move_data

    with pytest.raises(json.JSONDecodeError) as ours:
        move_data(text)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    assert str(ours.value) == str(theirs.value)


def test_move_log_rows_take_msgspec_for_a_usual_move() -> None:
    """The fast encoder is the one taken for an engine's move (its text checked above)."""
    from runner.store import writer

    assert writer._MSGSPEC_TAIL == b',"kind":"move","v":%d}' % EVENT_VERSION


@pytest.mark.parametrize("bad", [{}, {"v": 99, "kind": "move"}, {"v": EVENT_VERSION, "kind": "x"},
                                 {"v": EVENT_VERSION, "kind": "move", "game_id": 1}, [1, 2]])
def test_foreign_messages_are_refused(bad) -> None:
    with pytest.raises(EventFormatError):
        event_from_json(bad)


def test_pv_of_uci_and_xboard_lines() -> None:
    board = chess.Board()
    assert _pv("info depth 12 seldepth 15 score cp 20 nodes 3 pv e2e4 e7e5 g1f3 bmc 0.1", board,
               False) == ("e2e4", "e7e5", "g1f3")
    assert _pv("info depth 1 score cp 0", board, False) == ()
    assert _pv(None, board, False) == ()
    # xboard thinking output: ply score time nodes [seldepth nps tbhits] then SAN
    assert _pv("9 25 120 34567 12 0 0 1. e4 e5 2. Nf3 Nc6 Bb5", board, True) == (
        "e2e4", "e7e5", "g1f3", "b8c6", "f1b5")
    assert _pv("5 -10 3 900 d4 Nf6 Zz9", board, True) == ("d2d4", "g8f6")


@pytest.mark.engines
@pytest.mark.parametrize("white, black", [
    (engine("Stockfish", "stockfish", nodes=3000), engine("Ethereal", "ethereal-chess", nodes=3000)),
    (engine("Toga II", "toga2", depth=3), engine("Fairymax", "fairymax", "xboard", depth=3)),
])
def test_real_game_emits_started_every_ply_and_finished(white, black) -> None:
    spec = GameSpec(game_id=4, round=1, game_in_round=4, white=white, black=black,
                    time_control=parse_time_control("30+0.5"),
                    adjudication=AdjudicationConfig(max_moves=25),
                    opening=Opening(index=0, name="Italian", moves=("e2e4", "e7e5", "g1f3")))
    events = []
    record = asyncio.run(play_game(spec, emit=events.append, attempt=3))
    started, *moves, finished = events
    assert isinstance(started, GameStarted) and isinstance(finished, GameFinished)
    assert started.attempt == 3 and all(e.attempt == 3 for e in events)
    assert started.white_id and started.black_id  # the engines' own id names
    assert (started.book_plies, started.white_clock_ms, started.black_clock_ms) == (3, 30000, 30000)
    assert spec_from_json(started.spec) == spec
    assert finished.record == record
    assert all(isinstance(m, MovePlayed) for m in moves)
    assert [m.ply for m in moves] == list(range(1, len(record.moves) + 1))
    assert [m.uci for m in moves] == record.moves
    assert [m.comment for m in moves] == record.comments
    assert [m.book for m in moves[:4]] == [True, True, True, False]
    board = chess.Board()
    for m in moves:
        assert board.san(chess.Move.from_uci(m.uci)) == m.san
        board.push_uci(m.uci)
        assert m.fen == board.fen()
    engine_moves = [m for m in moves if not m.book]
    assert engine_moves and all(m.depth and m.nodes and m.time_ms >= 0 for m in engine_moves)
    assert all(m.score_cp is not None or m.mate is not None for m in engine_moves)
    assert sum(1 for m in engine_moves if m.pv) >= len(engine_moves) // 2
    for m in engine_moves:  # the PV starts with the move played, when the engine sent one
        if m.pv:
            assert m.pv[0] == m.uci
    # the clocks: the mover's clock changes by time used minus the increment
    for before, after in zip(moves[2:], moves[3:], strict=False):
        mover = "white" if after.ply % 2 == 1 else "black"
        delta = getattr(before, f"{mover}_clock_ms") - getattr(after, f"{mover}_clock_ms")
        assert abs(delta - (after.time_ms - 500)) <= 2
        other = "black" if mover == "white" else "white"
        assert getattr(before, f"{other}_clock_ms") == getattr(after, f"{other}_clock_ms")
    for m in events:
        assert event_from_json(roundtrip(event_to_json(m))) == m


def test_a_specs_config_parts_are_converted_once_and_each_json_is_its_own() -> None:
    """spec_to_json with a memo converts the event's config parts (the engines, the time
    control, the adjudication: the same objects in every game's spec) once each: every
    game's JSON is what the conversion without one gives, and a game's JSON changed at its
    top level leaves the next game's as it was."""
    first = full_spec()
    second = GameSpec(**{**vars(first), "game_id": 8, "round": 3,
                         "opening": Opening(index=13, name="", fen=None, moves=("d2d4",))})
    parts: dict = {}
    one = spec_to_json(first, parts)
    assert set(parts) == {id(first.white), id(first.black), id(first.time_control),
                          id(first.adjudication)}
    converted = {key: id(json) for key, (_, json) in parts.items()}
    one["white"]["name"] = "changed"  # (a caller's own copy of the top level)
    del one["black"]
    two = spec_to_json(second, parts)
    plain = spec_to_json(second)
    assert two == plain and list(two) == list(plain)  # the same keys in the same order
    assert {key: id(json) for key, (_, json) in parts.items()} == converted  # once each
    assert spec_from_json(roundtrip(two)) == second
