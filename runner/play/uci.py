"""The UCI move exchange of a game, lean enough to cost less than cutechess-cli per ply.

python-chess starts the engine, does the ``uci`` handshake, sets the options and quits it
(runner.play.engines). Each move of a game is then one :class:`UciMove`, driven straight
from the engine's output while python-chess's protocol is idle (no command of its own runs):

- ``ucinewgame`` + ``isready`` once per game (for a fresh engine and for one kept from an
  earlier game, ``Restart: off``), not an ``isready`` round trip before every move as
  ``Protocol.play`` does;
- the ``position`` line is built by the referee, which appends each move to it, instead of
  copying the board, replaying it and writing the root FEN for every move; it goes out
  with ``go`` in one write;
- ``info`` lines are not parsed as they stream in: the last one with a score (and the last
  one with a PV) is kept and parsed once, when ``bestmove`` arrives;
- no command objects, futures chained per line or debug-log calls per line: python-chess's
  command machinery cost more per move than the engine's output itself (bench/bench_referee.py);
- where the engine's stdout is read by the compiled reader (runner.play.pipes), the move is
  handed to it just before ``go`` is written: it reads, logs and sifts the move's lines on
  its own thread and the loop wakes once, with ``bestmove`` and its time (:meth:`UciMove.answered`).

XBoard engines keep python-chess's ``play``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.engine

from runner.play.clientstate import IDLE, PONDERING, STOPPING, THINKING


@dataclass
class UciReply:
    move: str | None  # the bestmove token as sent (None: "bestmove" with nothing after it)
    info: dict[str, Any] = field(default_factory=dict)  # as python-chess's InfoDict
    pv_line: str | None = None
    ponder: str | None = None  # the move it expects in reply ("bestmove X ponder Y")


_INT_KEYS = frozenset(("depth", "seldepth", "nodes", "nps", "tbhits", "hashfull", "multipv"))


def parse_info(line: str | None, turn: chess.Color) -> dict[str, Any]:
    """The fields of one ``info`` line the referee uses, as python-chess names them.

    ``score`` is a :class:`chess.engine.PovScore` from the side to move (``turn``).
    A value that is not a number is skipped (``try`` rather than ``contextlib.suppress``:
    no context manager made per field, once a ply).
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
            try:  # noqa: SIM105 - no context manager made per field
                info[key] = int(tokens[i + 1])
            except ValueError:
                pass
            i += 2
        elif key == "time" and i + 1 < n:
            try:  # noqa: SIM105 - no context manager made per field
                info["time"] = int(tokens[i + 1]) / 1000
            except ValueError:
                pass
            i += 2
        elif key == "score" and i + 2 < n:
            kind, value = tokens[i + 1], tokens[i + 2]
            try:
                if kind == "cp":
                    info["score"] = chess.engine.PovScore(chess.engine.Cp(int(value)), turn)
                elif kind == "mate":
                    info["score"] = chess.engine.PovScore(chess.engine.Mate(int(value)), turn)
            except ValueError:
                pass
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


def last_search_lines(text: bytes) -> tuple[str | None, str | None, str | None]:
    """(the last score line, the last bound line, the last PV line) of ``text``, what an
    engine wrote in one search, of its first (or only) PV; None for those it has not.

    Read backwards from the end one line at a time, until a score and a PV are found (an
    engine's last ``info`` line usually has both): the search's other lines are neither
    split nor decoded."""
    score = bound = pv = None
    hi = len(text)
    while hi >= 0:
        lo = text.rfind(b"\n", 0, hi) + 1
        raw = text[lo:hi]
        hi = lo - 1
        if not raw.startswith(b"info ") or (b" score " not in raw and b" pv " not in raw):
            continue
        try:
            line = raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError:
            continue
        if " multipv " in line and " multipv 1 " not in line:
            continue
        if " score " in line:
            if " lowerbound" in line or " upperbound" in line:
                bound = bound or line
            else:
                score = score or line
        if " pv " in line:
            pv = pv or line
        if score and pv:
            break
    return score, bound, pv


def _text(line: bytes) -> str | None:
    """A search line as :func:`last_search_lines` keeps it: None when it is not UTF-8."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return None


class NotReady(Exception):
    """The engine did not answer ``isready`` in time (before ``go``: not on its clock)."""


class UciMove:
    """One move: [ucinewgame, isready, readyok,] position + go, info ..., bestmove.

    :meth:`start` returns a future: the :class:`UciReply` (None, once ``readyok`` has come,
    for ``go`` None: a new game's exchange without a move), or :class:`NotReady` when
    ``readyok`` has not come ``ready_timeout`` seconds after ``isready``, TimeoutError when
    ``bestmove`` has not come ``timeout`` seconds after ``go``, or python-chess's
    EngineTerminatedError when the engine exits first. The protocol (a
    ``runner.play.engines.TimedUciProtocol``) hands every byte its engine writes to
    :meth:`feed` while the move is on (``protocol.searching``), and gets back what comes
    after ``bestmove``. The engine's clock is the protocol's ``go_sent`` to ``move_received``.
    """

    def __init__(self, protocol: Any, position: str, go: str | None, new_game: bool,
                 turn: chess.Color, *, timeout: float | None = None,
                 ready_timeout: float | None = None, prelude: tuple[str, ...] = ()):
        self.protocol = protocol
        self.prelude = prelude  # lines sent before the position (e.g. setoption ... Ponder)
        self.position = position
        self.go = go
        self.new_game = new_game
        self.turn = turn
        self.timeout = timeout
        self.ready_timeout = ready_timeout
        self.loop = asyncio.get_running_loop()
        self.result: asyncio.Future[UciReply | None] = self.loop.create_future()
        self.timer: asyncio.TimerHandle | None = None
        self.waiting_ready = False
        self.gone = False  # "go" was sent
        self.pending = b""  # a line not complete yet (read line by line)
        self.buf = bytearray()  # what the engine wrote since go (collected)
        self.scan = 0  # where to look for bestmove in buf next
        self.read_at = 0.0  # when the data being fed was read (see feed)
        self.score_line: str | None = None
        self.bound_line: str | None = None
        self.pv_line: str | None = None
        self.reader: Any = None  # the compiled reader while it has the move (_hand_to_reader)

    def start(self) -> asyncio.Future[UciReply | None]:
        proto = self.protocol
        if proto.exit_code.done():
            raise chess.engine.EngineTerminatedError(
                f"engine process dead (exit code: {proto.exit_code.result()})")
        if proto.state != IDLE:
            raise chess.engine.EngineError(f"the engine is {proto.state}, not idle: no new search")
        self.pending, proto.partial = proto.partial, b""  # a partial line read before is ours
        proto.searching = self
        proto.exit_code.add_done_callback(self._terminated)
        if self.new_game:
            self.waiting_ready = True
            self._arm(self.ready_timeout, NotReady)
            self._send("ucinewgame", "isready")
        else:
            self._go()
        return self.result

    # ------------------------------------------------------------------ sending

    def _send(self, *lines: str) -> None:
        self.protocol.write_lines(*lines)

    def _go(self) -> None:
        proto = self.protocol
        proto.move_received = None
        proto.last_move_text = None
        # the clock runs from before the write: the engine may read ``go`` (and the writing
        # thread lose its core to it) before the write returns
        proto.go_sent = time.monotonic()
        proto.state = PONDERING if self.go.startswith("go ponder") else THINKING
        self._hand_to_reader()
        self._send(*self.prelude, self.position, self.go)
        self.gone = True
        self._arm(self.timeout, TimeoutError)

    def _hand_to_reader(self) -> None:
        """Where the engine's stdout is read by the compiled reader (runner.play.pipes), the
        move's lines are its own from now until ``bestmove``: it logs them (into the game's
        LogFile) and wakes the loop once, with the move (:meth:`answered`). An engine log
        that is not a LogFile keeps the move on Python's reading."""
        pipes = self.protocol.pipes
        reader = getattr(pipes.get_pipe_transport(1), "reader", None) if pipes else None
        if reader is None:
            return
        log = self.protocol.io_log
        if log is None:
            reader.begin_move(self.pending)
        elif getattr(log, "native", None) is not None:
            reader.begin_move(self.pending, log.native, log.prefix, log.t0)
        else:
            return
        self.pending = b""
        self.reader = reader

    def answered(self, line: bytes, read_at: float, score: bytes | None, bound: bytes | None,
                 pv: bytes | None) -> None:
        """The compiled reader's move: its ``bestmove`` line read at ``read_at`` and the
        search's last score, bound and PV lines (of the first PV), as :meth:`feed` keeps them."""
        self.reader = None  # back in pass mode already
        if self.result.done():  # failed or abandoned meanwhile: a move nobody waits for
            self.protocol.bytes_read(line + b"\n", read_at)
            return
        self.read_at = read_at
        if score is not None:
            self.score_line = _text(score)
        if bound is not None:
            self.bound_line = _text(bound)
        if pv is not None and (text := _text(pv)) is not None:
            self.pv_line = self.protocol.last_pv_line = text
        self._answer(line.decode("utf-8", errors="replace").split(), read_at)

    # ------------------------------------------------------------------ pondering

    def ponderhit(self, timeout: float | None) -> None:
        """A ``go ponder`` search on the move the opponent did play: ``ponderhit``, and the
        engine's clock (``go_sent``) and hard deadline ``timeout`` run from now on."""
        proto = self.protocol
        if self.result.done():  # it answered while pondering (against the protocol): no time
            proto.go_sent = proto.move_received = time.monotonic()
            return
        proto.move_received = None
        proto.go_sent = time.monotonic()  # before the write, as for ``go``
        proto.state = THINKING
        self._send("ponderhit")
        self._arm(timeout, TimeoutError)

    def stop(self, timeout: float | None) -> None:
        """A ``go ponder`` search on a move the opponent did not play: ``stop``; its
        ``bestmove`` (awaited within ``timeout``) is not a move of the game."""
        if not self.result.done():
            self.protocol.state = STOPPING  # not idle (nor kept) until its bestmove comes
            self._send("stop")
            self._arm(timeout, NotReady)

    # ------------------------------------------------------------------ timers and ends

    def _arm(self, seconds: float | None, error: type[Exception]) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if seconds is not None:
            self.timer = self.loop.call_later(max(seconds, 0.0), self._fail, error())

    def _fail(self, exc: BaseException) -> None:
        if not self.result.done():
            self.end()
            self.result.set_exception(exc)

    def _terminated(self, exit_code: asyncio.Future[int]) -> None:
        code = exit_code.result() if not exit_code.cancelled() else None
        self._fail(chess.engine.EngineTerminatedError(
            f"engine process died unexpectedly (exit code: {code})"))

    def end(self) -> None:
        """The move is over (answered, failed, timed out, or abandoned by a caller that was
        cancelled): the protocol is python-chess's again."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        proto = self.protocol
        proto.exit_code.remove_done_callback(self._terminated)
        if self.reader is not None:  # abandoned while the compiled reader had it
            self.reader.end_move()
            self.reader = None
        if proto.searching is self:
            proto.searching = None  # feed hands back what it has not read (the caller
            # passes it on to python-chess); after a failure or an abandoned move the rest
            # of a partial line is dropped with the engine (killed next)

    # ------------------------------------------------------------------ reading

    def feed(self, data: bytes, read_at: float | None = None) -> bytes:
        """Take what the engine wrote; return what follows ``bestmove`` (b"" if nothing).

        ``read_at``: the monotonic time the data was read (the caller stamps it before any
        other work), the arrival time of a ``bestmove`` in it; None: now.
        Once ``go`` is out, what the engine writes is only collected (one search for
        ``bestmove`` per read) and its lines are read once the move has come; before
        ``go``, and with engine logs on, it is read line by line as it comes.
        """
        self.read_at = time.monotonic() if read_at is None else read_at
        if self.result.done():  # answered (or failed) already: not ours any more
            rest, self.pending = self.pending + data, b""
            return rest
        if self.gone and self.protocol.io_log is None:
            return self._collect(data)
        lines = (self.pending + data if self.pending else data).split(b"\n")
        self.pending = lines.pop()
        for i, raw in enumerate(lines):
            if self.result.done():
                rest, self.pending = b"\n".join(lines[i:]) + b"\n" + self.pending, b""
                return rest
            self._line(raw[:-1] if raw.endswith(b"\r") else raw)
        if self.result.done() and self.pending:
            rest, self.pending = self.pending, b""
            return rest
        return b""

    def _collect(self, data: bytes) -> bytes:
        buf = self.buf
        if self.pending:
            buf += self.pending
            self.pending = b""
        buf += data
        at = self.scan
        while True:
            k = buf.find(b"bestmove", at)
            if k < 0:
                self.scan = max(at, len(buf) - 8)  # "bestmove" may be split across reads
                return b""
            if k and buf[k - 1] != 0x0A:  # not at the start of a line
                at = k + 8
                continue
            end = buf.find(b"\n", k)
            if end < 0:  # the line is not complete yet
                self.scan = k
                return b""
            tokens = bytes(buf[k:end]).decode("utf-8", errors="replace").split()
            if tokens[0] == "bestmove":
                break
            at = end  # "bestmovez ...": not ours to read
        now = self.read_at
        self._searched(bytes(buf[:k]))
        rest = bytes(buf[end + 1:])
        self.buf = bytearray()
        self._answer(tokens, now)
        return rest

    def _searched(self, text: bytes) -> None:
        """The last score, bound and PV lines of what the engine wrote before bestmove
        (as the line-by-line reading keeps them): :func:`last_search_lines`."""
        score, bound, pv = last_search_lines(text)
        if score:
            self.score_line = score
        if bound:
            self.bound_line = bound
        if pv:
            self.pv_line = pv
            self.protocol.last_pv_line = pv

    def _answer(self, tokens: list[str], now: float) -> None:
        """The move has come: ``tokens`` of its ``bestmove`` line, read at ``now``."""
        proto = self.protocol
        proto.move_received = now
        proto.last_move_text = tokens[1] if len(tokens) > 1 else ""
        proto.state = IDLE
        info = parse_info(self.score_line or self.bound_line, self.turn)
        if not self.result.done():
            self.end()
            ponder = tokens[3] if len(tokens) > 3 and tokens[2] == "ponder" else None
            self.result.set_result(UciReply(tokens[1] if len(tokens) > 1 else None, info,
                                            self.pv_line, ponder))

    def _line(self, raw: bytes) -> None:
        proto = self.protocol
        if proto.io_log is not None:
            proto.io_log("<", raw.decode("utf-8", errors="replace"))
        if raw.startswith(b"info "):
            if self.gone and (b" score " in raw or b" pv " in raw):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError:
                    return  # as python-chess: a line that is not UTF-8 is dropped
                if " multipv " in line and " multipv 1 " not in line:
                    return  # secondary lines of a MultiPV search
                if " score " in line:
                    if " lowerbound" in line or " upperbound" in line:
                        self.bound_line = line
                    else:
                        self.score_line = line
                if " pv " in line:
                    self.pv_line = line
                    proto.last_pv_line = line
        elif raw.startswith(b"bestmove"):
            now = self.read_at
            tokens = raw.decode("utf-8", errors="replace").split()
            if tokens[0] != "bestmove":
                return  # "bestmovez ...": not a move
            if not self.gone:  # before our go: the answer to no search of ours
                proto.stray = proto.stray or raw.decode("utf-8", errors="replace")
                return
            self._answer(tokens, now)
        elif self.waiting_ready and raw.strip() == b"readyok":
            self.waiting_ready = False
            if self.go is not None:
                self._go()
            else:  # ready only: its first go is the move relay's (runner.play.relay)
                self.end()
                self.result.set_result(None)
