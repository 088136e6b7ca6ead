"""The event loop (runner.play.eventloop): uvloop where installed, pure asyncio on request
(SWISS_RUNNER_LOOP=asyncio, which one CI run forces), a bad choice refused clearly; a real
event plays on either."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import REPO, write_config

from runner.cli import main
from runner.errors import EXIT_BAD_INPUT
from runner.play import eventloop, timeslice

uvloop = pytest.importorskip("uvloop")


async def _loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


@pytest.mark.parametrize(("choice", "module"), [
    ("auto", "uvloop"), ("", "uvloop"), ("uvloop", "uvloop"), ("asyncio", "asyncio.unix_events"),
    (" AsyncIO ", "asyncio.unix_events")])
def test_the_chosen_loop_runs(monkeypatch: pytest.MonkeyPatch, choice: str, module: str) -> None:
    monkeypatch.setenv(eventloop.LOOP_ENV, choice)
    assert eventloop.run(_loop_module()).startswith(module)


def test_a_bad_choice_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(eventloop.LOOP_ENV, "tokio")
    with pytest.raises(eventloop.LoopChoiceError, match="got 'tokio', expected auto | uvloop"):
        eventloop.loop_choice()
    coro = _loop_module()
    with pytest.raises(eventloop.LoopChoiceError):
        eventloop.run(coro)
    assert coro.cr_frame is None  # closed, not left un-awaited
    config = write_config(tmp_path, {"Event": "x", "TimeControl": "10+0.1", "SwissOptions": {},
                                     "Engines": [{"Name": "A", "Command": sys.executable},
                                                 {"Name": "B", "Command": sys.executable}]})
    assert main(["run", str(config)]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "SWISS_RUNNER_LOOP: got 'tokio'" in err and "Traceback" not in err
    assert not (tmp_path / "state").exists()


@pytest.mark.slow
@pytest.mark.engines
@pytest.mark.parametrize("choice", ["asyncio", "uvloop"])
def test_a_real_event_plays_on_either_loop(tmp_path: Path, choice: str) -> None:
    config = write_config(tmp_path, {
        "Event": "loops", "TimeControl": "10+0.1", "Concurrency": 2, "Restart": "off",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "StatePath": "state/s.json"},
        "Adjudication": {"MaxMoves": 15},
        "Engines": [{"Name": "Stockfish", "Command": "/usr/games/stockfish", "Nodes": 2000},
                    {"Name": "Ethereal", "Command": "/usr/games/ethereal-chess", "Depth": 3},
                    {"Name": "Fairymax", "Command": "/usr/games/fairymax", "Protocol": "xboard",
                     "Depth": 2},
                    {"Name": "Toga II", "Command": "/usr/games/toga2", "Depth": 3}]})
    run = subprocess.run([sys.executable, "-X", "importtime", "-m", "runner", "run", str(config)],
                         cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO), eventloop.LOOP_ENV: choice})
    assert run.returncode == 0, run.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in run.stderr.splitlines()
                if line.startswith("import time:")}
    assert ("uvloop" in imported) == (choice == "uvloop")
    state = json.loads((tmp_path / "state" / "s.json").read_text())
    assert state["games_finished"] == 4 and state["complete"]
    reasons = [g["reason"] for r in state["rounds"] for p in r["pairs"] for g in p["games"]]
    assert not [r for r in reasons if "disconnects" in r or "stalls" in r or "on time" in r]


class _Node:
    def __init__(self) -> None:
        self.other: object = self  # a cycle: only the cyclic collector frees it


def test_collect_garbage_frees_cycles_then_freezes_the_heap(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    import weakref

    monkeypatch.setattr(eventloop, "_full_at", [])
    try:
        old = _Node()
        eventloop.collect_garbage()  # `old` is frozen: the collector's own passes skip it
        assert gc.get_freeze_count() > 0
        gone_before = weakref.ref(old)
        del old
        gc.collect()
        assert gone_before() is not None, "a frozen cycle is not collected by a normal pass"
        young = _Node()
        gone_young = weakref.ref(young)
        del young
        eventloop.collect_garbage()  # within the hour: what is newer than the freeze only
        assert gone_young() is None and gone_before() is not None
        eventloop._full_at[0] -= eventloop.FULL_COLLECTION_S  # an hour later: the whole heap
        eventloop.collect_garbage()
        assert gone_before() is None
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


@pytest.mark.slow
def test_the_heap_is_collected_before_each_round_not_during_games(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full collection pauses the loop: the runner makes it before a round's first game
    starts (no engine on the clock), once per round."""
    import gc

    from testkit import loop_config

    from runner.service import runloop

    calls: list[int] = []
    original = eventloop.collect_garbage

    def counted() -> None:
        calls.append(sum(t.get_name().startswith("game ") for t in asyncio.all_tasks()))
        original()

    monkeypatch.setattr(runloop.eventloop, "collect_garbage", counted)
    try:
        assert main(["run", str(loop_config(tmp_path, players=4, Rounds=2)), "--quiet"]) == 0
    finally:
        gc.unfreeze()
    assert calls == [0, 0]  # no game was being played at either


# `python -m runner ARGS` in a process that records the collector's passes (the automatic
# ones before the event loop starts, and whole-heap ones: gc.unfreeze) and the modules
# imported by the end; the record is printed to stderr as JSON.
_WATCHED_RUN = """
import atexit, gc, json, runpy, sys
import runner.cli
from runner.play import eventloop
record = {"start-up passes": [], "unfreezes": 0}
phase = ["before main"]
def watch(stage, info):
    if stage == "start" and phase[0] == "start-up":
        record["start-up passes"].append(info["generation"])
gc.callbacks.append(watch)
unfreeze = gc.unfreeze
def counted_unfreeze():
    record["unfreezes"] += 1
    unfreeze()
gc.unfreeze = counted_unfreeze
command, loop = runner.cli._run, eventloop.run
def started(argv):
    phase[0] = "start-up"
    return command(argv)
def looping(main):
    phase[0] = "loop"
    return loop(main)
runner.cli._run, eventloop.run = started, looping
def report():
    record["modules"] = sorted(sys.modules)
    print(json.dumps(record), file=sys.stderr)
atexit.register(report)
sys.argv = ["runner", *sys.argv[1:]]
runpy.run_module("runner", run_name="__main__")
"""

# what `run` never needs unless its config asks for it: the dashboard's web stack, the
# cluster's Dask, the ratings' numpy and scipy, the schema tooling
NOT_FOR_RUN = ("starlette", "uvicorn", "jinja2", "distributed", "dask", "numpy", "scipy",
               "jsonschema", "runner.web", "runner.cluster", "runner.domain.ratings",
               "runner.cli.schema")


@pytest.mark.slow
@pytest.mark.engines
def test_a_run_makes_no_collector_pass_over_its_start_up(tmp_path: Path) -> None:
    """`run` (the process, not an in-process call) turns the collector's automatic passes off
    until its event loop starts, then freezes what start-up built without a pass: no pass
    during start-up, no whole-heap pass in a short event; and it imports nothing of what its
    config does not use."""
    config = write_config(tmp_path, {
        "Event": "start-up", "TimeControl": "inf", "Concurrency": 1,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 2, "StatePath": "state/s.json"},
        "Adjudication": {"MaxMoves": 10},
        "Engines": [{"Name": "Stockfish", "Command": "/usr/games/stockfish", "Nodes": 1000},
                    {"Name": "Ethereal", "Command": "/usr/games/ethereal-chess", "Depth": 2}]})
    run = subprocess.run([sys.executable, "-c", _WATCHED_RUN, "run", str(config), "--quiet"],
                         cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 0, run.stderr[-2000:]
    assert "Event complete" in run.stdout
    record = json.loads(run.stderr.strip().splitlines()[-1])
    assert "runner.service.tournament" in record["modules"]  # the record saw the run
    assert record["start-up passes"] == []
    assert record["unfreezes"] == 0  # the rounds' passes scanned only what was new
    unused = [m for m in record["modules"] if m in NOT_FOR_RUN or m.split(".")[0] in NOT_FOR_RUN]
    assert not unused, unused[:5]
    state = json.loads((tmp_path / "state" / "s.json").read_text())
    assert state["games_finished"] == 4 and state["complete"]


def test_start_up_freezes_the_heap_once_the_loop_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    async def state() -> tuple[bool, int]:
        return gc.isenabled(), gc.get_freeze_count()

    monkeypatch.setattr(eventloop, "_full_at", [])
    try:
        eventloop.defer_collection()
        assert not gc.isenabled()
        enabled, frozen = eventloop.run(state())
        assert enabled and frozen > 0 and eventloop._full_at  # the freeze stands for a pass
        frozen_at = list(eventloop._full_at)
        eventloop.resume_collection()  # once only: a later loop changes nothing
        assert eventloop.run(state())[0] and eventloop._full_at == frozen_at
    finally:
        gc.enable()
        gc.unfreeze()


def _slice_ns(tid: int = 0) -> int:
    """sched_getattr(2)'s runtime (the time slice of a normal thread), in ns."""
    import ctypes
    import struct

    calls = timeslice.SCHED_ATTR_CALLS.get(os.uname().machine)
    if calls is None:
        pytest.skip(f"no sched_getattr number for {os.uname().machine}")
    buf = ctypes.create_string_buffer(56)
    assert ctypes.CDLL(None, use_errno=True).syscall(calls[1], tid, buf, 56, 0) == 0
    return struct.unpack(timeslice.ATTR, buf.raw)[5]


def _raw_slice_problem() -> str:
    """Why this machine gives a thread no custom slice ("" when it does), asked directly in
    a throwaway thread."""
    import ctypes
    import struct
    import threading

    calls = timeslice.SCHED_ATTR_CALLS.get(os.uname().machine)
    if calls is None:
        return f"no sched_setattr number for {os.uname().machine}"
    found: list[str] = []

    def ask() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        attr = struct.pack(timeslice.ATTR, 56, os.SCHED_OTHER, 1, 0, 0, 200_000, 0, 0, 0, 0)
        if libc.syscall(calls[0], 0, ctypes.c_char_p(attr), 0) != 0:
            found.append(f"sched_setattr refused: {os.strerror(ctypes.get_errno())}")
        elif _slice_ns() != 200_000:
            found.append("the kernel ignores a custom slice (Linux 6.12+ has them)")
        else:
            found.append("")

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join()
    return found[0]


def test_the_loop_thread_asks_for_a_short_slice_its_children_do_not_inherit() -> None:
    """The loop's thread gets a 0.1 ms slice (it reads a move at once instead of after a
    scheduler tick); engines and other threads it starts keep the kernel's default."""
    import threading

    seen: dict[str, object] = {}

    def loop_thread() -> None:
        seen["asked"] = eventloop.short_slice()
        seen["mine"] = _slice_ns()
        child = subprocess.Popen(["sleep", "5"])
        try:
            seen["child"] = _slice_ns(child.pid)
        finally:
            child.kill()
            child.wait()
        other: list[int] = []
        helper = threading.Thread(target=lambda: other.append(_slice_ns()))
        helper.start()
        helper.join()
        seen["thread"] = other[0]

    thread = threading.Thread(target=loop_thread)
    thread.start()
    thread.join()
    if not seen["asked"]:  # refused by this machine (seccomp) or unknown to its kernel?
        problem = _raw_slice_problem()
        assert problem, "the kernel takes a custom slice, but short_slice() did not set it"
        pytest.skip(f"Linux {os.uname().release}: {problem}")
    assert seen["mine"] == eventloop.LOOP_SLICE_NS
    assert seen["child"] != eventloop.LOOP_SLICE_NS and seen["thread"] != eventloop.LOOP_SLICE_NS


def test_a_computing_thread_hands_the_gil_to_the_loop_within_half_a_millisecond() -> None:
    """The loop runs with a GIL switch interval of 0.5 ms (Python's default is 5 ms): a
    thread that computes (the JSON snapshot, a PGN rebuild) makes the loop wait at most that
    long to read an engine's move (a lower setting of the process's own is kept)."""
    before = sys.getswitchinterval()
    seen: list[float] = []

    async def probe() -> None:
        seen.append(sys.getswitchinterval())

    try:
        eventloop.run(probe())
        assert seen == [pytest.approx(min(before, eventloop.SWITCH_INTERVAL_S))]
        assert eventloop.SWITCH_INTERVAL_S <= 0.0005
    finally:
        sys.setswitchinterval(before)
