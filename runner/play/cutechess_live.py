"""Moves live from a cutechess-cli game: its ``-debug all`` engine traffic read as it comes.

With ``-debug all`` cutechess-cli 1.5.1 prints every line it exchanges with its engines,
``<ms since start> >Name(n): line`` (sent) and ``<ms> <Name(n): line`` (received). A move
is taken as played when cutechess tells a UCI engine the game so far
(``position startpos|fen ... moves m1 ... mN``): that list is cutechess's own, so a move it
refused (one that came after the flag fell) is never reported. The mover's search data comes
from its own traffic: the last ``info`` line with a score before its ``bestmove`` (UCI), and
the time from the last line sent to it to its ``bestmove``/``move`` (the line that set it
thinking: ``go`` for UCI, the opponent's move for XBoard).

Limits: only moves cutechess passes on in a ``position`` line are seen live, so a game
between two XBoard engines shows its moves when it ends, and the last move of every game
comes from cutechess's PGN at the end (runner.play.cutechess emits the whole game from the
PGN then, which replaces the live rows ply by ply). XBoard movers get their time but no
score while the game runs.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass

import chess

from runner.domain.events import MovePlayed
from runner.domain.fen import fen
from runner.domain.models import GameSpec
from runner.domain.timecontrol import Clock
from runner.play.referee import move_comment
from runner.play.uci import parse_info

#: one line of engine traffic: time (ms since cutechess started), direction, "Name(n)", text
DEBUG_LINE = re.compile(r"^(\d+) ([<>])(.*?\(\d+\)): (.*)$")


def is_debug_line(line: str) -> bool:
    """Whether a line of cutechess-cli's output is engine traffic printed by ``-debug``."""
    return DEBUG_LINE.match(line) is not None


@dataclass
class _Search:
    label: str
    move: str
    ms: int
    info: str | None


class LiveMoves:
    """Turns the engine traffic of one cutechess-cli game into MovePlayed events."""

    def __init__(self, spec: GameSpec, start_board: chess.Board, emit: Callable[[MovePlayed], None],
                 attempt: int = 1):
        self.spec = spec
        self.board = start_board.copy(stack=False)
        self.emit = emit
        self.attempt = attempt
        self.book = len(spec.opening.moves) if spec.opening else 0
        self.clocks = {chess.WHITE: Clock(spec.time_control), chess.BLACK: Clock(spec.time_control)}
        self.sent: dict[str, int] = {}  # engine label -> time of the last line sent to it
        self.info: dict[str, str] = {}  # engine label -> its last info line with a score
        self.searches: list[_Search] = []  # moves engines answered, not confirmed yet
        self.broken = False  # a position line that does not follow from ours: stop

    @property
    def plies(self) -> int:
        """Moves reported so far (book moves included)."""
        return len(self.board.move_stack)

    def line(self, text: str) -> None:
        """One line of cutechess-cli's output (engine traffic or not)."""
        match = DEBUG_LINE.match(text)
        if match is None or self.broken:
            return
        ms, direction, label, body = int(match[1]), match[2], match[3], match[4].strip()
        if direction == ">":
            self.sent[label] = ms
            if body.startswith("position "):
                self._position(body)
            return
        if body.startswith("info ") and " score " in f" {body} ":
            self.info[label] = body
        elif body.startswith("bestmove ") or body.startswith("move "):
            words = body.split()
            if len(words) > 1:
                self.searches.append(_Search(label, words[1], ms - self.sent.get(label, ms),
                                             self.info.pop(label, None)))
                del self.searches[:-4]

    def _position(self, body: str) -> None:
        words = body.split()
        moves = words[words.index("moves") + 1:] if "moves" in words else []
        done = [m.uci() for m in self.board.move_stack]
        if moves[:len(done)] != done[:len(moves)]:
            self.broken = True  # not our game (cannot happen with one game per process)
            return
        for uci in moves[len(done):]:
            try:
                move = chess.Move.from_uci(uci)
            except ValueError:
                move = None
            if move is None or not self.board.is_legal(move):
                self.broken = True
                return
            self._played(move)

    def _search_for(self, move: chess.Move) -> _Search | None:
        for i in range(len(self.searches) - 1, -1, -1):
            found = self.searches[i]
            try:
                parsed = chess.Move.from_uci(found.move)
            except ValueError:
                try:
                    parsed = self.board.parse_san(found.move)
                except ValueError:
                    continue
            if parsed == move:
                del self.searches[:i + 1]
                return found
        return None

    def _played(self, move: chess.Move) -> None:
        ply = self.plies + 1
        mover = self.board.turn
        book = ply <= self.book
        search = None if book else self._search_for(move)
        info = parse_info(search.info, mover) if search is not None else {}
        time_ms = search.ms if search is not None else 0
        san = self.board.san(move)
        self.board.push(move)
        if not book:
            self.clocks[mover].spend(time_ms / 1000, float("inf"))
        pov = info.get("score")
        score = pov.pov(mover) if pov is not None else None
        comment = "book" if book else move_comment(info, mover, time_ms / 1000)
        infinite = self.spec.time_control.infinite
        self.emit(MovePlayed(
            game_id=self.spec.game_id, ply=ply, uci=move.uci(), san=san, fen=fen(self.board),
            white_clock_ms=None if infinite else int(round(self.clocks[chess.WHITE].remaining * 1000)),
            black_clock_ms=None if infinite else int(round(self.clocks[chess.BLACK].remaining * 1000)),
            time_ms=time_ms, book=book,
            score_cp=None if score is None or score.is_mate() else score.score(),
            mate=None if score is None else score.mate(), depth=info.get("depth"),
            seldepth=info.get("seldepth"), nodes=info.get("nodes"), nps=info.get("nps"),
            tbhits=info.get("tbhits"), comment=comment, at_ms=int(time.time() * 1000),
            attempt=self.attempt))
