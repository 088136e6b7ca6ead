"""Exit codes and the exception hierarchy, in one place.

Exceptions are grouped by what happens next, not by where they arise:

* :class:`BadInput`: the user's input (config, opening book, PGN, seeds file, a state
  database of another event, a damaged state) cannot be used. Nothing was written; the
  command exits with :data:`EXIT_BAD_INPUT` and a message naming the file and the problem.
* :class:`ReplayGame`: one game could not be finished here (aborted by a signal, its worker
  lost); it is played again (from its logged position where possible) and the event goes on.
* :class:`ViewError`: a view of the event (the JSON snapshot, the standings, the ratings, the
  PGN file) could not be made: a bug in that view, never damage of the record. The runner
  reports it once and tries again at the view's next update; a read-only command exits with
  :data:`EXIT_FAIL` and says that the record is intact.
* :class:`StopEvent`: the event cannot go on now (a finished game could not be committed,
  a game cannot be set up at all); everything recorded is intact, the run exits with
  :data:`EXIT_FAIL`, and the same command resumes once the cause is fixed.
"""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Iterator

from runner.domain.text import printable_lines

EXIT_OK = 0  # success
EXIT_FAIL = 1  # the command ran but the answer is "no": audit mismatch, probe failed, event stopped
EXIT_BAD_INPUT = 2  # bad config, book, PGN, or state that is not this event's / is damaged
EXIT_INTERRUPTED = 130  # SIGINT / SIGTERM

EXIT_CODES_HELP = "Exit codes: 0 ok, 1 failed/mismatch/stopped, 2 bad input or state, 130 interrupted."

# Set to show the traceback of an unexpected error (for a bug report) instead of one line.
TRACEBACK_ENV = "SWISS_RUNNER_TRACEBACK"


def missing_extra(extra: str) -> str:
    """How to install an extra that is missing: swiss-runner comes from its clone, not from a
    package registry."""
    return (f"scripts/install.sh installs the {extra!r} extra; into another virtualenv, from "
            f"the clone: pip install -e '.[{extra}]'")


def unexpected_error(command: str, exc: BaseException) -> str:
    """The one line a user gets for an error swiss-runner did not expect (a bug)."""
    return (f"{command}: unexpected error: {type(exc).__name__}: {exc or '(no message)'}; "
            f"this is a bug in swiss-runner: please report it with the command "
            f"(set {TRACEBACK_ENV}=1 to see where it happened)")


def print_error(message: str) -> None:
    """``error: MESSAGE`` on stderr, every control character shown escaped (each line kept);
    a stderr that cannot be written (closed, a full disk, a pipe whose reader went away)
    loses the line, never the caller's work."""
    with contextlib.suppress(OSError, ValueError):
        print(f"error: {printable_lines(message)}", file=sys.stderr, flush=True)


class SwissRunnerError(Exception):
    """Base of every error swiss-runner reports to a user (``str()`` is the message)."""


class BadInput(SwissRunnerError):
    """Input that cannot be used; nothing was written (exit 2)."""


class ReplayGame(SwissRunnerError):
    """A game could not be finished here; it is played again, the event goes on."""


class StopEvent(SwissRunnerError):
    """The event must stop now; everything recorded is intact (exit 1, resume later)."""


class ConfigError(BadInput):
    """One or more problems in a config file; ``str()`` lists them all, one per line."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


class RecordInvalid(ValueError):
    """A value of the record that the rules cannot take (a result that is none, a game of an
    engine that is not seeded): a damaged record, which a view that meets it reports as such
    (never as a bug of its own)."""


class GpuDetectError(Exception):
    """nvidia-smi is missing or did not list the devices (the message says which): raised by
    runner.play.gpudetect, whose ``detect`` the command line hands the config's loader."""


class ViewError(SwissRunnerError):
    """A view of the event could not be made (a bug in it); the record is intact."""

    def __init__(self, what: str, cause: BaseException):
        super().__init__(f"{what} could not be made ({type(cause).__name__}: {cause}); this is "
                         "a bug in swiss-runner (please report it), not damage: every recorded "
                         "game is intact")
        self.what = what
        self.cause = cause


@contextlib.contextmanager
def view(what: str, keep: tuple[type[Exception], ...] = ()) -> Iterator[None]:
    """Make ``what`` (a view computed from the record): an error of the computation is a
    :class:`ViewError`; errors of reading the store (SQLite, the user's input, the disk)
    pass through as they are, since only those can mean a damaged record, and so do the
    ``keep`` ones (a caller's bad-input errors)."""
    try:
        yield
    except (sqlite3.Error, SwissRunnerError, OSError, MemoryError, RecordInvalid, *keep):
        raise
    except Exception as exc:  # noqa: BLE001 - anything else is the view's own bug
        raise ViewError(what, exc) from exc
