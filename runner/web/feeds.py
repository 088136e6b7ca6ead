"""PGN feeds for relay sites and GUIs that poll: ``/live.pgn``, ``/round/N.pgn``, ``/event.pgn``.

Each feed is built at most once per change of the database (the watcher's generation, see
:class:`runner.web.app.Hub`), on the first request after the change, in a worker thread,
whatever the number of pollers; every other request is answered from memory. Each answer
carries an ``ETag`` (a hash of the text) and ``Last-Modified`` (when the text last changed);
``If-None-Match`` / ``If-Modified-Since`` are answered with ``304 Not Modified`` while the
text is the same.
"""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from runner.config import Config
from runner.service.views.livepgntext import LivePgnBuilder, read_live
from runner.store.database import Store, StoreError
from runner.web import model, public

PGN_TYPE = "application/x-chess-pgn; charset=utf-8"
MAX_FEEDS = 256  # rounds asked for (a request names a round): never more kept than this


@dataclass(frozen=True)
class Feed:
    generation: int
    body: bytes | None  # None: there is no such feed (404)
    etag: str
    modified: float  # Unix time the text last changed
    ambiguous: bool  # an earlier text changed within the same second (see not_modified)

    def not_modified(self, request: Request) -> bool:
        match = request.headers.get("if-none-match")
        if match is not None:  # it decides alone when it is there (RFC 9110 13.2.2)
            tags = [t.strip().removeprefix("W/") for t in match.split(",")]
            return "*" in tags or self.etag in tags
        since = request.headers.get("if-modified-since")
        if since is None:
            return False
        try:
            seen = parsedate_to_datetime(since).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            return False
        second = int(self.modified)
        # a client holding a text of the same second as this one may hold the earlier text
        return second <= seen and not (self.ambiguous and second == int(seen))


class PgnFeeds:
    """The feeds of one dashboard; ``generation`` tells when the database changed."""

    def __init__(self, config: Config, generation: Callable[[], int]):
        self.config = config
        self.generation = generation
        self.builder = LivePgnBuilder(config.event, config.site)
        self.feeds: dict[str, Feed] = {}
        self.builds = 0
        self._lock: asyncio.Lock | None = None

    def _text(self, key: str) -> str | None:
        """Build one feed (in a worker thread), fit for the public (runner.web.public)."""
        text = self._read(key)
        return None if text is None else public.pgn(text)

    def _read(self, key: str) -> str | None:
        if key == "event":
            return model.event_pgn(self.config)
        number = None if key == "live" else int(key.removeprefix("round/"))
        if number is not None and not 0 < number <= model.MAX_GAME_ID:
            return None  # no such round (and beyond what SQLite can even be asked about)
        store = Store.open_readonly(self.config.database)
        if store is None:
            return "" if number is None else None  # relays may poll before the event starts
        try:
            return read_live(store, self.builder, number)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.config.database}: cannot read the games: {exc}") from None
        except (ValueError, KeyError, TypeError, AssertionError) as exc:  # a malformed record
            raise StoreError(f"{self.config.database}: cannot read the games: "
                             f"{type(exc).__name__}: {exc}") from None
        finally:
            store.close()

    async def get(self, key: str) -> Feed:
        """The feed ``key`` ("live", "event", "round/N") as of the latest generation."""
        generation = self.generation()
        feed = self.feeds.get(key)
        if feed is not None and feed.generation == generation:
            return feed
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:  # one build at a time; the pollers waiting get its result
            generation = self.generation()
            feed = self.feeds.get(key)
            if feed is not None and feed.generation == generation:
                return feed
            text = await asyncio.to_thread(self._text, key)
            self.builds += 1
            body = None if text is None else text.encode()
            etag = '"' + hashlib.sha1(body or b"\0none").hexdigest()[:24] + '"'
            now = time.time()
            if feed is not None and feed.etag == etag:
                new = Feed(generation, body, etag, feed.modified, feed.ambiguous)
            else:
                ambiguous = feed is not None and int(feed.modified) == int(now)
                new = Feed(generation, body, etag, now, ambiguous)
            if len(self.feeds) >= MAX_FEEDS and key not in self.feeds:
                self.feeds.clear()
            self.feeds[key] = new
            return new

    async def respond(self, request: Request, key: str, *, filename: str | None = None,
                      missing: str = "no such round") -> Response:
        try:
            feed = await self.get(key)
        except (StoreError, OSError) as exc:
            return Response(f"{public.text(str(exc))}\n", status_code=503,
                            media_type="text/plain")
        if feed.body is None:
            return Response(f"{missing}\n", status_code=404, media_type="text/plain")
        headers: dict[str, Any] = {"etag": feed.etag,
                                   "last-modified": formatdate(feed.modified, usegmt=True),
                                   "cache-control": "no-cache"}
        if filename is not None:
            headers["content-disposition"] = f'attachment; filename="{filename}"'
        if feed.not_modified(request):
            return Response(status_code=304, headers=headers)
        return Response(feed.body, media_type=PGN_TYPE, headers=headers)


__all__ = ["Feed", "PgnFeeds"]
