"""The dashboard's HTTP server: uvicorn with bounds on connections and on slow clients.

uvicorn's own bounds (``limit_concurrency``, ``timeout_keep_alive``, h11's limit on a
request's head) leave two holes this module closes: a connection that never completes a
request's head (half a request line, headers trickled one every few seconds) is kept
forever, and past ``limit_concurrency`` uvicorn answers without the dashboard's security
headers. :class:`Connections` counts the open connections (one more than ``max_connections``
is answered 503 at once and closed) and closes every connection on which no request has been
in flight for ``idle_s`` seconds; :func:`make_server` builds the server with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runner.web.shield import SECURITY_HEADERS

MAX_HEAD = 16 * 1024  # the largest request line and headers h11 takes (431 past it)


def _raw_answer(status: bytes, text: str, *extra: tuple[bytes, bytes]) -> bytes:
    """A whole HTTP/1.1 answer that closes the connection, with the security headers."""
    body = text.encode()
    lines = [b"HTTP/1.1 " + status, b"content-type: text/plain; charset=utf-8",
             b"connection: close", b"content-length: " + str(len(body)).encode(),
             *(name + b": " + value for name, value in (*SECURITY_HEADERS, *extra))]
    return b"\r\n".join(lines) + b"\r\n\r\n" + body


BUSY = _raw_answer(b"503 Service Unavailable", "too many connections: try again shortly\n",
                   (b"retry-after", b"5"))


def _key(transport: Any) -> tuple[str, int] | None:
    peer = transport.get_extra_info("peername")
    return (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else None


@dataclass
class _Open:
    transport: Any
    busy: int = 0
    since: float = 0.0
    timer: asyncio.TimerHandle | None = None


class Connections:
    """The server's open connections by peer (the ASGI scope's ``client``), and whether a
    request is in flight on each (:meth:`begin` / :meth:`end`, from the Shield)."""

    def __init__(self, max_connections: int = 1000, idle_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        self.max_connections = max_connections
        self.idle_s = idle_s
        self.clock = clock
        self.open: dict[tuple[str, int], _Open] = {}
        self.refused = 0
        self.dropped = 0

    def made(self, transport: Any) -> None:
        """A new connection: watched, or answered 503 and closed when there are too many."""
        key = _key(transport)
        if key is None:
            return
        if len(self.open) >= self.max_connections:
            self.refused += 1
            transport.write(BUSY)
            transport.close()
            return
        self.open[key] = _Open(transport, since=self.clock())
        self._arm(key, self.idle_s)

    def lost(self, transport: Any) -> None:
        key = _key(transport)
        entry = self.open.get(key) if key is not None else None
        if entry is not None and entry.transport is transport:
            if entry.timer is not None:
                entry.timer.cancel()
            del self.open[key]  # type: ignore[arg-type]

    def begin(self, client: Any) -> None:
        entry = self.open.get(tuple(client)) if client else None  # type: ignore[arg-type]
        if entry is not None:
            entry.busy += 1

    def end(self, client: Any) -> None:
        entry = self.open.get(tuple(client)) if client else None  # type: ignore[arg-type]
        if entry is not None:
            entry.busy = max(0, entry.busy - 1)
            entry.since = self.clock()
            self._arm(tuple(client), self.idle_s)  # type: ignore[arg-type]

    def _arm(self, key: tuple[str, int], delay: float) -> None:
        entry = self.open[key]
        if entry.timer is not None:
            entry.timer.cancel()
        entry.timer = asyncio.get_running_loop().call_later(delay, self._check, key)

    def _check(self, key: tuple[str, int]) -> None:
        entry = self.open.get(key)
        if entry is None or entry.busy:
            return  # gone, or a request in flight: armed again when it ends
        left = entry.since + self.idle_s - self.clock()
        if left > 0:
            self._arm(key, left)
            return
        self.dropped += 1
        entry.timer = None
        entry.transport.close()


def protocol_class(connections: Connections) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, with its connections watched by ``connections`` and its own
    400 (a malformed request) carrying the security headers."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class WatchedH11(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.watched = transport
            connections.made(transport)

        def connection_lost(self, exc: Exception | None) -> None:
            connections.lost(self.watched)
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            self.watched.write(_raw_answer(b"400 Bad Request", msg + "\n"))
            self.watched.close()

    return WatchedH11


def open_files_for(connections: int) -> int:
    """Raise this process's open-file limit (soft, up to the hard one) to leave room for
    ``connections`` sockets and the rest; the limit it has then."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + 128
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def make_server(app: Any, connections: Connections, *, loop: str,
                on_exit: Callable[[], None]) -> Any:
    """A uvicorn server of ``app`` whose connections ``connections`` bounds; ``on_exit`` is
    called when it is told to stop (before it waits for its connections)."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: object) -> None:
            on_exit()
            super().handle_exit(sig, frame)  # type: ignore[arg-type]

    return Server(uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", loop=loop,
        use_colors=False,  # its ANSI colours would be shown escaped (EscapingStream)
        timeout_graceful_shutdown=2, proxy_headers=False, server_header=False,
        http=protocol_class(connections), timeout_keep_alive=5,
        # a backstop: the Shield and Connections answer (with the headers) before it
        limit_concurrency=connections.max_connections + 64,
        h11_max_incomplete_event_size=MAX_HEAD))


__all__ = ["Connections", "make_server", "open_files_for", "protocol_class"]
