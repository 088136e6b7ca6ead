"""A UCI engine's start, lean enough for a fresh engine every game (``Restart: on``).

What python-chess's ``initialize``, ``configure`` and ``ping`` do for a UCI engine, read
straight from the engine's lines (the protocol hands each line to :meth:`UciStart.take`
while ``protocol.starting`` is set) instead of through python-chess's command objects, a
task and a timer per step and a second line parser: ``uci`` ... ``uciok`` (its ``id`` and
``option`` lines, recorded where python-chess records them: ``protocol.id``, ``options``,
``config``, ``target_config``), then the configured Options (``setoption``, in one write)
and, when asked, ``isready`` ... ``readyok``. The same lines are sent as python-chess sends
them (an Option set to the value the engine already has is not sent) and the same errors
come back (python-chess's EngineError for a bad value or declaration,
EngineTerminatedError when the engine exits, TimeoutError when it does not answer).
XBoard engines keep python-chess's own start (runner.play.engines).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Mapping
from typing import Any

import chess.engine

CHESS_LOG = logging.getLogger("chess.engine")

_FIELDS = ("name", "type", "default", "min", "max")
# python-chess's split of an option declaration into its keywords and their values
_SPLIT = re.compile(r"\s*(" + "|".join(rf"\b{word}\b" for word in (*_FIELDS, "var")) + r")\s*")
MANAGED = frozenset(chess.engine.MANAGED_OPTIONS)


@functools.lru_cache(maxsize=4096)
def parse_option(declaration: str) -> chess.engine.Option:
    """An ``option`` line's declaration (what follows ``option``), read as python-chess's UCI
    handshake reads it: the same fields and quirks, and its EngineError for a default that is
    not of the option's type. Kept once read (an engine started every game declares the
    same options every time; an Option is never changed)."""
    parts = dict.fromkeys(_FIELDS, "")
    var: list[str] = []
    current = None
    for token in _SPLIT.split(declaration.strip()):
        if token == "var" or (token in parts and not parts[token]):
            current = token
        elif current == "var":
            var.append(token)
        elif current:
            parts[current] = token
    bounds = []
    for which in ("min", "max"):
        try:
            bounds.append(int(parts[which]) if parts[which] else None)
        except ValueError:  # logged as python-chess logs it (runner.cli shows it as a warning)
            CHESS_LOG.exception(f"Exception parsing option {which}")
            bounds.append(None)
    name, kind, low, high = parts["name"], parts["type"], bounds[0], bounds[1]
    default = chess.engine.Option(name, kind, None, low, high, var).parse(parts["default"])
    return chess.engine.Option(name, kind, default, low, high, var)


def terminated(code: int | None) -> chess.engine.EngineTerminatedError:
    """python-chess's error for an engine that exited while a command of it was on."""
    hint = ", binary not compatible with cpu?" if code in (-4, 0xC000001D) else ""
    return chess.engine.EngineTerminatedError(
        f"engine process died unexpectedly (exit code: {code}{hint})")


def setoption_line(name: str, value: Any) -> str:
    """The ``setoption`` line for an Option's parsed value, as python-chess writes it."""
    if value is False:
        return f"setoption name {name} value false"
    if value is True:
        return f"setoption name {name} value true"
    if value is None:
        return f"setoption name {name}"
    return f"setoption name {name} value {value}"


class UciStart:
    """One UCI engine's start on its protocol (a runner.play.engines.TimedUciProtocol):
    :meth:`handshake`, then :meth:`configure`. Each wait fails after ``timeout`` seconds
    (TimeoutError), as each of python-chess's steps did under ``wait_for``."""

    def __init__(self, protocol: Any, timeout: float | None):
        self.protocol = protocol
        self.timeout = timeout
        self.loop = asyncio.get_running_loop()
        self.awaited: str | None = None  # "uciok" or "readyok" while it is waited for
        self.waiter: asyncio.Future[None] | None = None

    # ------------------------------------------------------------------ the lines

    def take(self, line: str) -> bool:
        """One line of the engine; True when it was the start's (``id``, ``option``, the
        awaited ``uciok`` / ``readyok``), False for any other (the protocol's as ever)."""
        awaited = self.awaited
        if awaited is None:
            return False
        if line.strip() == awaited:
            self._done(None)
            return True
        if awaited != "uciok":
            return False
        parts = line.split(maxsplit=1)
        token = parts[0] if parts else ""
        rest = parts[1] if len(parts) == 2 else ""
        if token == "option":
            try:
                self._declare(parse_option(rest))
            except chess.engine.EngineError as exc:
                self._done(exc)
            return True
        if token == "id":
            words = rest.split(maxsplit=1)
            key = words[0] if words else ""
            value = words[1] if len(words) == 2 else ""
            self.protocol.id[key] = value.strip()
            return True
        return False

    def _declare(self, option: chess.engine.Option) -> None:
        proto = self.protocol
        proto.options[option.name] = option
        if option.default is not None:
            proto.config[option.name] = option.default
            if option.name.lower() not in MANAGED and option.name.lower() != "uci_analysemode":
                proto.target_config[option.name] = option.default

    # ------------------------------------------------------------------ the steps

    async def handshake(self) -> None:
        """``uci`` ... ``uciok``: its id and options recorded on the protocol."""
        await self._exchange(("uci",), "uciok")
        self.protocol.initialized = True

    async def configure(self, options: Mapping[str, Any], confirm: bool) -> list[str]:
        """Set ``options`` (real names, none managed) as python-chess's ``configure`` does;
        ``confirm``: then ``isready`` (in the same write) and wait for ``readyok``. The
        ``setoption`` lines sent, in order."""
        lines = self.option_lines(options) if options else []
        if confirm:
            await self._exchange((*lines, "isready"), "readyok")
        elif lines:
            self.protocol.write_lines(*lines)
        return lines

    def option_lines(self, options: Mapping[str, Any]) -> list[str]:
        """python-chess's ``_configure``: each of ``options``, then each value it will keep
        (the defaults), parsed by its Option (EngineError for a bad one) and sent only
        where it differs from what the engine has; the protocol's record updated."""
        proto = self.protocol
        lines: list[str] = []
        config = proto.config
        chained = list(options.items()) + [
            (name, value) for name, value in proto.target_config.items()
            if name not in options and not self._kept_default(name, value)]
        for name, value in chained:
            if name.lower() in MANAGED:
                raise chess.engine.EngineError(f"cannot set {name} which is automatically managed")
            try:
                option = proto.options[name]
            except KeyError:
                raise chess.engine.EngineError(
                    "engine does not support option {} (available options: {})".format(
                        name, ", ".join(proto.options))) from None
            value = option.parse(value)
            if value is None or value != config.get(name):
                if name != "UCI_Opponent":  # python-chess sends it after ucinewgame
                    lines.append(setoption_line(name, value))
                config[name] = value
        proto.target_config.update({name: value for name, value in options.items()
                                    if value is not None})
        return lines

    def _kept_default(self, name: str, value: Any) -> bool:
        """Whether ``value`` is its Option's default, parsed when it was declared, and what
        the engine has: parsed again it comes back unchanged (Option.parse of its own result
        gives it back, and the declaration checked it), so it is not sent and the record
        does not change."""
        option = self.protocol.options.get(name)
        return (option is not None and value is option.default
                and value is self.protocol.config.get(name))

    async def _exchange(self, lines: tuple[str, ...], awaited: str) -> None:
        proto = self.protocol
        if proto.exit_code.done():
            raise chess.engine.EngineTerminatedError(
                f"engine process dead (exit code: {proto.exit_code.result()})")
        self.waiter = waiter = self.loop.create_future()
        self.awaited = awaited
        timer = (self.loop.call_later(self.timeout, self._done, TimeoutError())
                 if self.timeout is not None else None)
        proto.exit_code.add_done_callback(self._exited)
        proto.starting = self
        try:
            proto.write_lines(*lines)
            await waiter
        finally:
            proto.starting = None
            self.awaited = self.waiter = None
            if timer is not None:
                timer.cancel()
            proto.exit_code.remove_done_callback(self._exited)

    def _done(self, exc: BaseException | None) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        self.awaited = None  # the lines after it are the protocol's
        if exc is None:
            waiter.set_result(None)
        else:
            waiter.set_exception(exc)

    def _exited(self, exit_code: asyncio.Future[int]) -> None:
        self._done(terminated(exit_code.result() if not exit_code.cancelled() else None))
