"""The config's bounds (no schema library: the `ratings` options share them, and the loader's
plain checks use them). A value beyond these is a typo, not an event (Rounds 10**9 would
announce "game 1 of 4000000000" and play on for ever)."""

from __future__ import annotations

MAX_ENGINES = 1000
MAX_ROUNDS = 1000
MAX_EXTRA_PAIRS = 100
MAX_SEED = 2**63 - 1
MAX_RATING = 10_000
MAX_NODES = 10**12
MAX_DEPTH = 1000
MAX_MOVETIME_MS = 24 * 3600 * 1000
MAX_PLIES = 10_000
MAX_CP = 100_000
MAX_MARGIN_MS = 3_600_000
MAX_CONCURRENCY = 256
MAX_GPUS = 64  # an engine's Gpus
MAX_GPU_INDEX = 1023  # a device index
# Ratings (the config's block and the `ratings` command's options share them)
MAX_SIMULATIONS = 100_000
MAX_WHITE_ADVANTAGE = 1000  # Elo, exclusive

MAX_NAME_CHARS = 200  # Event, Site, engine names: a PGN tag, a table column, a seeds line
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
MAX_PATH_PART_CHARS = 255  # NAME_MAX

TIMEOUT_EXPECTED = "seconds from 1 to 3600"
RESTART_EXPECTED = "on | off (on: fresh engine processes every game; off: kept between games)"
RESTART_SCHEMA = {"anyOf": [{"type": "boolean"}, {"enum": ["on", "off"]}]}

