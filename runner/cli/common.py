"""What every command shares: loading the config with its problems printed, error lines,
and what libraries log (one escaped line, never a traceback)."""

from __future__ import annotations

import logging
import sys

from runner.config import Config, ConfigError, load_config
from runner.domain.text import printable, printable_lines

MAX_LOG_CHARS = 300  # an engine printing binary garbage must not flood the terminal


def err(message: str) -> None:
    print(f"error: {printable_lines(message)}", file=sys.stderr, flush=True)


def load(path: str, *, writes: bool = False) -> Config | None:
    """The validated config, or None after printing every problem (the caller exits 2);
    ``writes``: the command writes the event's outputs (they must be writable)."""
    try:
        return load_config(path, writes=writes)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"{path}: {len(exc.problems)} problem(s); nothing was run or written", file=sys.stderr)
        return None


class OneLineHandler(logging.Handler):
    """Records of libraries (python-chess about an engine's odd output, ...) as one
    ``warning: LOGGER: message`` line on stderr: control characters escaped, cut short, and
    an exception attached to the record named in a few words instead of its traceback."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = str(record.getMessage())
        except Exception:  # a library's bad format string must not stop the command
            text = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        text = printable(text)
        if len(text) > MAX_LOG_CHARS:
            text = text[:MAX_LOG_CHARS] + "..."
        try:
            sys.stderr.write(f"warning: {record.name}: {text}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 (logging's name)
        """Never the default: it prints a traceback."""


def one_line_logs() -> None:
    """Use :class:`OneLineHandler` for records no handler takes (``logging.lastResort``
    prints a library's ``LOGGER.exception`` with its traceback). A logging set-up of the
    caller's own (pytest, an embedding program) is left as it is."""
    if not isinstance(logging.lastResort, OneLineHandler):
        logging.lastResort = OneLineHandler()


def quiet_engine_logs() -> None:
    """python-chess warns about every engine line it does not parse (xboard engines'
    "tellics whisper", an engine printing binary garbage): harmless for us, the command
    reports what stops an engine itself. Keep its errors only."""
    chess_log = logging.getLogger("chess.engine")
    if chess_log.level == logging.NOTSET:
        chess_log.setLevel(logging.ERROR)
