"""Test session set-up shared by every test module."""

from __future__ import annotations

import os

# Debian installs the chess engines in /usr/games, which is not on every PATH (CI, cron, su).
# Tests that look engines up by name (shutil.which, subprocesses) must find them there.
for _games in ("/usr/games", "/usr/local/games"):
    if os.path.isdir(_games) and _games not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _games
