"""Where a move's charge beyond the engine's own thinking goes (bench/bench_clock.py).

The runner's side of each engine move, stamped by wrappers around the referee in the
bench's process (:class:`Trace`): the ``go`` stamp (the clock starts), the end of the
write that carried ``go``, the ``bestmove`` read's stamp (the clock stops), the engine
starts in progress meanwhile and, with ``detail``, the time the thread that read the move
(the compiled reader's, else the loop's) spent waiting for a CPU meanwhile and how many
tasks the machine had running. The engine's side is its own log (the bench's test engine:
when it read ``go``, how long it waited for a CPU to read it, when it wrote ``bestmove``
and how long it waited for a CPU in that write). :func:`split` puts the two together per
move, :func:`report` prints the excess split into its parts::

    excess = (go read - go stamp) + (bestmove read - bestmove written)
           = [go stamp -> write done] + [engine's wait for a CPU to read go] + [rest of in]
           + [engine's wait for a CPU in its write] + [reader's wait for a CPU] + [rest of out]

All stamps are CLOCK_MONOTONIC (time.monotonic on Linux), shared by every process.
"""

from __future__ import annotations

import bisect
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

PARTS = ("go stamp -> write done", "engine waited for a CPU to read go", "rest of go -> read",
         "engine waited for a CPU in its write", "reader waited for a CPU",
         "rest of bestmove -> read")


def schedstat(tid: int | None = None) -> tuple[int, int] | None:
    """A thread's time on a CPU and time spent waiting for one so far, in ns (Linux): the
    calling thread's, or thread ``tid`` of this process; None where unknown."""
    path = "/proc/thread-self/schedstat" if tid is None else f"/proc/self/task/{tid}/schedstat"
    try:
        with open(path, "rb") as handle:
            ran, waited = handle.read().split()[:2]
        return int(ran), int(waited)
    except (OSError, ValueError):
        return None


def cpu_now() -> int | None:
    """The core the calling thread runs on (/proc/thread-self/stat's "processor")."""
    try:
        with open("/proc/thread-self/stat", "rb") as handle:
            return int(handle.read().rsplit(b")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def running() -> int | None:
    """How many tasks the machine has running or ready to run now (/proc/loadavg)."""
    try:
        with open("/proc/loadavg", "rb") as handle:
            return int(handle.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Move:
    """One engine move as the runner stamped it (seconds, CLOCK_MONOTONIC)."""

    pid: int
    sent: float  # go stamp
    read: float  # bestmove read's stamp
    written: float | None = None  # the write carrying go returned
    reader_wait: float | None = None  # the reading thread's wait for a CPU, go to move
    running: int | None = None  # tasks running on the machine when the move was handled
    loop_cpu: int | None = None  # the core the loop thread wrote go on


@dataclass
class Trace:
    """The runner's stamps of every engine move and engine start, by wrappers installed
    around the referee (:meth:`install`) in this process. ``detail`` also reads the reading
    thread's schedstat at each ``go`` and each move (a few tens of us of the loop's CPU
    per move, after the write)."""

    detail: bool = False
    moves: list[Move] = field(default_factory=list)
    starts: list[tuple[float, float]] = field(default_factory=list)  # engine start, handshake end
    hits: int = 0  # moves charged from a ponderhit
    at_go: dict[int, tuple[float, int | None, int | None]] = field(default_factory=dict)
    # id(proto) -> (write done, reader's wait so far in ns, the loop's core)
    loop_reads: list[tuple[float, tuple[int, int] | None]] = field(default_factory=list)

    def install(self, python_path: bool) -> None:
        from runner.play import engines, keep, referee

        self._wrap_moves(referee)
        self._wrap_writes(engines.TimedUciProtocol)
        for module in (referee, keep):
            self._wrap_start(module)
        if python_path and self.detail:  # the loop reads the move: its own schedstat
            original_read = engines.TimedUciProtocol.pipe_data_received

            def traced(proto: Any, fd: int, data: Any) -> None:
                self.loop_reads.append((time.monotonic(), schedstat()))
                original_read(proto, fd, data)

            engines.TimedUciProtocol.pipe_data_received = traced  # type: ignore[method-assign]

    def _wrap_moves(self, referee: Any) -> None:
        original, original_hit = referee._time_spent, referee.ponder_hit

        def timed(proto: Any, *a: Any) -> Any:  # every move charged: relayed (runner.play.
            self.moved(proto)  # relay), through runner.play.uci, after a ponderhit
            return original(proto, *a)

        async def timed_hit(ponder: Any, *a: Any, **kw: Any) -> Any:  # charged from ponderhit
            reply = await original_hit(ponder, *a, **kw)
            self.hits += 1
            return reply

        referee._time_spent, referee.ponder_hit = timed, timed_hit

    def _wrap_writes(self, protocol: Any) -> None:
        original = protocol.write_lines

        def write_lines(proto: Any, *lines: str) -> None:
            original(proto, *lines)
            if any(line.startswith(("go", "ponderhit")) for line in lines):
                done = time.monotonic()  # first: the schedstat read takes tens of us
                self.at_go[id(proto)] = ((done, self._reader_wait(proto), cpu_now())
                                         if self.detail else (done, None, None))

        protocol.write_lines = write_lines

    def _wrap_start(self, module: Any) -> None:
        original = module.start_engine

        async def start_engine(*a: Any, **kw: Any) -> Any:
            t0 = time.monotonic()
            try:
                return await original(*a, **kw)
            finally:
                self.starts.append((t0, time.monotonic()))

        module.start_engine = start_engine

    @staticmethod
    def _reader_wait(proto: Any) -> int | None:
        """The compiled reader thread's wait for a CPU so far (ns), None without one."""
        pipes = proto.pipes
        reader = getattr(pipes.get_pipe_transport(1), "reader", None) if pipes else None
        tid = getattr(reader, "native_id", None)
        stat = schedstat(tid) if tid else None
        return stat[1] if stat else None

    def moved(self, proto: Any) -> None:
        if proto.go_sent is None or proto.move_received is None:
            return
        written, waited, cpu = self.at_go.pop(id(proto), (None, None, None))
        move = Move(proto.transport.get_pid(), proto.go_sent, proto.move_received, written,
                    loop_cpu=cpu)
        if self.detail:
            now = self._reader_wait(proto)
            if now is not None and waited is not None:
                move.reader_wait = (now - waited) / 1e9
            move.running = running()
        self.moves.append(move)

    def loop_wait(self, wrote: float, read: float) -> float | None:
        """The Python path: the loop's wait for a CPU from its last engine read before the
        engine's write to the read of the move."""
        times = [t for t, _ in self.loop_reads]
        i, j = bisect.bisect_right(times, wrote) - 1, bisect.bisect_right(times, read) - 1
        first = self.loop_reads[i][1] if i >= 0 else None
        last = self.loop_reads[j][1] if j >= 0 else None
        return None if first is None or last is None else (last[1] - first[1]) / 1e9


@dataclass
class Split:
    """One move's excess and its parts (seconds); a part is None where unknown."""

    excess: float
    into: float  # go stamp -> the engine's read of go
    out: float  # the engine's write of bestmove -> its read's stamp
    parts: dict[str, float | None]
    starting: int  # engine starts in progress during the move
    running: int | None
    loop_core: bool | None = None  # the engine read go on the core the loop wrote it on
    engine_waits: float = 0.0  # the engine's own waits for a CPU (read of go, its write), raw


def split(trace: Trace, logs: dict[int, list[tuple[float, ...]]],
          python_path: bool) -> list[Split]:
    """Every traced move matched to the engine's log (the k-th move of a pid is the k-th
    line of its log, past the searches dropped unanswered: none began before the move's go)
    and split into :data:`PARTS`."""
    seen: dict[int, int] = {}
    starts = sorted(trace.starts)
    out: list[Split] = []
    for move in trace.moves:
        k = seen.get(move.pid, 0)
        rows = logs.get(move.pid, [])
        while k < len(rows) and rows[k][0] < move.sent:  # a search stopped and dropped (a
            k += 1  # kept engine relayed the next go as its game ended: runner.play.relay)
        seen[move.pid] = k + 1
        if k >= len(rows):
            continue
        went, wrote, _left = rows[k][:3]
        wait_write = rows[k][3] if len(rows[k]) > 3 and rows[k][3] >= 0 else None
        wait_read = rows[k][4] if len(rows[k]) > 4 and rows[k][4] >= 0 else None
        into, back = went - move.sent, move.read - wrote
        to_write = None if move.written is None else move.written - move.sent
        reader = trace.loop_wait(wrote, move.read) if python_path else move.reader_wait
        # each half's parts clipped to it, the one measured closest first: the engine waits
        # for a CPU only once the write woke it; the reader (the compiled one at a high
        # priority) may preempt the engine inside its write, whose wait then comes after
        wait_read, to_write = clip(into, wait_read, to_write)
        reader, wait_write = clip(back, reader, wait_write)
        parts = {PARTS[0]: to_write, PARTS[1]: wait_read,
                 PARTS[2]: into - (to_write or 0.0) - (wait_read or 0.0),
                 PARTS[3]: wait_write, PARTS[4]: reader,
                 PARTS[5]: back - (wait_write or 0.0) - (reader or 0.0)}
        busy = sum(1 for t0, t1 in starts[:bisect.bisect_right(starts, (move.read, 1e300))]
                   if t1 >= move.sent)
        engine_cpu = int(rows[k][5]) if len(rows[k]) > 5 and rows[k][5] >= 0 else None
        same = None if engine_cpu is None or move.loop_cpu is None else engine_cpu == move.loop_cpu
        raw = max(0.0, rows[k][3]) if len(rows[k]) > 3 else 0.0
        raw += max(0.0, rows[k][4]) if len(rows[k]) > 4 else 0.0
        out.append(Split(into + back, into, back, parts, busy, move.running, same, raw))
    return out


def clip(total: float, first: float | None,
         second: float | None) -> tuple[float | None, float | None]:
    """``first`` and ``second`` as parts of ``total``: each at least 0, together at most it."""
    room = max(total, 0.0)
    if first is not None:
        first = min(max(first, 0.0), room)
        room -= first
    if second is not None:
        second = min(max(second, 0.0), room)
    return first, second


def ms(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))] * 1000


def report(moves: list[Split], over_ms: float | None) -> None:
    """The excess's parts over every move (mean, p99, max in ms), then for the moves over
    ``over_ms`` (when given) the part that took most of each, and how many overlapped an
    engine start."""
    if not moves:
        return
    print("  where the excess goes (ms):       mean      p99      max  (moves known)")
    for name in PARTS:
        known = [m.parts[name] for m in moves if m.parts[name] is not None]
        if known:
            print(f"    {name:<36}{statistics.fmean(known) * 1000:7.3f}  {ms(known, 0.99):7.3f}"
                  f"  {max(known) * 1000:7.3f}  ({len(known)})")
    if over_ms is None:
        return
    late = [m for m in moves if m.excess * 1000 > over_ms]
    kinds: dict[str, list[float]] = {name: [] for name in PARTS}
    for m in late:
        known = {name: v for name, v in m.parts.items() if v is not None}
        kinds[max(known, key=lambda name: known[name])].append(m.excess)
    print(f"  moves over {over_ms:g} ms: {len(late)} (of {len(moves)}); most of it in: "
          + "; ".join(f"{name}: {len(v)} (max {max(v) * 1000:.1f} ms)"
                      for name, v in kinds.items() if v))
    if late:
        starting = sum(1 for m in late if m.starting)
        base = sum(1 for m in moves if m.starting) / len(moves)
        run = [m.running for m in late if m.running is not None]
        print(f"  of them during an engine start: {starting} ({starting / len(late):.0%}; "
              f"all moves: {base:.0%})"
              + (f"; tasks running when handled: median {statistics.median(run):g}, max "
                 f"{max(run)}" if run else ""))
        same = [m.loop_core for m in late if m.loop_core is not None]
        every = [m.loop_core for m in moves if m.loop_core is not None]
        if same and every:
            print(f"  of them, the engine read go on the core the loop wrote it on: {sum(same)} "
                  f"({sum(same) / len(same):.0%}; all moves: {sum(every) / len(every):.0%})")
