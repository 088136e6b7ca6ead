"""Test session set-up shared by every test module."""

from __future__ import annotations

import os

# Debian installs the chess engines in /usr/games, which is not on every PATH (CI, cron, su).
# Tests that look engines up by name (shutil.which, subprocesses) must find them there.
for _games in ("/usr/games", "/usr/local/games"):
    if os.path.isdir(_games) and _games not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _games

import gc  # noqa: E402
import logging  # noqa: E402
import sys  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
# The 3-4-man Syzygy tables from python-chess's source package, unpacked by
# scripts/install.sh (scripts/get_syzygy.py) into a git-ignored folder.
SYZYGY_DIR = Path(os.environ.get("SWISS_RUNNER_SYZYGY") or REPO / ".cache" / "syzygy")


def _have_syzygy() -> bool:
    return (SYZYGY_DIR / "KRvK.rtbw").is_file() and (SYZYGY_DIR / "KBNvK.rtbz").is_file()


@pytest.fixture(scope="session")
def syzygy_dir() -> Path:
    """The 3-4-man Syzygy tables; in CI a missing set is a failure, elsewhere a skip."""
    if not _have_syzygy():
        message = (f"no Syzygy tables in {SYZYGY_DIR}: run `python scripts/get_syzygy.py` "
                   "(scripts/install.sh does) or set SWISS_RUNNER_SYZYGY")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return SYZYGY_DIR


@pytest.fixture(scope="session")
def tcec_events() -> Path:
    """A folder holding real TCEC Swiss events (swiss-test-2/-4 .pgn and .seeds.txt).

    They come from TCEC's public archive and are not part of this repository: the tests
    that replay them run only when SWISS_RUNNER_TCEC_EVENTS names such a folder.
    """
    folder = os.environ.get("SWISS_RUNNER_TCEC_EVENTS")
    if not folder:
        pytest.skip("real TCEC events are not in the repository; set SWISS_RUNNER_TCEC_EVENTS "
                    "to a folder with swiss-test-2.pgn/.seeds.txt and swiss-test-4.pgn/.seeds.txt")
    path = Path(folder)
    if not (path / "swiss-test-2.pgn").is_file():
        pytest.fail(f"SWISS_RUNNER_TCEC_EVENTS={folder}: no swiss-test-2.pgn there")
    return path


# Every swiss-runner command the tests start (a runner, a worker, `status`...) notes there
# the errors nobody handled (runner.cli.common.note_lost); no_lost_exceptions checks it.
_LOST_FILE = Path(os.environ.setdefault(
    "SWISS_RUNNER_LOST_ERRORS",
    os.path.join(os.environ.get("TMPDIR", "/tmp"), f"swiss-runner-lost-{os.getpid()}.txt")))


def _lost_in_commands(start: int) -> list[str]:
    try:
        with open(_LOST_FILE, encoding="utf-8", errors="replace") as handle:
            handle.seek(start)
            return [line.rstrip("\n") for line in handle]
    except OSError:
        return []


@pytest.fixture(autouse=True)
def no_lost_exceptions(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Fail a test after which an asyncio task's or future's exception was never retrieved,
    or Python had to ignore an exception (``Exception ignored in ...``: a ``__del__``, a
    callback at exit): each is an error nobody handled. ``swiss-runner``'s own hook (one
    warning line) is left out here, so that a test run in-process reports them too; the
    commands a test runs as processes note theirs in $SWISS_RUNNER_LOST_ERRORS."""
    lost: list[str] = []
    start = _LOST_FILE.stat().st_size if _LOST_FILE.exists() else 0

    class Lost(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            if "exception was never retrieved" in text:
                exc = record.exc_info[1] if record.exc_info else None
                lost.append(f"{text}: {type(exc).__name__}: {exc}" if exc else text)

    def unraisable(u: Any) -> None:
        lost.append(f"{u.err_msg or 'Exception ignored in'}: {u.object!r}: "
                    f"{u.exc_type.__name__}: {u.exc_value}")

    handler = Lost(logging.ERROR)
    asyncio_log = logging.getLogger("asyncio")
    asyncio_log.addHandler(handler)
    monkeypatch.setattr(sys, "unraisablehook", unraisable)
    monkeypatch.setattr("runner.cli.quiet_unraisable", lambda: None)
    try:
        yield
        gc.collect()  # a task or transport this test left behind reports itself now
    finally:
        asyncio_log.removeHandler(handler)
    lost += _lost_in_commands(start)
    if lost:
        pytest.fail("errors nobody handled:\n" + "\n".join(lost[:10]), pytrace=False)
