#!/usr/bin/env bash
# Install swiss-runner and the Debian chess engines it is tested with, on a fresh Debian machine.
# Creates .venv/ in the repository; uses sudo for apt-get when not root.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
ENGINES="stockfish ethereal-chess toga2 glaurung fairy-stockfish fairymax phalanx hoichess gnuchess-book scid-data openssh-client openssh-server"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# chromium: the dashboard's browser tests drive it headless through Playwright.
# gcc + python3-dev: pip builds the compiled engine pipes (runner/play/_pipes.c; without them
# the install still works and the runner reads engines' pipes in Python: docs/referee.md).
$SUDO apt-get install -y -qq --no-install-recommends $ENGINES chromium python3-venv \
  gcc libc6-dev python3-dev >/dev/null
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,web,cluster]'
# The compiled engine pipes are optional for pip (no compiler: a warning, the Python path);
# say so here, where a missing compiler can still be installed.
.venv/bin/python -c "import runner.play._pipes" 2>/dev/null \
  || echo "note: runner.play._pipes (compiled engine pipes) not built; engines' pipes are read in Python" >&2
# An editable install is not byte-compiled, and with PYTHONDONTWRITEBYTECODE set every start
# of swiss-runner would compile its modules again (about 0.1 s of CPU per start).
.venv/bin/python -m compileall -q runner >/dev/null
echo "swiss-runner installed in .venv; engines from Debian are in /usr/games"
# The 3-4-man Syzygy tables python-chess's source package ships (for the tests; git-ignored).
.venv/bin/python scripts/get_syzygy.py
