"""The engine layer's faults that must never cost a game: an engine log on a full disk
(issue #38 item 3) and kept engines that are not sound (item 7)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from testkit import spec_for

from runner.config.schema import AdjudicationConfig, EngineConfig
from runner.play.enginelog import FAILURES, GameLog
from runner.play.referee import play_game

STOCKFISH = "/usr/games/stockfish"


@contextlib.contextmanager
def full_disk(directory: Path, size: str = "64k") -> Iterator[Path]:
    """A tiny tmpfs at ``directory``, filled to the last byte (a real ENOSPC)."""
    directory.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(directory)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        (directory / "logs").mkdir()
        with open(directory / "filler", "wb", buffering=0) as filler:
            with contextlib.suppress(OSError):
                while True:
                    filler.write(b"\0" * 512)
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def _stockfish(name: str, nodes: int = 4000) -> EngineConfig:
    return EngineConfig(name, STOCKFISH, options={"Hash": 8, "Threads": 1}, nodes=nodes)


@pytest.mark.skipif(not os.path.exists(STOCKFISH), reason="needs Debian's stockfish")
def test_engine_log_on_a_full_disk_turns_off_and_the_game_goes_on(tmp_path: Path, caplog) -> None:  # noqa: ANN001
    with full_disk(tmp_path / "disk") as disk:
        log = GameLog(disk / "logs" / "game-00001.log", "all", "full disk")
        spec = spec_for(_stockfish("A"), _stockfish("B"), "inf",
                        adjudication=AdjudicationConfig(max_moves=60))
        with caplog.at_level(logging.WARNING):
            record = asyncio.run(play_game(spec, engine_log=log, stall_timeout=20))
        # the log filled its 64 KiB buffer at least once: its flush met the full disk
        assert log.failed is not None and "No space left" in log.failed, log.failed
        assert record.termination not in FAILURES, record.reason
        assert len(record.moves) >= 60, record.reason
        said = [r for r in caplog.records if "turned off" in r.getMessage()]
        assert len(said) == 1 and "game-00001.log" in said[0].getMessage()
        log.close(record.termination, record.reason)  # never raises
