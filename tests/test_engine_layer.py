"""The engine layer's faults that must never cost a game: an engine log on a full disk
(issue #38 item 3) and kept engines that are not sound (item 7)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from testkit import fake, spec_for

from runner.config.typed import AdjudicationConfig, EngineConfig
from runner.play.enginelog import FAILURES, GameLog
from runner.play.keep import EnginePool
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
        with open(directory / "filler", "wb", buffering=0) as filler, \
                contextlib.suppress(OSError):
            while True:
                filler.write(b"\0" * 512)
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)], check=False)


def _stockfish(name: str, nodes: int = 4000) -> EngineConfig:
    return EngineConfig(name, STOCKFISH, options={"Hash": 8, "Threads": 1}, nodes=nodes)


@pytest.mark.slow
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


# --------------------------------------------------------------------------- kept engines


def _two_cores() -> tuple[int, int]:
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("needs 2 cores")
    return cores[0], cores[1]


@pytest.mark.skipif(not os.path.exists(STOCKFISH), reason="needs Debian's stockfish")
def test_a_kept_engine_pinned_to_half_a_slot_gets_the_whole_slot_back() -> None:
    """A pondering game pins each engine to half of its slot; the referee hands the engine
    back with the slot's cores. The next game that wants the whole slot must get an engine
    the kernel lets run on the whole slot."""
    slot = _two_cores()
    engine = EngineConfig("SF", STOCKFISH, options={"Hash": 8}, restart=False)

    async def main() -> tuple[set[int], set[int], int]:
        pool = EnginePool(2)
        proc = await pool.acquire(engine, timeout=20, cpus=slot[:1])  # half: it pondered
        half = os.sched_getaffinity(proc.pid)
        await pool.release([proc], None, slot)  # as the referee does: the game's slot
        again = await pool.acquire(engine, timeout=20, cpus=slot)
        whole = os.sched_getaffinity(again.pid)
        same = again.pid == proc.pid
        await pool.release([again], None, slot)
        await pool.aclose()
        return half, whole, same

    half, whole, same = asyncio.run(main())
    assert same, "the engine was not kept"
    assert half == {slot[0]}
    assert whole == set(slot)


def _kept_after_one_game(white: EngineConfig, black: EngineConfig) -> list[str]:
    async def main() -> list[str]:
        pool = EnginePool(4)
        record = await play_game(spec_for(white, black, "10+0.1",
                                          adjudication=AdjudicationConfig(max_moves=4)),
                                 engines=pool)
        assert record.termination not in FAILURES, record.reason
        kept = [entry.proc.config.name for entry in pool.idle]
        await pool.aclose()
        return kept

    return asyncio.run(main())


@pytest.mark.slow
def test_an_engine_that_does_not_answer_stop_is_not_kept() -> None:
    deaf = fake("Deaf", "--ponder", "right-deaf")  # stopped only when the game is over
    deaf = replace(deaf, restart=False, ponder=True)
    calm = replace(fake("Calm"), restart=False)
    assert _kept_after_one_game(deaf, calm) == ["Calm"]


def test_an_engine_that_sent_a_bestmove_nobody_asked_for_is_not_kept() -> None:
    stray = replace(fake("Stray", "--extra-bestmove", "2"), restart=False)
    calm = replace(fake("Calm"), restart=False)
    assert sorted(_kept_after_one_game(stray, calm)) == ["Calm"]


# --------------------------------------------------------------------------- off the loop


def test_no_kill_sweep_or_pin_walk_runs_on_the_event_loop(monkeypatch) -> None:  # noqa: ANN001
    """An engine's kill scans /proc for its owner token and its pinning walks its threads:
    both on the spawner thread (runner.play.processes), never on the loop's."""
    import threading

    from runner.play import processes
    from runner.play.engines import start_engine

    threads: dict[str, set[int]] = {"kill": set(), "pin": set()}
    real_kill, real_pin = processes.kill_owned, processes.pin_tree

    def kill_owned(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        threads["kill"].add(threading.get_ident())
        return real_kill(*args, **kwargs)

    def pin_tree(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        threads["pin"].add(threading.get_ident())
        return real_pin(*args, **kwargs)

    monkeypatch.setattr(processes, "kill_owned", kill_owned)
    monkeypatch.setattr(processes, "pin_tree", pin_tree)  # the name processes calls
    cpus = sorted(os.sched_getaffinity(0))[:1]

    async def main() -> int:
        proc = await start_engine(fake("A"), timeout=10, cpus=cpus)
        proc.kill()
        closing = await start_engine(fake("B"), timeout=10, cpus=cpus)
        await closing.close()
        await asyncio.sleep(0.3)  # the kill's sweep ends on the spawner thread
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert threads["kill"] and loop_thread not in threads["kill"]
    assert threads["pin"] and loop_thread not in threads["pin"]


@pytest.mark.skipif(not os.path.exists(STOCKFISH), reason="needs Debian's stockfish")
def test_a_games_start_and_end_give_the_loop_back_between_their_steps(tmp_path: Path,
                                                                      monkeypatch) -> None:  # noqa: ANN001
    """A game's start and end are each several steps of the loop, never one long one (an
    engine of another game may be thinking, and its move is stamped when the loop reads
    it): the engine log is closed on another thread, the record's PGN is built in a step
    of its own before GameFinished goes to the views, and GameStarted's views run before
    the first move is asked for. A callback that puts itself back on the loop counts the
    loop's iterations; each step boundary must see it run."""
    import threading

    from runner.play import referee

    ticks = 0
    seen: dict[str, int] = {}
    closed_on: list[int] = []
    real_finish, real_close, real_loop = referee.finish_record, GameLog.close, referee._game_loop

    def finish_record(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen["record built"] = ticks
        return real_finish(*args, **kwargs)

    def close(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        closed_on.append(threading.get_ident())
        return real_close(self, *args, **kwargs)

    async def game_loop(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        seen["moves asked for"] = ticks
        return await real_loop(*args, **kwargs)

    monkeypatch.setattr(referee, "finish_record", finish_record)
    monkeypatch.setattr(referee, "_game_loop", game_loop)
    monkeypatch.setattr(GameLog, "close", close)

    def emit(event) -> None:  # noqa: ANN001
        seen.setdefault(event.kind, ticks)

    async def main() -> int:
        nonlocal ticks
        stop = False

        def tick() -> None:
            nonlocal ticks
            ticks += 1
            if not stop:
                asyncio.get_running_loop().call_soon(tick)

        tick()
        log = GameLog(tmp_path / "game.log", "all", "steps")
        spec = spec_for(_stockfish("A", 500), _stockfish("B", 500), "inf",
                        adjudication=AdjudicationConfig(max_moves=6))
        await play_game(spec, emit=emit, engine_log=log, stall_timeout=20)
        stop = True
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert closed_on and loop_thread not in closed_on  # the log's close: off the loop
    assert seen["started"] < seen["moves asked for"], seen  # the start's views, then moves
    assert seen["record built"] < seen["finished"], seen  # the PGN, then the views
