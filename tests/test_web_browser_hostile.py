"""The dashboard in headless Chromium on an event with hostile and unusual data: engine,
event and worker names that are markup, template syntax, 200 characters without a space,
right-to-left script, emoji and combining marks; engine id names, comments, termination
reasons and PGN tags with markup and newlines; a game resumed, one from a FEN, one with no
move yet, games lost by a crash and on time. Every page, at desktop and phone widths: no
script of the event's runs, nothing wider than the window, no console error. And the
page's script: it keeps following the event when the event stream is refused for a while,
and keeps the reader's place in a finished game when the page's content is updated.

Screenshots: .cache/web-artifacts/hostile-*.png (or $SWISS_RUNNER_ARTIFACTS).
"""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import chess
import pytest
from web_event import _play, add_moves, generate_event
from web_support import browser, need_browser, serve, shot

from runner.config import Config
from runner.domain.events import GameStarted, MovePlayed, event_to_json
from runner.domain.models import GameRecord
from runner.domain.pgn import write_game
from runner.service.views.snapshotdoc import WORKERS_META
from runner.store.database import Store
from runner.store.writer import move_row

pytestmark = [pytest.mark.slow]

LONG = "W" * 200
NAMES = ["<script>alert(1)</script>", '"><img src=x onerror=alert(2)>',
         "</script><script>alert(3)</script>", "{{7*7}} {% raw %}${7*7}", LONG,
         "محرك الشطرنج العربي القوي", "🐟🐠 Fish", "Z̷̢̛a̸̡l̶̨g̵o̴̧ combining", "'; alert(4); '",
         "Stockfish 17 with a rather long name for a table", "Komodo"]
EVENT = '<script>alert("ev")</script>{{7*7}} ' + "E" * 160
EVIL = ('<script>alert("x")</script>"><img src=x onerror=alert(9)>\n{{7*7}} '
        + "R" * 300)  # no config checks these: they come from engines, workers and records
FEN = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 3 27"


def hostile_event(directory: Path) -> tuple[Config, dict[str, int]]:
    """11 engines (a BYE), round 1 complete, round 2: a resumed game in progress (hostile
    engine ids, worker, comment), one from a FEN with Black to move, one with no move yet,
    and finished games lost by a crash and on time and drawn from a FEN with hostile
    reasons, comments and tags. Returns the config and the ids of those games."""
    config = generate_event(directory, engines=len(NAMES), rounds=3, finished_rounds=1,
                            running=0, names=NAMES, plies=30, Event=EVENT, Site=NAMES[1])
    rng = random.Random(3)
    now = datetime.now(UTC)
    ids: dict[str, int] = {}
    store = Store.open(config.database)
    try:
        games = [g for g in store.games() if g.status == "scheduled"]

        def start(g, **kw) -> None:  # noqa: ANN001
            fields = {"white_id": "", "black_id": "", "start_time": now.isoformat(),
                      "start_fen": chess.STARTING_FEN, "book_plies": 8,
                      "white_clock_ms": 60_000, "black_clock_ms": 60_000, "attempt": 1} | kw
            started = GameStarted(game_id=g.game_id, white=g.white, black=g.black, **fields)
            store.start_game(g.game_id, fields["attempt"], json.dumps(event_to_json(started)))

        g = games[0]
        ids["resumed"] = g.game_id
        start(g, white_id=EVIL, black_id="id\nname\r\n<b>x</b>", attempt=2,
              resumed_from_ply=12, worker=EVIL)
        moves, _ = _play(rng, g.game_id, 30, now - timedelta(seconds=30), attempt=2)
        moves[20] = MovePlayed(**{**moves[20].__dict__, "comment": EVIL})
        add_moves(store, moves)
        # what the engine reported, as a foreign writer might store it: not numbers, a PV
        # that is one string
        store.conn.execute(
            "UPDATE moves SET data=json_set(data, '$.pv', 'e2e4 e7e5', '$.score_cp', 'x', "
            "'$.depth', '<b>d</b>', '$.nodes', 'many') WHERE game_id=? AND ply IN (29, 30)",
            (g.game_id,))

        g = games[1]
        ids["fen"] = g.game_id
        start(g, start_fen=FEN, book_plies=0)
        board, fen_moves = chess.Board(FEN), []
        for ply in range(1, 6):
            move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
            san = board.san(move)
            board.push(move)
            fen_moves.append(MovePlayed(
                game_id=g.game_id, ply=ply, uci=move.uci(), san=san, fen=board.fen(),
                white_clock_ms=55_000, black_clock_ms=55_000, score_cp=30 * ply, depth=10,
                pv=(move.uci(),), at_ms=int(now.timestamp() * 1000)))
        add_moves(store, fen_moves)

        ids["no_move"] = games[2].game_id
        start(games[2], white_clock_ms=None, black_clock_ms=None)

        for k, (key, result, reason, termination) in enumerate([
                ("crash", "0-1", "White's engine crashed: " + EVIL, "abandoned"),
                ("time", "1-0", "Black loses on time", "time forfeit"),
                ("fen_draw", "1/2-1/2", "Draw by adjudication: " + EVIL, "adjudication")]):
            g = games[3 + k]
            ids[key] = g.game_id
            start_fen = FEN if key == "fen_draw" else None
            played, _ = _play(rng, g.game_id, 20, now)
            if start_fen:
                board, played = chess.Board(FEN), []
                for ply in range(1, 8):
                    move = sorted(board.legal_moves, key=lambda m: m.uci())[-1]
                    san = board.san(move)
                    board.push(move)
                    played.append(MovePlayed(
                        game_id=g.game_id, ply=ply, uci=move.uci(), san=san, fen=board.fen(),
                        white_clock_ms=1000, black_clock_ms=1000, score_cp=-5, depth=3,
                        comment="-0.05/3 0.1s"))
            comments = [EVIL.replace("}", ")") if i == 3 else m.comment
                        for i, m in enumerate(played)]
            tags = {"Event": config.event, "Site": config.site,
                    "Round": f"2.{g.game_in_round}", "White": g.white, "Black": g.black,
                    "Result": result, "Annotator": EVIL.replace("\n", " "),
                    "WhiteEngineId": EVIL.replace("\n", " "), "Opening": "x" * 500}
            pgn = write_game(tags, start_fen, [m.uci for m in played], comments, reason)
            store.record_game(g.game_id, GameRecord(
                white=g.white, black=g.black, result=result, reason=reason,
                termination=termination, moves=[m.uci for m in played], comments=comments,
                pgn=pgn, start_time=now.isoformat(), end_time=now.isoformat(),
                duration_s=12.5, start_fen=start_fen), [move_row(m) for m in played])
        store.set_meta(WORKERS_META, json.dumps([
            {"address": "tcp://10.0.0.2:4000", "name": EVIL, "slots": 2, "state": "joined",
             "last_seen": "2026-11-23T02:00:00+00:00", "refused": {"E<1>": EVIL}}]))
    finally:
        store.close()
    return config, ids


def _watch(page, problems: list[str]) -> None:  # noqa: ANN001
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
    page.on("console", lambda m: problems.append(f"console: {m.text}")
            if m.type == "error" else None)


# what sticks out of the window (outside a box that scrolls on its own)
OVERFLOW = """() => {
  const w = window.innerWidth;
  const out = Array.from(document.querySelectorAll('body *')).filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.right > w + 1 && !e.closest('.scroll') && !e.closest('ol.moves');
  }).slice(0, 5).map(e => e.tagName + '.' + e.className + ':' + Math.round(e.getBoundingClientRect().right));
  return {scroll: document.documentElement.scrollWidth, width: w, out: out,
          header: document.querySelector('header.top').getBoundingClientRect().height};
}"""


@pytest.mark.parametrize(("width", "height"), [(1400, 900), (390, 844)])
def test_hostile_event_on_every_page(tmp_path: Path, width: int, height: int) -> None:
    need_browser()
    config, ids = hostile_event(tmp_path)
    pages = ["", "standings", "rounds", "chart", "games", "game-1"] + \
        [f"game-{i}" for i in ids.values()]
    with serve(config.path) as served, browser() as b:
        context = b.new_context(viewport={"width": width, "height": height})
        for path in pages:
            problems: list[str] = []
            page = context.new_page()
            _watch(page, problems)
            page.goto(served.url + path)
            page.wait_for_function("() => document.getElementById('runner-state').textContent")
            name = f"hostile-{width}-{path or 'overview'}"
            shot(page, name)
            # nothing of the event runs or becomes markup
            assert page.locator('img[src="x"], main b, header b').count() == 0, path
            assert page.evaluate("() => document.querySelectorAll('script').length") == \
                len(page.locator('script[src="static/app.js"], script[type="application/json"]')
                    .all()), path
            assert EVENT in page.inner_text("#event-name"), path
            assert "NaN" not in page.inner_text("main"), path  # what is not a number: nothing
            # nothing wider than the window: long names end in an ellipsis (the whole name
            # in the title), long reasons and tags wrap, wide tables scroll in their box
            box = page.evaluate(OVERFLOW)
            assert box["scroll"] <= box["width"] and not box["out"], (path, box)
            assert box["header"] < 0.3 * height, (path, box)  # the sticky header
            if width < 720 and page.evaluate("() => document.body.scrollHeight") > 2 * height:
                # on a phone the header does not stay on top of what the reader scrolls to
                page.evaluate("() => window.scrollTo(0, 1000)")
                top = page.evaluate("() => document.querySelector('header.top')"
                                    ".getBoundingClientRect().bottom")
                assert top <= 0, (path, top)
            page.close()
            assert not problems, (path, problems)

        page = context.new_page()
        page.goto(served.url + "standings")
        cell = page.locator(f'table.standings [title="{LONG}"]')
        assert cell.count() == 1 and cell.inner_text() == LONG  # all there, cut by CSS
        assert cell.evaluate("e => e.scrollWidth > e.clientWidth")  # shown with an ellipsis
        # a right-to-left name is laid out from its own start: a cut falls at its end
        rtl = page.locator(f'table.standings [title="{NAMES[5]}"]')
        assert rtl.evaluate("e => getComputedStyle(e).direction") == "rtl"
        assert page.locator(f'table.standings [title="{NAMES[0]}"]').evaluate(
            "e => getComputedStyle(e).direction") == "ltr"
        page.goto(served.url + f"game-{ids['crash']}")
        page.click("details#pgn-tags summary")
        assert EVIL.replace("\n", " ") in page.inner_text("table.tags-table")
        assert "White's engine crashed" in page.inner_text(".game-reason")
        shot(page, f"hostile-{width}-crash-tags")
        page.goto(served.url)
        header = page.locator(f'[data-live-game="{ids["resumed"]}"] header')
        assert EVIL.split("\n")[0] in header.inner_text()
        page.close()


def test_event_stream_refused_for_a_while(tmp_path: Path) -> None:
    """A proxy in front answers 502 while the dashboard restarts: the browser's EventSource
    gives up for good on such an answer; the page opens a new one and follows again."""
    need_browser()
    config = generate_event(tmp_path, engines=4, rounds=2, finished_rounds=1, running=1,
                            plies=12)
    with serve(config.path) as served, browser() as b:
        page = b.new_page(viewport={"width": 1200, "height": 900})
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        refused = {"n": 0}

        def events(route) -> None:  # noqa: ANN001
            if refused["n"] < 2:
                refused["n"] += 1
                route.fulfill(status=502, body="Bad Gateway", content_type="text/html")
            else:
                route.continue_()

        page.route("**/events", events)
        page.goto(served.url)
        page.wait_for_selector("#conn-state:not([hidden])", timeout=5_000)
        # a move comes in: the page shows it once its stream is back
        store = Store.open(config.database)
        try:
            game = next(g for g in store.games() if g.status == "running")
            log = store.logged_moves(game.game_id)
            board = chess.Board(log[-1]["fen"])
            move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
            san = board.san(move)
            board.push(move)
            add_moves(store, [MovePlayed(
                game_id=game.game_id, ply=len(log) + 1, uci=move.uci(), san=san,
                fen=board.fen(), white_clock_ms=5000, black_clock_ms=5000, score_cp=0,
                depth=5, at_ms=int(time.time() * 1000))])
        finally:
            store.close()
        page.wait_for_function(
            "([ply]) => document.querySelector('[data-f=\"ply\"]').textContent.startsWith('ply ' + ply)",
            arg=[len(log) + 1], timeout=15_000)
        assert page.locator("#conn-state").is_hidden()
        assert refused["n"] == 2
        assert not problems, problems


def test_a_finished_game_keeps_its_place_when_the_page_updates(tmp_path: Path) -> None:
    """Stepping through a finished game while the event goes on: a game finishing elsewhere
    makes the page fetch its content again; the position stepped to, and the PGN tags
    opened, stay. A fetch that fails is tried again without waiting for the next event,
    and an answer that is not the dashboard's (a proxy's error or login page) is never put
    into the page."""
    need_browser()
    config = generate_event(tmp_path, engines=4, rounds=2, finished_rounds=1, running=0,
                            plies=16)
    with serve(config.path) as served, browser() as b:
        page = b.new_page(viewport={"width": 1200, "height": 900})
        problems: list[str] = []
        page.on("pageerror", lambda e: problems.append(str(e)))
        fragments = {"n": 0}

        def fragment(route) -> None:  # noqa: ANN001
            if route.request.headers.get("x-fragment") == "1":
                fragments["n"] += 1
                if fragments["n"] == 1:
                    route.abort()  # the first fetch of the page's content fails
                    return
                if fragments["n"] == 2:  # the second is answered by something in between
                    route.fulfill(status=200, content_type="text/html",
                                  body="<h1>Proxy login</h1><p>Sign in to continue</p>")
                    return
            route.continue_()

        page.route("**/game-1", fragment)
        page.goto(served.url + "game-1")
        page.click('button[data-go="first"]')
        page.click('button[data-go="next"]')
        page.click('button[data-go="next"]')
        label = page.inner_text("#step-label")
        assert label.startswith("1…")
        page.click("details#pgn-tags summary")
        digest = page.get_attribute("#main", "data-digest")

        store = Store.open(config.database)  # a game of round 2 finishes: one commit
        try:
            g = next(g for g in store.games() if g.status == "scheduled")
            moves, _ = _play(random.Random(5), g.game_id, 12, datetime.now(UTC))
            pgn = write_game({"Event": config.event, "Site": config.site, "Round": "2.1",
                              "White": g.white, "Black": g.black, "Result": "1-0"},
                             None, [m.uci for m in moves], [m.comment for m in moves], "x")
            store.record_game(g.game_id, GameRecord(
                white=g.white, black=g.black, result="1-0", reason="White mates",
                moves=[m.uci for m in moves], comments=[m.comment for m in moves], pgn=pgn,
                start_time="2026-11-23T00:00:00+00:00", end_time="2026-11-23T00:01:00+00:00",
                duration_s=60.0), [move_row(m) for m in moves])
        finally:
            store.close()
        page.wait_for_function("([d]) => { const m = document.getElementById('main');"
                               " return m.dataset.digest && m.dataset.digest !== d; }",
                               arg=[digest], timeout=15_000)
        assert fragments["n"] >= 3  # fetched again after the failure and the foreign page
        assert "Proxy login" not in page.inner_text("main")
        assert page.inner_text("#step-label") == label
        assert page.locator("#step-moves [data-ply].current").get_attribute("data-ply") == "2"
        assert page.locator("details#pgn-tags").evaluate("d => d.open")
        page.keyboard.press("ArrowRight")  # and stepping goes on from there
        assert page.inner_text("#step-label").startswith("2.")
        assert not problems, problems


def test_many_engines_keep_their_names_in_view(tmp_path: Path) -> None:
    """64 engines: the crosstable, the round-by-round table and (on a phone) the standings
    scroll sideways in their box, and the engine column stays in view meanwhile."""
    need_browser()
    names = [f"Stockfish dev-2024{i:04d}-e0bfc4b6" for i in range(64)]
    config = generate_event(tmp_path, engines=64, rounds=2, finished_rounds=1, running=0,
                            plies=10, names=names)
    with serve(config.path) as served, browser() as b:
        for width in (1400, 390):
            page = b.new_page(viewport={"width": width, "height": 900})
            page.goto(served.url + "standings")
            for table in ("crosstable", "roundtable", "standings"):
                found = page.evaluate("""(t) => {
                    const table = document.querySelector('table.' + t);
                    const box = table.closest('.scroll');
                    box.scrollLeft = box.scrollWidth;
                    const b = box.getBoundingClientRect();
                    const n = table.querySelector('tbody tr td.name').getBoundingClientRect();
                    return {scrolls: box.scrollWidth > box.clientWidth, box: [b.left, b.right],
                            name: [n.left, n.right]};
                }""", table)
                if not found["scrolls"]:
                    continue  # the whole table fits
                left, right = found["box"]
                assert left - 1 <= found["name"][0] and found["name"][1] <= right + 1, \
                    (width, table, found)
            assert page.evaluate("() => document.documentElement.scrollWidth") <= width
            page.locator("table.crosstable").scroll_into_view_if_needed()
            shot(page, f"hostile-64-engines-{width}")
            page.close()


def test_a_finished_game_opens_at_the_top_on_a_phone(tmp_path: Path) -> None:
    """The stepper shows the current move inside the move list without scrolling the page:
    on a phone the page opens at its top and stays there while stepping."""
    need_browser()
    config = generate_event(tmp_path, engines=4, rounds=1, finished_rounds=1, running=0,
                            plies=120)
    with serve(config.path) as served, browser() as b:
        page = b.new_page(viewport={"width": 390, "height": 700})
        page.goto(served.url + "game-1")
        page.wait_for_selector("#step-moves .current")
        assert page.evaluate("() => window.scrollY") == 0
        for key in ("Home", "ArrowRight", "End", "ArrowLeft"):
            page.keyboard.press(key)
            assert page.evaluate("() => window.scrollY") == 0, key
        inside = page.evaluate("""() => {
            const a = document.querySelector('#step-moves .current').getBoundingClientRect();
            const l = document.getElementById('step-moves').getBoundingClientRect();
            return a.top >= l.top - 1 && a.bottom <= l.bottom + 1; }""")
        assert inside  # the list itself scrolled to the current move
        shot(page, "hostile-390-game-top")
