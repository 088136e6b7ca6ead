"""A remote engine through ssh (docs/operators.md, "Remote engines"), tested against a real
OpenSSH server started for the test on 127.0.0.1 (no network needed): the game is played,
the engine's clock carries the ssh latency, and the remote engine dies when ssh's stdin
closes, at the end of a game and when the runner kills ssh."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from testkit import wait_until

from runner.config import AdjudicationConfig, EngineConfig
from runner.domain.models import GameSpec, Opening
from runner.domain.timecontrol import parse_time_control
from runner.play.engines import start_engine
from runner.play.referee import play_game

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
SSH = shutil.which("ssh")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    if os.geteuid() != 0 or not os.path.exists(SSHD) or SSH is None:
        pytest.skip("needs root, sshd and ssh (Debian openssh-server/-client; scripts/install.sh --test "
                    "installs them)")
    folder = tmp_path_factory.mktemp("sshd")
    for key in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / key)],
                       check=True)
    (folder / "authorized_keys").write_text((folder / "client.pub").read_text())
    os.chmod(folder / "authorized_keys", 0o600)
    port = _free_port()
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        f"PasswordAuthentication no\nStrictModes no\nUsePAM no\nPidFile {folder / 'sshd.pid'}\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory
    server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(folder / "sshd_config")],
                              stderr=subprocess.DEVNULL)
    def listening() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0
    try:
        wait_until(listening, "sshd to listen", 10, step=0.1)
    except AssertionError:
        server.kill()
        pytest.skip("sshd did not start")
    yield server.pid, port, folder / "client"
    server.kill()
    server.wait()


def remote(name: str, sshd, engine: str = "/usr/games/stockfish") -> EngineConfig:
    _, port, key = sshd
    return EngineConfig(name=name, command=SSH, args=(
        "-i", str(key), "-p", str(port), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "root@127.0.0.1", engine),
        options={"Hash": 16})


def remote_engines(sshd_pid: int) -> list[psutil.Process]:
    """Engine processes started by our sshd (its sessions' children, not ssh itself)."""
    try:
        below = psutil.Process(sshd_pid).children(recursive=True)
    except psutil.Error:
        return []
    found = []
    for p in below:
        try:  # a process that exits between the listing and this read is gone: not counted
            if p.name() not in ("sshd", "sshd-session"):
                found.append(p)
        except psutil.NoSuchProcess:
            continue
    return found


def wait_gone(sshd_pid: int, seconds: float = 5.0) -> list[psutil.Process]:
    """[] once no engine of our sshd is left within ``seconds``, else those left."""
    try:
        wait_until(lambda: not remote_engines(sshd_pid), "the remote engines to end", seconds,
                   step=0.1)
    except AssertionError:
        return remote_engines(sshd_pid)
    return []


@pytest.mark.slow
@pytest.mark.engines
def test_a_game_against_an_engine_over_ssh_leaves_no_remote_process(sshd):
    spec = GameSpec(game_id=1, round=1, game_in_round=1, white=remote("Remote SF", sshd),
                    black=EngineConfig("Ethereal", "/usr/games/ethereal-chess", options={"Hash": 16}),
                    time_control=parse_time_control("5+0.1"),
                    adjudication=AdjudicationConfig(max_moves=15),
                    opening=Opening(0, moves=("e2e4", "e7e5")))
    seen: list[int] = []

    async def game():
        task = asyncio.ensure_future(play_game(spec))
        while not task.done():
            seen.extend(p.pid for p in remote_engines(sshd[0]))
            await asyncio.sleep(0.2)
        return task.result()

    record = asyncio.run(game())
    assert record.termination in (None, "adjudication"), record.reason
    assert len(record.moves) > 4
    assert seen, "the engine did not run under sshd"
    assert wait_gone(sshd[0]) == []


@pytest.mark.engines
def test_killing_ssh_ends_the_remote_engine(sshd):
    async def start_and_kill() -> tuple[list[int], float]:
        began = time.monotonic()
        proc = await start_engine(remote("Remote SF", sshd), timeout=15)
        handshake = time.monotonic() - began
        pids = [p.pid for p in remote_engines(sshd[0])]
        proc.kill()  # SIGKILL to ssh's process group, as when a game is aborted
        return pids, handshake

    pids, handshake = asyncio.run(start_and_kill())
    assert pids and handshake < 15
    assert wait_gone(sshd[0]) == []  # stdin closed: the remote engine quit on EOF
