#!/usr/bin/env bash
# Install swiss-runner on a fresh Debian machine. Creates .venv/ in the repository; uses sudo
# for apt-get when not root.
#
#   bash scripts/install.sh          what a game server needs: the runner with its dashboard
#                                    (`serve`) and cluster worker (`worker`), the Debian engines
#                                    the shipped configs play, the 3-4-man Syzygy tables
#   bash scripts/install.sh --test   that, and what the tests need besides: the dev tools
#                                    (pytest, hypothesis, playwright, ruff), Chromium for the
#                                    dashboard's browser tests, an SSH server for the tests of
#                                    engines over ssh, the Debian data the book/ECO tests read
#
# What each puts on the machine, with its size: README.md ("What the install puts on the
# machine") and docs/development.md.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") TEST=0 ;;
  --test) TEST=1 ;;
  *) echo "usage: bash scripts/install.sh [--test]" >&2; exit 2 ;;
esac

# The game server's Debian packages: the engines the shipped configs play, the SSH client (for
# engines on another machine, docs/operators.md), the venv module, and the C compiler and
# Python's headers that pip builds the compiled parts with (runner/play/_pipes.c, the engine
# pipes, and runner/domain/_fen.c, the FEN; without them the install still works and both
# run in Python: docs/referee.md).
RUNTIME_APT="stockfish ethereal-chess toga2 glaurung fairy-stockfish fairymax phalanx hoichess
  openssh-client python3-venv gcc libc6-dev python3-dev"
# The game server's extras: web (the dashboard, `serve`) and cluster (`worker`, `scheduler`).
RUNTIME_EXTRAS="web,cluster"
# The tests' Debian packages besides: Chromium (the dashboard's browser tests, through
# Playwright), an SSH server (the tests of engines over ssh start one on loopback), the
# gnuchess opening book and scid's ECO data (the book and ECO tests), valgrind (the test of
# bench/bench_instructions.py, which counts the runner's instructions under callgrind).
TEST_APT="chromium openssh-server gnuchess-book scid-data valgrind"
# The tests' extras besides: pytest, hypothesis, playwright, ruff, httpx2, jsonschema.
TEST_EXTRAS="dev"

APT="$RUNTIME_APT"
EXTRAS="$RUNTIME_EXTRAS"
if [ "$TEST" -eq 1 ]; then APT="$APT $TEST_APT"; EXTRAS="$EXTRAS,$TEST_EXTRAS"; fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086 # the lists are words
$SUDO apt-get install -y -qq --no-install-recommends $APT >/dev/null
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[$EXTRAS]"
# The compiled parts are optional for pip (no compiler: a warning, the Python path); say so
# here, where a missing compiler can still be installed.
.venv/bin/python -c "import runner.play._pipes" 2>/dev/null \
  || echo "note: runner.play._pipes (compiled engine pipes) not built; engines' pipes are read in Python" >&2
.venv/bin/python -c "import runner.domain._fen" 2>/dev/null \
  || echo "note: runner.domain._fen (compiled FEN) not built; the FEN is written in Python" >&2
# An editable install is not byte-compiled, and with PYTHONDONTWRITEBYTECODE set every start
# of swiss-runner would compile its modules again (about 0.1 s of CPU per start).
.venv/bin/python -m compileall -q runner >/dev/null
echo "swiss-runner installed in .venv (extras: $EXTRAS); engines from Debian are in /usr/games"
# The 3-4-man Syzygy tables python-chess's source package ships (configs/tcec-swiss.yaml and
# the tests use them; git-ignored).
.venv/bin/python scripts/get_syzygy.py
