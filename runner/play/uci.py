"""The UCI move exchange of a game, lean enough to cost less than cutechess-cli per ply.

python-chess starts the engine, does the ``uci`` handshake and sets the options
(runner.play.engines); each move of a game then goes through :class:`GoCommand`, a command
of python-chess's own extension API (``Protocol.communicate`` with a ``BaseCommand``):

- ``ucinewgame`` + ``isready`` once per game (the engines are fresh per game), not an
  ``isready`` round trip before every move as ``Protocol.play`` does;
- the ``position`` line is built by the referee, which appends each move to it, instead of
  copying the board, replaying it and writing the root FEN for every move;
- ``info`` lines are not parsed as they stream in: the last one with a score (and the last
  one with a PV) is kept and parsed once, when ``bestmove`` arrives.

Measured on the bench (bench/bench_vs_peers.py), this is most of the runner's CPU per ply.
XBoard engines keep python-chess's ``play``.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.engine


@dataclass
class UciReply:
    move: str | None  # the bestmove token as sent (None: "bestmove" with nothing after it)
    info: dict[str, Any] = field(default_factory=dict)  # as python-chess's InfoDict
    pv_line: str | None = None


_INT_KEYS = ("depth", "seldepth", "nodes", "nps", "tbhits", "hashfull", "multipv")


def parse_info(line: str | None, turn: chess.Color) -> dict[str, Any]:
    """The fields of one ``info`` line the referee uses, as python-chess names them.

    ``score`` is a :class:`chess.engine.PovScore` from the side to move (``turn``).
    """
    if not line:
        return {}
    tokens = line.split()
    info: dict[str, Any] = {}
    i = 1
    n = len(tokens)
    while i < n:
        key = tokens[i]
        if key == "pv" or key == "string":
            break
        if key in _INT_KEYS and i + 1 < n:
            with contextlib.suppress(ValueError):
                info[key] = int(tokens[i + 1])
            i += 2
        elif key == "time" and i + 1 < n:
            with contextlib.suppress(ValueError):
                info["time"] = int(tokens[i + 1]) / 1000
            i += 2
        elif key == "score" and i + 2 < n:
            kind, value = tokens[i + 1], tokens[i + 2]
            with contextlib.suppress(ValueError):
                if kind == "cp":
                    info["score"] = chess.engine.PovScore(chess.engine.Cp(int(value)), turn)
                elif kind == "mate":
                    info["score"] = chess.engine.PovScore(chess.engine.Mate(int(value)), turn)
            i += 3
            if i < n and tokens[i] in ("lowerbound", "upperbound"):
                info[tokens[i]] = True
                i += 1
        else:
            i += 1
    return info


def go_line(limit: chess.engine.Limit) -> str:
    """``go ...`` for a limit, in the units and forms python-chess uses."""
    parts = ["go"]
    if limit.white_clock is not None:
        parts += ["wtime", str(max(1, round(limit.white_clock * 1000)))]
    if limit.black_clock is not None:
        parts += ["btime", str(max(1, round(limit.black_clock * 1000)))]
    if limit.white_inc is not None:
        parts += ["winc", str(round(limit.white_inc * 1000))]
    if limit.black_inc is not None:
        parts += ["binc", str(round(limit.black_inc * 1000))]
    if limit.remaining_moves is not None and int(limit.remaining_moves) > 0:
        parts += ["movestogo", str(int(limit.remaining_moves))]
    if limit.depth is not None:
        parts += ["depth", str(max(1, int(limit.depth)))]
    if limit.nodes is not None:
        parts += ["nodes", str(max(1, int(limit.nodes)))]
    if limit.time is not None:
        parts += ["movetime", str(max(1, round(limit.time * 1000)))]
    return " ".join(parts)


def position_line(start_fen: str) -> str:
    """The ``position`` line before any move; moves are appended as `` moves m1 m2 ...``."""
    if start_fen == chess.STARTING_FEN:
        return "position startpos"
    return f"position fen {start_fen}"


class NotReady(Exception):
    """The engine did not answer ``isready`` in time (before ``go``: not on its clock)."""


class GoCommand(chess.engine.BaseCommand[UciReply]):
    """One move: [ucinewgame, isready, readyok,] position, go ... bestmove.

    The deadlines are loop timers of the command itself (no extra tasks per move): the
    result becomes :class:`NotReady` when ``readyok`` has not come ``ready_timeout``
    seconds after ``isready``, and TimeoutError when ``bestmove`` has not come ``timeout``
    seconds after ``go``.
    """

    def __init__(self, engine: chess.engine.Protocol, position: str, go: str, new_game: bool,
                 turn: chess.Color, *, timeout: float | None = None,
                 ready_timeout: float | None = None):
        super().__init__(engine)
        self.position = position
        self.go = go
        self.new_game = new_game
        self.turn = turn
        self.timeout = timeout
        self.ready_timeout = ready_timeout
        self.timer: asyncio.TimerHandle | None = None
        self.waiting_ready = False
        self.cancelled = False
        self.score_line: str | None = None
        self.bound_line: str | None = None
        self.pv_line: str | None = None

    def start(self) -> None:
        if self.new_game:
            self._engine.send_line("ucinewgame")
            self._engine.send_line("isready")
            self.waiting_ready = True
            self._arm(self.ready_timeout, NotReady)
        else:
            self._go()

    def _go(self) -> None:
        self._engine.send_line(self.position)
        self._engine.send_line(self.go)
        self._arm(self.timeout, TimeoutError)

    def _arm(self, seconds: float | None, error: type[Exception]) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if seconds is not None:
            self.timer = self._engine.loop.call_later(max(seconds, 0.0), self._expire, error)

    def _expire(self, error: type[Exception]) -> None:
        self.timer = None
        if not self.result.done():
            self.result.set_exception(error())

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def line_received(self, line: str) -> None:
        if line.startswith("info "):
            if " multipv " in line and " multipv 1 " not in line:
                return  # secondary lines of a MultiPV search
            if " score " in line:
                if " lowerbound" in line or " upperbound" in line:
                    self.bound_line = line
                else:
                    self.score_line = line
            if " pv " in line:
                self.pv_line = line
        elif line.startswith("bestmove"):
            tokens = line.split()
            if tokens[0] != "bestmove":
                return  # "bestmovez ...": not ours to read
            self._disarm()
            info = parse_info(self.score_line or self.bound_line, self.turn)
            if not self.result.done():
                self.result.set_result(UciReply(tokens[1] if len(tokens) > 1 else None, info,
                                                self.pv_line))
            self.set_finished()
        elif self.waiting_ready and line.strip() == "readyok":
            self.waiting_ready = False
            self._disarm()
            if self.cancelled:
                self.set_finished()
            else:
                self._go()

    def engine_terminated(self, exc: Exception) -> None:
        self._disarm()
        super().engine_terminated(exc)

    def cancel(self) -> None:
        self._disarm()
        self.cancelled = True
        if not self.waiting_ready:
            self._engine.send_line("stop")  # the engine answers with bestmove: finished
