"""The dashboard as an ASGI app (Starlette): pages, JSON, PGN downloads, boards, live events.

The event is only read: the database is only ever opened read-only (``mode=ro``), a
watcher polls it cheaply (``PRAGMA data_version`` on one kept connection every ``poll_s``
seconds, 0.05; the lock file for the runner's state every ``alive_s``, 0.25), rebuilds the
:class:`~runner.web.model.View` in a worker thread when something changed, and pushes the live document to every
Server-Sent-Events client at once. Pages and JSON are served from the latest View, so
requests cost no database work however many browsers watch. Every URL in the pages is
relative, so the app works behind a reverse proxy under a path prefix. With admin tokens,
the TD's actions (/admin, /api/td) record commands through runner.service.td.director, as `td` does.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import hmac
import json
import logging
import math
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import chess
import chess.svg
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from runner.config import Config
from runner.domain.interruption import attempt_words
from runner.domain.standings import SHORT
from runner.service.interrupted import interrupted_lines
from runner.service.lock import runner_alive
from runner.store.database import StoreError, file_identity
from runner.store.forensics import connect
from runner.web import model, public
from runner.web.feeds import PgnFeeds
from runner.web.shield import LOCAL_NAMES, Hosts, Limits, Shield, json_depth

HERE = Path(__file__).resolve().parent
TOKEN_COOKIE = "swiss_runner_token"
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


# --------------------------------------------------------------------------- the watcher


class Hub:
    """Watches the database and holds the latest View; SSE clients wait on it."""

    alive_s = 0.25  # the runner's state (its lock file, maybe the database) read this often

    def __init__(self, config: Config, poll_s: float = 0.05):
        self.config = config
        self.poll_s = poll_s
        self._alive_at = -math.inf  # when the runner's state was last read (monotonic)
        self.view: model.View = model.View(state=None)
        self.generation = 0
        self._cond: asyncio.Condition | None = None
        self._conn: sqlite3.Connection | None = None
        self._ident: tuple[int, int] | None = None
        self._key: tuple[Any, ...] | None = None
        self._alive: bool | None = None
        self._alive_changed: tuple[bool | None, float] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.closing = False  # the server is shutting down: event streams end
        self._structure_key: tuple[Any, ...] | None = None
        self.polls = 0
        self.private_td: dict[str, Any] | None = None  # the TD's log with who acted
        self.builds = 0
        self.live_builds = 0
        self._refreshing = asyncio.Lock()

    # the cheap part, on the event loop: a stat, a PRAGMA, a non-blocking flock
    def _poll_key(self) -> tuple[Any, ...]:
        ident = file_identity(self.config.database)
        if ident != self._ident:
            self._close()
            self._ident = ident
        version: Any = None
        if ident is not None:
            try:
                if self._conn is None:
                    uri = f"{self.config.database.resolve().as_uri()}?mode=ro"
                    self._conn = connect(uri, self.config.database, uri=True,
                                         isolation_level=None, timeout=1.0)
                version = model.data_version(self._conn)
            except sqlite3.Error as exc:
                # tried again at every poll; read again only when that changes (a damaged
                # file would otherwise be read, and pushed to every browser, 4 times a second)
                self._close()
                version = ("error", str(exc))
        alive = self._alive
        if time.monotonic() - self._alive_at >= self.alive_s or self._key is None:
            alive = runner_alive(self.config.database)
            self._alive_at = time.monotonic()
        if alive != self._alive:
            if self._key is not None:
                self._alive_changed = (alive, time.time())
            self._alive = alive
        return (ident, version, alive)

    def _structure(self) -> tuple[Any, ...] | None:
        if self._conn is None:
            return None
        try:
            return model.structure_key(self._conn)
        except sqlite3.Error:
            return None

    def _close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()
            self._conn = None

    async def refresh(self) -> bool:
        """Poll once; rebuild and notify when something changed. True if it did.

        Moves coming in change only the games in progress: then only they are read again
        (:func:`model.refresh_live`); anything else rebuilds the whole View. One refresh at
        a time: a second caller waits, then finds nothing new instead of building it again."""
        async with self._refreshing:
            return await self._refresh()

    async def _refresh(self) -> bool:
        self.polls += 1
        key = self._poll_key()
        if key == self._key:
            return False
        structure = self._structure()
        old = self.view
        live_only = (self._key is not None and old.state is not None and structure is not None
                     and structure == self._structure_key and key[0] == self._key[0]
                     and key[2] == self._key[2])
        try:
            if live_only:
                view = await asyncio.to_thread(self._build, True)
                self.live_builds += 1
            else:
                view = await asyncio.to_thread(self._build, False)
                self.builds += 1
        except (OSError, sqlite3.Error, StoreError) as exc:  # e.g. the file vanished meanwhile
            view = public.view(model.error_view(self.config, exc))
        self._key = key
        self._structure_key = structure if view.state is not None else None
        await self._publish(view)
        return True

    def _build(self, live_only: bool) -> model.View:
        """A new View for the public (in a worker thread); the TD's log as it is recorded
        kept aside for the admin side (``private_td``)."""
        old = self.view
        if live_only:
            built = model.refresh_live(self.config, old, runner_seen=self._alive_changed)
        else:
            built = model.build_view(self.config, runner_seen=self._alive_changed)
        if built.state is not None and built.chart is old.chart:
            # only the games in progress were read again, into the public View's copy
            return public.view(built, live_only=True)
        self.private_td = (built.state or {}).get("td")  # (refresh_live may build it all)
        return public.view(built)

    async def _publish(self, view: model.View) -> None:
        """Make ``view`` the one pages are served from and send it to every event stream."""
        self.view = view
        self.generation += 1
        if self._cond is not None:
            async with self._cond:
                self._cond.notify_all()

    async def run(self) -> None:
        while True:
            try:
                await self.refresh()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - keep serving; show it on the pages
                error = public.view(model.error_view(self.config, exc))
                if error.error != self.view.error:  # once, not at every poll
                    await self._publish(error)
                self._key = None
            await asyncio.sleep(self.poll_s)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._cond = asyncio.Condition()
        try:
            await self.refresh()
        except Exception as exc:  # noqa: BLE001 - serve the error; the watcher tries again
            self.view = public.view(model.error_view(self.config, exc))
            self._key = None
        self._task = asyncio.create_task(self.run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._close()

    async def wait_change(self, generation: int, timeout: float) -> bool:
        """Wait until the generation differs from ``generation`` or the server closes
        (False on timeout)."""
        assert self._cond is not None
        async with self._cond:
            try:
                await asyncio.wait_for(self._cond.wait_for(
                    lambda: self.generation != generation or self.closing), timeout)
            except TimeoutError:
                return False
        return True

    def close_streams(self) -> None:
        """End every event stream (the server is stopping); safe from a signal handler."""
        self.closing = True
        if self._loop is not None and self._cond is not None:
            self._loop.call_soon_threadsafe(lambda: asyncio.ensure_future(self._wake_all()))

    async def _wake_all(self) -> None:
        assert self._cond is not None
        async with self._cond:
            self._cond.notify_all()


# --------------------------------------------------------------------------- security


AUTH_LOG = logging.getLogger("runner.web.auth")


class Throttle:
    """Wrong-token attempts by client address: after ``limit`` of them within ``window_s``
    seconds, every request of that address that needs a token is answered 429 for
    ``backoff_s`` seconds, even with the right token. Each failure is logged (warning of
    ``runner.web.auth``) with the address and never the token. At most ``max_addresses``
    addresses are remembered (the oldest forgotten first)."""

    def __init__(self, limit: int = 10, window_s: float = 60.0, backoff_s: float = 60.0,
                 max_addresses: int = 10000, clock: Callable[[], float] = time.monotonic):
        self.limit = limit
        self.window_s = window_s
        self.backoff_s = backoff_s
        self.max_addresses = max_addresses
        self.clock = clock
        self._failures: dict[str, collections.deque[float]] = {}
        self._until: dict[str, float] = {}

    def blocked(self, address: str) -> int:
        """Whole seconds until ``address`` may try again (0: it may now)."""
        until = self._until.get(address)
        if until is None:
            return 0
        left = until - self.clock()
        if left <= 0:
            del self._until[address]
            return 0
        return max(1, math.ceil(left))

    def failed(self, address: str, what: str) -> None:
        """A wrong ``what`` ("access" or "admin") token from ``address``."""
        now = self.clock()
        times = self._failures.pop(address, None) or collections.deque()
        self._failures[address] = times  # the most recent last
        times.append(now)
        while times and times[0] <= now - self.window_s:
            times.popleft()
        while len(self._failures) > self.max_addresses:
            self._failures.pop(next(iter(self._failures)))
        blocked = len(times) >= self.limit
        if blocked:
            self._until.pop(address, None)
            self._until[address] = now + self.backoff_s  # the latest last
            times.clear()
            while len(self._until) > self.max_addresses:
                self._until.pop(next(iter(self._until)))
        AUTH_LOG.warning("wrong %s token from %s (%d within %gs)%s", what, address,
                         self.limit if blocked else len(times), self.window_s,
                         f"; refused for {self.backoff_s:g}s" if blocked else "")


def client_address(scope: Scope) -> str:
    """The client's address, as the Shield found it (a trusted proxy's X-Forwarded-For)."""
    return str((scope.get("client") or ("?", 0))[0])[:64]


class Guard:
    """When a token is set, the token on every request: ``?token=`` (then kept in an
    HttpOnly cookie), the cookie, or ``Authorization: Bearer``. The cookie is ``Secure``
    when the request came over https (directly, or through a trusted proxy that says so:
    the Shield sets the scheme), or always with ``secure_cookie``. Wrong tokens count in
    ``throttle`` (429 once it refuses the address)."""

    def __init__(self, app: ASGIApp, token: str | None, *, secure_cookie: bool = False,
                 throttle: Throttle | None = None):
        self.app = app
        self.token = token
        self.secure_cookie = secure_cookie
        self.throttle = throttle or Throttle()

    def _over_https(self, scope: Scope) -> bool:
        return self.secure_cookie or scope.get("scheme") == "https"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        refusal = self._refusal(scope) if self.token is not None else None
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        """The answer to a request without the right token (None: let it through)."""
        request = Request(scope)
        address = client_address(scope)
        wait = self.throttle.blocked(address)
        if wait:
            return Response(f"Too many wrong tokens from {address}: try again in {wait} s.\n",
                            status_code=429, media_type="text/plain",
                            headers={"retry-after": str(wait)})
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                          keep_blank_values=True)
        given = dict(query).get("token")
        if given is not None and self._ok(given):
            # keep it in a cookie and drop it from the address bar
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = request.url.path.rsplit("/", 1)[-1] or "./"
            response = Response(status_code=303, headers={
                "location": location + (f"?{rest}" if rest else ""),
                "cache-control": "no-store"})
            response.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict",
                                path=_cookie_path(scope), secure=self._over_https(scope))
            return response
        auth = request.headers.get("authorization", "")
        bearer = auth[7:] if auth.lower().startswith("bearer ") else None
        cookie = request.cookies.get(TOKEN_COOKIE)
        if any(t is not None and self._ok(t) for t in (bearer, cookie)):
            return None
        if any(t for t in (given, bearer, cookie)):
            self.throttle.failed(address, "access")
        return Response("This dashboard needs its access token: open it once as "
                        "...?token=TOKEN (or send Authorization: Bearer TOKEN).\n",
                        status_code=401, media_type="text/plain")

    def _ok(self, given: str) -> bool:
        assert self.token is not None
        return hmac.compare_digest(given.encode(), self.token.encode())


def _cookie_path(scope: Scope) -> str:
    """The app's root as the browser sees it (with a proxy's prefix when it sends one)."""
    root = scope.get("root_path", "") or ""
    return (root.rstrip("/") or "") + "/"


# --------------------------------------------------------------------------- rendering


def _json_for_script(data: Any) -> Markup:
    """JSON safe inside <script type="application/json"> (no </script>, no entities)."""
    text = json.dumps(data, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


def _fmt_points(value: float | None) -> str:
    if value is None:
        return ""
    whole = int(value)
    half = abs(value - whole) >= 0.25
    if whole == 0 and half:
        return "-½" if value < 0 else "½"
    return f"{whole}{'½' if half else ''}"


def _fmt_num(value: float | None) -> str:
    if value is None:
        return ""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _fmt_time(iso: str | None) -> str:
    if not iso:
        return "?"
    return iso.replace("T", " ")[:19] + " UTC"


def _fmt_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    seconds = int(round(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours}h {minutes:02d}m"
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


def _engine_name(name: Any) -> Markup:
    """An engine's (or worker's) name for a table, a chip or a board: one line, cut short
    with an ellipsis when it is long (app.css ``.nm``), the whole name in its tooltip."""
    text = "" if name is None else str(name)
    # dir=auto: a right-to-left name is laid out (and cut short) from its own start
    return Markup('<span class="name nm" dir="auto" title="{0}">{0}</span>').format(text)


def _result_class(result: str | None) -> str:
    return {"1-0": "r-white", "0-1": "r-black", "1/2-1/2": "r-draw"}.get(result or "", "r-none")


def make_env() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"),
                      autoescape=select_autoescape(["html"], default_for_string=True,
                                                   default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(points=_fmt_points, num=_fmt_num, when=_fmt_time,
                       duration=_fmt_duration, result_class=_result_class, engine=_engine_name,
                       script_json=_json_for_script)
    env.globals["short_names"] = SHORT
    env.globals["attempt_words"] = attempt_words
    env.globals["interrupted_lines"] = interrupted_lines
    return env


@functools.lru_cache(maxsize=512)  # ~30 KB each: at most ~16 MB, whatever is asked for
def board_svg(fen: str, last: str | None, size: int) -> bytes:
    board = chess.Board(fen)
    lastmove = chess.Move.from_uci(last) if last else None
    check = board.king(board.turn) if board.is_check() else None
    return chess.svg.board(board, lastmove=lastmove, check=check, size=size,
                           coordinates=True).encode()


# --------------------------------------------------------------------------- the app


class Pages:
    """The HTML pages of the current View, each rendered once per change of it (the same
    for every browser) unless it takes a context of its own."""

    def __init__(self, config: Config, hub: Hub, env: Environment):
        self.config = config
        self.hub = hub
        self.env = env
        self.rendered: dict[tuple[str, bool], tuple[int, str]] = {}

    def __call__(self, request: Request, template: str, **context: Any) -> HTMLResponse:
        view, generation = self.hub.view, self.hub.generation
        fragment = request.headers.get("x-fragment") == "1"
        key = (template, fragment)
        cached = None if context else self.rendered.get(key)
        if cached is not None and cached[0] == generation:
            html = cached[1]
        else:
            html = self.env.get_template(template).render(**{
                "view": view, "state": view.state, "live": view.live, "config": self.config,
                "fragment": fragment, "page": template.removesuffix(".html"), **context})
            if not context:
                self.rendered[key] = (generation, html)
        return HTMLResponse(html, headers={"cache-control": "no-store", "vary": "X-Fragment"})


def _page_routes(config: Config, page: Pages) -> list[Route]:
    """The HTML pages: overview, standings, rounds, chart, games and one game."""
    def static_page(template: str) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return page(request, template)
        return endpoint

    async def game(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        try:
            detail = await asyncio.to_thread(model.game_detail, config, game_id)
        except StoreError as exc:
            response = page(request, "game.html", game=None, error=public.text(str(exc)))
            response.status_code = 503
            return response
        if detail is None:
            response = page(request, "game.html", game=None, error=f"There is no game {game_id}.")
            response.status_code = 404
            return response
        return page(request, "game.html", game=public.game(detail), error=None)

    return [Route("/", static_page("overview.html")),
            *(Route(f"/{name}", static_page(f"{name}.html"))
              for name in ("standings", "rounds", "chart", "games")),
            Route("/game-{game_id:int}", game)]


def _download_routes(config: Config, hub: Hub, feeds: PgnFeeds) -> list[Route]:
    """PGN downloads (one game, the event, the live round, a round) and board pictures."""
    async def game_pgn(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        try:
            detail = await asyncio.to_thread(model.game_detail, config, game_id)
        except StoreError as exc:
            return Response(f"{public.text(str(exc))}\n", status_code=503,
                            media_type="text/plain")
        if detail is None or detail["status"] != "finished" or not detail["pgn"]:
            return Response(f"game {game_id} is not finished\n", status_code=404,
                            media_type="text/plain")
        name = f"game-{detail['round']}.{detail['game_in_round']}-{game_id}.pgn"
        return _download(public.pgn(detail["pgn"]), name)

    async def all_pgn(request: Request) -> Response:
        event = (hub.view.state or {}).get("event") or "event"
        return await feeds.respond(request, "event", missing="no event recorded yet",
                                   filename=model.safe_filename(event) + ".pgn")

    async def live_pgn(request: Request) -> Response:
        return await feeds.respond(request, "live")

    async def round_pgn(request: Request) -> Response:
        return await feeds.respond(request, f"round/{request.path_params['number']}")

    async def board(request: Request) -> Response:
        fen = request.query_params.get("fen") or chess.STARTING_FEN  # a game with no position yet
        last = request.query_params.get("last") or None
        try:
            size = max(120, min(800, int(request.query_params.get("size", "360"))))
            if len(fen) > 100 or (last is not None and len(last) > 5):
                raise ValueError("too long")
            data = board_svg(fen, last, size)
        except ValueError:
            return Response("bad board request\n", status_code=400, media_type="text/plain")
        return Response(data, media_type="image/svg+xml",
                        headers={"cache-control": "public, max-age=86400, immutable"})

    return [Route("/game-{game_id:int}.pgn", game_pgn), Route("/event.pgn", all_pgn),
            Route("/live.pgn", live_pgn), Route("/round/{number:int}.pgn", round_pgn),
            Route("/board.svg", board)]


def _api_routes(hub: Hub) -> list[Route]:
    """The JSON documents and the Server-Sent-Events stream of the live document."""
    no_store = {"cache-control": "no-store"}

    async def api_state(request: Request) -> Response:
        view = hub.view
        if view.state is None:
            return JSONResponse({"error": view.error or "no event recorded yet"},
                                status_code=503 if view.error else 404, headers=no_store)
        return Response(view.state_json(), media_type="application/json", headers=no_store)

    async def api_live(request: Request) -> Response:
        return Response(hub.view.live_json, media_type="application/json", headers=no_store)

    async def api_standings(request: Request) -> Response:
        view = hub.view
        if view.standings is None:
            return JSONResponse({"error": view.error or "no standings yet"},
                                status_code=503 if view.error else 404, headers=no_store)
        return JSONResponse(view.standings, headers=no_store)

    async def events(request: Request) -> Response:
        headers = {**no_store, "x-accel-buffering": "no"}
        if request.method == "HEAD":  # the headers alone: a stream never ends
            return Response(media_type="text/event-stream", headers=headers)

        async def stream() -> AsyncIterator[bytes]:
            yield b"retry: 1000\n\n"
            generation = -1
            while not hub.closing:
                if generation != hub.generation:
                    generation = hub.generation
                    now = int(time.time() * 1000)
                    body = f'{{"now_ms":{now},"live":{hub.view.live_json}}}'
                    yield f"id: {generation}\ndata: {body}\n\n".encode()
                elif not await hub.wait_change(generation, 15.0):
                    yield b": keep-alive\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)

    return [Route("/api/state", api_state), Route("/api/live", api_live),
            Route("/api/standings", api_standings), Route("/events", events)]


def _retry_after(admins: Admins, request: Request, status: int) -> dict[str, str]:
    """A 429's Retry-After: the seconds until this client may try a token again."""
    if status != 429:
        return {}
    wait = admins.throttle.blocked(client_address(request.scope))
    return {"retry-after": str(max(1, wait))}


async def _td_action(config: Config, hub: Hub, who: str | tuple[int, str],
                     fields: dict[str, str]) -> tuple[int, str]:
    """A TD action from the web, by ``who`` (an admin's name, or the refusal of the token):
    recorded as a pending command (200) or refused (status, why); nothing else is done."""
    if isinstance(who, tuple):
        return who
    # late: the TD's side of the service loads only when an admin acts
    from runner.service.td.director import give_command, web_command

    if fields.get("action") == "pause" and fields.get("mode") == "end-of-round":
        fields["mode"] = "after-round"  # one word for the round's end (docs/td.md)
    parsed = web_command(fields)
    if isinstance(parsed, str):
        return 400, parsed
    action, args, reason = parsed
    cid, problem = await asyncio.to_thread(give_command, config, action, args, reason,
                                          f"web:{who}")
    if not cid:
        return 400, f"{action}: {problem}; nothing was recorded"
    await hub.refresh()
    return 200, (f"TD command #{cid} recorded ({action}); the running runner applies it "
                 "within a second (the next `swiss-runner run`, when none runs)")


def _admin_routes(config: Config, hub: Hub, page: Pages, admins: Admins) -> list[Route]:
    """The TD's actions (docs/td.md): the form at /admin and the JSON /api/td."""
    on = admins.on

    def answer(request: Request, status: int, message: str | None,
               admin_td: dict[str, Any] | None = None) -> Response:
        """The TD's page: the outcome of an action, the decision log with who acted only
        for a valid admin token (``admin_td``)."""
        state = hub.view.state
        if admin_td is not None and state is not None:
            state = dict(state, td=admin_td)  # the TD's log as recorded: who acted
        response = page(request, "admin.html", admin_on=on, state=state,
                        message=message if status == 200 else None,
                        error=None if status == 200 else message)
        response.status_code = status
        response.headers.update(retry_after(request, status))
        return response

    async def admin(request: Request) -> Response:
        """The TD's form (GET; with X-Admin-Token, the decision log with who acted) and its
        submission (POST: the admin token in a form field)."""
        if request.method == "GET":
            supplied = request.headers.get(ADMIN_HEADER)
            if not supplied:
                return answer(request, 200, None)
            who = admins.who(request, supplied)
            if isinstance(who, tuple):
                return answer(request, *who)
            return answer(request, 200, None, hub.private_td)
        if not request.headers.get("content-type", "").startswith(
                "application/x-www-form-urlencoded"):  # the form's default; no multipart
            return answer(request, 415, "expected the form's fields (urlencoded)")
        body = await request.body()  # within the Shield's limit for /admin
        fields = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        status, message = await td_action(request, fields.pop("admin_token", None), fields)
        return answer(request, status, message, hub.private_td if status == 200 else None)

    async def api_td(request: Request) -> Response:
        """The TD's actions as JSON: the admin token in the X-Admin-Token header."""
        no_store = {"cache-control": "no-store"}
        if request.headers.get("content-type", "").split(";")[0].strip().lower() \
                != "application/json":
            return JSONResponse({"error": "expected Content-Type: application/json"},
                                status_code=415, headers=no_store)
        raw = await request.body()  # within the Shield's limit for /api/td
        body = None
        if json_depth(raw, JSON_DEPTH):
            with contextlib.suppress(ValueError):
                body = json.loads(raw)
        if not isinstance(body, dict):
            return JSONResponse({"error": f"expected a JSON object (nested at most "
                                          f"{JSON_DEPTH} deep)"}, status_code=400,
                                headers=no_store)
        status, message = await td_action(request, request.headers.get(ADMIN_HEADER),
                                          {k: str(v) for k, v in body.items()})
        key = "applied_soon" if status == 200 else "error"
        return JSONResponse({key: message}, status_code=status,
                            headers=no_store | retry_after(request, status))

    def retry_after(request: Request, status: int) -> dict[str, str]:
        return _retry_after(admins, request, status)

    async def td_action(request: Request, supplied: str | None,
                        fields: dict[str, str]) -> tuple[int, str]:
        return await _td_action(config, hub, admins.who(request, supplied), fields)

    return [Route("/admin", admin, methods=["GET", "POST"]),
            Route("/api/td", api_td, methods=["POST"])]


def create_app(config: Config, *, token: str | None = None, poll_s: float = 0.05,
               secure_cookie: bool = False, trusted_proxies: tuple[str, ...] = (),
               allowed_hosts: tuple[str, ...] | None = None, limits: Limits | None = None,
               connections: Any = None,
               admin_tokens: Mapping[str, str] | None = None,
               admin_token: str | None = None, throttle: Throttle | None = None) -> Starlette:
    """The dashboard of one event (``config``); ``token``: required on every request
    (its cookie ``Secure`` over https: Guard); ``trusted_proxies``: the addresses whose
    X-Forwarded-For/-Proto are believed (none by default); ``allowed_hosts``: the names it
    answers to besides localhost (None: any, for a test client); ``limits``, ``connections``:
    the Shield's (runner.web.shield, runner.web.server); ``admin_tokens``: the TD's actions
    (/admin, /api/td) are on, each person (name -> token) acting with their own token
    (``admin_token``: one token, the person ``admin``); ``throttle``: the limit of
    wrong-token attempts (default: :class:`Throttle`'s)."""
    if admin_tokens is None and admin_token is not None:
        admin_tokens = {"admin": admin_token}
    throttle = throttle or Throttle()
    hub = Hub(config, poll_s=poll_s)
    feeds = PgnFeeds(config, lambda: hub.generation)  # built once per change (docs/broadcast.md)
    env = make_env()
    hosts = Hosts(["*"] if allowed_hosts is None else [*LOCAL_NAMES, *allowed_hosts])
    admins = Admins(admin_tokens, throttle, hosts)
    env.globals["admin_on"] = admins.on
    page = Pages(config, hub, env)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await hub.start()
        try:
            yield
        finally:
            await hub.stop()

    routes = [*_page_routes(config, page), *_download_routes(config, hub, feeds),
              *_api_routes(hub), *_admin_routes(config, hub, page, admins),
              Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static")]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.hub = hub
    app.state.feeds = feeds
    app.state.throttle = throttle
    app.add_middleware(_GuardMiddleware, token=token, secure_cookie=secure_cookie,
                       throttle=throttle)
    shield = {"trusted_proxies": trusted_proxies, "hosts": hosts, "limits": limits,
              "activity": connections}
    app.add_middleware(Shield, **shield)  # the outermost: before any other work
    return app


ADMIN_HEADER = "x-admin-token"
JSON_DEPTH = 8  # /api/td takes a flat object; a deeper one is refused before it is parsed


class Admins:
    """The TD's admin tokens by person, and who a request acts as. The admin token must
    come in the request itself (a form field or a header, never a cookie alone: a cookie is
    sent with a forged cross-site request too), and a browser's request must come from the
    dashboard's own pages (Origin, Sec-Fetch-Site: no cross-site request forgery). Tokens
    are compared in constant time, every one of them; wrong ones count in the Throttle."""

    def __init__(self, tokens: Mapping[str, str] | None, throttle: Throttle, hosts: Hosts):
        self.tokens = dict(tokens or {})
        self.on = bool(self.tokens)
        self.throttle = throttle
        self.hosts = hosts

    def holder(self, supplied: str) -> str | None:
        """The person whose token ``supplied`` is (None: nobody's)."""
        given = supplied.encode()
        found = None
        for name, token in self.tokens.items():
            if hmac.compare_digest(given, token.encode()):
                found = name
        return found

    def who(self, request: Request, supplied: str | None) -> str | tuple[int, str]:
        """The person acting, or why the request is refused (status, message)."""
        if not self.on:
            return 404, ("the TD's actions are off: start the dashboard with "
                         "`serve --admin-token-file FILE` (or $SWISS_RUNNER_ADMIN_TOKEN)")
        refused = _cross_site(request, self.hosts)
        if refused is not None:
            return refused
        address = client_address(request.scope)
        wait = self.throttle.blocked(address)
        if wait:
            return 429, f"refused: too many wrong tokens from {address}; try again in {wait} s"
        holder = self.holder(supplied) if supplied else None
        if holder is None:
            if supplied:
                self.throttle.failed(address, "admin")
            return 403, "refused: the admin token is missing or wrong"
        return holder


def _cross_site(request: Request, hosts: Hosts) -> tuple[int, str] | None:
    """Why a browser's request does not come from the dashboard's own pages (an Origin
    whose host is not one of the names the dashboard answers to: ``hosts``), or None."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return 403, f"refused: a {site} request (only the dashboard's own pages may act)"
    origin = request.headers.get("origin")
    if origin is not None and not (origin == "null" and site == "same-origin"):
        # (with Referrer-Policy no-referrer a browser sends "Origin: null" with a form of
        # the dashboard's own page: its Sec-Fetch-Site says where it came from)
        netloc = urlsplit(origin).netloc
        # one of the names answered to (a DNS-rebinding page's Host is one of its own),
        # and the very host and port the request went to (another site on this host)
        if origin == "null" or not hosts.allows(netloc) \
                or netloc.lower() != request.headers.get("host", "").lower():
            return 403, f"refused: a request from another origin ({origin})"
    return None


class _GuardMiddleware(Guard):
    """Guard as Starlette middleware (``app.add_middleware``)."""

    def __init__(self, app: ASGIApp, token: str | None = None, **cookie: Any):
        super().__init__(app, token, **cookie)


def _download(text: str, filename: str) -> Response:
    return Response(text, media_type="application/x-chess-pgn",
                    headers={"content-disposition": f'attachment; filename="{filename}"',
                             "cache-control": "no-store"})
