"""A game's moves relayed below Python: one engine's ``bestmove`` handed to the other engine
by the compiled pipes (runner.play._pipes.Relay), without waiting for the event loop.

Once both engines of a UCI game have answered their ``ucinewgame`` + ``isready`` (sent to both
at once through runner.play.uci at the game's start), :class:`MoveRelay` arms the relay with
the game's position line, each side's go line (a fixed one for Nodes/Depth/MoveTime and
infinite time controls, else the clocks, kept in C with the arithmetic of
runner.domain.timecontrol's ``Clock``) and the margin. When the reader thread of the side to
move completes ``bestmove X`` it charges the move, and unless the flag fell, ``X`` is not a
plain UCI move, or the loop is RELAY_AHEAD (12) relayed moves behind, it writes
``position ... moves ... X`` and the other side's ``go`` to the other engine at once, stamped
as that side's ``go``. Every move comes to the loop (:meth:`MoveRelay.next`), relayed or not,
with its stamps and what the referee takes already made in C (:func:`reply`: the text, the
ponder, the search's info, for a relayed move its chess.Move). A relayed move needs nothing
from the loop, so one thought in less than RELAY_WAKE_DELAY (15 ms) does not wake it at
once: the loop is woken when the oldest relayed move queued has waited RELAY_WAKE_DELAY or
RELAY_WAKE_MOVES (6) are queued, and takes them all, one per turn of the loop; a slower move and a move not
relayed wake it at once, and the watchdog and an engine's exit take the moves queued
before they judge. The referee (python-chess) stays
the authority on it and, when it does not follow the relay (an illegal or non-canonical
move, the game's end), calls :meth:`MoveRelay.settle`: the relay is disarmed, an engine that
got a ``go`` meanwhile gets ``stop``, and its answer is awaited and dropped (not charged).

Relayed only where it is safe (:func:`open_relay`): UCI engines on both sides read by the
compiled reader, no pondering, engine logs off or in the compiled reader's LogFile.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable
from typing import Any

import chess
import chess.engine

from runner.domain.models import GameSpec
from runner.play import pipes
from runner.play.clientstate import IDLE, STOPPING
from runner.play.engines import EngineProcess, TimedUciProtocol

# a relay move's fields (runner.play._pipes.Relay.take)
SIDE, TEXT, PONDER, STAMP, GO_STAMP, RELAYED, NEXT_GO, INFO, PV, REST, MOVE = range(11)

# The longest a kept engine's answer to ``stop`` is awaited at a relayed game's end (a sane
# engine answers in milliseconds; one that does not is not kept: closed, a fresh one started).
SETTLE_WAIT_S = 2.0


def _reader(proc: EngineProcess) -> Any:
    pipes_ = proc.protocol.pipes
    return getattr(pipes_.get_pipe_transport(1), "reader", None) if pipes_ else None


def _stdin_fd(proc: EngineProcess) -> int | None:
    stdin = proc.protocol.pipes.get_pipe_transport(0) if proc.protocol.pipes else None
    if stdin is None or stdin.is_closing() or stdin.get_write_buffer_size():
        return None
    end = stdin.get_extra_info("pipe")
    try:
        return end.fileno() if end is not None else None
    except ValueError:
        return None


def _log_of(procs: dict[chess.Color, EngineProcess]) -> tuple[Any, Any] | None:
    """(the LogFile, the two writers) both engines log to; (None, None) without logs;
    None when a log is a Python file (the relay would not write to it)."""
    writers = [procs[c].protocol.io_log for c in (chess.WHITE, chess.BLACK)]
    if writers[0] is None and writers[1] is None:
        return None, None
    natives = {getattr(w, "native", None) for w in writers}
    if len(natives) != 1 or None in natives:
        return None
    return natives.pop(), writers


def open_relay(spec: GameSpec, procs: dict[chess.Color, EngineProcess],
               fixed_go: dict[chess.Color, str]) -> MoveRelay | None:
    """The game's relay, when it can relay (else None: runner.play.referee plays on in
    Python). ``fixed_go``: the go line of a side whose limit is without the clocks."""
    if pipes.native() is None or len(procs) != 2 or spec.white.ponder or spec.black.ponder:
        return None
    if not all(isinstance(p.protocol, TimedUciProtocol) and p.alive for p in procs.values()):
        return None
    readers = [_reader(procs[c]) for c in (chess.WHITE, chess.BLACK)]
    stdins = [_stdin_fd(procs[c]) for c in (chess.WHITE, chess.BLACK)]
    logs = _log_of(procs)
    if None in readers or None in stdins or logs is None:
        return None
    relay = pipes.native().Relay(*readers, *stdins)  # type: ignore[union-attr]
    return MoveRelay(relay, procs, spec, fixed_go, *logs)


class MoveRelay:
    """One game's relay, as the referee drives it: :meth:`start` a side's move, :meth:`next`
    move (relayed or not), :meth:`pass_turn` once a move is taken, :meth:`settle` at the end."""

    def __init__(self, relay: Any, procs: dict[chess.Color, EngineProcess], spec: GameSpec,
                 fixed_go: dict[chess.Color, str], log: Any, writers: Any):
        self.relay = relay
        self.procs = procs
        self.spec = spec
        self.fixed_go = fixed_go
        self.log = log
        self.writers = writers
        self.loop = asyncio.get_running_loop()
        self.queue: collections.deque[tuple[Any, ...]] = collections.deque()
        self.waiting: asyncio.Future[tuple[Any, ...]] | None = None
        self.waiting_for: chess.Color | None = None
        self.deadline = 0.0  # the awaited move's (monotonic)
        self.watchdog: asyncio.TimerHandle | None = None  # one timer, not one per move
        self.watch_at = 0.0
        self.wake_fd = relay.fileno()
        self.loop.add_reader(self.wake_fd, self._woken)
        for proc in procs.values():
            proc.protocol.exit_code.add_done_callback(self._exited)

    def arm(self, position: str, margin: float) -> None:
        """Arm with the position line so far (``position ... [moves ...]``)."""
        tc = self.spec.time_control
        max_elapsed = [float("inf"), float("inf")]
        if tc.infinite:  # a move time is enforced as runner.play.referee._in_time does
            for i, engine in enumerate((self.spec.white, self.spec.black)):
                if engine.movetime_ms is not None:
                    max_elapsed[i] = engine.movetime_ms / 1000 + margin
        fixed = tuple(self.fixed_go.get(c, "").encode() for c in (chess.WHITE, chess.BLACK))
        writers = self.writers or (None, None)
        prefixes = [(w.prefix if w else b"", f" {w.who} > ".encode("utf-8", "replace")
                     if w else b"") for w in writers]
        self.relay.arm(position.encode(), not tc.infinite, tc.base or 0.0, tc.increment,
                       margin, tc.moves or 0, fixed, *max_elapsed, self.log,
                       (prefixes[0][0], prefixes[1][0]), (prefixes[0][1], prefixes[1][1]),
                       writers[0].t0 if writers[0] else 0.0)

    def start(self, color: chess.Color, move: str | None, clocks: dict[chess.Color, Any]) -> float:
        """Append ``move`` (None: none) and start ``color``'s move with these clocks (the
        referee's, authoritative): its go stamp."""
        white, black = clocks[chess.WHITE], clocks[chess.BLACK]
        return self.relay.go(0 if color else 1, move, _finite(white.remaining),
                             _finite(black.remaining), white.moves_made, black.moves_made)

    def pass_turn(self, event: tuple[Any, ...], color: chess.Color, move: str,
                  clocks: dict[chess.Color, Any]) -> float:
        """The move of ``event`` taken, ``color`` to move next: the go the relay already
        wrote for it acknowledged, else its go written now after ``move``; its go stamp."""
        if event[RELAYED]:
            self.relay.ack()
            return event[NEXT_GO]
        return self.start(color, move, clocks)

    # ------------------------------------------------------------------ the moves

    def _woken(self) -> None:
        """The relay's timer fired (or a move is wanted now): every move queued in C taken."""
        self.queue.extend(self.relay.take())
        waiting = self.waiting
        if waiting is not None and self.queue and not waiting.done():
            waiting.set_result(self.queue.popleft())

    def _exited(self, exit_code: asyncio.Future[int]) -> None:
        self._woken()  # a move it wrote before it exited is its move, not a disconnect
        waiting = self.waiting
        if waiting is None or waiting.done():
            return
        proc = self.procs.get(self.waiting_for)  # type: ignore[arg-type]
        if proc is not None and proc.protocol.exit_code is exit_code:
            code = exit_code.result() if not exit_code.cancelled() else None
            waiting.set_exception(chess.engine.EngineTerminatedError(
                f"engine process died unexpectedly (exit code: {code})"))

    def _watch(self, at: float) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
        self.watch_at = at
        self.watchdog = self.loop.call_later(max(at - time.monotonic(), 0.0), self._timed_out)

    def _timed_out(self) -> None:
        """The watchdog: the awaited move is late (TimeoutError), or its deadline is later
        than the one the watchdog was set for (then it waits for that one)."""
        self.watchdog = None
        self._woken()  # a move that came in time may wait in C for the relay's timer
        waiting = self.waiting
        if waiting is None or waiting.done():
            return
        if time.monotonic() >= self.deadline:
            waiting.set_exception(TimeoutError())
        else:
            self._watch(self.deadline)

    async def next(self, color: chess.Color, go_at: float,
                   timeout: Callable[[chess.Color], float]) -> tuple[Any, ...]:
        """The next move (of ``color``): TimeoutError when it has not come by the deadline
        ``go_at + timeout(color)`` (monotonic; asked only when the move is not in yet),
        EngineTerminatedError when the engine exits first. One watchdog timer
        serves every move: it is set again only for a deadline earlier than its own.
        Moves queued in C are taken without waiting for the relay's timer, each after a
        turn of the loop (a batch of moves is checked one per turn: it never holds up the
        other games' events longer than one move does)."""
        queue = self.queue
        if not queue:
            queue.extend(self.relay.take())
        if queue:
            await asyncio.sleep(0)
            return queue.popleft()
        exit_code = self.procs[color].protocol.exit_code
        if exit_code.done():
            raise chess.engine.EngineTerminatedError(
                f"engine process dead (exit code: {exit_code.result()})")
        self.deadline = deadline = go_at + timeout(color)
        if self.watchdog is None or deadline < self.watch_at:
            self._watch(deadline)
        self.waiting = self.loop.create_future()
        self.waiting_for = color
        try:
            return await self.waiting
        finally:
            self.waiting = None

    # ------------------------------------------------------------------ the end

    async def settle(self, stop_timeout: float) -> None:
        """The referee does not follow the relay any more: disarm it; an engine that got a
        ``go`` meanwhile gets ``stop`` and, when it is to be kept (Restart: off), its answer
        is awaited (``stop_timeout``, at most SETTLE_WAIT_S) and dropped, not charged. One
        that does not answer is left STOPPING: not kept. (The relay may have sent it a move
        past the game's end, e.g. the stale text a mated engine answers: an engine may hang
        on such a position rather than answer ``stop``.)"""
        self.relay.disarm()
        self._take_dropped()
        # which side's answer is still to come, asked after the answers in were taken: one
        # that came between the disarm and the take is not waited for (an engine answering
        # at once, e.g. in a mated position, would have been sent stop and waited on until
        # the timeout, then not kept); one that comes from now on is in the relay's queue
        thinking = self.relay.disarm()
        if thinking < 0:
            self._take_dropped()  # one that came just before the question
            return
        color = chess.WHITE if thinking == 0 else chess.BLACK
        proto = self.procs[color].protocol
        if proto.exit_code.done():
            return
        proto.state = STOPPING
        proto.write_lines("stop")
        if self.procs[color].config.restart:  # closed after the game anyway: no wait
            return
        wait = min(stop_timeout, SETTLE_WAIT_S)
        with contextlib.suppress(TimeoutError, chess.engine.EngineTerminatedError):
            self._drop(await self.next(color, time.monotonic(), lambda _: wait))
            proto.state = IDLE

    def _take_dropped(self) -> None:
        """The moves in the relay's queue dropped (what followed them is the engine's)."""
        self._woken()
        while self.queue:
            self._drop(self.queue.popleft())

    def _drop(self, event: tuple[Any, ...]) -> None:
        """A move not taken: what the engine wrote after it goes to its protocol as ever."""
        if event[REST]:
            color = chess.WHITE if event[SIDE] == 0 else chess.BLACK
            self.procs[color].protocol.bytes_read(event[REST], event[STAMP])

    def close(self) -> None:
        """The game is over with the relay (or fails): it is closed, its fds with it."""
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.wake_fd)
        for proc in self.procs.values():
            proc.protocol.exit_code.remove_done_callback(self._exited)
        self.relay.close()
        if self.watchdog is not None:
            self.watchdog.cancel()
            self.watchdog = None
        if self.waiting is not None and not self.waiting.done():
            self.waiting.cancel()


def reply(event: tuple[Any, ...], color: chess.Color
          ) -> tuple[str | None, str | None, dict[str, Any], chess.Move | None]:
    """(the bestmove token, its ponder token, the search's info as python-chess names it,
    with the score as a PovScore of the side that moved: ``color``) of a relay move, as
    runner.play.uci reads them; and for a relayed move (a plain UCI move text, checked in
    C) its ``chess.Move.from_uci``. All made by the compiled relay (Relay.take) as the move
    came (a Move once per process and move: python-chess never changes one)."""
    return event[TEXT], event[PONDER], event[INFO], event[MOVE]


def _finite(seconds: float) -> float:
    return seconds if seconds != float("inf") else 0.0
