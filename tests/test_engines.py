"""Engine processes: kill -9 of the runner, the next start's sweep, and pid-reuse safety.

Real processes throughout (the fake UCI engine in tests/fakes and plain python sleepers);
a "reused pid" is simulated by pointing a finished engine's record at another live process.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from testkit import start_runner_playing, wait_until, write_config

from runner.config import EngineConfig
from runner.play.engines import kill_process_group, start_engine, sweep_orphans

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FAKE = HERE / "fakes" / "fake_uci.py"
SLEEPER = "import time; time.sleep(120)"
OWNER_ENV = "SWISS_RUNNER_OWNER"  # runner.play.engines.OWNER_ENV: "<runner pid>:<its create time>:<n>"


def with_token(token: str) -> list[psutil.Process]:
    """Live (non-zombie) helper processes started by a fake engine with ``--spawn-child token``
    (the engine itself, with the token among its options, is not one)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            cmdline = proc.info["cmdline"] or []
            if (token in cmdline and "--spawn-child" not in cmdline
                    and proc.info["status"] != psutil.STATUS_ZOMBIE):
                found.append(proc)
        except psutil.Error:
            pass
    return found


def gone(pid: int, created: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - created) > 0.01 or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def kill_all(procs) -> None:
    for proc in procs:
        with contextlib.suppress(psutil.Error, ProcessLookupError):
            proc.kill()


def test_sweep_removes_what_an_engine_started_after_the_runner_was_killed_by_sigkill(tmp_path):
    # The parent-death signal kills the engine, not the helper process it started: that one
    # lives on in the engine's process group, and the next start's sweep must remove it
    # although the recorded engine (the group leader) is gone.
    token = uuid.uuid4().hex
    runner, pid_file = start_runner_playing(tmp_path, "--spawn-child", token)
    try:
        wait_until(lambda: pid_file.exists() and len(pid_file.read_text().splitlines()) == 2
                   and with_token(token), "engines did not start")
        records = [(int(a), float(b)) for a, b in (line.split() for line in pid_file.read_text().splitlines())]
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        wait_until(lambda: all(gone(p, c) for p, c in records), "the engines outlived the runner")
        helpers = with_token(token)
        assert helpers, "precondition: the engine's own child survives the parent-death signal"
        assert sweep_orphans(records) == 1
        wait_until(lambda: not with_token(token), "the sweep left the engine's child running")
    finally:
        runner.kill()
        kill_all(with_token(token))


def _orphan_group(tmp_path: Path, env: dict[str, str] | None, tag: str) -> tuple[int, float, int]:
    """A group leader (recorded) that exits, leaving a sleeper in its process group.

    Returns (leader pid, leader create time, sleeper pid); the leader is reaped.
    """
    pid_file = tmp_path / f"{tag}.pid"
    code = (f"import subprocess, sys, pathlib; p = subprocess.Popen([sys.executable, '-c', {SLEEPER!r}, {tag!r}]); "
            f"pathlib.Path({str(pid_file)!r}).write_text(str(p.pid))")
    leader = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, env=env)
    created = psutil.Process(leader.pid).create_time()
    leader.wait(timeout=10)
    wait_until(lambda: pid_file.exists() and pid_file.read_text(), "no sleeper")
    sleeper = int(pid_file.read_text())
    assert os.getpgid(sleeper) == leader.pid
    return leader.pid, created, sleeper


def test_sweep_of_a_gone_leader_kills_only_processes_proven_ours(tmp_path):
    # No token (a group that could belong to anyone once the pid was reused), the token of a
    # runner that is still running (this test process), and a dead runner's token on a
    # process older than the recorded leader: none of them may be killed.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_created = psutil.Process(dead.pid).create_time()
    dead.wait()
    dead_token = f"{dead.pid}:{dead_created:.3f}:1"
    clean = {k: v for k, v in os.environ.items() if k != OWNER_ENV}
    cases = {
        "untagged": clean,
        "live-runner": {**clean, OWNER_ENV: f"{os.getpid()}:{psutil.Process().create_time():.3f}:1"},
        "dead-runner": {**clean, OWNER_ENV: dead_token},
    }
    groups = {tag: _orphan_group(tmp_path, env, tag) for tag, env in cases.items()}
    try:
        spared = [(pid, created) for tag, (pid, created, _) in groups.items() if tag != "dead-runner"]
        pid, created, _ = groups["dead-runner"]
        spared.append((pid, created + 60.0))  # its member is older than this recorded leader
        assert sweep_orphans(spared) == 0
        for _, _, sleeper in groups.values():
            assert psutil.Process(sleeper).status() != psutil.STATUS_ZOMBIE
        # the same dead runner's group with the true leader record is an orphan: swept
        assert sweep_orphans([(pid, created)]) == 1
        sleeper = groups["dead-runner"][2]
        wait_until(lambda: not psutil.pid_exists(sleeper)
                   or psutil.Process(sleeper).status() == psutil.STATUS_ZOMBIE, "not swept")
    finally:
        for _, _, sleeper in groups.values():
            kill_all([psutil.Process(sleeper)] if psutil.pid_exists(sleeper) else [])


def test_a_finished_engine_is_never_killed_by_a_reused_pid():
    # After the engine was reaped its pid may be reused: killing "the engine" again (close()
    # after a crash, kill() on cancel) must not signal whoever has that pid now.
    other = subprocess.Popen([sys.executable, "-c", SLEEPER], start_new_session=True)
    bystander = subprocess.Popen([sys.executable, "-c", SLEEPER])  # not a group leader

    async def main() -> None:
        proc = await start_engine(EngineConfig("F", sys.executable, (str(FAKE),)))
        await proc.close()  # quits; asyncio reaps it
        while proc.transport.get_returncode() is None:
            await asyncio.sleep(0.02)
        for reused in (other.pid, bystander.pid):
            proc.pid = reused  # the kernel handed the engine's pid to another process
            proc.kill()
            await proc.close()

    try:
        asyncio.run(main())
        kill_process_group(bystander.pid)  # no group with that id: no fallback to kill(pid)
        time.sleep(0.2)
        assert other.poll() is None and bystander.poll() is None
    finally:
        other.kill()
        bystander.kill()


@pytest.mark.slow
def test_what_an_engine_started_dies_with_it_even_after_it_quit_and_was_reaped():
    token = uuid.uuid4().hex

    async def main() -> tuple[int, float]:
        proc = await start_engine(EngineConfig("F", sys.executable, (str(FAKE), "--spawn-child", token)))
        wait_until(lambda: bool(with_token(token)), "no child")
        await proc.close()
        return proc.pid, proc.create_time

    try:
        asyncio.run(main())
        wait_until(lambda: not with_token(token), "the engine's child outlived the game")
    finally:
        kill_all(with_token(token))


def test_a_games_engines_close_together_and_what_left_their_groups_dies_in_one_sweep(
        monkeypatch):  # noqa: ANN001
    """A game's two engines (Restart: on) quit together, and what each started in a session
    of its own (out of its process group, found only by its owner token) is killed by one
    walk of /proc for both, not one walk each (issue #52: a fresh engine's CPU)."""
    from runner.play import engines, processes

    walks: list[dict[str, int | None]] = []
    real_walk = processes._owned_processes

    def walk(tokens):  # noqa: ANN001, ANN202
        walks.append(dict(tokens))
        return real_walk(tokens)

    monkeypatch.setattr(processes, "_owned_processes", walk)
    tokens = [uuid.uuid4().hex, uuid.uuid4().hex]

    async def main() -> None:
        procs = [await start_engine(EngineConfig(f"F{i}", sys.executable,
                                                 (str(FAKE), "--spawn-child", token, "--escape")))
                 for i, token in enumerate(tokens)]
        wait_until(lambda: all(with_token(t) for t in tokens), "no escaped child")
        escaped = [p for t in tokens for p in with_token(t)]
        assert all(os.getpgid(p.pid) != proc.pid for p in escaped for proc in procs)
        await engines.close_engines(procs)
        assert all(proc.transport.get_returncode() is not None for proc in procs)

    try:
        asyncio.run(main())
        wait_until(lambda: not any(with_token(t) for t in tokens),
                   "an escaped child outlived its engine")
        assert len(walks) == 1 and len(walks[0]) == 2, walks
    finally:
        kill_all([p for t in tokens for p in with_token(t)])


@pytest.mark.parametrize("stop", ["cancel", "KeyboardInterrupt"])
def test_an_engine_is_killed_when_its_close_is_stopped_while_it_quits(stop):
    """A cancellation (a stop signal aborting the games) or a KeyboardInterrupt in the quit
    window left the engine running: the kill came after the quit, and never ran."""
    seen: list[tuple[int, float]] = []

    async def main() -> None:
        proc = await start_engine(EngineConfig("F", sys.executable, (str(FAKE), "--slow-quit", "60")))
        seen.append((proc.pid, proc.create_time))
        closing = asyncio.ensure_future(proc.close(quit_timeout=30))
        await asyncio.sleep(0.3)  # in the quit window: the engine sleeps before it exits
        assert not gone(proc.pid, proc.create_time)
        if stop == "KeyboardInterrupt":
            raise KeyboardInterrupt  # asyncio.run cancels the close that is under way
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing

    if stop == "KeyboardInterrupt":
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(main())
    else:
        asyncio.run(main())
    wait_until(lambda: gone(*seen[0]), "the engine outlived its close", timeout=5)


# --------------------------------------------------------------------------- node/depth limits


def _limit_event(tmp_path: Path, tc: str, ignoring: dict) -> Path:
    sure = {"Name": "Sure", "Command": sys.executable, "Args": [str(FAKE)], "Nodes": 5000}
    return write_config(tmp_path, {
        "Event": "limits", "TimeControl": tc,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "StatePath": "state/s.json"},
        "Engines": [ignoring, sure]})


@pytest.mark.slow
def test_probe_finds_an_engine_that_does_not_stop_at_its_node_limit(monkeypatch) -> None:
    # Debian's toga2 searches a "go nodes N" until "stop"; the fake does the same with
    # --ignore-nodes. With Depth the same engine stops (it has no depth to ignore).
    from runner.play import engines

    monkeypatch.setattr(engines, "LIMIT_PROBE_S", 1.0)
    deaf = EngineConfig("Deaf", sys.executable, (str(FAKE), "--ignore-nodes"), nodes=5000)
    fine = EngineConfig("Fine", sys.executable, (str(FAKE),), nodes=5000)
    by_depth = EngineConfig("Deep", sys.executable, (str(FAKE), "--ignore-nodes"), depth=8)
    timed = EngineConfig("Timed", sys.executable, (str(FAKE), "--ignore-nodes"), nodes=5000,
                         movetime_ms=100)
    results = engines.probe_engines([deaf, fine, by_depth, timed], timeout=10)
    assert [r.error for r in results] == ["", "", "", ""]
    assert results[0].limit_ignored == f"go nodes {engines.LIMIT_PROBE_NODES}"
    assert [r.limit_ignored for r in results[1:]] == ["", "", ""]
    assert "does not stop at its node limit" in engines.ignored_limit_text(deaf, "go nodes 100")


@pytest.mark.slow
def test_validate_and_run_refuse_an_engine_whose_moves_would_never_end(tmp_path, capsys,
                                                                        monkeypatch) -> None:
    from runner.cli import main
    from runner.play import engines

    monkeypatch.setattr(engines, "LIMIT_PROBE_S", 1.0)
    deaf = {"Name": "Deaf", "Command": sys.executable, "Args": [str(FAKE), "--ignore-nodes"],
            "Nodes": 5000}
    infinite = _limit_event(tmp_path / "inf", "inf", deaf)
    assert main(["validate", "--probe", str(infinite)]) == 1
    out = capsys.readouterr().out
    assert "FAIL Deaf: Engines[0]: the engine does not stop at its node limit" in out
    assert "ok   Sure:" in out and "ok   Deaf" not in out
    assert main(["run", str(infinite)]) == 2
    err = capsys.readouterr().err
    assert f"{infinite}: Engines[0] 'Deaf': cannot play with TimeControl 'inf'" in err
    assert not (tmp_path / "inf" / "state").exists()  # nothing written
    # on a clock the engine still moves (on its time): a warning, not a failure
    timed = _limit_event(tmp_path / "tc", "10+0.1", deaf)
    assert main(["validate", "--probe", str(timed)]) == 0
    out = capsys.readouterr().out
    assert "ok   Deaf:" in out and "warning: Deaf: Engines[0]: the engine does not stop" in out


@pytest.mark.slow
def test_validate_and_run_refuse_an_engine_that_dies_of_its_options_or_prints_junk(
        tmp_path, capsys) -> None:
    """An engine that completes uci/uciok and exits when its configured Hash is set was
    found only in its first games; one that prints junk instead of uciok was refused without
    a word of what it printed."""
    from runner.cli import main

    config = write_config(tmp_path, {
        "Event": "hostile", "TimeControl": "2+0.05", "StartupTimeoutS": 2,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "StatePath": "state/s.json"},
        "Engines": [
            {"Name": "Stockfish", "Command": "stockfish", "Options": {"Hash": 16}},
            {"Name": "HashKiller", "Command": sys.executable,
             "Args": [str(FAKE), "--die-on-setoption", "Hash"], "Options": {"Hash": 64}},
            {"Name": "Junk", "Command": sys.executable, "Args": [str(FAKE), "--junk-handshake"]},
            {"Name": "Fine", "Command": sys.executable, "Args": [str(FAKE)], "Options": {"Hash": 64}},
        ]})
    assert main(["validate", "--probe", str(config)]) == 1
    out = capsys.readouterr().out
    assert "ok   Stockfish:" in out and "ok   Fine:" in out
    assert "FAIL HashKiller: " in out and "it exited once its Options were set (Hash=64)" in out
    assert "id name" not in out  # its handshake is not what it said wrong
    junk = next(line for line in out.splitlines() if line.startswith("FAIL Junk: "))
    assert ("no uci handshake within 2 s; it printed: Welcome to NotAnEngine 1.0 -- type help "
            "| unknown command: uci xxx") in junk
    assert "x" * 400 not in junk and "xxx..." in junk  # cut short
    assert main(["run", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"{config}: Engines[1] 'HashKiller': cannot play: " in err and "(Hash=64)" in err
    assert f"{config}: Engines[2] 'Junk': cannot play: " in err and "NotAnEngine" in err
    assert not (tmp_path / "state").exists()  # nothing written, no game played


@pytest.mark.slow
@pytest.mark.engines
def test_probe_of_real_engines_node_limits(monkeypatch) -> None:
    from runner.play import engines

    monkeypatch.setattr(engines, "LIMIT_PROBE_S", 3.0)
    toga = EngineConfig("Toga", "/usr/games/toga2", nodes=3000)
    stockfish = EngineConfig("SF", "/usr/games/stockfish", nodes=3000, options={"Hash": 16})
    toga_depth = EngineConfig("TogaD", "/usr/games/toga2", depth=3)
    results = engines.probe_engines([toga, stockfish, toga_depth], timeout=20)
    assert [r.error for r in results] == ["", "", ""]
    assert [r.limit_ignored for r in results] == ["go nodes 100", "", ""]


def test_the_walk_for_owner_tokens_reads_only_processes_started_after_the_engine():
    """The walk of /proc at a game's end reads the environment of a process only when its
    pid can have been handed out after the engine's (issue #52: on a machine whose pids
    wrapped around, every older process with a higher pid was read, twice a game)."""
    from runner.play.processes import may_carry

    assert may_carry(120, 100, 150) and may_carry(150, 100, 150)
    assert not may_carry(100, 100, 150)  # the engine itself: its own exit was seen
    assert not may_carry(90, 100, 150)  # older
    assert not may_carry(30000, 100, 150)  # older, from before the pids wrapped around
    # the pids wrapped around since the engine started (last below since)
    assert may_carry(30000, 20000, 50) and may_carry(40, 20000, 50)
    assert not may_carry(10000, 20000, 50)
    assert may_carry(5, None, 50)  # no since: any
    assert may_carry(120, 100, None) and not may_carry(90, 100, None)  # no last: above since


def _carrier(token: str) -> subprocess.Popen[bytes]:
    from runner.play.processes import OWNER_ENV

    return subprocess.Popen([sys.executable, "-c", SLEEPER],
                            env={**os.environ, OWNER_ENV: token})


def _wait_carrying(carrier: subprocess.Popen[bytes], token: str) -> None:
    from runner.play.processes import OWNER_ENV

    def carries() -> bool:
        with contextlib.suppress(psutil.Error):
            return psutil.Process(carrier.pid).environ().get(OWNER_ENV) == token
        return False

    wait_until(carries, "no carrier")


def test_a_process_carrying_the_token_is_found_after_the_pids_wrapped_around(
        monkeypatch):  # noqa: ANN001
    """An escaped process whose pid is below its engine's because the pids wrapped around
    meanwhile was never looked for by the walk (only pids above the engine's were)."""
    from runner.play import processes

    token = f"{os.getpid()}:0:{uuid.uuid4().hex}"
    carrier = _carrier(token)
    try:
        _wait_carrying(carrier, token)
        last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
        assert last >= carrier.pid
        # the kernel's last pid as the walk reads it, fixed (other processes start meanwhile)
        monkeypatch.setattr(processes, "last_pid", lambda: last, raising=False)
        # its engine had a pid above the last one handed out: the pids wrapped since
        found = processes._owned_processes({token: last + 1})
        assert [p.pid for p in found] == [carrier.pid]
    finally:
        carrier.kill()
        carrier.wait()


def test_a_process_older_than_the_engine_is_not_read(monkeypatch):  # noqa: ANN001
    """A process handed out a pid after the last one the kernel gave (as seen by the walk)
    can only be older than the engine, from before a wrap-around: its environment is not
    read (it carries the token here, which only the walk's bound can skip)."""
    from runner.play import processes

    token = f"{os.getpid()}:0:{uuid.uuid4().hex}"
    carrier = _carrier(token)
    try:
        _wait_carrying(carrier, token)
        read: list[int] = []
        real = processes._environ
        monkeypatch.setattr(processes, "_environ", lambda pid: read.append(pid) or real(pid))
        monkeypatch.setattr(processes, "last_pid", lambda: carrier.pid - 1)
        assert processes._owned_processes({token: carrier.pid - 2}) == []
        assert carrier.pid not in read
        monkeypatch.setattr(processes, "last_pid", lambda: carrier.pid)
        assert [p.pid for p in processes._owned_processes({token: carrier.pid - 2})] \
            == [carrier.pid]
    finally:
        carrier.kill()
        carrier.wait()


def test_an_unchanged_engine_binary_is_checked_with_one_stat_and_a_changed_one_again(
        tmp_path, monkeypatch):  # noqa: ANN001
    """A fresh engine every game (Restart: on) checked its program as execve would with a
    stat, an access check and a read of its head each time (issue #52); now an ELF binary
    found runnable is read once while its file is unchanged, and checked afresh once it
    changes (no longer executable, no longer ELF)."""
    import builtins
    import shutil

    from runner.play import engines

    program = tmp_path / "engine"
    shutil.copy(sys.executable, program)  # an ELF binary
    reads: list[str] = []
    real_open = builtins.open

    def counting_open(file, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        if str(file) == str(program):
            reads.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    assert engines.exec_precheck(str(program)) is None
    assert engines.exec_precheck(str(program)) is None
    assert len(reads) == 1
    program.chmod(0o644)
    refused = engines.exec_precheck(str(program))
    assert refused is not None and refused.errno == errno.EACCES
    program.write_bytes(b"not a program\n")
    program.chmod(0o755)
    refused = engines.exec_precheck(str(program))
    assert refused is not None and refused.errno == errno.ENOEXEC
    program.unlink()
    refused = engines.exec_precheck(str(program))
    assert refused is not None and refused.errno == errno.ENOENT


def test_an_engines_row_is_committed_while_it_starts_and_before_its_start_returns():
    """The start of a fresh engine waited for its process row's commit (the store's writer
    thread) before its handshake: a round trip to the writer and a wake of the loop per
    engine (issue #52). The commit now overlaps the handshake; the start still returns only
    once the row is committed, and a failed commit still fails the start and kills it."""
    import concurrent.futures
    import threading

    lines: list[str] = []
    rows: list[concurrent.futures.Future[None]] = []

    def on_process(pid: int, created: float) -> concurrent.futures.Future[None]:
        rows.append(concurrent.futures.Future())
        return rows[-1]

    def io_log(direction: str, line: str) -> None:
        lines.append(line)
        if line == "uciok":  # the handshake ran without the row: commit it a little later
            threading.Timer(0.2, rows[-1].set_result, (None,)).start()

    async def main() -> float:
        started = time.monotonic()
        proc = await asyncio.wait_for(start_engine(
            EngineConfig("F", sys.executable, (str(FAKE),)), on_process=on_process,
            io_log=io_log), 10)
        took = time.monotonic() - started
        assert rows[-1].done()
        await proc.close()
        return took

    assert asyncio.run(main()) >= 0.2 and "uciok" in lines

    def failing(pid: int, created: float) -> concurrent.futures.Future[None]:
        row: concurrent.futures.Future[None] = concurrent.futures.Future()
        row.set_exception(RuntimeError("disk full"))
        rows.append(row)
        return row

    seen: list[int] = []

    async def fails() -> None:
        engine = EngineConfig("F", sys.executable, (str(FAKE),))
        with pytest.raises(Exception, match="disk full"):
            await start_engine(engine, on_process=lambda p, c: seen.append(p) or failing(p, c))

    asyncio.run(fails())
    wait_until(lambda: not psutil.pid_exists(seen[0]) or psutil.Process(seen[0]).status()
               == psutil.STATUS_ZOMBIE, "the engine outlived its failed start")
