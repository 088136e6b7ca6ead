"""The Cluster block and `run --scheduler`, without a cluster: parsing, and that a run with
no Cluster never imports distributed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import write_config

from runner.cli import build_parser
from runner.config import load_config
from runner.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent


def event_config(tmp_path: Path, **extra: object) -> Path:
    return write_config(tmp_path, {
        "TimeControl": "10+0.1", "SwissOptions": {"Rounds": 1},
        "Engines": [{"Name": f"E{i}", "Command": sys.executable} for i in (1, 2)], **extra})


def test_no_cluster_block(tmp_path: Path) -> None:
    assert load_config(event_config(tmp_path)).cluster is None


def test_cluster_block(tmp_path: Path) -> None:
    config = load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://10.0.0.5:8786",
                                                  "WaitS": 30}))
    assert config.cluster is not None
    assert (config.cluster.scheduler, config.cluster.wait_s) == ("tcp://10.0.0.5:8786", 30.0)
    assert load_config(event_config(tmp_path, Cluster={"Scheduler": "tls://h:8786"})
                       ).cluster.wait_s == 600.0


@pytest.mark.parametrize("block, problem", [
    ({"Scheduler": "10.0.0.5:8786"}, "Cluster.Scheduler"),
    ({"WaitS": 3}, "Scheduler"),
    ({"Scheduler": "tcp://h:1", "WaitS": -1}, "Cluster.WaitS"),
    ({"Scheduler": "tcp://h:1", "Workers": 3}, "unknown key"),
])
def test_bad_cluster_block(tmp_path: Path, block: dict, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(event_config(tmp_path, Cluster=block))
    assert problem in str(info.value)


def test_run_and_worker_arguments() -> None:
    args = build_parser().parse_args(["run", "x.yaml", "--scheduler", "tcp://h:8786"])
    assert args.scheduler == "tcp://h:8786"
    args = build_parser().parse_args(["worker", "tcp://h:8786", "--slots", "3", "--name", "b"])
    assert (args.scheduler, args.slots, args.name) == ("tcp://h:8786", 3, "b")


def test_one_machine_never_imports_distributed() -> None:
    code = ("import sys, runner.cli, runner.cli.run, runner.service.tournament, "
            "runner.play.referee; assert 'distributed' not in sys.modules; "
            "assert 'runner.cluster' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO,
                   env={**os.environ, "PYTHONPATH": str(REPO)})


def test_cluster_overdue(tmp_path: Path) -> None:
    config = load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1", "OverdueS": 5}))
    assert config.cluster is not None and config.cluster.overdue_s == 5.0
    assert load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1"})
                       ).cluster.overdue_s == 60.0


def test_cluster_refusals_and_lost_attempts(tmp_path: Path) -> None:
    config = load_config(event_config(tmp_path, Cluster={
        "Scheduler": "tcp://h:1", "RetryRefusedS": 30, "MaxLostAttempts": 5}))
    assert config.cluster is not None
    assert (config.cluster.retry_refused_s, config.cluster.max_lost_attempts) == (30.0, 5)
    default = load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1"})).cluster
    assert (default.retry_refused_s, default.max_lost_attempts) == (600.0, 3)
    for key, bad in (("RetryRefusedS", 0), ("MaxLostAttempts", 0), ("MaxLostAttempts", 1.5)):
        with pytest.raises(ConfigError) as info:
            load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1", key: bad}))
        assert f"Cluster.{key}" in str(info.value)


def test_worker_engine_override() -> None:
    """`swiss-runner worker --engine NAME=COMMAND`: that engine's command on this worker."""
    pytest.importorskip("distributed")
    from runner.cluster.task import EngineProbes
    from runner.config.typed import AdjudicationConfig, EngineConfig
    from runner.domain.models import GameSpec
    from runner.domain.timecontrol import TimeControl

    spec = GameSpec(game_id=1, round=1, game_in_round=1,
                    white=EngineConfig("A", "/usr/games/a"), black=EngineConfig("B", "/b"),
                    time_control=TimeControl(base=10), adjudication=AdjudicationConfig())
    local = EngineProbes({"A": "/opt/a"}).local(spec)
    assert (local.white.command, local.black.command) == ("/opt/a", "/b")
    assert EngineProbes().local(spec) is spec
    args = build_parser().parse_args(["worker", "tcp://h:1", "--engine", "A=/opt/a"])
    assert args.engine == ["A=/opt/a"]


def test_a_game_whose_end_was_recorded_is_not_replayed_when_its_worker_is_lost() -> None:
    """The worker sent GameFinished (recorded by the runner's sinks), then died before the
    task's result came back: the backend returns that record; it does not give the game up
    (a ReplayGame would decide a recorded game again: played or scored twice)."""
    import asyncio

    pytest.importorskip("distributed")
    from runner.cluster.client import ClusterBackend, _Attempt
    from runner.domain.events import GameFinished, event_to_json
    from runner.domain.models import GameRecord

    record = GameRecord(white="A", black="B", result="1-0", reason="White mates",
                        termination="", termination_details="", moves=["f2f3"], comments=[""],
                        pgn="[Event \"x\"]\n\n1-0\n", start_time="", end_time="",
                        duration_s=1.0, rmobility=None, opening_index=None)

    async def scenario() -> tuple[list[object], dict]:
        backend = ClusterBackend("tcp://127.0.0.1:1", say=lambda *a, **k: None)
        got: list[object] = []
        state = _Attempt("7:1", 7, got.append)
        backend.attempts[state.token] = state

        def message(kind: str, **body: object) -> None:
            backend._on_message((0.0, {"epoch": backend.epoch, "token": "7:1",
                                       "worker": "tcp://w1", "name": "w1", "kind": kind,
                                       **body}))

        message("claim")
        message("event", event=event_to_json(GameFinished(7, record, 1)))
        backend._on_cluster((0.0, {"action": "remove-worker", "worker": "tcp://w1"}))
        never = asyncio.get_running_loop().create_future()  # the task's result never comes
        return got, await backend._outcome(never, state)

    got, outcome = asyncio.run(scenario())
    assert len(got) == 1 and isinstance(got[0], GameFinished)
    assert outcome["record"]["result"] == "1-0" and outcome["record"]["moves"] == ["f2f3"]


def test_cluster_lease_is_below_overdue(tmp_path: Path) -> None:
    """Cluster.LeaseS (issue 48): a worker that hears nothing from the runner this long
    stops its game; it must be below OverdueS (default 3/4 of it)."""
    from runner.cluster.lease import default_lease_s

    config = load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1",
                                                         "OverdueS": 20, "LeaseS": 12}))
    assert config.cluster is not None and config.cluster.lease_s == 12.0
    default = load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1"})).cluster
    assert default.lease_s is None and default_lease_s(default.overdue_s) == 45.0
    for block in ({"OverdueS": 20, "LeaseS": 20}, {"LeaseS": 90}, {"LeaseS": 0}):
        with pytest.raises(ConfigError) as info:
            load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1", **block}))
        assert "Cluster.LeaseS" in str(info.value), info.value
    with pytest.raises(ConfigError) as info:
        load_config(event_config(tmp_path, Cluster={"Scheduler": "tcp://h:1", "LeaseS": 60}))
    assert "below Cluster.OverdueS (60)" in str(info.value)
