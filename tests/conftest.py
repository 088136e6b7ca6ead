"""Test session set-up shared by every test module."""

from __future__ import annotations

import os

# Debian installs the chess engines in /usr/games, which is not on every PATH (CI, cron, su).
# Tests that look engines up by name (shutil.which, subprocesses) must find them there.
for _games in ("/usr/games", "/usr/local/games"):
    if os.path.isdir(_games) and _games not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _games

from pathlib import Path  # noqa: E402

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
