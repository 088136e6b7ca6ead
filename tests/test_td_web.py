"""The TD's actions in the dashboard (docs/td.md), in headless Chromium against a running
event of real engines: the admin token acts, the read-only token does not, a request without
the admin token or from another origin is refused (CSRF), and every action is in the
decision log with who = "web:admin" (the person of a file with one bare token)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from testkit import FOUR_ENGINES, wait_until, write_config
from web_support import (
    REPO,
    browser,
    env,
    need_browser,
    need_engines,
    serve,
    start_runner,
)

pytestmark = [pytest.mark.engines, pytest.mark.slow]

READ_TOKEN = "read-only-token-1234"
ADMIN_TOKEN = "admin-token-abcdefgh"


def event_config(directory: Path) -> Path:
    return write_config(directory, {
        "Event": "TD web", "TimeControl": "6+0.1", "Concurrency": 1,
        "SwissOptions": {"GamesPerMatch": 1, "Rounds": 2, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 40},
        "Engines": FOUR_ENGINES,
    })


def commands(db: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return conn.execute("SELECT id, action, who, state, reason FROM td_commands "
                            "ORDER BY id").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def post(url: str, body: dict[str, str], headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_td_actions_in_the_dashboard(tmp_path: Path) -> None:
    need_browser()
    need_engines("stockfish", "toga2", "fairy-stockfish", "ethereal-chess")
    config = event_config(tmp_path)
    db = tmp_path / "state" / "swiss.sqlite3"
    token_file = tmp_path / "admin.token"
    token_file.write_text(ADMIN_TOKEN + "\n")
    token_file.chmod(0o600)
    runner = start_runner(config, tmp_path / "run.log")
    try:
        wait_until(lambda: db.exists() and commands(db) == [] and _has_games(db),
                   "the event created", 60, step=0.1)
        with serve(config, "--token", READ_TOKEN, "--admin-token-file", str(token_file)) as s, \
                browser() as b:
            api = s.url + "api/td"
            bearer = {"authorization": f"Bearer {READ_TOKEN}"}
            note = {"action": "note", "text": "from elsewhere"}
            # refused: no admin token, the read-only token as admin token, another origin,
            # a cross-site fetch; nothing recorded
            assert post(api, note, bearer)[0] == 403
            assert post(api, note, {**bearer, "x-admin-token": READ_TOKEN})[0] == 403
            code, body = post(api, note, {**bearer, "x-admin-token": ADMIN_TOKEN,
                                          "origin": "http://evil.example"})
            assert code == 403 and "another origin" in body["error"]
            code, body = post(api, note, {**bearer, "x-admin-token": ADMIN_TOKEN,
                                          "sec-fetch-site": "cross-site"})
            assert code == 403 and "cross-site" in body["error"]
            assert commands(db) == []

            page = b.new_context().new_page()
            page.goto(s.url + f"?token={READ_TOKEN}")  # the read-only cookie
            page.goto(s.url + "admin")
            assert page.locator("#td-form").is_visible()

            def submit(token: str, action: str, **fields: str) -> None:
                page.fill("#td-token", token)
                page.select_option("#td-action", action)
                for name, value in fields.items():
                    if name in ("mode", "result", "when", "engine"):
                        page.select_option(f"#td-{name}", value)
                    else:
                        page.fill(f"#td-{name}", value)
                page.click("#td-submit")
                page.wait_for_load_state()

            submit(READ_TOKEN, "note", text="read-only tries")
            assert "admin token is missing or wrong" in page.locator("#td-error").inner_text()
            assert commands(db) == []

            submit(ADMIN_TOKEN, "note", text="hello from the web")
            assert "recorded (note)" in page.locator("#td-message").inner_text()
            submit(ADMIN_TOKEN, "adjudicate", game="99", result="1-0", reason="x")
            assert "no game '99'" in page.locator("#td-error").inner_text()
            submit(ADMIN_TOKEN, "pause", mode="now", reason="web maintenance")
            wait_until(lambda: [c[3] for c in commands(db)] == ["applied", "applied"],
                       "the pause applied", 60, step=0.1)

            # the overview, left open, says so (it follows the event without a reload)
            overview = page.context.new_page()  # with the read-only cookie
            overview.goto(s.url)
            overview.wait_for_selector("#td-paused")
            assert "Paused by the TD: web maintenance" in overview.inner_text("#td-paused")
            assert "hello from the web" in overview.inner_text("#td-log")

            # the JSON API from the dashboard's own page (same origin, header token)
            result = page.evaluate("""async ([token]) => {
                const r = await fetch('api/td', {method: 'POST', headers: {
                    'content-type': 'application/json', 'x-admin-token': token},
                    body: JSON.stringify({action: 'resume', reason: 'back from the web'})});
                return [r.status, await r.json()];
            }""", [ADMIN_TOKEN])
            assert result[0] == 200, result
            overview.wait_for_selector("#td-paused", state="detached", timeout=30_000)

            # a form on another origin that posts to the dashboard, even with the admin token,
            # from the browser holding the read-only cookie
            evil = page.context.new_page()
            evil.set_content(f"""<form method="post" action="{s.url}admin" id="f">
                <input name="admin_token" value="{ADMIN_TOKEN}"><input name="action"
                value="note"><input name="text" value="forged"></form>""")
            with evil.expect_navigation():
                evil.evaluate("document.getElementById('f').submit()")
            assert "recorded" not in evil.content()
            assert "refused" in evil.content() or "needs its access token" in evil.content()
        rows = commands(db)
        assert [(r[1], r[2], r[3]) for r in rows] == [
            ("note", "web:admin", "applied"), ("pause", "web:admin", "applied"),
            ("resume", "web:admin", "applied")]
        log = subprocess.run([sys.executable, "-m", "runner", "td", str(config), "log"],
                             cwd=REPO, env=env(), capture_output=True, text=True, timeout=60)
        assert "web:admin: note: hello from the web" in log.stdout
        assert "web:admin: pause (now) -- web maintenance" in log.stdout
        assert runner.wait(timeout=180) == 0
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()


def _has_games(db: Path) -> bool:
    try:
        conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=10)
        try:
            return bool(conn.execute("SELECT COUNT(*) FROM games").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return False
