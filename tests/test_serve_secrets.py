"""`serve`'s token never on the command line of an exposed dashboard, and its cookie Secure
over https: a real `swiss-runner serve` process, requests over real sockets (from
127.0.0.1, a trusted proxy by default, and from 127.0.0.2, which is not)."""

from __future__ import annotations

import http.client
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
    return generate_event(tmp_path_factory.mktemp("secrets"), engines=4, rounds=1,
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
        set_cookie = cookie(served.url, headers=https)  # the local proxy says https
        assert "Secure" in set_cookie and "HttpOnly" in set_cookie
        # anyone else saying so is not believed (a proxy is trusted by its address)
        assert "Secure" not in cookie(served.url, source="127.0.0.2", headers=https)
    with serve(event.path, "--token-file", str(path), "--trusted-proxy", "127.0.0.2") as served:
        assert "Secure" in cookie(served.url, source="127.0.0.2", headers=https)
        assert "Secure" not in cookie(served.url, headers=https)  # 127.0.0.1 is not one now
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
