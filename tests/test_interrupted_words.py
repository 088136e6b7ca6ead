"""What the runner says becomes of an interrupted game is what it then does (issue #54).

A real `swiss-runner run` of real Debian engines is killed with SIGKILL, paused with
`td pause --now`, resumed, killed again under `Interruption: {Mode: replay}`; each time the
words of every surface (`status`, `status --format json`, the dashboard served by a real
`swiss-runner serve`, the run's start-up lines, the runner's lines after the pause) are read
and checked, game by game, against the store's record of the game's next attempt.
The pure decision and its words: tests/test_interruption.py.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from test_td import ENV, REPO, Runner, engines_config, log_json, recorded_id, td
from web_support import need_engines, serve

pytestmark = pytest.mark.engines

LINE = re.compile(r"game (\d+) \([^)]*\), interrupted at ply (\d+): (.+)$", re.IGNORECASE)


def told(text: str) -> dict[int, tuple[int, str]]:
    """game id -> (logged plies, words) from the lines of a surface."""
    out = {}
    for line in text.splitlines():
        found = LINE.search(html.unescape(re.sub(r"<[^>]+>", "", line)).strip())
        if found:
            out[int(found.group(1))] = (int(found.group(2)), found.group(3).strip())
    return out


def status(config: Path, *more: str) -> str:
    result = subprocess.run([sys.executable, "-m", "runner", "status", str(config), *more],
                            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def status_json_told(config: Path) -> dict[int, tuple[int, str]]:
    doc = json.loads(status(config, "--format", "json"))
    return {g["game_id"]: (g["logged_plies"], g["words"]) for g in doc["interrupted"]}


def dashboard(url: str, ready: Any, timeout: float = 30) -> str:
    """The overview page once ``ready(page)`` (the dashboard reads the database anew)."""
    end = time.monotonic() + timeout
    page = ""
    while time.monotonic() < end:
        with urllib.request.urlopen(url, timeout=10) as response:  # loopback only
            page = response.read().decode()
        if ready(page):
            return page
        time.sleep(0.3)
    raise AssertionError(f"the dashboard did not show it within {timeout}s:\n{page[-3000:]}")


def dashboard_told(page: str) -> dict[int, tuple[int, str]]:
    block = page.split('id="interrupted"', 1)[1].split("</div>", 1)[0]
    return told(block.replace("<li>", "\n"))


def interrupted_now(run: Runner) -> dict[int, tuple[int, int]]:
    """game id -> (attempt, logged plies) of the games interrupted (not finished, logged)."""
    logged = "(SELECT COUNT(*) FROM moves m WHERE m.game_id=g.game_id)"
    return {gid: (attempt, plies) for gid, attempt, plies in run.query(
        f"SELECT game_id, attempt, {logged} FROM games g WHERE status!='finished' AND "
        f"attempt>0 AND (status='running' OR {logged}>0)")}


def next_attempt(run: Runner, gid: int, attempt: int) -> dict[str, Any]:
    """The GameStarted of the game's attempt after ``attempt``, as the store records it."""
    def started() -> dict[str, Any] | None:
        rows = run.query("SELECT attempt, started_event FROM games WHERE game_id=?", gid)
        if rows and rows[0][0] > attempt and rows[0][1]:
            return json.loads(rows[0][1])
        return None
    return run.wait(f"game {gid}'s attempt {attempt + 1}", started, timeout=120)


def check_did(run: Runner, expected: dict[int, tuple[int, str]],
              attempts: dict[int, tuple[int, int]]) -> None:
    """Each game's next attempt did what the words said."""
    for gid, (plies, words) in expected.items():
        started = next_attempt(run, gid, attempts[gid][0])
        assert started["attempt"] == attempts[gid][0] + 1
        if words.startswith("continues from ply"):
            assert words == f"continues from ply {plies} (TCEC rule 7.c.v)", words
            assert started["resumed_from_ply"] == plies, (gid, words, started)
        else:
            assert words.startswith("replayed from move 1: "), words
            assert started["resumed_from_ply"] == 0, (gid, words, started)


def test_every_surface_says_what_the_runner_then_does(tmp_path: Path) -> None:
    need_engines("stockfish", "toga2", "fairy-stockfish", "ethereal-chess")
    config = engines_config(tmp_path, rounds=3,
                            Interruption={"Mode": "resume", "Adjudicate": False})
    run = Runner(config)
    run.two_games_under_way()
    with serve(config) as web:
        # 1. kill -9: status, its JSON and the dashboard say the same, per game
        run.kill9()
        attempts = interrupted_now(run)
        assert len(attempts) == 2, attempts
        text = status(config)
        assert re.search(r"Progress: \d+/\d+ games, stopped \(the runner is not running\)"
                         r"(: [\d:]+ of play left)? ", text), text
        said = told(text.split("Interrupted:", 1)[1])
        assert set(said) == set(attempts), text
        for gid, (plies, words) in said.items():
            assert plies == attempts[gid][1]
            assert words == f"continues from ply {plies} (TCEC rule 7.c.v)", text
        assert status_json_told(config) == said
        page = dashboard(web.url, lambda p: 'id="interrupted"' in p and "not running" in p)
        assert dashboard_told(page) == said
        assert "replayed from their start (or resumed)" not in page

        # 2. the same command: its start-up lines say it again, and it does it
        run = Runner(config)
        run.wait("the start-up lines", lambda: "each played on with the same" in run.output())
        assert told(run.output()) == said, run.output()
        check_did(run, said, attempts)
        for line in status(config).splitlines():  # a continued game still in play says so
            for gid, (plies, _) in said.items():
                if line.strip().startswith(f"game {gid} (") and ": ply " in line:
                    assert line.endswith(f", continued from ply {plies} (attempt "
                                         f"{attempts[gid][0] + 1})"), line

        # 3. td pause --now: the runner's lines, status and the dashboard, per game
        run.two_games_under_way()
        pause = recorded_id(td(config, "pause", "--now", "--reason", "maintenance"))
        run.applied(pause)
        run.wait("the games stopped", lambda: "game(s) stopped" in run.output()
                 and not run.query("SELECT 1 FROM games WHERE status='running'"))
        attempts = interrupted_now(run)
        run.wait("the runner's lines", lambda: len(told(
            run.output().split("game(s) stopped", 1)[1])) == len(attempts))
        out = run.output().split("game(s) stopped", 1)[1]
        said = told(out)
        assert set(said) == set(attempts) and said, out
        text = status(config)
        assert told(text.split("Interrupted:", 1)[1]) == said
        assert re.search(r"Progress: \d+/\d+ games, paused by the TD", text), text
        assert status_json_told(config) == said
        page = dashboard(web.url, lambda p: 'id="interrupted"' in p and all(
            f"game {gid} (" in p for gid in said))
        assert dashboard_told(page) == said
        card = page.split('id="eta-card"', 1)[1].split("</div></div>", 1)[0]
        assert "paused by the TD" in card and "done about" not in card, card
        outcome = next(c["outcome"] for c in log_json(config) if c["id"] == pause)
        assert "each continues from the ply it reached (TCEC rule 7.c.v)" in outcome, outcome
        assert re.search(r"\(games? [\d, ]+\)", outcome) and all(
            re.search(rf"\b{gid}\b", outcome) for gid in said), outcome
        run.applied(recorded_id(td(config, "resume", "--reason", "done")))
        check_did(run, said, attempts)

        # 4. killed again, resumed under Interruption: {Mode: replay}
        run.two_games_under_way()
        run.kill9()
        attempts = interrupted_now(run)
        engines_config(tmp_path, rounds=3, Interruption={"Mode": "replay"})
        said = told(status(config).split("Interrupted:", 1)[1])
        assert set(said) == set(attempts) and said
        assert all(w == "replayed from move 1: Interruption.Mode is replay"
                   for _, w in said.values()), said
    # (a dashboard reads its config when it starts: one started with the new config)
    with serve(config) as web:
        page = dashboard(web.url, lambda p: 'id="interrupted"' in p
                         and "Interruption.Mode is replay" in p)
        assert dashboard_told(page) == said
        run = Runner(config)
        run.wait("the start-up lines", lambda: "each played on with the same" in run.output())
        assert told(run.output()) == said
        check_did(run, said, attempts)
        assert run.finish() == 0, run.output()
