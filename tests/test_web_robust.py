"""The dashboard against requests and databases it did not expect: ids SQLite cannot hold,
HEAD requests, a database damaged or holding records it cannot make sense of, games with
no position yet. Each answer is a page or a status code, never a traceback, and the server
keeps watching (test_web.py has the ordinary cases; test_web_browser_hostile.py the
layout in a browser)."""

from __future__ import annotations

import asyncio
import http.client
import json
import random
import re
import sqlite3
from pathlib import Path
from urllib.parse import urlparse

import chess
import pytest
from testkit import wait_until
from web_event import generate_event, start_next_scheduled, web_config
from web_support import need, serve

try:
    from starlette.testclient import TestClient

    from runner.web.app import Hub, create_app
except ImportError as exc:  # pragma: no cover - the web extra is missing
    need(False, f"the web extra is not installed ({exc.name}): bash scripts/install.sh --test installs it")

from runner.config import load_config
from runner.service.views.snapshotdoc import WORKERS_META
from runner.store.database import Store


@pytest.fixture
def event(tmp_path: Path):  # noqa: ANN201
    return generate_event(tmp_path / "ev", engines=5, rounds=2, finished_rounds=1, running=1,
                          plies=20)


def _sql(config, sql: str, *args) -> None:  # noqa: ANN001
    """Change the event's database behind the store's back (what a damaged or foreign
    record looks like to the dashboard)."""
    conn = sqlite3.connect(config.database, isolation_level=None)
    try:
        conn.execute(sql, args)
    finally:
        conn.close()


@pytest.mark.slow
def test_game_ids_beyond_what_sqlite_holds_are_not_found(event) -> None:  # noqa: ANN001
    with TestClient(create_app(event)) as c:  # raises on any exception in the app
        for url in ("/game-99999999999999999999999", "/game-9223372036854775808",
                    "/game-99999999999999999999999.pgn", "/game-0", "/game-0.pgn"):
            resp = c.get(url)
            assert resp.status_code == 404, url
            assert "Traceback" not in resp.text
        assert c.get("/game-9223372036854775807").status_code == 404  # the largest id: asked
        assert c.get("/game-1").status_code == 200


@pytest.mark.slow
def test_head_requests_are_answered_and_the_connection_goes_on(event) -> None:  # noqa: ANN001
    """HEAD /events gets the stream's headers and an end (a stream never ends: a HEAD must
    not hold the connection); every page answers HEAD like GET."""
    with serve(event.path) as served:
        url = urlparse(served.url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
        try:
            for path in ("/events", "/", "/standings", "/game-1", "/game-1.pgn", "/api/live",
                         "/board.svg", "/static/app.js", "/events"):
                conn.request("HEAD", path)
                resp = conn.getresponse()
                assert resp.status == 200, path
                assert resp.read() == b""
            conn.request("HEAD", "/events")
            with conn.getresponse() as resp:
                head_type = resp.getheader("content-type")
                resp.read()
            assert head_type.startswith("text/event-stream")
            conn.request("GET", "/api/live")  # the same connection: the HEAD has ended
            resp = conn.getresponse()
            assert resp.status == 200 and json.loads(resp.read())["format"] == "swiss-runner-live"
        finally:
            conn.close()
        served.proc.send_signal(2)
        served.proc.wait(timeout=15)
        out = served.proc.stdout.read().decode()
    assert "Traceback" not in out and "ERROR" not in out, out


def _damage_pages(path: Path) -> None:
    """Overwrite part of every fifth page past the first three; the header stays intact."""
    data = bytearray(path.read_bytes())
    rng = random.Random(2)
    for offset in range(4096 * 3, len(data), 4096 * 5):
        data[offset:offset + 2000] = rng.randbytes(2000)
    path.write_bytes(bytes(data))


def test_damaged_pages_give_503_not_500(tmp_path: Path) -> None:
    config = generate_event(tmp_path, engines=8, rounds=2, finished_rounds=1, running=0,
                            plies=40)
    _sql(config, "PRAGMA wal_checkpoint(TRUNCATE)")
    _damage_pages(config.database)
    with TestClient(create_app(config)) as c:
        live = c.get("/api/live").json()
        assert live["error"] and "malformed" in live["error"]
        page = c.get("/")
        assert page.status_code == 200 and "cannot be read" in page.text
        for url in ("/event.pgn", "/api/state"):
            resp = c.get(url)
            assert resp.status_code == 503, url
            assert "Traceback" not in resp.text


# records a runner never writes: the dashboard says the event cannot be read (it did not
# start at all: the first build raised) and follows the event again once they are repaired
MALFORMED = {
    "GameStarted not JSON": "UPDATE games SET started_event='{' WHERE status='running'",
    "GameStarted not an object": "UPDATE games SET started_event='[1]' WHERE status='running'",
    "move not JSON": "UPDATE moves SET data='nope' WHERE game_id IN "
                     "(SELECT game_id FROM games WHERE status='running')",
    "move without its move": "UPDATE moves SET data='{}' WHERE game_id IN "
                             "(SELECT game_id FROM games WHERE status='running')",
    "start position not a FEN": "UPDATE games SET started_event=json_set(started_event, "
                                "'$.start_fen', 'garbage') WHERE status='running'",
    "workers not objects": f"INSERT OR REPLACE INTO meta VALUES ('{WORKERS_META}', '[1, 2]')",
}


@pytest.mark.slow
@pytest.mark.parametrize("what", sorted(MALFORMED))
def test_malformed_records_are_reported_and_followed(event, what: str) -> None:  # noqa: ANN001
    backup = event.database.with_name("good.sqlite3")
    _sql(event, "VACUUM INTO ?", str(backup))
    _sql(event, MALFORMED[what])
    with TestClient(create_app(event, poll_s=0.05)) as c:
        live = c.get("/api/live").json()
        assert live["format"] == "swiss-runner-live" and live["games"] == []
        assert live["error"] and "cannot read the event" in live["error"], live
        assert live["digest"]
        page = c.get("/")
        assert page.status_code == 200 and "cannot be read" in page.text
        assert c.get("/api/state").status_code == 503
        assert c.get("/api/standings").status_code == 503
        # the page's embedded live document is a document (the script reads its fields)
        embedded = re.search(r'id="live-data">(.*?)</script>', page.text, re.S).group(1)
        assert json.loads(embedded)["error"] == live["error"]
        # repaired (the good records copied back in one transaction): followed again
        conn = sqlite3.connect(event.database, isolation_level=None)
        try:
            conn.execute("ATTACH ? AS good", (str(backup),))
            conn.execute("BEGIN")
            for table in ("games", "moves", "meta"):
                conn.execute(f"DELETE FROM main.{table}")
                conn.execute(f"INSERT INTO main.{table} SELECT * FROM good.{table}")
            conn.execute("COMMIT")
        finally:
            conn.close()
        wait_until(lambda: c.get("/api/live").json()["error"] is None, "the damage to clear")
        assert c.get("/api/state").status_code == 200
        assert len(c.get("/api/live").json()["games"]) == 1


def test_a_damaged_database_is_not_read_again_at_every_poll(tmp_path: Path) -> None:
    """A file that is not a database is reported once; the watcher keeps polling it but
    builds (and pushes to every browser) again only when what it finds changes."""
    config = load_config(web_config(tmp_path, ["A", "B"], 1))
    config.database.parent.mkdir(parents=True)
    config.database.write_bytes(b"SQLite format 3\x00" + random.Random(1).randbytes(20000))

    async def scenario() -> None:
        hub = Hub(config, poll_s=0.02)
        await hub.start()
        try:
            generation = hub.generation
            await asyncio.to_thread(wait_until, lambda: hub.polls >= 10,
                                    "ten polls of the damaged file", step=0.02)
            assert hub.polls >= 10
            assert hub.builds <= 2, hub.builds
            assert hub.generation - generation <= 1
            assert hub.view.error and "damaged" in hub.view.error
        finally:
            await hub.stop()

    asyncio.run(scenario())


def test_a_worker_refusal_of_another_shape_does_not_break_the_overview(event) -> None:  # noqa: ANN001
    store = Store.open(event.database)
    try:
        store.set_meta(WORKERS_META, json.dumps([
            {"name": "w1", "address": "tcp://10.0.0.2:1", "slots": 1, "state": "joined",
             "refused": ["E1", "cannot start"]}]))
    finally:
        store.close()
    with TestClient(create_app(event)) as c:
        page = c.get("/")
        assert page.status_code == 200
        assert "<h2>Workers</h2>" in page.text and "w1" in page.text


def test_a_game_whose_records_are_malformed(event) -> None:  # noqa: ANN001
    _sql(event, "UPDATE games SET opening='{' WHERE game_id=1")
    _sql(event, "UPDATE moves SET data='nope' WHERE game_id=2 AND ply=3")
    with TestClient(create_app(event)) as c:
        assert c.get("/api/live").json()["error"] is None  # the event itself reads
        resp = c.get("/game-1")  # an unreadable opening: the game without its opening's name
        assert resp.status_code == 200 and 'id="step-board"' in resp.text
        resp = c.get("/game-2")  # an unreadable move log
        assert resp.status_code == 503
        assert "cannot read game 2" in resp.text and "Traceback" not in resp.text
        assert c.get("/game-2.pgn").status_code == 503


def test_a_game_in_progress_without_a_position_still_has_a_board(event) -> None:  # noqa: ANN001
    """A game marked running with no GameStarted kept and no move (a database of an older
    runner): its board is the start position, not a broken image."""
    store = Store.open(event.database)
    try:
        game = start_next_scheduled(store, 0)
    finally:
        store.close()
    _sql(event, "UPDATE games SET started_event=NULL WHERE game_id=?", game.game_id)
    with TestClient(create_app(event)) as c:
        live = next(g for g in c.get("/api/live").json()["games"]
                    if g["game_id"] == game.game_id)
        assert live["fen"] is None and live["ply"] == 0
        page = c.get(f"/game-{game.game_id}").text
        src = re.search(r'data-f="board"[^>]*src="([^"]+)"', page, re.S).group(1)
        board = c.get("/" + src.replace("&amp;", "&"))
        assert board.status_code == 200 and board.text.startswith("<svg")
        assert c.get("/board.svg", params={"fen": "", "last": ""}).status_code == 200


def test_pgn_tags_are_shown_unescaped(tmp_path: Path) -> None:
    """The PGN escapes \\ and " in tag values; the game page shows the values themselves."""
    names = ['Gamma "Delta"', "Back\\slash", "C", "D"]
    config = generate_event(tmp_path, engines=4, rounds=1, finished_rounds=1, running=0,
                            names=names, plies=10, Event='The "Quoted" \\ event')
    with TestClient(create_app(config)) as c:
        state = c.get("/api/state").json()
        game = next(g for g in state["rounds"][0]["pairs"][0]["games"])
        page = c.get(f"/game-{game['game_id']}").text
    tags = dict(re.findall(r'<tr><th class="left">(\w+)</th><td class="left">(.*?)</td></tr>',
                           page))
    assert tags["Event"] == "The &#34;Quoted&#34; \\ event"
    shown = {"Gamma &#34;Delta&#34;", "Back\\slash", "C", "D"}
    assert {tags["White"], tags["Black"]} <= shown


@pytest.mark.slow
def test_a_live_board_says_when_its_game_was_resumed_or_replayed(event) -> None:  # noqa: ANN001
    """A game interrupted and continued from its position (TCEC 7.c), or played again from
    its first move, says so on its live board: else its moves or clocks seem to jump."""
    running = _live_game_id(event)
    _sql(event, "UPDATE games SET attempt=2, started_event=json_set(started_event, "
                "'$.attempt', 2, '$.resumed_from_ply', 14) WHERE game_id=?", running)
    with TestClient(create_app(event)) as c:
        board = _board_header(c.get("/").text, running)
        assert "continued from ply 14 (attempt 2)" in board
    _sql(event, "UPDATE games SET attempt=3, started_event=json_set(started_event, "
                "'$.attempt', 3, '$.resumed_from_ply', 0) WHERE game_id=?", running)
    with TestClient(create_app(event)) as c:
        assert "replayed from move 1 (attempt 3)" in _board_header(c.get(f"/game-{running}").text, running)
    _sql(event, "UPDATE games SET attempt=1, started_event=json_set(started_event, "
                "'$.attempt', 1) WHERE game_id=?", running)
    with TestClient(create_app(event)) as c:
        board = _board_header(c.get("/").text, running)
        assert "resumed" not in board and "replay" not in board


def _live_game_id(config) -> int:  # noqa: ANN001
    store = Store.open_readonly(config.database)
    try:
        return next(g.game_id for g in store.games() if g.status == "running")
    finally:
        store.close()


def _board_header(html: str, game_id: int) -> str:
    found = re.search(rf'data-live-game="{game_id}">\s*<header>(.*?)</header>', html, re.S)
    assert found, html[:300]
    return found.group(1)


@pytest.mark.slow
def test_boards_asked_for_do_not_grow_the_server_without_bound(event) -> None:  # noqa: ANN001
    """Every position and size asked for is drawn once and kept for the next browser, but
    only so many: a client asking for thousands of boards cannot fill the memory."""
    from runner.web.app import board_svg

    board_svg.cache_clear()
    board = chess.Board()
    with TestClient(create_app(event)) as c:
        for size in range(120, 800):
            assert c.get("/board.svg", params={"fen": board.fen(), "size": size}).status_code == 200
    held = board_svg.cache_info().currsize
    assert held * len(board_svg(board.fen(), None, 360)) < 20_000_000, held


@pytest.mark.slow
def test_an_engine_named_bye_is_not_a_bye_in_the_swiss_chart(tmp_path: Path) -> None:
    config = generate_event(tmp_path, engines=4, rounds=1, finished_rounds=1, running=0,
                            names=["Alpha", "BYE", "Gamma", "Delta"], plies=10)
    with TestClient(create_app(config)) as c:
        page = c.get("/chart").text
        chart = c.app.state.hub.view.chart  # type: ignore[attr-defined]
    after = [e for grp in chart[1]["groups"] for e in grp["engines"]]
    met_bye = next(e for e in after if e["opponent"] == "BYE")  # who played the engine BYE
    classes = re.findall(rf'<li data-engine="{met_bye["engine"]}" class="(\w*)"', page)
    assert len(classes) == 2 and classes[1] in ("up", "down", "level"), classes  # after R1
    assert not any(e["bye"] for e in after)  # four engines: nobody had a bye


def test_an_event_created_but_not_paired_yet(tmp_path: Path) -> None:
    """The moment between `run` creating the event and pairing round 1: every page
    answers, and nothing says "since ?"."""
    from runner.config.fingerprint import event_fingerprint

    config = load_config(web_config(tmp_path, ["A", "B", "C"], 2))
    store = Store.open(config.database)
    try:
        store.init_event(event_fingerprint(config), ["A", "B", "C"], [], event=config.event,
                         games_per_match=2, rounds=2)
    finally:
        store.close()
    with TestClient(create_app(config)) as c:
        for url in ("/", "/standings", "/rounds", "/chart", "/games", "/api/state",
                    "/api/standings", "/api/live"):
            resp = c.get(url)
            assert resp.status_code == 200, url
            assert "since ?" not in resp.text and "?</" not in resp.text, url
        assert "not paired yet" in c.get("/").text
        assert c.get("/game-1").status_code == 404
