"""A UCI engine's start (runner.play.ucistart) against python-chess's own: the same options,
id and configuration recorded, the same lines sent to the engine, the same errors.

Both run on the same engines: a fake that declares awkward options and writes down every line
it gets (a real process), and Debian's Stockfish.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

import chess.engine
import pytest

from runner.config import EngineConfig
from runner.play.engines import EngineStartError, start_engine
from runner.play.ucistart import parse_option

DECLARED = """\
id name Quirky Engine 1.0
id author  Some One
info string starting up
option name Hash type spin default 16 min 1 max 1024
option name Use NNUE type check default true
option name Style type combo default Normal var Solid var Normal var Risky
option name Clear Hash type button
option name SyzygyPath type string default <empty>
option name EvalFile type string default
option name Skill Level type spin default 20 min 0 max 20
option name UCI_Chess960 type check default false
option name Ponder type check default false
option name MultiPV type spin default 1 min 1 max 500
option name UCI_AnalyseMode type check default false
option name Move min max type spin default 5 min 1 max 9
option name   Spaced   Name   type string default a  b
option name Odd type check default nope
option name Contempt type spin default 0 min x max 100
"""

FAKE = """\
import sys, time
log = open(sys.argv[1], "a")
declared = open(sys.argv[2]).read()
piece = int(sys.argv[3]) if len(sys.argv) > 3 else 0  # write the handshake in pieces this long
for line in sys.stdin:
    line = line.rstrip("\\n")
    log.write(line + "\\n"); log.flush()
    if line == "uci":
        text = declared + "uciok\\n"
        for at in range(0, len(text), piece or len(text)):
            sys.stdout.write(text[at:at + (piece or len(text))]); sys.stdout.flush()
            if piece:
                time.sleep(0.002)
    elif line == "isready":
        print("readyok", flush=True)
    elif line == "quit":
        break
"""


@pytest.fixture
def fake(tmp_path: Path) -> tuple[Path, Path]:
    script = tmp_path / "quirky.py"
    script.write_text(FAKE)
    declared = tmp_path / "declared.txt"
    declared.write_text(DECLARED)
    return script, declared


def _record(protocol: Any) -> dict[str, Any]:
    return {"options": {name: (o.name, o.type, o.default, o.min, o.max, o.var)
                        for name, o in protocol.options.items()},
            "id": dict(protocol.id), "config": dict(protocol.config),
            "target": dict(protocol.target_config)}


async def _python_chess(argv: list[str], options: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """python-chess's own start: (what it recorded, its error or "")."""
    transport, protocol = await chess.engine.popen_uci(argv)
    try:
        if options:
            await protocol.configure(options)
        await protocol.ping()
        return _record(protocol), ""
    except chess.engine.EngineError as exc:
        return _record(protocol), str(exc)
    finally:
        transport.close()


async def _ours(argv: list[str], options: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """runner.play.engines.start_engine (the engine check's confirm: ``isready`` last)."""
    engine = EngineConfig("Q", argv[0], tuple(argv[1:]), options=options)
    try:
        proc = await start_engine(engine, timeout=20, confirm=True)
    except EngineStartError as exc:
        return {}, str(exc)
    try:
        return _record(proc.protocol), ""
    finally:
        await proc.close()


SETTINGS = [
    {},
    {"Hash": 16, "Use NNUE": True},  # the defaults: nothing sent
    {"Hash": 64, "Use NNUE": False, "Style": "Risky", "Skill Level": "7",
     "SyzygyPath": "/tb/a:/tb/b", "EvalFile": "", "Clear Hash": None, "Spaced   Name": "x y"},
    {"Move": 3, "Odd": "false", "Contempt": 10},
]


@pytest.mark.parametrize("options", SETTINGS, ids=["none", "defaults", "many", "quirks"])
def test_the_start_records_and_sends_what_python_chess_does(fake, tmp_path, options) -> None:
    script, declared = fake
    sent = {who: tmp_path / f"{who}.log" for who in ("python-chess", "ours")}

    async def both() -> tuple[Any, Any]:
        theirs = await _python_chess([sys.executable, str(script), str(sent["python-chess"]),
                                      str(declared)], options)
        ours = await _ours([sys.executable, str(script), str(sent["ours"]), str(declared)],
                           options)
        return theirs, ours

    theirs, ours = asyncio.run(both())
    assert theirs[1] == "" and ours[1] == "", (theirs[1], ours[1])
    assert ours[0] == theirs[0]
    assert ours[0]["id"] == {"name": "Quirky Engine 1.0", "author": "Some One"}
    lines = {who: path.read_text().splitlines() for who, path in sent.items()}
    assert lines["ours"][:-1] == lines["python-chess"], lines  # and then ours quit
    assert lines["ours"][-1] == "quit"
    if options.get("Hash") == 64:
        assert "setoption name Hash value 64" in lines["ours"]
        assert "setoption name Clear Hash" in lines["ours"]
    if options.get("Hash") == 16:
        assert not any(line.startswith("setoption") for line in lines["ours"])


def test_a_handshake_that_comes_in_pieces_is_read_whole(fake, tmp_path) -> None:
    """Lines cut across reads (7 bytes a write) are read as python-chess reads them."""
    script, declared = fake
    options = {"Hash": 64, "Style": "Solid"}

    async def both() -> tuple[Any, Any]:
        return (await _python_chess([sys.executable, str(script), str(tmp_path / "a.log"),
                                     str(declared), "7"], options),
                await _ours([sys.executable, str(script), str(tmp_path / "b.log"),
                             str(declared), "7"], options))

    theirs, ours = asyncio.run(both())
    assert theirs[1] == "" and ours[1] == ""
    assert ours[0] == theirs[0] and len(ours[0]["options"]) == 15


@pytest.mark.parametrize("options", [{"Hash": 0}, {"Hash": "big"}, {"Style": "Wild"},
                                     {"SyzygyPath": "a\nb"}])
def test_a_bad_option_value_fails_the_start_with_python_chess_s_error(fake, tmp_path,
                                                                      options) -> None:
    script, declared = fake
    argv = [sys.executable, str(script), str(tmp_path / "sent.log"), str(declared)]

    async def both() -> tuple[Any, Any]:
        return await _python_chess(argv, options), await _ours(argv, options)

    theirs, ours = asyncio.run(both())
    assert theirs[1], "python-chess accepted it"
    assert ours[1].startswith(f"Q: {theirs[1]}; it printed: info string starting up"), ours


def test_a_declaration_python_chess_refuses_fails_the_start_alike(fake, tmp_path) -> None:
    script, declared = fake
    declared.write_text(DECLARED + "option name Bad type spin default lots min 1 max 9\n")
    argv = [sys.executable, str(script), str(tmp_path / "sent.log"), str(declared)]

    async def both() -> tuple[Any, Any]:
        try:
            transport, protocol = await chess.engine.popen_uci(argv)
        except chess.engine.EngineError as exc:
            theirs = str(exc)
        else:
            transport.close()
            theirs = ""
        return theirs, await _ours(argv, {})

    theirs, ours = asyncio.run(both())
    assert theirs == "expected integer for spin option 'Bad', got: 'lots'"
    assert ours[1].startswith(f"Q: {theirs}; it printed: "), ours


def test_parse_option_reads_declarations_as_python_chess_does() -> None:
    option = parse_option("name Style type combo default Normal var Solid var Normal")
    assert (option.name, option.type, option.default, option.var) == (
        "Style", "combo", "Normal", ["Solid", "Normal"])
    assert parse_option("name Move min max type spin default 5 min 1 max 9").name == "Move"
    with pytest.raises(chess.engine.EngineError, match="unknown option type"):
        parse_option("name X type slider default 3")


@pytest.mark.skipif(shutil.which("stockfish", path="/usr/games") is None,
                    reason="Debian's stockfish is not installed (/usr/games)")
def test_stockfish_starts_as_python_chess_starts_it() -> None:
    argv = ["/usr/games/stockfish"]
    options = {"Hash": 32, "Threads": 1, "Skill Level": 10}

    async def both() -> tuple[Any, Any]:
        return await _python_chess(argv, options), await _ours(argv, options)

    theirs, ours = asyncio.run(both())
    assert theirs[1] == "" and ours[1] == ""
    assert ours[0] == theirs[0]
    assert ours[0]["config"]["Hash"] == 32 and "Stockfish" in ours[0]["id"]["name"]
