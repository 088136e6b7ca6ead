"""The live PGN for relays: the pure layout, the dashboard's /live.pgn, /round/N.pgn and
/event.pgn (ETag / Last-Modified, 304, one build per change), ``run --live-pgn`` and
``LivePgn:``, and a real event (Stockfish vs Ethereal) polled every 0.5 s while it plays."""

from __future__ import annotations

import io
import json
import re
import time
import urllib.error
import urllib.request
from email.utils import formatdate
from pathlib import Path

import chess
import chess.pgn
import pytest
from testkit import wait_until, write_config
from web_event import add_moves, generate_event
from web_support import need, need_engines, serve, start_runner

try:
    from starlette.testclient import TestClient

    from runner.web.app import create_app
except ImportError as exc:  # pragma: no cover - the web extra is missing
    need(False, f"the web extra is not installed ({exc.name}): bash scripts/install.sh --test installs it")

from runner.cli import main
from runner.config import load_config
from runner.domain.events import MovePlayed
from runner.domain.livepgn import clock_tag, live_game_pgn
from runner.domain.pgnextended import pgn_clock
from runner.store.database import Store


def games_of(text: str) -> list[chess.pgn.Game]:
    """Every game of a PGN text; each must parse without an error."""
    stream, out = io.StringIO(text), []
    while (game := chess.pgn.read_game(stream)) is not None:
        assert not game.errors, (game.errors, text[:2000])
        out.append(game)
    return out


# --------------------------------------------------------------------------- the layout


def test_layout_of_a_game_in_progress_and_finished() -> None:
    board = chess.Board()
    moves = []
    for ply, (uci, book, cp, clock) in enumerate(
            [("e2e4", True, None, 60_000), ("e7e5", True, None, 60_000),
             ("g1f3", False, 35, 59_140), ("b8c6", False, 20, 58_060),
             ("f1b5", False, None, 58_000)], start=1):
        move = chess.Move.from_uci(uci)
        san = board.san(move)
        board.push(move)
        white = ply % 2 == 1
        moves.append({"ply": ply, "uci": uci, "san": san, "book": book, "score_cp": cp,
                      "depth": 12 if cp is not None else None,
                      "white_clock_ms": clock if white else 60_000,
                      "black_clock_ms": 60_000 if white else clock})
    tags = {"Event": "E", "Site": "S", "Date": "2026.11.24", "Round": "3.2", "White": "A",
            "Black": "B", "Result": "*"}
    text = live_game_pgn(tags, None, moves, clocks=(58_000, 58_060))
    game = games_of(text)[0]
    assert game.headers["Round"] == "3.2" and game.headers["Result"] == "*"
    assert (game.headers["WhiteClock"], game.headers["BlackClock"]) == ("0:00:58", "0:00:58")
    nodes = list(game.mainline())
    assert [n.san() for n in nodes] == ["e4", "e5", "Nf3", "Nc6", "Bb5"]
    assert nodes[0].comment.startswith("book") and nodes[0].eval() is None
    assert nodes[2].clock() == pytest.approx(59.1) and nodes[3].clock() == pytest.approx(58.1)
    # [%eval] is White's point of view: Black's +0.20 is -0.20 for White
    assert nodes[2].eval().white().score() == 35 and nodes[3].eval().white().score() == -20
    assert nodes[2].eval_depth() == 12 and nodes[4].eval() is None
    # finished: the reason ends the last comment; a gap in the log ends the move list
    done = live_game_pgn(tags | {"Result": "1-0"}, None, moves[:3] + moves[4:],
                         reason="White wins on time")
    game = games_of(done)[0]
    assert len(list(game.mainline())) == 3 and game.headers["Result"] == "1-0"
    assert game.end().comment.endswith("White wins on time")
    assert clock_tag(3_725_999) == "1:02:05" and clock_tag(None) is None


# --------------------------------------------------------------------------- the dashboard


@pytest.fixture()
def event(tmp_path: Path):  # noqa: ANN201
    return generate_event(tmp_path, engines=8, rounds=3, running=2, plies=40)


def _next_move(store: Store, game_id: int) -> MovePlayed:
    moves = store.logged_moves(game_id)
    board = chess.Board(moves[-1]["fen"])
    move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
    san = board.san(move)
    board.push(move)
    return MovePlayed(game_id=game_id, ply=moves[-1]["ply"] + 1, uci=move.uci(), san=san,
                      fen=board.fen(), white_clock_ms=41_000, black_clock_ms=42_000,
                      score_cp=17, depth=9, at_ms=int(time.time() * 1000))


@pytest.mark.slow
def test_live_round_and_event_feeds(event) -> None:  # noqa: ANN001
    with TestClient(create_app(event, poll_s=0.05)) as c:
        state = c.get("/api/state").json()
        live = c.get("/live.pgn")
        assert live.status_code == 200
        assert live.headers["content-type"].startswith("application/x-chess-pgn")
        games = games_of(live.text)
        current = state["current_round"]["number"]
        assert [g.headers["Round"] for g in games] == [
            f"{current}.{g['game_in_round']}" for g in state["in_progress"]]
        assert all(g.headers["Result"] == "*" for g in games)
        for g, doc in zip(games, state["in_progress"], strict=True):
            assert [m.uci() for m in g.mainline_moves()] == doc["moves"]
            assert g.headers["WhiteClock"] == clock_tag(doc["clocks"]["white_ms"])
            assert g.headers["BlackClock"] == clock_tag(doc["clocks"]["black_ms"])
            assert (g.headers["White"], g.headers["Black"]) == (doc["white"], doc["black"])
        # a finished round: every game with its result and its moves from the record
        store = Store.open_readonly(event.database)
        try:
            recorded = {r[0]: (r[1], r[2].split()) for r in store.conn.execute(
                "SELECT round || '.' || game_in_round, result, moves FROM games WHERE round=1")}
        finally:
            store.close()
        first = games_of(c.get("/round/1.pgn").text)
        assert len(first) == len(recorded) == 8
        for g in first:
            result, moves = recorded[g.headers["Round"]]
            assert g.headers["Result"] == result
            assert [m.uci() for m in g.mainline_moves()] == moves
            assert all(n.clock() is not None for n in g.mainline())
        assert c.get("/round/2.pgn").text.count("[Event ") == 8
        for missing in ("/round/4.pgn", "/round/0.pgn", "/round/99999999999999999999999.pgn"):
            assert c.get(missing).status_code == 404, missing
        event_pgn = c.get("/event.pgn")
        assert event_pgn.text.count("[Event ") == 16 and event_pgn.headers["etag"]


def test_etag_304_and_one_build_per_change(event) -> None:  # noqa: ANN001
    app = create_app(event, poll_s=0.05)
    with TestClient(app) as c:
        feeds = app.state.feeds
        first = c.get("/live.pgn")
        etag, modified = first.headers["etag"], first.headers["last-modified"]
        builds = feeds.builds
        for _ in range(100):  # 100 pollers: answered from memory
            resp = c.get("/live.pgn", headers={"if-none-match": etag})
            assert resp.status_code == 304 and resp.content == b""
            assert resp.headers["etag"] == etag
        assert c.get("/live.pgn", headers={"if-modified-since": modified}).status_code == 304
        assert c.get("/live.pgn", headers={"if-none-match": '"other"'}).status_code == 200
        assert feeds.builds == builds
        old = formatdate(time.time() - 3600, usegmt=True)
        assert c.get("/live.pgn", headers={"if-modified-since": old}).status_code == 200
        # a new move: built once more, a new ETag, the move list one longer
        game_id = c.get("/api/state").json()["in_progress"][0]["game_id"]
        store = Store.open(event.database)
        try:
            move = _next_move(store, game_id)
            add_moves(store, [move])
        finally:
            store.close()
        resp = wait_until(lambda: (r := c.get("/live.pgn", headers={"if-none-match": etag}))
                          .status_code == 200 and r, "the new move served", 5)
        assert resp.status_code == 200 and resp.headers["etag"] != etag
        before = {g.headers["Round"]: len(list(g.mainline_moves())) for g in games_of(first.text)}
        after = {g.headers["Round"]: g for g in games_of(resp.text)}
        grown = [r for r, g in after.items() if len(list(g.mainline_moves())) == before[r] + 1]
        assert len(grown) == 1
        last = after[grown[0]].end()
        assert last.move.uci() == move.uci
        assert last.clock() == pytest.approx((move.white_clock_ms if last.turn() == chess.BLACK
                                              else move.black_clock_ms) / 1000)
        builds = feeds.builds
        for _ in range(50):
            assert c.get("/live.pgn").status_code == 200
        assert feeds.builds == builds  # nothing changed: no build


def test_live_pgn_before_the_event(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {
        "TimeControl": "60+1", "SwissOptions": {"Rounds": 1, "StatePath": "state/s.json"},
        "Engines": [{"Name": n, "Command": "stockfish"} for n in ("A", "B")]}))
    with TestClient(create_app(config)) as c:
        resp = c.get("/live.pgn")
        assert resp.status_code == 200 and resp.text == ""
        assert c.get("/round/1.pgn").status_code == 404


# --------------------------------------------------------------------------- config and CLI


def test_live_pgn_key_and_option_are_checked(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    base = {"TimeControl": "60+1", "SwissOptions": {"Rounds": 1, "StatePath": "state/s.json"},
            "Engines": [{"Name": n, "Command": "stockfish"} for n in ("A", "B")]}
    for value, expected in ((5, "LivePgn: got 5, expected a non-empty string"),
                            ("state/s.json", "the live PGN would be the same file as the JSON "
                                             "snapshot")):
        path = write_config(tmp_path, base | {"LivePgn": value})
        assert main(["validate", str(path)]) == 2
        err = capsys.readouterr().err
        assert str(path.name) in err and expected in err, err
    path = write_config(tmp_path, base | {"LivePgn": "live/round.pgn"})
    assert load_config(path).live_pgn == tmp_path / "live" / "round.pgn"
    path = write_config(tmp_path, base)
    assert main(["run", str(path), "--live-pgn", str(tmp_path / "state" / "s.json")]) == 2
    err = capsys.readouterr().err
    assert "--live-pgn" in err and "SwissOptions.StatePath" in err
    assert main(["run", str(path), "--live-pgn", str(tmp_path / "nowhere" / "x.pgn")]) == 2
    assert "existing directory" in capsys.readouterr().err
    assert not (tmp_path / "state" / "s.sqlite3").exists()  # refused before anything was written


# --------------------------------------------------------------------------- a real event


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.read(), {k.lower(): v for k, v in resp.headers.items()}
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), {k.lower(): v for k, v in exc.headers.items()}


def _moves_by_round(games: list[chess.pgn.Game]) -> dict[str, list[str]]:
    return {g.headers["Round"]: [m.uci() for m in g.mainline_moves()] for g in games}


@pytest.mark.engines
@pytest.mark.slow
def test_real_event_live_pgn_polled_while_it_plays(tmp_path: Path) -> None:
    need_engines("stockfish", "ethereal-chess")
    config = write_config(tmp_path, {
        "Event": "Live relay", "Site": "localhost", "TimeControl": "4+0.05", "Concurrency": 1,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 40},
        "LivePgn": "state/live.pgn",
        "Engines": [
            {"Name": "Stockfish", "Command": "stockfish", "Options": {"Hash": 16, "Threads": 1}},
            {"Name": "Ethereal", "Command": "ethereal-chess", "Options": {"Hash": 16}}],
    })
    live_file = tmp_path / "state" / "live.pgn"
    log = tmp_path / "run.log"
    seen: dict[str, list[str]] = {}
    seen_file: dict[str, list[str]] = {}
    fetches = checked_clocks = 0
    with serve(config) as served:
        runner = start_runner(config, log)
        try:
            while runner.poll() is None:
                status, body, headers = _get(served.url + "live.pgn")
                assert status == 200
                fetches += 1
                games = games_of(body.decode())
                for rnd, moves in _moves_by_round(games).items():  # move lists only grow
                    assert moves[:len(seen.get(rnd, []))] == seen.get(rnd, []), rnd
                    seen[rnd] = moves
                if live_file.exists():
                    for rnd, moves in _moves_by_round(games_of(live_file.read_text())).items():
                        assert moves[:len(seen_file.get(rnd, []))] == seen_file.get(rnd, [])
                        seen_file[rnd] = moves
                # clocks as the JSON state has them, when both were read from the same moves
                status, state_body, _ = _get(served.url + "api/state")
                if status == 200:
                    by_round = {g.headers["Round"]: g for g in games}
                    for doc in json.loads(state_body)["in_progress"]:
                        g = by_round.get(f"{doc['round']}.{doc['game_in_round']}")
                        if g is None or [m.uci() for m in g.mainline_moves()] != doc["moves"]:
                            continue
                        assert g.headers["Result"] == "*"
                        assert g.headers.get("WhiteClock") == clock_tag(doc["clocks"]["white_ms"])
                        assert g.headers.get("BlackClock") == clock_tag(doc["clocks"]["black_ms"])
                        last = g.end()
                        if last.move is not None and doc["moves"]:
                            mover = "black_ms" if last.turn() == chess.WHITE else "white_ms"
                            assert f"[%clk {pgn_clock(doc['clocks'][mover])}]" in last.comment
                            checked_clocks += 1
                # the same text again: 304
                again, empty, _ = _get(served.url + "live.pgn",
                                       {"If-None-Match": headers["etag"]})
                assert again in (200, 304) and (again == 200 or empty == b"")
                time.sleep(0.5)
            assert runner.wait() == 0, log.read_text()[-3000:]
        finally:
            if runner.poll() is None:
                runner.kill()
                runner.wait()
        # the watcher sees the last commit: both games served with their results
        wait_until(lambda: len(games := games_of(_get(served.url + "live.pgn")[1].decode())) == 2
                   and all(g.headers["Result"] != "*" for g in games), "the last commit served")
        status, body, headers = _get(served.url + "live.pgn")
        final = body.decode()
        assert _get(served.url + "live.pgn", {"If-None-Match": headers["etag"]})[0] == 304
        assert _get(served.url + "round/1.pgn")[1].decode() == final
    assert live_file.read_text() == final  # the file and the dashboard: the same text
    games = games_of(final)
    assert len(games) == 2 and all(g.headers["Result"] in ("1-0", "0-1", "1/2-1/2") for g in games)
    for g in games:
        assert all(n.clock() is not None for n in g.mainline())
        assert any(n.eval() is not None for n in g.mainline())
        assert seen[g.headers["Round"]] == [m.uci() for m in g.mainline_moves()][:len(seen[g.headers["Round"]])]
    print(f"{fetches} fetches, {checked_clocks} clocks checked against the JSON state")
    assert fetches >= 10 and checked_clocks >= 3, (fetches, checked_clocks)
    assert "live PGN" not in log.read_text()  # no failed write or build
    assert re.search(r"\[%clk \d:\d\d:\d\d\.\d\]", final)


def test_if_modified_since_is_never_wrong_within_a_second() -> None:
    """``Last-Modified`` has whole seconds: a text that replaced another within the same
    second is never answered 304 to a client holding that second (it may hold the older)."""
    from starlette.requests import Request

    from runner.web.feeds import Feed

    def ask(**headers: str) -> Request:
        return Request({"type": "http", "method": "GET", "path": "/live.pgn",
                        "headers": [(k.replace("_", "-").encode(), v.encode())
                                    for k, v in headers.items()]})

    second = 1_790_000_000
    stamp = formatdate(second, usegmt=True)
    settled = Feed(1, b"x", '"a"', second + 0.2, ambiguous=False)
    assert settled.not_modified(ask(if_modified_since=stamp))
    assert not settled.not_modified(ask(if_modified_since=formatdate(second - 1, usegmt=True)))
    quick = Feed(2, b"y", '"b"', second + 0.7, ambiguous=True)  # replaced "a" in that second
    assert not quick.not_modified(ask(if_modified_since=stamp))
    assert quick.not_modified(ask(if_modified_since=formatdate(second + 1, usegmt=True)))
    # If-None-Match decides alone when it is there (weak tags and lists compared too)
    assert quick.not_modified(ask(if_none_match='W/"b"', if_modified_since="garbage"))
    assert not quick.not_modified(ask(if_none_match='"a", "c"', if_modified_since=stamp))
    assert quick.not_modified(ask(if_none_match='"a", "b"'))
    assert not quick.not_modified(ask(if_modified_since="not a date"))


def test_a_commit_wakes_the_loop_only_for_a_view_without_a_rewrite_due() -> None:
    """The move log's thread tells the snapshot and the live PGN of each commit
    (runviews.moves_written): one wake of the event loop for both, and none while each of
    them already has a rewrite waiting for its time (it reads the commit when it runs)."""
    import asyncio

    from runner.service.views.rewrite import RewriteSink
    from runner.service.views.runviews import moves_written

    async def scenario() -> tuple[list[str], list[int]]:
        loop = asyncio.get_running_loop()
        wakes: list[int] = []
        real = loop.call_soon_threadsafe

        def counted(*args: object, **kwargs: object) -> object:
            if getattr(args[0], "__qualname__", "").startswith("moves_written."):
                wakes.append(1)  # not to_thread's own wakes
            return real(*args, **kwargs)  # type: ignore[arg-type]

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        writes: list[str] = []
        snapshot = RewriteSink(lambda: writes.append("snapshot"), interval=60.0)
        live = RewriteSink(lambda: writes.append("live"), interval=60.0)
        written = moves_written(loop, snapshot, live)  # type: ignore[arg-type]
        await asyncio.to_thread(written)  # nothing due: asked, each writes at once
        await asyncio.to_thread(wait_until, lambda: len(writes) == 2, "the first writes")
        counts = [len(wakes)]
        await asyncio.to_thread(written)  # written a moment ago: each arms its timer
        await asyncio.to_thread(wait_until, lambda: snapshot.due() and live.due(), "timers")
        counts.append(len(wakes))
        await asyncio.to_thread(written)  # both due: no wake
        counts.append(len(wakes))
        await snapshot.flush()
        await live.flush()  # the timers fire now: each writes the commits once more
        return writes, counts

    writes, counts = asyncio.run(scenario())
    assert counts == [1, 2, 2]
    assert sorted(writes) == ["live", "live", "snapshot", "snapshot"]
