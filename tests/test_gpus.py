"""GPU engines (docs/gpus.md): each gets devices of its own for its game, handed over in its
environment and ``{gpus}``; CPU-only games go on meanwhile; the record names the devices.

The engines are stand-ins (tests/fakes/gpu_uci.py) that report what they were given and
whether another live stand-in held one of their devices: no GPU is needed."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from testkit import HERE, need_distributed, pgn_games, wait_until, write_config

from runner.cli import main
from runner.config import ConfigError, EngineConfig, load_config
from runner.domain.gpus import (
    choose_devices,
    gpu_status_lines,
    gpu_table,
    hand_over,
    parse_smi_list,
    sysfs_bus_id,
    tag_devices,
)
from runner.play.affinity import SlotPool
from runner.play.gpudetect import detect
from runner.play.gpus import GpuPool, numa_cores, split_devices
from runner.play.keep import EnginePool
from runner.service.views.gpualerts import failed_sides, lost_devices

pytestmark = pytest.mark.engines
GPU_FAKE = HERE / "fakes" / "gpu_uci.py"


def stand_in(tmp_path: Path, name: str, gpus: int = 0, **extra: object) -> dict:
    """A stand-in engine ``name`` reporting to tmp_path/report.jsonl."""
    engine = {"Name": name, "Command": sys.executable,
              "Args": [str(GPU_FAKE), f"--report={tmp_path / 'report.jsonl'}",
                       "--think", "0.05", "--", f"name={name}", "dev={gpus}"],
              "Options": {"BackendOptions": "gpu={gpus}"}, **extra}
    if gpus:
        engine["Gpus"] = gpus
    return engine


def event(tmp_path: Path, engines: list[dict], **top: object) -> Path:
    data = {"Event": "gpus", "TimeControl": "60+1", "Concurrency": 3,
            "SwissOptions": {"GamesPerMatch": 1, "Rounds": 2, "Seeding": "listed",
                             "StatePath": "state/swiss.json"},
            "Adjudication": {"MaxMoves": 6}, "Engines": engines, **top}
    return write_config(tmp_path, data)


def reports(tmp_path: Path) -> list[dict]:
    lines = (tmp_path / "report.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def name_of(line: dict) -> str:
    return next(a for a in line["argv"] if a.startswith("name="))[5:]


@pytest.mark.slow
def test_each_gpu_engine_has_devices_of_its_own(tmp_path: Path) -> None:
    # round 1 (listed seeds, played from the last board): G1-G2, G3-C1, C2-C3, C4-C5 at
    # Concurrency 3 on two devices: G3-C1 waits for a device, C2-C3 starts before it
    engines = [stand_in(tmp_path, n) for n in ("C4", "C5", "C2", "C3")] + [
        stand_in(tmp_path, "G3", 1), stand_in(tmp_path, "C1"), stand_in(tmp_path, "G1", 1),
        stand_in(tmp_path, "G2", 1)]
    assert main(["run", str(event(tmp_path, engines, Gpus=[0, 1]))]) == 0
    lines = reports(tmp_path)
    starts = [line for line in lines if line["kind"] == "start"]
    assert len(starts) == 8 + 16  # the check before the event, then 8 games with fresh engines
    assert all(not line["clash"] for line in lines), [x for x in lines if x["clash"]]
    for line in starts:
        gpu = name_of(line).startswith("G")
        assert line["cuda"] == line["hip"]
        assert (line["cuda"] in ("0", "1")) if gpu else line["cuda"] == ""
        assert f"dev={line['cuda']}" in line["argv"]  # {gpus} in Args
    options = {(line["pid"]): line["text"] for line in lines if line["kind"] == "option"}
    for line in starts:
        assert options[line["pid"]].endswith(f"value gpu={line['cuda']}")  # {gpus} in Options
    games = pgn_games(tmp_path / "state" / "games.pgn")
    assert len(games) == 8
    for game in games:
        for side in ("White", "Black"):
            tag = game.headers.get(f"{side}Gpus")
            assert (tag in ("0", "1")) if game.headers[side].startswith("G") else tag is None
    # the CPU-only game of round 1 began before the third GPU game of the round
    first_go = {}
    for line in lines:
        if line["kind"] == "go":
            first_go.setdefault(name_of(line), line["time"])
    round1 = [(g.headers["Round"], {g.headers["White"], g.headers["Black"]}) for g in games
              if g.headers["Round"].startswith("1.")]
    assert sorted(round1, key=lambda x: x[0]) == [
        ("1.1", {"G1", "G2"}), ("1.2", {"G3", "C1"}), ("1.3", {"C2", "C3"}),
        ("1.4", {"C4", "C5"})]
    assert first_go["C2"] < first_go["G3"] and first_go["C3"] < first_go["G3"]
    state = json.loads((tmp_path / "state" / "swiss.json").read_text())
    played = [g for r in state["rounds"] for p in r["pairs"] for g in p["games"]]
    gpu_games = [g for g in played if "G" in g["white"][0] + g["black"][0]]
    tagged = [g for g in games if "WhiteGpus" in g.headers or "BlackGpus" in g.headers]
    assert len(gpu_games) == len(tagged) >= 4 and all(g["gpus"] for g in gpu_games)
    assert not any("gpus" in g for g in played if g not in gpu_games)


@pytest.mark.slow
def test_kept_engines_keep_their_devices_only(tmp_path: Path) -> None:
    engines = [stand_in(tmp_path, n, 1) for n in ("G1", "G2", "G3")] + [stand_in(tmp_path, "C1")]
    path = event(tmp_path, engines, Gpus=[0, 1], Restart="off", Concurrency=2,
                 SwissOptions={"GamesPerMatch": 2, "Rounds": 3, "Seeding": "listed",
                               "StatePath": "state/swiss.json"})
    assert main(["run", str(path)]) == 0
    lines = reports(tmp_path)
    assert all(not line["clash"] for line in lines), [x for x in lines if x["clash"]]
    games_of: dict[int, int] = {}
    for line in lines:
        if line["kind"] == "newgame":
            games_of[line["pid"]] = games_of.get(line["pid"], 0) + 1
    cuda = {line["pid"]: line["cuda"] for line in lines if line["kind"] == "start"}
    kept = [pid for pid, n in games_of.items() if n > 1 and cuda[pid]]
    assert kept  # a GPU engine played several games in one process, on one device
    for game in pgn_games(tmp_path / "state" / "games.pgn"):
        for side in ("White", "Black"):
            assert (game.headers.get(f"{side}Gpus") is not None) == \
                game.headers[side].startswith("G")


def test_a_kept_engine_is_reused_on_its_own_devices_only(tmp_path: Path) -> None:
    report = f"--report={tmp_path / 'report.jsonl'}"
    base = EngineConfig(name="G", command=sys.executable, args=(str(GPU_FAKE), report),
                        restart=False, gpus=1)
    other = replace(base, name="H")

    async def scenario() -> None:
        pool = EnginePool(4)
        first = await pool.acquire(hand_over(base, (0,)), timeout=30)
        await pool.release([first], None)
        again = await pool.acquire(hand_over(base, (0,)), timeout=30)
        assert again is first  # the same devices: the same process
        await pool.release([again], None)
        moved = await pool.acquire(hand_over(base, (1,)), timeout=30)
        assert moved is not first and first.alive  # other devices: a fresh process
        await pool.release([moved], None)
        taker = await pool.acquire(hand_over(other, (0,)), timeout=30)
        assert not first.alive and moved.alive  # the idle engine on device 0 is closed first
        await pool.release([taker], None)
        await pool.aclose()

    asyncio.run(scenario())
    assert all(not line["clash"] for line in reports(tmp_path))


def test_validate_refuses_what_cannot_be_played(tmp_path: Path) -> None:
    cases = [
        ({"Gpus": [0, 0]}, [1, 0], "Gpus: got [0, 0], expected each device once"),
        ({"Gpus": [0, -1]}, [1, 0], "Gpus: got [0, -1], expected GPU indices of 0 or more"),
        ({"Gpus": [0]}, [2, 0], "Engines[0].Gpus: got 2, expected at most 1"),
        ({}, [1, 0], "Engines[0].Gpus: got 1, expected 0: the event has no Gpus"),
        ({"Gpus": [0, 1]}, [2, 1], "Engines[1].Gpus: got 1, expected at most 0"),
        ({"Gpus": [0, 1], "Backend": "cutechess"}, [1, 0], "with Backend: cutechess"),
    ]
    for top, needs, message in cases:
        engines = [stand_in(tmp_path, f"E{i}", n) for i, n in enumerate(needs)]
        path = event(tmp_path, engines, **top)
        with pytest.raises(ConfigError) as caught:
            load_config(path)
        assert message in str(caught.value), str(caught.value)
        assert main(["validate", str(path)]) == 2
    for bad in ("0,0", "-1", "x"):  # the worker's --gpus, refused before it connects
        assert main(["worker", "tcp://127.0.0.1:9", "--gpus", bad]) == 2


def fake_smi(tmp_path: Path, listing: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\ncase \"$1\" in\n"
                      f"  -L) printf '{listing}' ;;\n"
                      "  --query-gpu=index,pci.bus_id) printf '0, 00000000:3B:00.0\\n"
                      "1, 00000000:AF:00.0\\n' ;;\n"
                      "  *) exit 9 ;;\nesac\n")
    script.chmod(0o755)
    return folder


def test_auto_and_device_names_from_nvidia_smi(tmp_path: Path, monkeypatch) -> None:
    listing = ("GPU 0: NVIDIA Stand-In A (UUID: GPU-1111)\\n"
               "GPU 1: NVIDIA Stand-In B (UUID: GPU-2222)\\n")
    engines = [stand_in(tmp_path, "G1", 1), stand_in(tmp_path, "G2", 1),
               stand_in(tmp_path, "C1")]
    path = event(tmp_path, engines, Gpus="auto", Concurrency=1)
    monkeypatch.setenv("PATH", f"{os.environ['PATH']}:/nonexistent")
    with pytest.raises(ConfigError, match="Gpus: got 'auto', expected .*nvidia-smi"):
        load_config(path, detect_gpus=detect)  # no nvidia-smi on this machine
    with pytest.raises(ConfigError, match="Gpus: got 'auto', expected .*nvidia-smi"):
        load_config(path)  # the loader runs no process: auto needs the detection handed in
    monkeypatch.setenv("PATH", f"{fake_smi(tmp_path, listing)}:{os.environ['PATH']}")
    assert load_config(path, detect_gpus=detect).gpus == (0, 1)
    assert main(["run", str(path)]) == 0
    games = pgn_games(tmp_path / "state" / "games.pgn")
    tags = {g.headers[f"{side}Gpus"] for g in games for side in ("White", "Black")
            if g.headers[side].startswith("G")}
    assert tags <= {"0 (NVIDIA Stand-In A)", "1 (NVIDIA Stand-In B)"} and tags


def test_numa_cores_from_sysfs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", f"{fake_smi(tmp_path, '')}:{os.environ['PATH']}")
    sysfs = tmp_path / "sys"
    for bus, node in (("0000:3b:00.0", "0"), ("0000:af:00.0", "1")):
        (sysfs / "bus/pci/devices" / bus).mkdir(parents=True)
        (sysfs / "bus/pci/devices" / bus / "numa_node").write_text(node + "\n")
    for node, cpus in (("0", "0-3,8\n"), ("1", "4-7\n")):
        (sysfs / f"devices/system/node/node{node}").mkdir(parents=True)
        (sysfs / f"devices/system/node/node{node}/cpulist").write_text(cpus)
    assert numa_cores([0], sysfs) == {0, 1, 2, 3, 8}
    assert numa_cores([1], sysfs) == {4, 5, 6, 7}
    pool = GpuPool((0, 1), sysfs=sysfs)
    lc0 = EngineConfig(name="Lc0", command="lc0", gpus=1, gpu_devices=(1,))
    assert pool.take(5, lc0, EngineConfig(name="SF", command="sf")) is not None
    slots = SlotPool([[0, 1], [2, 3], [4, 5]])
    with slots.take(pool.numa_cores(5)) as cpus:  # the slot on the GPU's NUMA node
        assert cpus == (4, 5)
        with slots.take(pool.numa_cores(6)) as other:  # no GPU: the first free slot
            assert other == (0, 1)
    (sysfs / "bus/pci/devices/0000:af:00.0/numa_node").write_text("-1\n")
    assert numa_cores([1], sysfs) == set()  # the machine does not say


def test_allocation_rule() -> None:
    assert choose_devices({0, 1, 2}, 0) == ()
    assert choose_devices({0, 1}, 1, pinned=(2,)) is None  # pinned: waits for its own
    assert choose_devices({1, 2}, 1, previous=(2,), uses={1: 0, 2: 5}) == (2,)  # kept
    assert choose_devices({0, 1, 2}, 2, uses={0: 3, 1: 1, 2: 1}) == (1, 2)  # least used
    assert choose_devices({0, 1, 2}, 1, reserved={0}) == (1,)  # pinned devices last
    assert choose_devices({0}, 2) is None
    assert parse_smi_list("GPU 3: Tesla V100 (UUID: GPU-x)\nnoise\n") == {3: "Tesla V100"}
    assert sysfs_bus_id("00000000:3B:00.0") == "0000:3b:00.0"
    assert tag_devices("0 (NVIDIA A), 1 (NVIDIA A)") == (0, 1)
    assert split_devices((0, 1, 2, 3, 4), 2) == [(0, 1, 2), (3, 4)]  # worker --slots 2
    assert split_devices((0,), 2) == [(0,), ()]


def _loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_on_a_cluster_gpu_games_go_to_the_worker_with_gpus(tmp_path: Path) -> None:
    need_distributed()
    address = f"tcp://127.0.0.1:{_loopback_port()}"
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    procs: list[subprocess.Popen[bytes]] = []

    def start(log: str, *argv: str) -> None:
        with open(tmp_path / f"{log}.log", "ab") as out:
            procs.append(subprocess.Popen([sys.executable, *argv], env=env, stdout=out,
                                          stderr=subprocess.STDOUT))

    try:
        start("scheduler", "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
              "--port", address.rsplit(":", 1)[1], "--no-dashboard")
        start("gpuw", "-m", "runner", "worker", address, "--name", "gpuw", "--slots", "1",
              "--gpus", "0,1")
        start("cpuw", "-m", "runner", "worker", address, "--name", "cpuw", "--slots", "2")
        def joined(log: str, *names: str) -> bool:
            text = (tmp_path / f"{log}.log").read_text(errors="replace")
            return all(f"{name} joined" in text for name in names)

        wait_until(lambda: joined("gpuw", "gpuw") and joined("cpuw", "cpuw/1", "cpuw/2"),
                   "the workers did not join", 90, step=0.2)
        assert "and GPUs 0,1\n" in (tmp_path / "gpuw.log").read_text()
        engines = [stand_in(tmp_path, "G1", 1), stand_in(tmp_path, "G2", 1),
                   stand_in(tmp_path, "C1"), stand_in(tmp_path, "C2")]
        path = event(tmp_path, engines, Concurrency=4,
                     Cluster={"Scheduler": address, "WaitS": 60})
        assert main(["run", str(path)]) == 0
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(30)
    lines = reports(tmp_path)
    assert all(not line["clash"] for line in lines), [x for x in lines if x["clash"]]
    games = pgn_games(tmp_path / "state" / "games.pgn")
    assert len(games) == 4
    for game in games:
        gpu = [s for s in ("White", "Black") if game.headers[s].startswith("G")]
        if gpu:
            assert game.headers["Worker"] == "gpuw", game.headers
        for side in gpu:
            assert game.headers[f"{side}Gpus"] in ("0", "1")
    assert any(line["cuda"] in ("0", "1") for line in lines if line["kind"] == "go")


@pytest.mark.slow
def test_the_td_takes_a_device_out_of_rotation_and_status_shows_it(tmp_path: Path,
                                                                    capsys) -> None:
    engines = [stand_in(tmp_path, "G1", 1)] + [stand_in(tmp_path, n) for n in ("C1", "C2", "C3")]
    for engine in engines:
        engine["Args"][engine["Args"].index("--think") + 1] = "0.25"
    path = event(tmp_path, engines, Gpus=[0, 1], Concurrency=2,
                 SwissOptions={"GamesPerMatch": 1, "Rounds": 3, "Seeding": "listed",
                               "StatePath": "state/swiss.json"})
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    with open(tmp_path / "runner.log", "wb") as log:
        runner = subprocess.Popen([sys.executable, "-m", "runner", "run", str(path)], env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: "Round 1 pairings" in (tmp_path / "runner.log").read_text(),
                   "round 1 paired", 60, runner, log=tmp_path / "runner.log")
        assert main(["td", str(path), "gpu", "off", "7", "--reason", "no such"]) == 2
        assert "device 7 is not one of the event's Gpus (0, 1)" in capsys.readouterr().err
        assert main(["td", str(path), "gpu", "on", "0", "--reason", "x"]) == 2
        assert main(["td", str(path), "gpu", "off", "0", "--reason", "fan failed"]) == 0
        assert runner.wait(120) == 0
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert "gpu off 0" in (tmp_path / "runner.log").read_text()
    games = pgn_games(tmp_path / "state" / "games.pgn")
    later = [g.headers.get(f"{s}Gpus") for g in games for s in ("White", "Black")
             if g.headers[s] == "G1" and not g.headers["Round"].startswith("1.")]
    assert later and set(later) == {"1"}  # never the device out of rotation
    capsys.readouterr()
    assert main(["status", str(path)]) == 0
    out = capsys.readouterr().out
    assert "GPUs:\n  0: free; out of rotation (fan failed)\n  1: free" in out
    from starlette.testclient import TestClient

    from runner.web.app import create_app

    with TestClient(create_app(load_config(path))) as client:  # the dashboard, per game
        page = client.get("/rounds").text
        assert "GPUs: G1 1, C" in page or "; GPUs: C" in page and "G1 1" in page
        state = client.get("/api/state").json()
        assert state["gpus"]["offline"] == [{"device": 0, "reason": "fan failed"}]
    # the event is complete: a device back in rotation could serve no game, and is refused
    capsys.readouterr()
    assert main(["td", str(path), "gpu", "on", "0", "--reason", "fan replaced"]) == 2
    assert "the event is complete" in capsys.readouterr().err
    assert main(["td", str(path), "log"]) == 0
    out = capsys.readouterr().out
    assert "gpu off 0" in out and "gpu on 0" not in out


def test_status_names_the_busy_devices() -> None:
    rounds = [{"pairs": [{"games": [
        {"game_id": 3, "status": "running", "white": "Lc0", "black": "SF",
         "gpus": {"white": "1 (NVIDIA A), 2 (NVIDIA A)", "black": ""}},
        {"game_id": 4, "status": "finished", "white": "Lc0", "black": "SF",
         "gpus": {"white": "0", "black": ""}}]}]}]
    table = gpu_table((0, 1, 2), rounds, {0: "broken"})
    assert gpu_status_lines(table) == ["GPUs:", "  0: free; out of rotation (broken)",
                                       "  1: busy: game 3, Lc0", "  2: busy: game 3, Lc0"]
    assert gpu_table(None, [], {}) is None and gpu_status_lines(None) == []


def test_a_cuda_error_alerts_naming_the_device(tmp_path: Path) -> None:
    alerts = tmp_path / "alerts.jsonl"
    sink = f"import sys; open({str(alerts)!r}, 'a').write(sys.stdin.read().strip() + '\\n')"
    engines = [stand_in(tmp_path, "G1", 1), stand_in(tmp_path, "G2", 1)]
    engines[1]["Args"][1:1] = ["--cuda-error-on-go", "2"]
    path = event(tmp_path, engines, Gpus=[0, 1], Concurrency=1,
                 EngineLogs={"Dir": "logs"}, Alerts={"Command": [sys.executable, "-c", sink]},
                 SwissOptions={"GamesPerMatch": 1, "Rounds": 1, "StatePath": "state/s.json"})
    assert main(["run", str(path)]) == 0
    sent = [json.loads(line) for line in alerts.read_text().splitlines()]
    failed = [a["data"] for a in sent if a["kind"] == "gpu_failed"]
    game = pgn_games(tmp_path / "state" / "games.pgn")[0]
    side = "White" if game.headers["White"] == "G2" else "Black"
    assert failed == [{"device": int(game.headers[f"{side}Gpus"]), "game_id": 1,
                       "engine": "G2", "reason": failed[0]["reason"]}]
    assert "CUDA error" in failed[0]["reason"]
    assert any(a["kind"] == "engine_crashed" for a in sent)


def test_a_device_nvidia_smi_no_longer_lists_is_lost(tmp_path: Path, monkeypatch) -> None:
    listing = "GPU 1: NVIDIA Stand-In B (UUID: GPU-2222)\\nGPU 2: Unable to determine the device handle for GPU 2: GPU is lost\\n"
    monkeypatch.setenv("PATH", f"{fake_smi(tmp_path, listing)}:{os.environ['PATH']}")
    assert lost_devices({0, 1, 2}) == {0, 2}
    assert failed_sides("+1.0 Lc0(black) < CUDA error: out of memory\n+1.1 SF(white) < info") \
        == {"black": "CUDA error: out of memory"}
