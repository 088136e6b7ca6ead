"""The dashboard app without a browser: its JSON, pages, escaping, downloads, token, the
watcher that follows the database, `serve`'s command line and the SSE latency.

The event is generated through the Store API (tests/web_event.py); `serve` runs as a real
uvicorn subprocess where the network matters (SSE, shutdown). Browser tests against real
engines are in test_web_browser.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import http.client
import io
import json
import re
import signal
import socket
import statistics
import time
from contextlib import redirect_stderr
from pathlib import Path
from urllib.parse import urlparse

import chess
import pytest
from testkit import write_config
from web_event import add_moves, generate_event, play_first_move, start_next_scheduled, web_config
from web_support import need, serve

try:
    from starlette.testclient import TestClient

    from runner.web import public
    from runner.web.app import Hub, create_app
except ImportError as exc:  # pragma: no cover - the web extra is missing
    need(False, f"the web extra is not installed ({exc.name}): bash scripts/install.sh --test installs it")

from runner.cli import main
from runner.config import load_config
from runner.domain.events import MovePlayed
from runner.service.views.snapshotdoc import build_state
from runner.store.database import Store

HOSTILE = "<img src=x onerror=alert(1)>"
NAMES = ["Alpha", HOSTILE, 'Gamma & "Delta"', "Eve</script><script>alert(2)</script>",
         "Foxtrot", "Golf 'g'", "Hotel"]


@pytest.fixture(scope="module")
def event(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    directory = tmp_path_factory.mktemp("web")
    return generate_event(directory, engines=len(NAMES), rounds=3, finished_rounds=2,
                          running=2, names=NAMES, plies=40)


@pytest.fixture(scope="module")
def client(event):  # noqa: ANN001, ANN201
    with TestClient(create_app(event)) as c:
        yield c


@pytest.mark.slow
def test_api_state_is_the_state_document(event, client) -> None:  # noqa: ANN001
    served = client.get("/api/state").json()
    store = Store.open_readonly(event.database)
    try:
        expected = build_state(event, store)
    finally:
        store.close()
    for doc in (served, expected):
        doc.pop("updated")
    # the document a viewer may read: no path, worker address or TD's user@host (public.py)
    assert served == public.document(expected)
    assert served["database"] == event.database.name
    assert (served["format"], served["version"]) == ("swiss-runner-state", 2)
    assert served["games_in_progress"] == 2 and served["games_finished"] == 12


def test_every_page_escapes_names(event, client) -> None:  # noqa: ANN001
    state = client.get("/api/state").json()
    running = state["in_progress"][0]["game_id"]
    finished = next(g["game_id"] for r in state["rounds"] for p in r["pairs"] for g in p["games"]
                    if g["status"] == "finished" and HOSTILE in (g["white"], g["black"]))
    for url in ("/", "/standings", "/rounds", "/chart", "/games", f"/game-{finished}",
                f"/game-{running}"):
        resp = client.get(url)
        assert resp.status_code == 200, url
        html = resp.text
        assert "<img src=x" not in html, url
        assert "<script>alert(2)" not in html, url
        assert "&lt;img src=x onerror=alert(1)&gt;" in html, url
        # only our own scripts: the app's file and JSON data blocks
        scripts = re.findall(r"<script[^>]*>", html)
        assert set(scripts) <= {'<script src="static/app.js" defer>',
                                '<script type="application/json" id="live-data">',
                                '<script type="application/json" id="game-data">'}, url
        blocks = re.findall(r'<script type="application/json" id="(\w+-data)">(.*?)</script>',
                            html, re.S)
        assert blocks, url
        for _, text in blocks:
            json.loads(text)  # each data block is intact JSON (no early </script>)
        assert resp.headers["content-security-policy"].startswith("default-src 'self'")
    live = json.loads(re.search(r'id="live-data">(.*?)</script>', client.get("/").text,
                                re.S).group(1))
    assert {g["white"] for g in live["games"]} | {g["black"] for g in live["games"]} <= set(NAMES)


def test_live_document_has_what_a_board_needs(event, client) -> None:  # noqa: ANN001
    live = client.get("/api/live").json()
    assert (live["format"], live["version"]) == ("swiss-runner-live", 1)
    assert live["rules"] == {"draw_plies": 10, "win_plies": None}
    assert live["runner"]["running"] is False and live["runner"]["since"]
    for g in live["games"]:
        board = chess.Board()
        for uci in g["moves"]:
            board.push_uci(uci)
        assert board.fen() == g["fen"]
        assert g["lastmove"] == g["moves"][-1]
        assert g["scores"] and all(p[0] > 8 for p in g["scores"])  # no book plies
        # White's point of view: a Black move's score is negated
        log = {m["ply"]: m for m in _logged(event, g["game_id"])}
        for ply, cp, _mate, side in g["scores"]:
            assert cp == (log[ply]["score_cp"] if side == "w" else -log[ply]["score_cp"])
        assert g["pv_san"]["white"] and g["pv_san"]["black"]
    progress = live["progress"]
    assert progress["finished"] == 12 and progress["total"] == 18
    # ETA: 4 games not started plus 2 in progress, 1 lane; the game length between the
    # measured mean and the prior of 60+1 (2 x (80% of 60 s + 60 x 1 s), runner.domain.eta)
    assert 80 < progress["mean_game_s"] < 2 * (0.8 * 60 + 60)
    assert 4 * progress["mean_game_s"] <= progress["eta_s"] <= 6 * progress["mean_game_s"] + 1


def _logged(config, game_id: int) -> list[dict]:  # noqa: ANN001
    store = Store.open_readonly(config.database)
    try:
        return store.logged_moves(game_id)
    finally:
        store.close()


def test_swiss_chart_adds_up_to_the_standings(client) -> None:  # noqa: ANN001
    standings = client.get("/api/standings").json()
    bye3 = client.get("/api/state").json()["rounds"][2]["bye"]
    resp = client.get("/chart")
    assert resp.status_code == 200
    chart = client.app.state.hub.view.chart  # type: ignore[attr-defined]
    assert [c["round"] for c in chart] == [0, 1, 2]
    for column in chart:
        engines = [e["engine"] for grp in column["groups"] for e in grp["engines"]]
        assert sorted(engines) == sorted(NAMES)
        scores = [grp["score"] for grp in column["groups"]]
        assert scores == sorted(scores, reverse=True)
    final = {e["engine"]: grp["score"] for grp in chart[-1]["groups"] for e in grp["engines"]}
    # the chart ends with the 2 complete rounds: the standings' scores less round 3, where
    # no game has finished yet but the BYE already counts
    assert bye3 in NAMES
    assert final == {r["engine"]: r["score"] - (2 if r["engine"] == bye3 else 0)
                     for r in standings["standings"]}
    byes = [e for c in chart[1:] for grp in c["groups"] for e in grp["engines"]
            if e["opponent"] == "BYE"]
    assert len(byes) == 2 and all(e["delta"] == 2 for e in byes)


def test_pgn_downloads_and_no_path_traversal(event, client) -> None:  # noqa: ANN001
    store = Store.open_readonly(event.database)
    try:
        pgn1 = store.conn.execute("SELECT pgn FROM games WHERE game_id=1").fetchone()[0]
        finished = store.finished_pgns()
    finally:
        store.close()
    resp = client.get("/game-1.pgn")
    assert resp.status_code == 200 and resp.text == pgn1
    assert re.fullmatch(r'attachment; filename="game-1\.\d+-1\.pgn"',
                        resp.headers["content-disposition"])
    whole = client.get("/event.pgn")
    assert whole.text.count("[Event ") == len(finished) == 12
    assert whole.headers["content-disposition"] == 'attachment; filename="Generated_Swiss.pgn"'
    running = client.get("/api/state").json()["in_progress"][0]["game_id"]
    assert client.get(f"/game-{running}.pgn").status_code == 404
    assert client.get("/game-999.pgn").status_code == 404
    assert client.get("/game-999").status_code == 404
    for url in ("/static/../app.py", "/static/%2e%2e/app.py", "/static/..%2fapp.py",
                "/static/%2e%2e%2f%2e%2e%2fpyproject.toml", "/game-1.pgn/../../etc/passwd",
                "/static//etc/passwd"):
        resp = client.get(url)
        assert resp.status_code == 404, url
        assert "create_app" not in resp.text and "root:" not in resp.text


def test_board_svg(client) -> None:  # noqa: ANN001
    resp = client.get("/board.svg", params={"fen": chess.STARTING_FEN, "last": "e2e4"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("image/svg+xml")
    assert resp.text.startswith("<svg")
    for params in ({"fen": "not a fen"}, {"fen": "x" * 200}, {"last": "zz"},
                   {"size": "huge"}):
        assert client.get("/board.svg", params=params).status_code == 400, params


def test_token_is_required_on_every_request(event) -> None:  # noqa: ANN001
    token = "s3cret-token-123"
    with TestClient(create_app(event, token=token), follow_redirects=False) as c:
        for url in ("/", "/api/state", "/event.pgn", "/static/app.js", "/events"):
            resp = c.get(url)
            assert resp.status_code == 401, url
            assert "Generated Swiss" not in resp.text
        assert c.get("/", params={"token": "wrong"}).status_code == 401
        assert c.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/api/state", headers={"authorization": f"Bearer {token}"}).status_code == 200
        resp = c.get("/standings", params={"token": token, "x": "1"})
        assert resp.status_code == 303 and resp.headers["location"] == "standings?x=1"
        assert "HttpOnly" in resp.headers["set-cookie"]
        assert resp.headers["cache-control"] == "no-store"
        assert c.get("/standings").status_code == 200  # the cookie from now on
        c.cookies.clear()
        c.cookies.set("swiss_runner_token", "wrong")
        assert c.get("/").status_code == 401


def test_before_the_event_exists(tmp_path: Path) -> None:
    config = load_config(web_config(tmp_path, ["A", "B"], 1))
    with TestClient(create_app(config)) as c:
        resp = c.get("/")
        assert resp.status_code == 200 and "No event recorded yet" in resp.text
        assert c.get("/api/state").status_code == 404
        assert c.get("/event.pgn").status_code == 404
        assert c.get("/api/live").json()["games"] == []
    assert not config.database.exists()
    assert not config.database.parent.exists() or not any(config.database.parent.iterdir())


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.mark.slow
def test_concurrent_refreshes_build_a_change_once(tmp_path: Path) -> None:
    config = generate_event(tmp_path, engines=4, rounds=2, finished_rounds=1, running=0)

    async def scenario() -> None:
        hub = Hub(config, poll_s=0.05)
        assert await hub.refresh() is True
        builds = hub.builds
        store = Store.open(config.database)
        try:
            start_next_scheduled(store, 4)
        finally:
            store.close()
        # the watcher's loop and a page asking at once: the second finds it done
        results = await asyncio.gather(hub.refresh(), hub.refresh())
        assert sorted(results) == [False, True]
        assert hub.builds == builds + 1
        assert len(hub.view.state["in_progress"]) == 1

    asyncio.run(scenario())


@pytest.mark.slow
def test_serving_never_writes_the_event(event) -> None:  # noqa: ANN001
    files = [event.database, event.database.with_name(event.database.name + "-wal")]
    before = [_digest(p) for p in files]
    mtimes = [p.stat().st_mtime_ns if p.exists() else None for p in files]
    with TestClient(create_app(event)) as c:
        for url in ("/", "/standings", "/rounds", "/chart", "/games", "/game-1", "/game-1.pgn",
                    "/event.pgn", "/api/state", "/api/live", "/api/standings"):
            assert c.get(url).status_code == 200, url
    assert [_digest(p) for p in files] == before
    assert [p.stat().st_mtime_ns if p.exists() else None for p in files] == mtimes


@pytest.mark.slow
def test_watcher_reads_only_the_moves_when_only_moves_come_in(tmp_path: Path) -> None:
    config = generate_event(tmp_path, engines=4, rounds=2, finished_rounds=1, running=1,
                            plies=30)

    async def scenario() -> None:
        # polled by hand only (no watcher loop of its own, which would race the checks)
        hub = Hub(config, poll_s=0.05)
        assert await hub.refresh() is True
        try:
            game = hub.view.state["in_progress"][0]
            ply = game["ply"]
            assert await hub.refresh() is False  # nothing changed: no build
            builds = hub.builds
            store = Store.open(config.database)
            try:
                board = chess.Board(game["fen"])
                move = next(iter(sorted(board.legal_moves, key=lambda m: m.uci())))
                san = board.san(move)
                board.push(move)
                add_moves(store, [MovePlayed(
                    game_id=game["game_id"], ply=ply + 1, uci=move.uci(), san=san,
                    fen=board.fen(), white_clock_ms=1000, black_clock_ms=2000, score_cp=12,
                    depth=9, at_ms=int(time.time() * 1000))])
                assert await hub.refresh() is True
                assert (hub.builds, hub.live_builds) == (builds, 1)
                live = hub.view.live["games"][0]
                assert live["ply"] == ply + 1 and live["san"][-1] == san
                assert hub.view.state["in_progress"][0]["ply"] == ply + 1
                # a new game starting is not "only moves": everything is read again
                start_next_scheduled(store, 4)
                assert await hub.refresh() is True
                assert hub.builds == builds + 1
                assert len(hub.view.state["in_progress"]) == 2
            finally:
                store.close()
        finally:
            await hub.stop()

    asyncio.run(scenario())


# --------------------------------------------------------------------------- the command


def _serve_cli(*args: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["serve", *args])
    return code, err.getvalue()


def test_serve_refuses_to_expose_without_a_token(event, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("SWISS_RUNNER_TOKEN", raising=False)
    code, err = _serve_cli(str(event.path), "--host", "0.0.0.0")
    assert code == 2 and "--token" in err and "Traceback" not in err
    monkeypatch.setenv("SWISS_RUNNER_TOKEN", "short")
    code, err = _serve_cli(str(event.path), "--host", "0.0.0.0")
    assert code == 2 and "at least 8" in err


def test_serve_reports_a_port_in_use(event) -> None:  # noqa: ANN001
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, err = _serve_cli(str(event.path), "--port", str(port))
    assert code == 2
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err
    assert "Traceback" not in err


def test_serve_reports_a_bad_config(tmp_path: Path) -> None:
    bad = write_config(tmp_path, "Engines: 3\n", "bad.yaml")
    code, err = _serve_cli(str(bad))
    assert code == 2 and "error:" in err and "Traceback" not in err


def _sse_events(resp: http.client.HTTPResponse):  # noqa: ANN202
    data: list[str] = []
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.decode().rstrip("\n")
        if line.startswith("data: "):
            data.append(line[6:])
        elif line == "" and data:
            yield json.loads("\n".join(data)), time.perf_counter()
            data = []


@pytest.mark.slow
def test_sse_pushes_each_move_within_a_second(tmp_path: Path) -> None:
    """A move committed to the database reaches a connected SSE client in < 1 s (real
    uvicorn subprocess; the runner's move log commits every 0.25 s on top of this)."""
    config = generate_event(tmp_path, engines=4, rounds=2, finished_rounds=1, running=1,
                            plies=20)
    with serve(config.path) as served:
        url = urlparse(served.url)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.getheader("content-type").startswith("text/event-stream")
        stream = _sse_events(resp)
        first, _ = next(stream)
        game = first["live"]["games"][0]
        board = chess.Board(game["fen"])
        ply = game["ply"]
        latencies = []
        store = Store.open(config.database)
        try:
            for _ in range(12):
                ply += 1
                san = play_first_move(store, game["game_id"], board, ply)
                committed = time.perf_counter()
                for message, arrived in stream:
                    g = message["live"]["games"][0]
                    if g["ply"] == ply:
                        assert g["san"][-1] == san and g["fen"] == board.fen()
                        latencies.append(arrived - committed)
                        break
                time.sleep(0.15)
        finally:
            store.close()
            conn.close()
    print(f"SSE latency after commit: median {statistics.median(latencies) * 1000:.0f} ms, "
          f"max {max(latencies) * 1000:.0f} ms (n={len(latencies)})")
    assert len(latencies) == 12
    assert max(latencies) < 1.0


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_serve_stops_promptly_with_clients_connected(tmp_path: Path, signum: int) -> None:
    config = generate_event(tmp_path, engines=4, rounds=1, finished_rounds=0, running=1,
                            plies=10)
    with serve(config.path) as served:
        url = urlparse(served.url)
        conns = []
        for _ in range(3):
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
            conn.request("GET", "/events")
            assert conn.getresponse().status == 200
            conns.append(conn)
        t0 = time.monotonic()
        served.proc.send_signal(signum)
        code = served.proc.wait(timeout=15)
        elapsed = time.monotonic() - t0
        out = served.proc.stdout.read().decode()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.close()
    assert code == 0, out
    assert elapsed < 5, elapsed
    assert "Traceback" not in out and "ERROR" not in out
    assert out.rstrip().endswith("Dashboard stopped.")


def test_every_url_in_the_pages_is_relative(event, client) -> None:  # noqa: ANN001
    """Nothing absolute (so a reverse proxy's path prefix works) and nothing external."""
    pages = ["/", "/standings", "/rounds", "/chart", "/games", "/game-1"]
    for url in pages:
        html = client.get(url).text
        targets = re.findall(r'(?:href|src|action)="([^"]*)"', html)
        assert targets, url
        for target in targets:
            assert not target.startswith(("/", "http:", "https:", "//")), (url, target)
    js = client.get("/static/app.js").text
    for literal in re.findall(r'"((?:events|board\.svg|static/)[^"]*)"', js):
        assert not literal.startswith("/")
    assert "http://" not in js.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in js and "@import" not in client.get("/static/app.css").text


def test_a_damaged_database_is_reported_not_served(tmp_path: Path) -> None:
    config = load_config(web_config(tmp_path, ["A", "B"], 1))
    config.database.parent.mkdir(parents=True)
    config.database.write_bytes(b"this is not a database" * 10)
    before = config.database.read_bytes()
    with TestClient(create_app(config)) as c:
        resp = c.get("/")
        assert resp.status_code == 200
        assert "cannot be read" in resp.text and "not an SQLite database" in resp.text
        assert c.get("/api/state").status_code == 503
        assert c.get("/api/live").json()["error"]
    assert config.database.read_bytes() == before


def test_standings_page_shows_the_ratings_with_margins(client) -> None:  # noqa: ANN001
    view = client.app.state.hub.view  # type: ignore[attr-defined]
    ratings = view.ratings
    assert ratings is not None and ratings["format"] == "swiss-runner-ratings"
    assert ratings["model"]["simulations"] > 0  # the dashboard computes the margins
    rated = [p for p in ratings["players"] if p["elo"] is not None]
    assert rated and any(p["error"] for p in rated)
    # the state document's ratings are the same fit, without simulations
    state = client.get("/api/state").json()["ratings"]
    if state is not None:
        assert state["model"]["simulations"] == 0
        fitted = {p["engine"]: p["elo"] for p in state["players"]}
        for p in rated:
            assert abs(fitted[p["engine"]] - p["elo"]) < 1e-6
    page = client.get("/standings").text
    assert "<h2>Ratings</h2>" in page
    best = rated[0]
    assert f"{best['elo']:.0f}" in page and f"{best['error']:.0f}" in page
