"""Chess960 with real engines: does an engine declare it, and switching it on.

UCI engines declare Chess960 with the ``UCI_Chess960`` option and get
``setoption name UCI_Chess960 value true`` before their first game; they then read and write
castling as king-takes-rook (``e1h1``). XBoard engines declare it with ``fischerandom`` in
``feature variants``; python-chess's XBoard protocol sends ``variant fischerandom`` (and
castling as ``O-O``) for a Chess960 board by itself.
"""

from __future__ import annotations

from typing import Any

import chess

from runner.config.typed import EngineConfig

OPTION = "UCI_Chess960"
XBOARD_VARIANT = "fischerandom"


def chess960_problem(engine: EngineConfig, protocol: Any) -> str | None:
    """Why ``engine`` (started, handshake done) cannot play Chess960, or None."""
    if engine.protocol == "xboard":
        variants = str(getattr(protocol, "features", {}).get("variants", "") or "").split(",")
        if XBOARD_VARIANT in (v.strip() for v in variants):
            return None
        shown = ", ".join(v for v in variants if v) or "none"
        return (f"engine {engine.name!r} does not support Chess960: its xboard 'feature "
                f"variants' has no {XBOARD_VARIANT!r} (it declares: {shown})")
    if any(name.lower() == OPTION.lower() for name in getattr(protocol, "options", {})):
        return None
    return (f"engine {engine.name!r} does not support Chess960: it has no UCI option "
            f"{OPTION!r}")


def enable_chess960(engine: EngineConfig, protocol: Any) -> str | None:
    """Switch Chess960 on for a started engine; why it cannot play it, or None."""
    problem = chess960_problem(engine, protocol)
    if problem is None and engine.protocol == "uci":
        name = next(n for n in protocol.options if n.lower() == OPTION.lower())
        protocol.send_line(f"setoption name {name} value true")
        protocol.config[name] = True  # python-chess's record of what is set
    return problem


def chess960_fen(board: chess.Board) -> str:
    """The FEN of a Chess960 position for an engine: Shredder-FEN castling (``HAha``), as
    python-chess and cutechess-cli send it."""
    return board.fen(shredder=True)
