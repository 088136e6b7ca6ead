"""What every command shares: loading the config with its problems printed, error lines,
and what libraries log (one escaped line, never a traceback)."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from runner.config import Config, ConfigError, load_config
from runner.domain.text import printable, printable_lines
from runner.errors import EXIT_FAIL, print_error
from runner.play.eventloop import referee_refused  # noqa: F401 - re-exported for the commands
from runner.play.gpudetect import detect
from runner.service.eventcheck import other_event  # noqa: F401 - re-exported: the check `run`, `status` and `td` make

MAX_LOG_CHARS = 300  # an engine printing binary garbage must not flood the terminal


def err(message: str) -> None:
    print_error(message)


def add_format(p: argparse.ArgumentParser, choices: Sequence[str] = ("text", "json")) -> None:
    """The data commands' one output option: ``--format {choices}`` (default text), and
    ``--json`` as the older alias of ``--format json``."""
    p.add_argument("--format", choices=tuple(choices), default="text",
                   help="output format (default text); json prints one JSON document")
    p.add_argument("--json", dest="format", action="store_const", const="json",
                   help="alias of --format json")


def load(path: str, *, writes: bool = False) -> Config | None:
    """The validated config, or None after printing every problem (the caller exits 2);
    ``writes``: the command writes the event's outputs (they must be writable)."""
    try:
        return load_config(path, writes=writes, detect_gpus=detect)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        print(f"{path}: {len(exc.problems)} problem(s); nothing was run or written", file=sys.stderr)
        return None


class EscapingStream:
    """A text stream (stdout, stderr) that shows every control character written to it
    escaped (``\\x1b``, ``\\r``; line breaks kept): whatever a command prints, a name, a
    PGN tag or a config value never reaches the terminal raw. One exception: a line
    redrawn in place (a write that starts with a carriage return and holds no other control
    character: `run`'s live progress bar on a terminal). Anything else is the wrapped
    stream's."""

    def __init__(self, stream: Any):
        self.stream = stream

    def write(self, text: str) -> int:
        safe = text.isprintable() or (text.startswith("\r")
                                      and text.replace("\r", "").isprintable())
        self.stream.write(text if safe else printable_lines(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def escaped_output() -> Iterator[None]:
    """sys.stdout and sys.stderr as :class:`EscapingStream` while the block runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = EscapingStream(saved[0]), EscapingStream(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


LOST_ERRORS_ENV = "SWISS_RUNNER_LOST_ERRORS"


def note_lost(text: str) -> None:
    """An error nobody handled (an exception Python had to ignore, an asyncio exception never
    retrieved): appended to the file named by $SWISS_RUNNER_LOST_ERRORS, when set (the test
    suite sets it, and fails a test whose commands left one)."""
    path = os.environ.get(LOST_ERRORS_ENV)
    if not path:
        return
    with contextlib.suppress(OSError), open(path, "a", encoding="utf-8") as handle:
        handle.write(printable(f"{os.getpid()} {' '.join(sys.argv[:3])}: {text}")[:1000] + "\n")


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
        if record.name == "asyncio" and "never retrieved" in text:
            note_lost(text)
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


def quiet_unraisable() -> None:
    """What Python cannot raise (an error in a ``__del__``, at exit) as one line, not the
    interpreter's traceback. An engine's asyncio transport collected after its event loop
    closed (a run stopped by a signal) says nothing at all: the runner has killed that
    engine's process group itself. ``SWISS_RUNNER_TRACEBACK=1`` shows them as Python does."""
    def hook(unraisable: Any) -> None:
        exc = unraisable.exc_value
        if isinstance(exc, RuntimeError) and str(exc) == "Event loop is closed":
            return
        note_lost(f"{unraisable.err_msg or 'Exception ignored in'}: {type(exc).__name__}: {exc}")
        if os.environ.get("SWISS_RUNNER_TRACEBACK"):
            sys.__unraisablehook__(unraisable)
            return
        what = printable(f"{unraisable.err_msg or 'Exception ignored in'}: "
                         f"{type(exc).__name__}: {exc}")[:300]
        print(f"warning: {what}", file=sys.stderr)

    sys.unraisablehook = hook


def quiet_engine_logs() -> None:
    """python-chess warns about every engine line it does not parse (xboard engines'
    "tellics whisper", an engine printing binary garbage): harmless for us, the command
    reports what stops an engine itself. Keep its errors only."""
    chess_log = logging.getLogger("chess.engine")
    if chess_log.level == logging.NOTSET:
        chess_log.setLevel(logging.ERROR)


def recorded_event_fingerprint(config: Config) -> dict | None:
    """The fingerprint recorded in the event's database (read-only), None without one.
    Store and sqlite3 errors propagate: the caller reports a damaged state as it does."""
    from runner.store.database import Store

    store = Store.open_readonly(config.database)
    if store is None:
        return None
    try:
        return stored_fingerprint(store) if store.has_event() else None
    finally:
        store.close()


def stored_fingerprint(store: Any) -> dict | None:
    """The event's recorded fingerprint as `run` compares it: without the binary digest of
    an engine whose build is recorded (checked by its build, which `run --accept-build` may
    have changed: runner.service.builds)."""
    from runner.config.fingerprint import without_binaries

    recorded = store.fingerprint()
    return None if recorded is None else without_binaries(recorded, set(store.builds()))


def no_event_yet(config: Config, args: argparse.Namespace) -> int:
    """Exit 1 for a data command given a config whose event has no state yet: why on stderr,
    or with ``--format json`` one JSON document ``{"error": ...}`` on stdout (as `status`)."""
    said = (f"{config.path}: no tournament state yet (no database at "
            f"{config.database.resolve()}); start it with: swiss-runner run {config.path}")
    if getattr(args, "format", "text") == "json":
        print(json.dumps({"error": said}), flush=True)
    else:
        print(printable_lines(said), file=sys.stderr)
    return EXIT_FAIL
