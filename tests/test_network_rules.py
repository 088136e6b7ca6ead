"""The network rules without a cluster (runner.cluster.network), Cluster.Insecure, and the
engine build of runner.play.enginebuild on real files."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from testkit import write_config

from runner.cluster.network import is_loopback, listen_host, plain_problem, split_address
from runner.config import load_config
from runner.config.typed import EngineConfig
from runner.errors import ConfigError
from runner.play.enginebuild import build_of, cached_build


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("10.0.0.1", False), ("0.0.0.0", False), ("192.0.2.1", False),
    ("no-such-host.invalid", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_split_address() -> None:
    assert split_address("tls://10.0.0.1:8786") == ("tls", "10.0.0.1", 8786)
    assert split_address("tcp://[::1]:9") == ("tcp", "::1", 9)
    assert split_address("h", 8786) == ("", "h", 8786)
    with pytest.raises(ValueError):
        split_address("tcp://h:99999")


def test_plain_tcp_rule() -> None:
    assert plain_problem("tcp://127.0.0.1:8786", False, "--insecure") is None
    assert plain_problem("tls://10.0.0.1:8786", False, "--insecure") is None
    problem = plain_problem("tcp://10.0.0.1:8786", False, "--insecure")
    assert problem is not None and "tls://" in problem and problem.endswith("--insecure")
    assert plain_problem("tcp://10.0.0.1:8786", True, "--insecure") is None


def test_listen_host() -> None:
    assert listen_host("tcp://127.0.0.1:8786", None) == ("127.0.0.1", None)
    assert listen_host("tcp://127.0.0.1:8786", "127.0.0.2:4000") == ("127.0.0.2", 4000)
    assert listen_host("tcp://[::1]:8786", "::1") == ("[::1]", None)
    with pytest.raises(ValueError):
        listen_host("tcp://127.0.0.1:8786", "tcp://127.0.0.2")


def test_cluster_insecure_key(tmp_path: Path) -> None:
    def config(**cluster: object):  # noqa: ANN202
        return load_config(write_config(tmp_path, {
            "TimeControl": "10+0.1", "SwissOptions": {"Rounds": 1},
            "Engines": [{"Name": f"E{i}", "Command": sys.executable} for i in (1, 2)],
            "Cluster": {"Scheduler": "tcp://10.0.0.5:8786", **cluster}}))

    assert config().cluster.insecure is False
    assert config(Insecure=True).cluster.insecure is True
    with pytest.raises(ConfigError) as info:
        config(Insecure="yes")
    assert "Cluster.Insecure" in str(info.value)


def test_build_covers_the_executable_and_the_files_named(tmp_path: Path) -> None:
    exe = tmp_path / "engine"
    exe.write_bytes(b"#!/bin/sh\n")
    net = tmp_path / "net.nnue"
    net.write_bytes(b"weights 1")
    engine = EngineConfig("E", str(exe), args=("--threads", "1", str(net)),
                          options={"EvalFile": "net.nnue", "Hash": 16, "Book": "/nonexistent"},
                          working_dir=str(tmp_path))
    build = build_of(engine)
    sha = {p: hashlib.sha256(Path(p).read_bytes()).hexdigest() for p in (exe, net)}
    # the executable first; a file named twice counted once; only existing files
    assert list(build.files.items()) == [(str(exe), sha[exe]), (str(net), sha[net])]
    assert cached_build(engine) == build
    net.write_bytes(b"weights 2")  # a new network: another build, seen without a restart
    assert cached_build(engine) is None
    assert build_of(engine).digest != build.digest
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "engine").write_bytes(b"#!/bin/sh\n")
    (moved / "net.nnue").write_bytes(b"weights 2")
    same = EngineConfig("E", str(moved / "engine"), args=("--threads", "1", str(moved / "net.nnue")),
                        options={"EvalFile": "net.nnue", "Hash": 16}, working_dir=str(moved))
    assert build_of(same).digest == build_of(engine).digest  # contents, not paths
