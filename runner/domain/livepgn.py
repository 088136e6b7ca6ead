"""The live PGN of relay sites (Lichess Broadcast, TCEC-style viewers, GUIs watching a file).

One function, :func:`live_game_pgn`, lays out one game, in progress or finished, from its
per-move log (MovePlayed events in wire form): the seven-tag roster (``Round`` is
``round.game``, ``Result`` is ``*`` while the game is played), the clocks as
``WhiteClock`` / ``BlackClock`` tags, and each engine move commented with the mover's clock
after the move and the score from White's point of view, the commands Lichess, python-chess
and ChessBase read::

    1. e4 {book [%clk 0:01:00.0]} e5 {book [%clk 0:01:00.0]} 2. Nf3 {[%clk 0:00:59.1]
    [%eval 0.35,16]} ...

Pure: no I/O. The dashboard (``/live.pgn``, ``/round/N.pgn``) and ``run --live-pgn`` both
build their text with it (runner.service.views.livepgntext), so the two are the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import chess

from runner.domain.pgn import write_game
from runner.domain.pgnextended import pgn_clock, pgn_eval


def clock_tag(ms: int | None) -> str | None:
    """A ``WhiteClock`` / ``BlackClock`` value, ``h:mm:ss`` (whole seconds, rounded down)."""
    if ms is None:
        return None
    seconds = max(0, int(ms)) // 1000
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def move_comment(move: Mapping[str, Any], mover: chess.Color) -> str:
    """``book`` for a book move, then ``[%clk]`` (the mover's clock after the move) and
    ``[%eval]`` (White's point of view, with the depth) when the move has them."""
    parts = ["book"] if move.get("book") else []
    clock = move.get("white_clock_ms" if mover == chess.WHITE else "black_clock_ms")
    if isinstance(clock, int | float) and not isinstance(clock, bool):
        parts.append(f"[%clk {pgn_clock(int(clock))}]")
    if not move.get("book"):
        evaluation = pgn_eval(move, mover)
        if evaluation:
            parts.append(evaluation)
    return " ".join(parts)


def playable_moves(moves: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The logged moves from ply 1 on without a gap (a move log still being written can
    miss none in the middle, but a reader must never show a move list that does not play)."""
    out: list[Mapping[str, Any]] = []
    for expected, move in enumerate(moves, start=1):
        if move.get("ply") != expected or not move.get("uci") or not move.get("san"):
            break
        out.append(move)
    return out


def live_game_pgn(tags: Mapping[str, str], start_fen: str | None,
                  moves: Sequence[Mapping[str, Any]], *, reason: str | None = None,
                  clocks: tuple[int | None, int | None] | None = None) -> str:
    """One game of the live PGN. ``tags``: the roster (and any others; ``Result`` is ``*``
    while the game is played); ``moves``: the per-move log in ply order; ``reason``: why a
    finished game ended (its last comment); ``clocks``: (White, Black) ms for the
    ``WhiteClock`` / ``BlackClock`` tags."""
    board_turn = chess.WHITE if start_fen is None or start_fen.split()[1] == "w" else chess.BLACK
    moves = playable_moves(moves)
    all_tags = dict(tags)
    for side, ms in zip(("WhiteClock", "BlackClock"), clocks or (None, None), strict=True):
        value = clock_tag(ms)
        if value is not None:
            all_tags[side] = value
    comments = []
    turn = board_turn
    for move in moves:
        comments.append(move_comment(move, turn))
        turn = not turn
    return write_game(all_tags, start_fen, [m["uci"] for m in moves], comments, reason,
                      sans=[m["san"] for m in moves])


def join_games(texts: Sequence[str]) -> str:
    """Games one after the other, one blank line between them, as a PGN file holds them."""
    return "".join(t.rstrip("\n") + "\n\n" for t in texts)


__all__ = ["clock_tag", "join_games", "live_game_pgn", "move_comment", "playable_moves"]
