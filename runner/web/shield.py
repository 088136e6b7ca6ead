"""The dashboard's front door: what every request meets before any work is done for it.

:class:`Shield` is the outermost ASGI middleware. In order, for each request: the real
client and scheme (X-Forwarded-For / X-Forwarded-Proto believed only from the proxies the
operator names), the Host header against the names the dashboard answers to (DNS
rebinding: 421), the number of requests in flight (503 past it), the body (its route's
limit, 413 past it while it is read, 408 when it comes too slowly), then the app; every
answer, errors included, carries the same security headers (HSTS over https) and an
exception in the app becomes a plain 500 and one log line, never a traceback.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOG = logging.getLogger("runner.web")

SECURITY_HEADERS = [
    (b"content-security-policy",
     b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
     b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]
HSTS = (b"strict-transport-security", b"max-age=31536000")
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
KIB = 1024


@dataclass(frozen=True)
class Limits:
    """What one request may cost. ``bodies``: the largest body by path (POST routes);
    any other path takes none. ``body_timeout_s``: the whole body must arrive within it.
    ``max_requests``: requests in flight at once, event streams apart (``max_streams``)."""

    bodies: dict[str, int] = field(default_factory=lambda: {"/api/td": 4 * KIB,
                                                            "/admin": 64 * KIB})
    body_timeout_s: float = 10.0
    max_requests: int = 64
    max_streams: int = 1000
    retry_after_s: int = 5


def host_name(value: str) -> str:
    """The host of a Host header or an Origin's netloc, without port, lower case."""
    value = value.strip().lower()
    if value.startswith("["):  # [::1]:8080
        return value[1:value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        return value.split(":", 1)[0]
    return value


class Hosts:
    """The names the dashboard answers to: exact names, and ``*.domain`` for its
    subdomains; ``any``: every name (a test client, or an operator's explicit ``*``)."""

    def __init__(self, names: Iterable[str]):
        self.exact: set[str] = set()
        self.suffixes: list[str] = []
        self.any = False
        for name in names:
            name = host_name(name)
            if name == "*":
                self.any = True
            elif name.startswith("*."):
                self.suffixes.append(name[1:])
            elif name:
                self.exact.add(name)

    def allows(self, name: str) -> bool:
        name = host_name(name)
        return self.any or name in self.exact or any(name.endswith(s) for s in self.suffixes)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def forwarded_client(scope: Scope, trusted: frozenset[str]) -> tuple[str, str]:
    """(client address, scheme) of a request: the peer's, or, from a trusted proxy, those
    its X-Forwarded-For (its last entry: the address the proxy itself saw) and
    X-Forwarded-Proto say."""
    peer = str((scope.get("client") or ("?", 0))[0])
    scheme = str(scope.get("scheme") or "http")
    if peer not in trusted:
        return peer, scheme
    for name, value in scope.get("headers") or ():
        if name == b"x-forwarded-for":
            last = value.decode("latin-1").split(",")[-1].strip()
            if _is_address(last):
                peer = last
        elif name == b"x-forwarded-proto":
            proto = value.decode("latin-1").split(",")[0].strip().lower()
            if proto in ("http", "https"):
                scheme = proto
    return peer, scheme


def _header(scope: Scope, wanted: bytes) -> str | None:
    for name, value in scope.get("headers") or ():
        if name == wanted:
            return value.decode("latin-1")
    return None


class Shield:
    """The outermost middleware (module docstring). ``trusted_proxies``: addresses whose
    forwarding headers are believed (none by default); ``hosts``: the names answered to;
    ``limits``: :class:`Limits`; ``activity``: told when a request starts and ends on a
    connection (the server's idle-connection watchdog), if any."""

    def __init__(self, app: ASGIApp, *, trusted_proxies: Iterable[str] = (),
                 hosts: Hosts | None = None, limits: Limits | None = None,
                 activity: Any = None):
        self.app = app
        self.trusted = frozenset(trusted_proxies)
        self.hosts = hosts or Hosts(["*"])
        self.limits = limits or Limits()
        self.activity = activity
        self.requests = 0
        self.streams = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_client = scope.get("client")
        if self.activity is not None:
            self.activity.begin(raw_client)
        try:
            await self._http(scope, receive, send)
        finally:
            if self.activity is not None:
                self.activity.end(raw_client)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        peer = scope.get("client") or ("?", 0)
        client, scheme = forwarded_client(scope, self.trusted)
        scope = dict(scope, scheme=scheme)
        if client != str(peer[0]):
            scope["client"] = (client, 0)
        started: list[bool] = [False]
        extra = [*SECURITY_HEADERS, *([HSTS] if scheme == "https" else [])]

        async def guarded_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                started[0] = True
                message = dict(message)
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        host = _header(scope, b"host")
        if host is not None and not self.hosts.allows(host):
            await plain(guarded_send, 421, "this dashboard does not answer to that name\n",
                        close=True)
            return
        replay = await self._body(scope, receive, guarded_send)
        if replay is None:
            return
        stream = scope.get("path") == "/events"
        if (self.streams >= self.limits.max_streams if stream
                else self.requests >= self.limits.max_requests):
            await plain(guarded_send, 503, "too many requests at once: try again shortly\n",
                        retry_after=self.limits.retry_after_s)
            return
        if stream:
            self.streams += 1
        else:
            self.requests += 1
        try:
            await self.app(scope, replay, guarded_send)
        except Exception as exc:  # noqa: BLE001 - one line, a plain 500: never a traceback
            LOG.error("%s %s: %s: %s", scope.get("method"), scope.get("path"),
                      type(exc).__name__, exc)
            if not started[0]:
                await plain(guarded_send, 500, "internal error (the server's log says which)\n",
                            close=True)
        finally:
            if stream:
                self.streams -= 1
            else:
                self.requests -= 1

    async def _body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """A receive that replays the request's body, read here within its route's limit
        and time; None when the request was answered already (413, 408, 400)."""
        length = _header(scope, b"content-length")
        chunked = "chunked" in (_header(scope, b"transfer-encoding") or "").lower()
        if not chunked and (length is None or length.strip() == "0"):
            return receive  # no body: the app's receive is the server's own
        limit = self.limits.bodies.get(scope.get("path", ""), 0)
        if scope.get("method") not in ("POST", "PUT", "PATCH"):
            limit = 0
        if length is not None and not chunked:
            try:
                declared = int(length)
            except ValueError:
                await plain(send, 400, "bad Content-Length\n", close=True)
                return None
            if declared > limit:
                await plain(send, 413, f"the body is limited to {limit} bytes here\n",
                            close=True)
                return None
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + self.limits.body_timeout_s
        more = True
        while more:
            left = deadline - time.monotonic()
            try:
                message = await asyncio.wait_for(receive(), max(left, 0.001))
            except TimeoutError:
                await plain(send, 408, "the request's body came too slowly\n", close=True)
                return None
            if message["type"] == "http.disconnect":
                return None
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await plain(send, 413, f"the body is limited to {limit} bytes here\n",
                            close=True)
                return None
            chunks.append(body)
            more = bool(message.get("more_body"))
        replayed = [False]

        async def replay() -> Message:
            if not replayed[0]:
                replayed[0] = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        return replay


async def plain(send: Send, status: int, text: str, *, close: bool = False,
                retry_after: int | None = None) -> None:
    """A short text/plain answer (the caller's ``send`` adds the security headers)."""
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"cache-control", b"no-store")]
    if close:
        headers.append((b"connection", b"close"))
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    body = text.encode()
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def json_depth(text: str | bytes, limit: int) -> bool:
    """True when the JSON ``text`` nests no deeper than ``limit`` (brackets outside
    strings), so that parsing it cannot recurse deeply."""
    data = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    depth = 0
    in_string = escaped = False
    for char in data:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return False
        elif char in "]}":
            depth -= 1
    return True


__all__ = ["HSTS", "LOCAL_NAMES", "SECURITY_HEADERS", "Hosts", "Limits", "Shield",
           "forwarded_client", "host_name", "json_depth", "plain"]
