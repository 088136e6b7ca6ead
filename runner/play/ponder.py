"""Pondering for UCI engines (``Ponder: true``): thinking on the opponent's time.

After an engine's move ``bestmove X ponder Y``, the referee has it search the position after
``Y`` with ``go ponder`` (the clocks as they stand) while the opponent thinks. When the
opponent's move comes:

- it is ``Y``: ``ponderhit``; the engine goes on with its search, and its clock (and its hard
  deadline) run from the ``ponderhit`` on, as cutechess-cli and fastchess charge it;
- it is another move: ``stop``; the ``bestmove`` that answers it is not a move of the game
  (and not on the engine's clock), and the engine gets the real position with ``go``.

Each search is one :class:`runner.play.uci.UciMove` (``go ponder ...``), so the engine's
output while it ponders is read as for any move. XBoard engines are told ``hard`` or ``easy``
by python-chess and ponder by themselves.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import chess
import chess.engine

from runner.play.uci import UciMove, UciReply, go_line

PONDER_OPTION = "setoption name Ponder value true"


@dataclass
class Pondering:
    """An engine searching on its opponent's time, on the reply it expects."""

    search: UciMove
    expected: str  # the opponent's move it ponders on (UCI)
    result: asyncio.Future[UciReply]


def start_pondering(protocol: object, board: chess.Board, expected: chess.Move | None,
                    position: str, moves: list[str], limit: chess.engine.Limit,
                    turn: chess.Color, ready_timeout: float) -> Pondering | None:
    """``go ponder`` on ``expected`` (the engine's ``ponder`` move; ``board``: the position
    after its own move); None when there is nothing to ponder on or the engine is gone."""
    if expected is None or expected not in board.legal_moves:
        return None
    told = protocol.ponder_told  # type: ignore[attr-defined]
    options = getattr(protocol, "options", {})
    prelude = () if told or "Ponder" not in options else (PONDER_OPTION,)
    line = position + " moves " + " ".join([*moves, expected.uci()])
    search = UciMove(protocol, line, "go ponder" + go_line(limit)[2:], False, turn,
                     timeout=None, ready_timeout=ready_timeout, prelude=prelude)
    try:
        result = search.start()
    except chess.engine.EngineTerminatedError:
        return None
    protocol.ponder_told = True  # type: ignore[attr-defined]
    return Pondering(search, expected.uci(), result)


async def ponder_hit(ponder: Pondering, timeout: float) -> UciReply:
    """The opponent played the expected move: ``ponderhit``; the engine's move (its clock
    and its deadline ``timeout`` from now)."""
    ponder.search.ponderhit(timeout)
    try:
        return await ponder.result
    except asyncio.CancelledError:
        ponder.search.end()
        raise


async def ponder_miss(ponder: Pondering, timeout: float) -> None:
    """The opponent played another move: ``stop`` and wait (``timeout``) for the engine's
    ``bestmove``, which is dropped. NotReady when it does not come in time."""
    ponder.search.stop(timeout)
    try:
        await ponder.result
    except asyncio.CancelledError:
        ponder.search.end()
        raise


async def stop_pondering(pondering: dict[chess.Color, Pondering], timeout: float = 2.0) -> None:
    """The game is over: stop every engine still pondering (each answers ``bestmove``)."""
    for ponder in pondering.values():
        with contextlib.suppress(Exception):
            await ponder_miss(ponder, timeout)
    drop_pondering(pondering)


def drop_pondering(pondering: dict[chess.Color, Pondering]) -> None:
    """Forget the ponder searches (the engines are stopped or killed with the game)."""
    for ponder in pondering.values():
        ponder.search.end()
        if ponder.result.done() and not ponder.result.cancelled():
            ponder.result.exception()  # retrieved: no "never retrieved" warning
        else:
            ponder.result.cancel()
    pondering.clear()


__all__ = ["Pondering", "drop_pondering", "ponder_hit", "ponder_miss", "start_pondering",
           "stop_pondering"]
