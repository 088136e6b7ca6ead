"""Every status surface true to the state (issue #54, item 2): the pairing lines name who has
White in each game, the Swiss chart shows a withdrawn engine as withdrawn, the TD log reads in
the order of the command ids, and the dashboard's ETA says "stopped" or "paused" when no game
is being played. The standings' titles: tests/test_standings.py; what becomes of interrupted
games: tests/test_interrupted_words.py."""

from __future__ import annotations

import contextlib
import io
import os
import re
import signal
from pathlib import Path
from typing import Any

import pytest
from testkit import backend, loop_config, run_args
from web_event import generate_event
from web_support import browser, need, need_browser, serve

from runner.cli import main
from runner.cli.run import cli_run
from runner.config import load_config
from runner.domain.models import GameSpec
from runner.store.database import Store

try:
    from starlette.testclient import TestClient

    from runner.web.app import create_app
    from runner.web.model import progress
except ImportError as exc:  # pragma: no cover - the web extra is missing
    need(False, f"the web extra is not installed ({exc.name}): pip install -e '.[dev,web]'")


@pytest.fixture(scope="module")
def event(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Five engines, three double rounds: stopped at round 2's first game, two TD notes and
    P5 withdrawn while no runner runs, then played to the end (no engine: testkit.backend)."""
    directory = tmp_path_factory.mktemp("truth")
    path = loop_config(directory, players=5, Rounds=3)

    def stop_in_round_2(spec: GameSpec) -> None:
        if spec.round == 2:
            os.kill(os.getpid(), signal.SIGINT)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli_run(load_config(path), run_args(),
                       play_game=backend(delay=0.01, hook=stop_in_round_2)) == 130
        for argv in (["note", "first"], ["note", "second"],
                     ["withdraw", "P5", "--reason", "crashes"]):
            assert main(["td", str(path), *argv]) == 0
        assert cli_run(load_config(path), run_args(), play_game=backend()) == 0
    return {"path": path, "out": out.getvalue()}


def test_pairing_lines_name_white_in_each_game(event: dict[str, Any]) -> None:
    """#54: "Round 1 pairings: Toga II - HoiChess" then game 1 was HoiChess vs Toga II."""
    out = event["out"]
    paired: dict[int, str] = {}
    for line in re.findall(r"Round \d+ pairings, White vs Black: (.*)", out):
        for gid, names in re.findall(r"game (\d+) (.+?vs [^,;]+)", line):
            paired[int(gid)] = names.strip()
    started = {int(gid): names for gid, names in
               re.findall(r"Started game (\d+) of \d+ \((.+?)\)$", out, re.MULTILINE)}
    assert len(paired) == 12 and started and set(started) <= set(paired), out[-2000:]
    for gid, names in started.items():
        assert paired[gid] == names, (gid, names, paired[gid])
    # double rounds: each pair's two games, the colours reversed
    first = re.search(r"Round 1 pairings, White vs Black: (.*)", out)
    assert first is not None
    games = re.findall(r"game \d+ (\S+) vs (\S+?)(?:,|;|$)", first.group(1))
    assert len(games) == 4 and all(g[::-1] in games for g in games), games


def test_the_swiss_chart_shows_a_withdrawn_engine_as_withdrawn(event: dict[str, Any]) -> None:
    """#54: the chart showed P5 red "+0" (lost the match) in the rounds it was not paired."""
    with TestClient(create_app(load_config(event["path"]))) as client:
        page = client.get("/chart").text
        chart = client.app.state.hub.view.chart  # type: ignore[attr-defined]
        state = client.get("/api/state").json()
    first = next(w["from_round"] for w in state["withdrawn"] if w["engine"] == "P5")
    assert first in (2, 3)
    classes = re.findall(r'<li data-engine="P5" class="(\w*)"', page)  # start, R1, R2, R3
    assert "down" not in classes[first:], classes  # main: red "+0", as if P5 lost the match
    assert classes.count("withdrawn") == 3 - first + 1, classes
    assert page.count(">WD</span>") == 3 - first + 1
    for column in chart[1:]:
        p5 = next(e for g in column["groups"] for e in g["engines"] if e["engine"] == "P5")
        if column["round"] >= first:
            assert p5["withdrawn"] and p5["delta"] is None, column
        else:
            assert not p5["withdrawn"] and p5["delta"] is not None


def test_the_td_log_reads_in_the_order_of_the_command_ids(event: dict[str, Any]) -> None:
    """#54: the overview numbered the TD's lines in the reverse order of the command ids."""
    with TestClient(create_app(load_config(event["path"]))) as client:
        page = client.get("/").text
    block = page.split('id="td-log"', 1)[1].split("</ol>", 1)[0]
    values = [int(v) for v in re.findall(r'<li class="td-\w+" value="(\d+)"', block)]
    assert values == sorted(values) and len(values) == 3, block
    texts = re.findall(r"<li[^>]*>(.*?)</li>", block, re.DOTALL)
    assert "first" in texts[0] and "second" in texts[1] and "withdraw" in texts[2]


def test_the_eta_of_a_stopped_runner_says_stopped(tmp_path: Path) -> None:
    """#54: with the runner killed the dashboard read "ETA 1m 52s (paused)"."""
    config = generate_event(tmp_path, engines=6, rounds=3, finished_rounds=1, running=2,
                            plies=20)
    with TestClient(create_app(config)) as client:
        page = client.get("/").text
        live = client.get("/api/live").json()
    assert "(paused)" not in page  # main said "1m 52s per game (paused)"
    card = page.split('id="eta-card"', 1)[1].split("</div></div>", 1)[0]
    assert "stopped" in card and "the runner is not running" in card and "of play left" in card
    assert "done about" not in card
    assert live["progress"]["halted"] == "stopped" and live["progress"]["eta_at"] is None


def test_the_eta_during_a_td_pause_says_paused(tmp_path: Path) -> None:
    """#54: during a real `td pause` the dashboard read "done about 09:21:44 UTC"."""
    config = generate_event(tmp_path, engines=6, rounds=3, finished_rounds=1, running=0,
                            plies=20)
    store = Store.open_readonly(config.database)
    assert store is not None
    try:
        from runner.service.views.snapshotdoc import build_state

        state = build_state(config, store, runner_running=True)
        state["td"] = {**(state.get("td") or {}), "paused": {
            "mode": "finish", "reason": "lunch", "active": True}}
        shown = progress(config, store, state)
        state["td"]["paused"]["active"] = False  # an after-round pause not in force yet
        waiting = progress(config, store, state)
    finally:
        store.close()
    assert shown["eta_at"] is None and shown["eta_s"]  # main: "done about ..." while paused
    assert shown["halted"] == "paused"
    assert waiting["halted"] is None and waiting["eta_at"] is not None


def test_in_a_browser_a_stopped_runner_reads_stopped_not_paused(tmp_path: Path) -> None:
    """The header line app.js writes, in a real browser: "stopped: ... of play left", never
    "ETA ... (paused)" (#54), and the overview lists the interrupted games' fates."""
    need_browser()
    config = generate_event(tmp_path, engines=6, rounds=3, finished_rounds=1, running=2,
                            plies=20)
    errors: list[str] = []
    with serve(config.path) as served, browser() as b:
        page = b.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(served.url)
        page.wait_for_function("() => document.getElementById('progress-text')"
                               ".textContent.includes('stopped')", timeout=15_000)
        header = page.inner_text("#progress-text")
        assert "of play left" in header and "(paused)" not in header, header
        card = page.inner_text("#eta-card")
        assert "stopped" in card and "done about" not in card, card
        fates = page.inner_text("#interrupted")
        assert len(re.findall(r"interrupted at ply (\d+): continues from ply \1 \(TCEC rule "
                              r"7\.c\.v\)", fates)) == 2, fates
    assert not errors, errors


def test_status_and_the_dashboard_give_one_eta(tmp_path: Path) -> None:
    """One estimator (runner.domain.eta) for `status` and the dashboard; main's dashboard had
    its own, and counted the games of a stopped runner as still being played."""
    from runner.cli.status_ops import eta
    from runner.service.views.snapshotdoc import build_state
    from runner.web.model import progress

    config = generate_event(tmp_path, engines=6, rounds=3, finished_rounds=1, running=2,
                            plies=20)
    store = Store.open_readonly(config.database)
    assert store is not None
    try:
        for running in (True, False):
            state = build_state(config, store, runner_running=running)
            shown = progress(config, store, state)["eta_s"]
            said = eta(config, store, state)
            assert said is not None and shown == pytest.approx(said, abs=1.5), running
    finally:
        store.close()
