"""Exit codes and the exception hierarchy, in one place.

Exceptions are grouped by what happens next, not by where they arise:

* :class:`BadInput`: the user's input (config, opening book, PGN, seeds file, a state
  database of another event, a damaged state) cannot be used. Nothing was written; the
  command exits with :data:`EXIT_BAD_INPUT` and a message naming the file and the problem.
* :class:`ReplayGame`: one game could not be finished here (aborted by a signal, its worker
  lost); it is played again (from its logged position where possible) and the event goes on.
* :class:`StopEvent`: the event cannot go on now (a finished game could not be committed,
  a game cannot be set up at all); everything recorded is intact, the run exits with
  :data:`EXIT_FAIL`, and the same command resumes once the cause is fixed.
"""

from __future__ import annotations

EXIT_OK = 0  # success
EXIT_FAIL = 1  # the command ran but the answer is "no": audit mismatch, probe failed, event stopped
EXIT_BAD_INPUT = 2  # bad config, book, PGN, or state that is not this event's / is damaged
EXIT_INTERRUPTED = 130  # SIGINT / SIGTERM

EXIT_CODES_HELP = "Exit codes: 0 ok, 1 failed/mismatch/stopped, 2 bad input or state, 130 interrupted."


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
