"""`serve`'s token never on the command line of an exposed dashboard, and its cookie Secure
over https: a real `swiss-runner serve` process, requests over real sockets (from
127.0.0.2, a trusted proxy when named with --trusted-proxy, and from 127.0.0.1, which is
then not: no proxy is trusted by default)."""

from __future__ import annotations

import http.client
import json
import sqlite3
from pathlib import Path
from urllib.parse import urlparse

import psutil
import pytest
from testkit import run_cli as cli
from web_event import generate_event
from web_support import serve

REPO = Path(__file__).resolve().parent.parent
TOKEN = "file-token-4711-secret"

pytest.importorskip("uvicorn")


@pytest.fixture(scope="module")
def event(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    # round 2 paired and not played: a TD pause still applies to it
    return generate_event(tmp_path_factory.mktemp("secrets"), engines=4, rounds=2,
                          finished_rounds=1, running=0, names=["A", "B", "C", "D"], plies=10)


def token_file(directory: Path, text: str = TOKEN + "\n", mode: int = 0o600) -> Path:
    path = directory / "token"
    path.write_text(text)
    path.chmod(mode)
    return path


def cookie(url: str, *, source: str = "127.0.0.1", headers: dict[str, str] | None = None
           ) -> str:
    """The Set-Cookie header of ``/?token=TOKEN`` asked from ``source``."""
    parsed = urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10,
                                      source_address=(source, 0))
    try:
        conn.request("GET", f"/?token={TOKEN}", headers=headers or {})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 303, resp.status
        return resp.getheader("set-cookie") or ""
    finally:
        conn.close()


@pytest.mark.slow
def test_token_file_and_secure_cookie(event, tmp_path: Path) -> None:  # noqa: ANN001
    path = token_file(tmp_path)
    with serve(event.path, "--token-file", str(path)) as served:
        assert TOKEN not in " ".join(psutil.Process(served.proc.pid).cmdline())
        https = {"X-Forwarded-Proto": "https"}
        assert "Secure" not in cookie(served.url)  # plain http, no proxy
        # no proxy is trusted unless named: not even one on this machine
        assert "Secure" not in cookie(served.url, headers=https)
    with serve(event.path, "--token-file", str(path), "--trusted-proxy", "127.0.0.2") as served:
        set_cookie = cookie(served.url, source="127.0.0.2", headers=https)  # the proxy says https
        assert "Secure" in set_cookie and "HttpOnly" in set_cookie
        # anyone else saying so is not believed (a proxy is trusted by its address)
        assert "Secure" not in cookie(served.url, headers=https)
    with serve(event.path, "--token-file", str(path), "--secure-cookie") as served:
        assert "Secure" in cookie(served.url)


@pytest.mark.slow
def test_token_on_the_command_line_is_refused_beyond_loopback(event, tmp_path: Path  # noqa: ANN001
                                                             ) -> None:
    refused = cli("serve", str(event.path), "--host", "0.0.0.0", "--token", TOKEN)
    assert refused.returncode == 2 and "--token-file" in refused.stderr
    assert "Traceback" not in refused.stderr
    both = cli("serve", str(event.path), "--token", TOKEN, "--token-file",
               str(token_file(tmp_path)))
    assert both.returncode == 2 and "one of them" in both.stderr
    missing = cli("serve", str(event.path), "--host", "0.0.0.0", "--token-file",
                  str(tmp_path / "nothing"))
    assert missing.returncode == 2 and "--token-file" in missing.stderr
    empty = cli("serve", str(event.path), "--host", "0.0.0.0", "--token-file",
                str(token_file(tmp_path, "\n")))
    assert empty.returncode == 2 and "empty" in empty.stderr
    short = cli("serve", str(event.path), "--host", "0.0.0.0", "--token-file",
                str(token_file(tmp_path, "short\n")))
    assert short.returncode == 2 and "at least 8" in short.stderr


@pytest.mark.slow
def test_a_readable_token_file_is_warned_about(event, tmp_path: Path) -> None:  # noqa: ANN001
    path = token_file(tmp_path, mode=0o644)
    result = cli("serve", str(event.path), "--token-file", str(path), "--port", "70000")
    assert result.returncode == 2 and "not a TCP port" in result.stderr  # it stops there
    assert f"other users may read it (chmod 600 {path})" in result.stderr
    private = cli("serve", str(event.path), "--token-file", str(token_file(tmp_path)),
                  "--port", "70000")
    assert "chmod" not in private.stderr


# --------------------------------------------------------------------------- wrong tokens


def request(url: str, method: str, path: str, *, source: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    """(status, body, headers) of one request from ``source`` over a real socket."""
    parsed = urlparse(url)
    conn = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10,
                                      source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def test_wrong_tokens_are_limited_per_address_and_logged(event, tmp_path: Path) -> None:  # noqa: ANN001
    """#48 item 5: 10 wrong tokens from one address within a minute, and that address gets
    429 (even with the right token) while the others go on; each failure is logged with the
    address, never the token; the log says which person acted (web:NAME)."""
    admins = tmp_path / "admins"
    admins.write_text("alice alice-token-0123456\nbob bob-token-98765432\n")
    admins.chmod(0o600)
    wrong_admin, wrong_access = "guess-admin-000000", "guess-access-00000"
    auth = {"authorization": f"Bearer {TOKEN}"}

    def td(source: str, admin: str, body: dict[str, str]) -> tuple[int, str]:
        status, text, _ = request(url, "POST", "/api/td", source=source, body=json.dumps(
            body).encode(), headers={**auth, "content-type": "application/json",
                                     "x-admin-token": admin})
        return status, text

    note = {"action": "note", "text": "hello"}
    with serve(event.path, "--token-file", str(token_file(tmp_path)), "--admin-token-file",
               str(admins)) as served:
        url = served.url
        statuses = [td("127.0.0.2", wrong_admin, note)[0] for _ in range(10)]
        assert statuses == [403] * 10
        assert td("127.0.0.2", wrong_admin, note)[0] == 429
        assert td("127.0.0.2", "alice-token-0123456", note)[0] == 429  # blocked: not tried
        status, text = td("127.0.0.3", "bob-token-98765432", note)  # another address acts
        assert status == 200, text
        status, text = td("127.0.0.3", "alice-token-0123456",
                          {"action": "pause", "mode": "end-of-round", "reason": "night"})
        assert status == 200, text
        # the access token of the dashboard itself, from yet another address
        pages = [request(url, "GET", "/api/state", source="127.0.0.4",
                         headers={"authorization": f"Bearer {wrong_access}"})[0]
                 for _ in range(10)]
        assert pages == [401] * 10
        status, _, headers = request(url, "GET", "/api/state", source="127.0.0.4", headers=auth)
        assert status == 429 and 0 < int(headers["retry-after"]) <= 60
        assert request(url, "GET", "/api/state", source="127.0.0.5", headers=auth)[0] == 200
        assert request(url, "GET", "/", source="127.0.0.5")[0] == 401  # no token: not a guess
    log = served.proc.stdout.read().decode()  # type: ignore[union-attr]
    assert log.count("wrong admin token from 127.0.0.2") == 10, log
    assert log.count("wrong access token from 127.0.0.4") == 10, log
    assert "refused for 60s" in log and "127.0.0.5" not in log
    assert wrong_admin not in log and wrong_access not in log and "alice-token" not in log
    conn = sqlite3.connect(f"{event.database.as_uri()}?mode=ro", uri=True)
    try:
        given = conn.execute("SELECT action, who, args FROM td_commands ORDER BY id").fetchall()
    finally:
        conn.close()
    assert [(a, w, json.loads(x).get("mode")) for a, w, x in given] == [
        ("note", "web:bob", None), ("pause", "web:alice", "after-round")]


def test_the_throttle_forgets_after_its_back_off() -> None:
    from runner.web.app import Throttle

    now = [0.0]
    throttle = Throttle(limit=3, window_s=10, backoff_s=5, clock=lambda: now[0])
    throttle.failed("a", "admin")
    now[0] = 11.0  # out of the window: forgotten
    throttle.failed("a", "admin")
    throttle.failed("a", "admin")
    assert throttle.blocked("a") == 0
    throttle.failed("a", "admin")
    assert throttle.blocked("a") == 5 and throttle.blocked("b") == 0
    now[0] = 15.5
    assert throttle.blocked("a") == 1
    now[0] = 16.0
    assert throttle.blocked("a") == 0
