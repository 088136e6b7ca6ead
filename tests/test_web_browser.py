"""The dashboard in headless Chromium against a real event with real engines.

`swiss-runner serve` runs as its own uvicorn process on 127.0.0.1 (a free port) from before
the event exists; `swiss-runner run` plays Stockfish, Ethereal and a Stockfish entered under
a hostile name (`<img src=x onerror=...>`) in its own process. One page stays open, never
reloaded, while the event is created, games are played, the runner is killed with SIGKILL
and started again: the page follows every step. Then the standings, a finished game (stepped
through), the Swiss chart and the downloads are checked. Screenshots go to
.cache/web-artifacts/ (or $SWISS_RUNNER_ARTIFACTS).
"""

from __future__ import annotations

import json
import re
import signal
import urllib.request
from pathlib import Path

import chess
import pytest
from testkit import write_config
from web_support import browser, need_browser, need_engines, serve, shot, start_runner

pytestmark = [pytest.mark.engines, pytest.mark.slow]

HOSTILE = "<img src=x onerror=alert(1)>"


def browser_config(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = write_config(directory, {
        "Event": "Web <b>test</b>", "Site": "localhost", "TimeControl": "6+0.1",
        "Concurrency": 1,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 2, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 45,
                         "TcecDraw": {"MaxPawns": 8, "MaxPieces": 8, "ScoreCp": 20, "Plies": 10}},
        "Engines": [
            {"Name": "Stockfish", "Command": "stockfish", "Options": {"Hash": 16, "Threads": 1}},
            {"Name": "Ethereal", "Command": "ethereal-chess", "Options": {"Hash": 16}},
            {"Name": HOSTILE, "Command": "stockfish", "Options": {"Hash": 16, "Threads": 1}},
        ],
    })
    return path


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


def test_dashboard_follows_a_real_event(tmp_path: Path) -> None:
    need_browser()
    need_engines("stockfish", "ethereal-chess")
    config = browser_config(tmp_path)
    log = tmp_path / "run.log"
    dialogs: list[str] = []
    errors: list[str] = []
    runner = None
    with serve(config) as served, browser() as b:
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        navigations: list[str] = []
        page.on("framenavigated", lambda f: navigations.append(f.url))
        try:
            # before `run`: the page says so, and is the one that follows the event
            page.goto(served.url)
            assert "No event recorded yet" in page.inner_text("main")
            shot(page, "01-before-run")
            runner = start_runner(config, log)

            # a live board appears and changes after a move, without reloading
            page.wait_for_selector("[data-live-game]", timeout=60_000)
            board = page.locator("[data-live-game] img.board").first
            ply = page.locator('[data-live-game] [data-f="ply"]').first
            page.wait_for_function(
                "() => /ply \\d+/.test(document.querySelector('[data-live-game] [data-f=\"ply\"]').textContent)",
                timeout=30_000)
            first_src, first_ply = board.get_attribute("src"), ply.inner_text()
            page.wait_for_function(
                "([src]) => document.querySelector('[data-live-game] img.board').getAttribute('src') !== src",
                arg=[first_src], timeout=10_000)
            assert ply.inner_text() != first_ply
            fen = re.search(r"fen=([^&]+)", board.get_attribute("src")).group(1)
            chess.Board(urllib.request.unquote(fen))  # a real position
            # the clock of the side to move ticks between moves (client-side)
            ticking = page.locator("[data-live-game] .clock.ticking")
            ticking.first.wait_for(timeout=10_000)
            moves = page.locator('[data-live-game] [data-f="moves"] .mv')
            assert moves.count() >= 1
            assert page.locator('[data-live-game] [data-f="graph"] polyline').count() >= 1
            shot(page, "02-live-board")

            # the hostile engine name is text, never markup
            page.wait_for_function(
                "([n]) => Array.from(document.querySelectorAll('.name')).some(e => e.textContent.includes(n))",
                arg=[HOSTILE], timeout=120_000)
            assert page.locator('img[src="x"]').count() == 0
            assert "Web <b>test</b>" in page.inner_text("header.top")
            assert page.locator("header.top b").count() == 0

            # kill -9 during a game: the page shows the runner stopped, without reloading
            page.wait_for_selector("[data-live-game]", timeout=60_000)
            runner.send_signal(signal.SIGKILL)
            runner.wait(timeout=10)
            page.wait_for_function(
                "() => document.getElementById('runner-state').textContent.startsWith('not running')",
                timeout=5_000)
            # the page's content follows (fetched again when the message's digest changed)
            page.wait_for_function(
                "() => document.querySelector('main').textContent.includes('The runner is not running')",
                timeout=5_000)
            shot(page, "03-runner-killed")

            # resumed: the same page goes on
            runner = start_runner(config, log)
            page.wait_for_function(
                "() => document.getElementById('runner-state').textContent.startsWith('running')",
                timeout=15_000)
            page.wait_for_selector("[data-live-game] .clock.ticking", timeout=60_000)
            shot(page, "04-resumed")
            assert runner.wait(timeout=400) == 0, log.read_text()[-3000:]
            page.wait_for_function(
                "() => document.getElementById('progress-text').textContent.includes('complete')",
                timeout=10_000)
            assert navigations == [served.url], navigations  # never reloaded
            shot(page, "05-complete")
        finally:
            if runner is not None and runner.poll() is None:
                runner.kill()
                runner.wait()

        state = get_json(served.url + "api/state")
        assert (state["format"], state["version"]) == ("swiss-runner-state", 2)
        assert state["complete"] and state["games_finished"] == state["games_total"] == 4

        # standings: every engine, places and scores as the state document has them
        page.goto(served.url + "standings")
        rows = page.locator("table.standings tbody tr")
        assert rows.count() == 3
        names = [rows.nth(i).locator("td.name").inner_text() for i in range(3)]
        assert sorted(names) == sorted(r["engine"] for r in state["standings"])
        assert HOSTILE in names
        assert page.locator("table.crosstable tbody tr").count() == 3
        shot(page, "06-standings")

        # a finished game, stepped through
        page.goto(served.url + "games")
        page.locator("table.games-table a", has_text="view").first.click()
        page.wait_for_selector("#step-board")
        total = page.locator("#step-moves [data-ply]").count()
        assert total > 10
        label = page.locator("#step-label")
        page.click('button[data-go="first"]')
        assert label.inner_text() == "start"
        start_src = page.get_attribute("#step-board", "src")
        assert urllib.request.unquote(start_src.split("fen=")[1]) == chess.STARTING_FEN
        page.click('button[data-go="next"]')
        first_san = page.locator("#step-moves [data-ply]").first.inner_text()
        assert label.inner_text() == f"1. {first_san}"
        page.keyboard.press("ArrowRight")
        assert label.inner_text().startswith("1…")
        page.locator("#step-moves [data-ply]").nth(total - 1).click()
        last = page.locator("#step-moves [data-ply]").nth(total - 1)
        assert "current" in last.get_attribute("class")
        shot(page, "07-finished-game")
        pgn_link = page.locator("a", has_text="PGN").first.get_attribute("href")
        with urllib.request.urlopen(served.url + pgn_link, timeout=10) as resp:
            assert b"[Result" in resp.read()

        page.goto(served.url + "chart")
        assert page.locator(".chart-col").count() == 3  # start + 2 rounds
        shot(page, "08-chart")
        assert not dialogs, dialogs
        assert not errors, errors
