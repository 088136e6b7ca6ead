"""A dashboard that can face the public (issue 55): what a viewer can read, the names it
answers to, forwarding headers, limits before any work, and the same security headers on
every answer.

The app through Starlette's TestClient where the network does not matter; a real `serve`
process and real sockets (loopback only, bounded in count and time) for what only a real
server shows: its own answers, chunked bodies, slow clients, the connection cap, client
addresses. Checked to fail on the dashboard before issue 55.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import socket
import sqlite3
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import chess
import psutil
import pytest
from testkit import run_cli as cli
from testkit import wait_until
from web_event import generate_event, play_first_move, web_config
from web_support import need, serve

try:
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from runner.web.app import create_app
except ImportError as exc:  # pragma: no cover - the web extra is missing
    need(False, f"the web extra is not installed ({exc.name}): pip install -e '.[dev,web]'")

from runner.config import load_config
from runner.service.td.director import give_command as give
from runner.store.database import Store

ADMIN = "carol-admin-token-0123"
SECRET_HOST = "alice@secret-host"
FINISHED: dict[Path, int] = {}  # the game whose PGN names its engine log, by event
HEADERS = ("content-security-policy", "x-content-type-options", "referrer-policy",
           "x-frame-options")


@pytest.fixture(scope="module")
def event(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """A generated event with what must stay private: an engine's binary path, an engine log
    path in a PGN, a TD note from the command line (user@host) and one from the web."""
    directory = tmp_path_factory.mktemp("public")
    config = generate_event(directory, engines=4, rounds=2, finished_rounds=1, running=1,
                            names=["Alpha", "Beta", "Gamma", "Delta"], plies=12)
    store = Store.open(config.database)
    try:
        store.record_builds({"Alpha": {"digest": "ab12", "files": {
            str(directory / "engines" / "alpha-bin"): "00ff"}}}, "event start")
    finally:
        store.close()
    with contextlib.closing(sqlite3.connect(config.database)) as conn, conn:
        game_id, pgn = conn.execute("SELECT game_id, pgn FROM games WHERE status='finished' "
                                    "ORDER BY game_id LIMIT 1").fetchone()
        tag = f'[EngineLog "{directory}/logs/game-{game_id:05d}.log"]\n'
        # (as a game recorded before checksums: its PGN is edited here)
        conn.execute("UPDATE games SET pgn=?, record_sha256=NULL WHERE game_id=?",
                     (pgn.replace("[Result", tag + "[Result", 1), game_id))
    assert give(config, "note", {"text": "from the shell"}, "", SECRET_HOST)[0]
    assert give(config, "note", {"text": "from the web"}, "", "web:carol")[0]
    FINISHED[config.path] = game_id
    return config


def _private(text: str, config) -> list[str]:  # noqa: ANN001
    root = str(config.database.parent.parent)
    return [word for word in (root, SECRET_HOST, "secret-host", "web:carol", "carol")
            if word in text]


def test_a_viewer_reads_nothing_private(event) -> None:  # noqa: ANN001
    game = FINISHED[event.path]
    with TestClient(create_app(event, admin_tokens={"carol": ADMIN})) as client:
        state = client.get("/api/state").json()
        assert state["database"] == event.database.name
        assert state["builds"]["Alpha"][0]["files"] == {"alpha-bin": "00ff"}
        assert {n["who"] for n in state["td"]["notes"]} == {"TD", "TD (web)"}
        for path in ("/api/state", "/api/live", "/api/standings", "/", "/standings", "/rounds",
                     "/games", "/admin", f"/game-{game}", f"/game-{game}.pgn", "/event.pgn",
                     "/live.pgn", "/round/1.pgn"):
            resp = client.get(path)
            assert resp.status_code == 200, path
            assert _private(resp.text, event) == [], (path, _private(resp.text, event))
        assert f'[EngineLog "game-{game:05d}.log"]' in client.get(f"/game-{game}.pgn").text
        assert f"game-{game:05d}.log" in client.get(f"/game-{game}").text
        # the admin side: a valid admin token shows who acted
        admin = client.get("/admin", headers={"x-admin-token": ADMIN}).text
        assert SECRET_HOST in admin and "web:carol" in admin
        assert client.get("/admin", headers={"x-admin-token": "wrong-token-xyz"}
                          ).status_code == 403


def test_the_empty_page_names_no_path(tmp_path: Path) -> None:
    config = load_config(web_config(tmp_path / "empty", ["A", "B"], 1))
    with TestClient(create_app(config)) as client:
        for path in ("/", "/api/live", "/api/state", "/live.pgn"):
            text = client.get(path).text
            assert str(tmp_path) not in text, (path, text)
        assert config.database.name in client.get("/").text


def test_every_answer_has_the_headers_and_no_traceback(event, caplog) -> None:  # noqa: ANN001
    app = create_app(event, admin_tokens={"carol": ADMIN})

    async def boom(request):  # noqa: ANN001, ANN202
        raise RuntimeError("a bug")

    app.router.routes.append(Route("/boom", boom))
    json_headers = {"content-type": "application/json", "x-admin-token": ADMIN}
    with TestClient(app, raise_server_exceptions=False) as client, \
            caplog.at_level(logging.WARNING):
        answers = {
            404: client.get("/no-such-page"),
            405: client.get("/api/td"),
            413: client.post("/api/td", content=b"{" + b" " * 8000 + b"}",
                             headers=json_headers),
            415: client.post("/api/td", content=b'{"action": "note"}',
                             headers={"content-type": "text/plain", "x-admin-token": ADMIN}),
            500: client.get("/boom"),
        }
        deep = b"[" * 1500 + b"]" * 1500  # within the body limit, deeper than json can parse
        answers[400] = client.post("/api/td", content=deep, headers=json_headers)
        form = {"content-type": "application/x-www-form-urlencoded"}
        big_form = client.post("/admin", content=b"a=" + b"x" * (65 * 1024), headers=form)
        for status, resp in [*answers.items(), (413, big_form)]:
            assert resp.status_code == status, (status, resp.status_code, resp.text[:200])
            assert all(h in resp.headers for h in HEADERS), (status, dict(resp.headers))
            assert "Traceback" not in resp.text and "a bug" not in resp.text
        assert "Traceback" not in caplog.text  # one line for the bug, never its stack
        assert any("RuntimeError: a bug" in r.getMessage() for r in caplog.records)


def test_requests_past_the_limit_in_flight_get_503(event) -> None:  # noqa: ANN001
    from runner.web.shield import Limits  # (new with issue 55: this file runs on the old code)

    with TestClient(create_app(event, limits=Limits(max_requests=0))) as client:
        resp = client.get("/api/live")
        assert resp.status_code == 503 and resp.headers["retry-after"] == "5"
        assert all(h in resp.headers for h in HEADERS)


def test_wrong_admin_tokens_get_429_with_retry_after(event) -> None:  # noqa: ANN001
    with TestClient(create_app(event, admin_tokens={"carol": ADMIN})) as client:
        for n in range(10):  # X-Forwarded-For from an untrusted peer changes nothing
            client.post("/api/td", json={"action": "note", "text": "x"},
                        headers={"x-admin-token": f"wrong-{n}-token",
                                 "x-forwarded-for": f"10.0.0.{n}"})
        api = client.post("/api/td", json={"action": "note", "text": "x"},
                          headers={"x-admin-token": ADMIN})
        form = client.post("/admin", data={"admin_token": ADMIN, "action": "note",
                                           "text": "x"})
        page = client.get("/admin", headers={"x-admin-token": ADMIN})
        for resp in (api, form, page):
            assert resp.status_code == 429
            assert 0 < int(resp.headers["retry-after"]) <= 60


def test_the_names_it_answers_to(event) -> None:  # noqa: ANN001
    app = create_app(event, admin_tokens={"carol": ADMIN},
                     allowed_hosts=("dash.example.org", "*.swiss.example"))
    with TestClient(app, base_url="http://127.0.0.1:8080") as client:
        assert client.get("/api/live").status_code == 200
        for host, status in (("evil.example", 421), ("dash.example.org", 200),
                             ("live.swiss.example:443", 200), ("localhost:8080", 200),
                             ("[::1]:8080", 200), ("swiss.example.evil", 421)):
            resp = client.get("/api/state", headers={"host": host})
            assert resp.status_code == status, host
            assert all(h in resp.headers for h in HEADERS)
        # the origin check: a page of an allowed name passes it (then the token decides),
        # a DNS-rebinding page (its own name in Host and Origin) meets the Host check
        note = {"action": "note", "text": "x"}
        same = client.post("/api/td", json=note, headers={
            "host": "dash.example.org", "origin": "http://dash.example.org",
            "x-admin-token": ADMIN})
        assert same.status_code == 200, same.text
        rebound = client.post("/api/td", json=note, headers={
            "host": "evil.example:8080", "origin": "http://evil.example:8080",
            "x-admin-token": ADMIN})
        assert rebound.status_code == 421
        other = client.post("/api/td", json=note, headers={
            "host": "dash.example.org", "origin": "http://other.swiss.example",
            "x-admin-token": ADMIN})
        assert other.status_code == 403 and "another origin" in other.text


def test_https_from_a_trusted_proxy_only(event) -> None:  # noqa: ANN001
    https = {"x-forwarded-proto": "https", "x-forwarded-for": "198.51.100.7"}
    with TestClient(create_app(event)) as client:
        resp = client.get("/api/live", headers=https)
        assert "strict-transport-security" not in resp.headers
        assert "server" not in resp.headers
    with TestClient(create_app(event), base_url="https://testserver") as client:
        assert "max-age" in client.get("/api/live").headers["strict-transport-security"]
    with TestClient(create_app(event, trusted_proxies=("testclient",))) as client:
        assert "strict-transport-security" in client.get("/api/live", headers=https).headers
        assert "strict-transport-security" not in client.get("/api/live").headers


# --------------------------------------------------------------------------- a real server


def _address(url: str) -> tuple[str, int]:
    parsed = urlparse(url)
    assert parsed.hostname and parsed.port
    return parsed.hostname, parsed.port


def _get(url: str, path: str, *, source: str = "127.0.0.1",
         headers: dict[str, str] | None = None, method: str = "GET",
         body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*_address(url), timeout=10, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def _raw(url: str, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Send ``data`` on a fresh connection; all the server answers until it closes."""
    with socket.create_connection(_address(url), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)


def _closed(sock: socket.socket) -> bool:
    """True once the server has closed ``sock`` (non-blocking)."""
    sock.setblocking(False)
    try:
        return sock.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.slow
def test_the_real_server_bounds_bodies_and_names_no_server(event) -> None:  # noqa: ANN001
    with serve(event.path) as served:
        status, headers, _ = _get(served.url, "/api/live")
        assert status == 200 and "server" not in headers
        # uvicorn's own answer to a malformed request carries the headers too
        answer = _raw(served.url, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400") and b"content-security-policy" in answer
        # a chunked body past the limit: 413 after a few KiB, the rest never read
        head = (b"POST /api/td HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                b"\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"2000\r\n" + b" " * 0x2000 + b"\r\n"
        answer = _raw(served.url, head + chunk)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"x-frame-options" in answer
        # 64 MB sent as fast as it goes: refused early, the server's memory does not grow
        server = psutil.Process(served.proc.pid)
        before = server.memory_info().rss
        sent = 0
        with socket.create_connection(_address(served.url), timeout=10) as sock, \
                contextlib.suppress(OSError):
            sock.sendall(head)
            big = b"10000\r\n" + b"[" * 0x10000 + b"\r\n"
            while sent < 64 << 20:
                sock.sendall(big)
                sent += len(big)
        grown = server.memory_info().rss - before
        assert sent < 32 << 20, sent  # the server stopped reading long before the end
        assert grown < 16 << 20, grown
        assert _get(served.url, "/api/live")[0] == 200


@pytest.mark.slow
def test_slow_clients_are_dropped_and_the_feed_keeps_its_pace(tmp_path: Path) -> None:
    """Connections that send half a request line, or trickle headers one every 0.5 s, are
    closed within the client timeout (10 s by default); meanwhile pages answer and the live
    feed brings every move."""
    config = generate_event(tmp_path, engines=4, rounds=2, finished_rounds=1, running=1,
                            plies=10)
    with serve(config.path) as served:
        host, port = _address(served.url)
        slow = []
        for n in range(40):  # 10 from each of 4 addresses: within the cap per client
            sock = socket.create_connection((host, port), timeout=5,
                                            source_address=(f"127.0.1.{n % 4 + 1}", 0))
            sock.sendall(b"GET / HT" if n % 2 else b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(sock)
        conn = http.client.HTTPConnection(host, port, timeout=10)
        conn.request("GET", "/events")
        resp = conn.getresponse()
        assert resp.status == 200
        gaps: list[float] = []
        stop = threading.Event()

        def read_feed() -> None:
            last = time.monotonic()
            while not stop.is_set():
                try:
                    line = resp.readline()
                except (OSError, ValueError):  # closed when the test ends
                    return
                if not line:
                    return
                if line.startswith(b"data: "):
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now

        reader = threading.Thread(target=read_feed, daemon=True)
        reader.start()
        store = Store.open(config.database)
        game = json.loads(_get(served.url, "/api/live")[2])["games"][0]
        board = chess.Board(game["fen"])
        ply = game["ply"]
        started = time.monotonic()
        closed_at: dict[int, float] = {}
        try:
            while time.monotonic() - started < 16 and len(closed_at) < len(slow):
                for n, sock in enumerate(slow):
                    if n in closed_at:
                        continue
                    if _closed(sock):
                        closed_at[n] = time.monotonic() - started
                    elif n % 2 == 0:  # trickle one more header line
                        with contextlib.suppress(OSError):
                            sock.sendall(f"X-Slow-{ply}: {n}\r\n".encode())
                ply += 1
                play_first_move(store, game["game_id"], board, ply)
                assert _get(served.url, "/standings")[0] == 200
                time.sleep(0.5)
        finally:
            store.close()
            stop.set()
            conn.close()
            for sock in slow:
                sock.close()
        assert len(closed_at) == len(slow), f"{len(slow) - len(closed_at)} slow ones still open"
        assert max(closed_at.values()) < 13.0, closed_at
        assert len(gaps) >= 10 and max(gaps[1:]) < 2.0, gaps


@pytest.mark.slow
def test_connections_past_the_cap_get_503(event) -> None:  # noqa: ANN001
    with serve(event.path, "--max-connections", "20", "--nice", "7") as served:
        # and it gives the CPU to the event first (its default lowers it by 10), once it
        # serves (its address is printed a moment before)
        wanted = min(19, psutil.Process().nice() + 7)
        wait_until(lambda: psutil.Process(served.proc.pid).nice() == wanted,
                   f"the server at nice {wanted}", 10, step=0.1)
        host, port = _address(served.url)
        idle = [socket.create_connection((host, port), timeout=5,  # 5 from each of 4
                                         source_address=(f"127.0.1.{n % 4 + 1}", 0))
                for n in range(20)]
        try:
            time.sleep(0.3)
            answer = _raw(served.url, b"")  # the 21st: answered at once, closed
            assert answer.startswith(b"HTTP/1.1 503"), answer[:100]
            assert b"retry-after: 5" in answer and b"content-security-policy" in answer
        finally:
            for sock in idle:
                sock.close()
        def answers() -> bool:
            with contextlib.suppress(OSError, http.client.HTTPException):
                return _get(served.url, "/api/live")[0] == 200
            return False
        wait_until(answers, "the server did not answer again once they left", 5, step=0.2)


@pytest.mark.slow
def test_the_wrong_token_limit_is_keyed_on_the_real_client(event, tmp_path: Path) -> None:  # noqa: ANN001
    tokens = tmp_path / "admins"
    tokens.write_text(f"carol {ADMIN}\n")
    tokens.chmod(0o600)
    note = json.dumps({"action": "note", "text": "x"}).encode()

    def td(url: str, token: str, source: str, forwarded: str | None = None) -> int:
        headers = {"content-type": "application/json", "x-admin-token": token}
        if forwarded:
            headers["x-forwarded-for"] = forwarded
        return _get(url, "/api/td", source=source, headers=headers, method="POST",
                    body=note)[0]

    with serve(event.path, "--admin-token-file", str(tokens)) as served:
        # no proxy trusted, not even on this machine: a changing X-Forwarded-For does not
        # escape the limit, and does not lock out the address it names
        codes = [td(served.url, f"wrong-token-{n:04d}", "127.0.0.1", f"127.0.0.{n + 10}")
                 for n in range(11)]
        assert codes[-1] == 429 and codes[:10] == [403] * 10, codes
        assert td(served.url, ADMIN, "127.0.0.15") == 200  # named by the attacker: not locked
        assert td(served.url, ADMIN, "127.0.0.1", "127.0.0.15") == 429  # the attacker is
    with serve(event.path, "--admin-token-file", str(tokens),
               "--trusted-proxy", "127.0.0.2") as served:
        # through the proxy (127.0.0.2 here), each client by the address the proxy saw
        codes = [td(served.url, f"wrong-token-{n:04d}", "127.0.0.2", "127.0.0.5")
                 for n in range(11)]
        assert codes[-1] == 429, codes
        assert td(served.url, ADMIN, "127.0.0.2", "127.0.0.6") == 200  # another viewer
        assert td(served.url, ADMIN, "127.0.0.2", "127.0.0.5") == 429


def _stream(url: str, source: str, forwarded: str | None = None) -> tuple[socket.socket, bytes]:
    """An event stream opened from ``source`` (through a proxy when ``forwarded``): its
    socket, left open, and the head of the answer."""
    sock = socket.create_connection(_address(url), timeout=10, source_address=(source, 0))
    extra = f"X-Forwarded-For: {forwarded}\r\n" if forwarded else ""
    sock.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return sock, head


def _refused(answer: bytes) -> None:
    assert answer.startswith(b"HTTP/1.1 429"), answer[:200]
    assert b"retry-after: 5" in answer.lower() and b"content-security-policy" in answer.lower()


def _served_again(url: str, source: str, forwarded: str | None = None) -> None:
    def served() -> bool:
        sock, head = _stream(url, source, forwarded)
        sock.close()
        return head.startswith(b"HTTP/1.1 200")
    wait_until(served, f"{source} was not served again once its connections closed", 5,
               step=0.2)


@pytest.mark.slow
def test_one_client_cannot_take_every_slot(event) -> None:  # noqa: ANN001
    """With serve's defaults (16 connections, 8 event streams per client address), a client
    at its cap is answered 429 while another address is still served."""
    with serve(event.path, "--max-connections", "40") as served:
        host, port = _address(served.url)
        held: list[socket.socket] = []
        try:
            for _ in range(8):
                sock, head = _stream(served.url, "127.0.0.3")
                held.append(sock)
                assert head.startswith(b"HTTP/1.1 200"), head[:200]
            sock, head = _stream(served.url, "127.0.0.3")  # its 9th stream
            held.append(sock)
            _refused(head)
            sock, head = _stream(served.url, "127.0.0.4")  # another viewer's
            held.append(sock)
            assert head.startswith(b"HTTP/1.1 200"), head[:200]
            sock.close()
            held[-2].close()  # the refused one
            del held[-2:]
            held += [socket.create_connection((host, port), timeout=5,
                                              source_address=("127.0.0.3", 0))
                     for _ in range(8)]  # its 16 connections: 8 streams, 8 idle
            time.sleep(0.3)
            with socket.create_connection((host, port), timeout=5,
                                          source_address=("127.0.0.3", 0)) as sock:
                answer = b""  # its 17th: answered at once, closed
                while chunk := sock.recv(4096):
                    answer += chunk
            _refused(answer)
            assert _get(served.url, "/api/live", source="127.0.0.4")[0] == 200
        finally:
            for sock in held:
                sock.close()
        _served_again(served.url, "127.0.0.3")


@pytest.mark.slow
def test_behind_a_proxy_each_client_is_limited_by_its_own_address(event) -> None:  # noqa: ANN001
    """Through a trusted proxy (127.0.0.2 here) the proxy's own connections are not capped
    per address; each client it names is, by its requests in flight and event streams."""
    with serve(event.path, "--trusted-proxy", "127.0.0.2", "--max-per-client", "3",
               "--max-streams-per-client", "2") as served:
        held: list[socket.socket] = []
        try:
            for _ in range(2):
                sock, head = _stream(served.url, "127.0.0.2", "127.0.0.5")
                held.append(sock)
                assert head.startswith(b"HTTP/1.1 200"), head[:200]
            sock, head = _stream(served.url, "127.0.0.2", "127.0.0.5")  # its 3rd stream
            held.append(sock)
            _refused(head)
            # a request's body trickled: in flight, its 3rd request; the 4th is refused
            slow = socket.create_connection(_address(served.url), timeout=10,
                                            source_address=("127.0.0.2", 0))
            held.append(slow)
            slow.sendall(b"POST /api/td HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: "
                         b"127.0.0.5\r\nContent-Type: application/json\r\n"
                         b"Content-Length: 100\r\n\r\n{")
            time.sleep(0.3)
            status, headers, _ = _get(served.url, "/api/live", source="127.0.0.2",
                                      headers={"x-forwarded-for": "127.0.0.5"})
            assert status == 429 and headers["retry-after"] == "5", status
            assert all(h in headers for h in HEADERS)
            # the proxy holds 5 open connections (3 per address): another client is served
            for _ in range(2):
                sock, head = _stream(served.url, "127.0.0.2", "127.0.0.6")
                held.append(sock)
                assert head.startswith(b"HTTP/1.1 200"), head[:200]
            assert _get(served.url, "/api/live", source="127.0.0.2",
                        headers={"x-forwarded-for": "127.0.0.6"})[0] == 200
            # a direct client is still capped per connection: 3
            held += [socket.create_connection(_address(served.url), timeout=5,
                                              source_address=("127.0.0.7", 0))
                     for _ in range(3)]
            time.sleep(0.3)
            with socket.create_connection(_address(served.url), timeout=5,
                                          source_address=("127.0.0.7", 0)) as sock:
                answer = sock.recv(4096)
            _refused(answer)
        finally:
            for sock in held:
                sock.close()
        _served_again(served.url, "127.0.0.2", "127.0.0.5")


def test_a_client_is_its_address_or_its_ipv6_network() -> None:
    from runner.web.shield import client_key, forwarded_client  # (client_key: new here)

    assert client_key("198.51.100.7") == "198.51.100.7"
    assert client_key("2001:db8:1:2::1") == client_key("2001:db8:1:2:ffff::9")
    assert client_key("2001:db8:1:2::1") != client_key("2001:db8:1:3::1")
    assert client_key("::ffff:198.51.100.7") == "198.51.100.7"
    assert client_key("testclient") == "testclient"
    # a proxy on 127.0.0.1 seen by a dual-stack socket (--listen [::]) is still that proxy
    scope = {"client": ("::ffff:127.0.0.1", 4000),
             "headers": [(b"x-forwarded-for", b"::ffff:198.51.100.7")]}
    assert forwarded_client(scope, frozenset({"127.0.0.1"}))[0] == "198.51.100.7"


def test_bad_serve_options_are_refused(event) -> None:  # noqa: ANN001
    for option, value, said in (("--trusted-proxy", "proxy.local", "IP address"),
                                ("--max-connections", "0", "1 or more"),
                                ("--client-timeout", "0", "more than 0"),
                                ("--max-per-client", "0", "1 or more"),
                                ("--max-streams-per-client", "0", "1 or more"),
                                ("--nice", "20", "0 (the priority")):
        done = cli("serve", str(event.path), "--port", "0", option, value)
        assert done.returncode == 2, (option, done.stdout, done.stderr)
        assert option in done.stderr and said in done.stderr and "Traceback" not in done.stderr
