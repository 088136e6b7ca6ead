"""Which reader an engine's stdout gets: the compiled one (runner.play._pipes) or Python's.

The compiled part (a C extension built by ``pip install``, docs/referee.md "The engine's
pipes") reads an engine's stdout on its own native thread, stamps CLOCK_MONOTONIC (the clock
of :func:`time.monotonic`) when each read returns, and during a UCI move wakes the event
loop once, when the ``bestmove`` line is complete (runner.play.uci.UciMove hands it the
move with ``begin_move`` before writing ``go``). Outside a move every chunk is handed to the
engine's protocol as the loop's own pipe reader would hand it.

The pure-Python path (the loop's pipe reader, runner.play.spawn) is chosen when the module
was not built or cannot be imported, or by ``SWISS_RUNNER_PIPES=python`` in the environment
(``native``: the compiled part, an error when it is missing; unset or ``auto``: the compiled
part where it loads). Both give the same records, PGN and clocks. The switch names the path
of every compiled part: ``python`` also takes the FEN's pure-Python placement
(runner.domain.fen, chosen when it is imported), ``native`` requires it compiled too.

The compiled reader threads run at a higher priority than the rest of the machine where the
kernel allows it (:func:`reader_priority`; ``SWISS_RUNNER_READER_PRIORITY=off`` keeps them
at the process's own): the read of a ``bestmove``, and so the stamp that stops the engine's
clock, then waits for no other task's turn on a core. Engines keep their priority. A reader
at SCHED_FIFO also binds itself to its engine's CPU (looked up once a move), so that the
engine's lines wake it where they are written (docs/referee.md "The engine's pipes").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from types import ModuleType
from typing import Any

from runner.domain import fen

ENV = fen.SWITCH  # "SWISS_RUNNER_PIPES": the pure-Python path of every compiled part
CHOICES = ("auto", "native", "python")
PRIORITY_ENV = "SWISS_RUNNER_READER_PRIORITY"
PRIORITY_CHOICES = ("auto", "off")

#: What a reader thread asks for, first to last (each where the kernel allows it): SCHED_FIFO
#: at the lowest real-time priority (root, CAP_SYS_NICE or RLIMIT_RTPRIO), else this nice
#: value (CAP_SYS_NICE or RLIMIT_NICE) with a short time slice, else the slice alone (any
#: user, Linux 6.12+: a woken thread with a shorter slice than the running task's takes the
#: core at once). A reader blocks in read() and spends microseconds per read, so a
#: higher priority costs the engines nothing but those microseconds: the time they think
#: is theirs either way.
READER_REALTIME = 1
READER_NICE = -10
READER_SLICE_NS = 100_000

#: The compiled module's interface this source expects (``PIPES_INTERFACE`` in _pipes.c,
#: bumped with it): a module built from other source is refused (:func:`native`).
INTERFACE = 2

_module: ModuleType | None = None
_loaded = False
_stale: str | None = None  # why the compiled module found cannot be used (None: it can)


class PipesChoiceError(Exception):
    """SWISS_RUNNER_PIPES names a path this install cannot take (or no path)."""


def _load() -> ModuleType | None:
    global _module, _loaded, _stale
    if not _loaded:
        _loaded = True
        try:  # late: the compiled part is optional (not built without a C compiler)
            from runner.play import _pipes  # type: ignore[attr-defined]
        except ImportError:
            _pipes = None
        built = getattr(_pipes, "INTERFACE", None)
        if _pipes is not None and built != INTERFACE:
            _stale = (f"runner.play._pipes (the compiled engine pipes) was built from other "
                      f"source than this checkout's (interface {built}, this one needs "
                      f"{INTERFACE}): rebuild it (bash scripts/install.sh, or pip install "
                      f"-e . in the environment), or set {ENV}=python to read the engines' "
                      "pipes in Python")
        _module = _pipes
    return _module


def native() -> ModuleType | None:
    """The compiled module when engines' pipes are to be read by it, else None (Python's).
    PipesChoiceError: the switch names no path, ``native`` is asked for and not built, or
    the module found was built from other source than this checkout's (not ``python``)."""
    choice = (os.environ.get(ENV) or "auto").strip().lower()
    if choice not in CHOICES:
        raise PipesChoiceError(f"{ENV}: got {os.environ.get(ENV)!r}, expected "
                               f"{' | '.join(CHOICES)}")
    if choice == "python":
        return None
    module = _load()
    if _stale is not None:  # a checkout updated without a rebuild: said, never half-used
        raise PipesChoiceError(_stale)
    if choice == "native" and (module is None or not fen.BUILT):
        missing = ("runner.play._pipes (the compiled engine pipes)" if module is None else
                   "runner.domain._fen (the compiled FEN)")
        raise PipesChoiceError(f"{ENV}=native, but {missing} is not built: reinstall with "
                               "gcc and python3-dev (scripts/install.sh), or unset it")
    return module


def reader_priority() -> tuple[int, int, int]:
    """``(realtime, nice, slice_ns)`` for a new compiled reader thread (0: not asked), from
    SWISS_RUNNER_READER_PRIORITY: unset or ``auto``, the above; ``off``, nothing (the
    threads keep the process's priority)."""
    choice = (os.environ.get(PRIORITY_ENV) or "auto").strip().lower()
    if choice not in PRIORITY_CHOICES:
        raise PipesChoiceError(f"{PRIORITY_ENV}: got {os.environ.get(PRIORITY_ENV)!r}, "
                               f"expected {' | '.join(PRIORITY_CHOICES)}")
    if choice == "off":
        return 0, 0, 0
    return READER_REALTIME, READER_NICE, READER_SLICE_NS


def path_name() -> str:
    """``native`` or ``python``: which path this process reads engines' pipes with."""
    return "python" if native() is None else "native"


class NativeOutput(asyncio.ReadTransport):
    """An engine's stdout read by a :class:`runner.play._pipes.Reader` thread, as the
    stdout pipe transport of a runner.play.spawn.EngineTransport (``owner``).

    Its events are handed to the engine's protocol when the loop wakes on the reader's
    eventfd: a chunk (``bytes_read``, with the time it was read), a UCI move (``move_read``:
    its ``bestmove`` line, the time it was read, the last score, bound and PV lines) and the
    end of the pipe (``owner.pipe_closed``, once, as asyncio's pipe transport reports it).
    """

    def __init__(self, owner: Any, fd: int, module: ModuleType):
        super().__init__()
        self.owner = owner
        self.loop: asyncio.AbstractEventLoop = owner.loop
        self.protocol = owner.protocol
        self.module = module
        # owns fd from here on (its thread closes it); at SCHED_FIFO it follows the engine's CPU
        self.reader = module.Reader(fd, *reader_priority(), owner.get_pid())
        self.wake_fd = self.reader.fileno()
        self.closing = False
        self.loop.add_reader(self.wake_fd, self._woken)

    def _woken(self) -> None:
        module, protocol, reader = self.module, self.protocol, self.reader
        if reader is None:
            return
        for event in reader.take():
            if self.closing:
                return
            kind = event[0]
            try:
                if kind == module.DATA:
                    protocol.bytes_read(event[1], event[2])
                elif kind == module.MOVE:
                    protocol.move_read(event[1], event[2], event[3], event[4], event[5])
                else:
                    self._ended(OSError(event[1], os.strerror(event[1])) if event[1] else None)
            except Exception as exc:  # noqa: BLE001 - as the loop reports a failed callback
                self.loop.call_exception_handler({"message": "engine output handler failed",
                                                  "exception": exc, "protocol": protocol})

    def _ended(self, exc: Exception | None) -> None:
        if self.closing:
            return
        self.closing = True
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.wake_fd)
        self.reader = None  # its eventfd is closed with the last of it and its thread
        self.owner.pipe_closed(1, exc)

    # -- asyncio's ReadTransport

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        """Stop the reader (its thread closes the pipe) and report the end once, later."""
        if self.closing:
            return
        self.closing = True
        with contextlib.suppress(Exception):
            self.loop.remove_reader(self.wake_fd)
        self.reader.stop()
        self.reader = None
        self.loop.call_soon(self.owner.pipe_closed, 1, None)

    def is_reading(self) -> bool:
        return not self.closing

    def pause_reading(self) -> None:  # the engine's output is always read
        pass

    def resume_reading(self) -> None:
        pass


def log_file(path: Any) -> Any:
    """An engine log's file for the reader threads to write to (a LogFile, the same
    interface as a text file: ``write``, ``close``), or None on the Python path."""
    module = native()
    if module is None:
        return None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        return module.LogFile(fd)
    except BaseException:
        os.close(fd)
        raise
