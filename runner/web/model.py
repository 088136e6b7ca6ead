"""What the dashboard shows, built from the database alone (read-only).

:func:`build_view` reads the event once per change and returns a :class:`View`: the state
document exactly as ``build_state`` makes it (served as ``/api/state``), the full standings
document (``/api/standings``), and what only the dashboard needs on top: the ETA, the Swiss
chart, the runner's state with a time, and the live games with their score series and PVs
in SAN (``/api/live`` and every Server-Sent Event; docs/dashboard.md documents it).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import chess
import chess.pgn

from runner.clock import utc_now
from runner.config import Config
from runner.domain.eta import expected_game_s, game_length
from runner.domain.events import parse_utc
from runner.domain.models import white_score
from runner.domain.pgn import read_game, unescape_tag
from runner.domain.standings import compute_standings
from runner.domain.variant import board_at
from runner.errors import ViewError
from runner.render.standings_report import standings_json
from runner.service.interrupted import interrupted_games
from runner.service.lock import lock_path, runner_alive
from runner.service.views.progress import event_eta, halted
from runner.service.views.snapshotdoc import build_state, live_game, ratings_doc
from runner.store.dashboard import (
    begin_read,
    game_row,
    last_record_times,
    recent_durations,
    running_games,
)
from runner.store.dashboard import data_version as data_version  # the app's poll
from runner.store.dashboard import structure_key as structure_key  # the app's poll
from runner.store.database import Store, StoreError

LIVE_FORMAT = "swiss-runner-live"
LIVE_VERSION = 1


@dataclass
class View:
    """One build of everything the pages show (immutable once published)."""

    state: dict[str, Any] | None  # the versioned state document; None: no event yet
    error: str | None = None  # the database cannot be read (message for the page)
    standings: dict[str, Any] | None = None  # runner.render.standings_report.standings_json
    ratings: dict[str, Any] | None = None  # runner.domain.ratings.ratings_json, with margins
    chart: list[dict[str, Any]] = field(default_factory=list)
    live: dict[str, Any] = field(default_factory=dict)  # the /api/live document
    digest: str = ""  # changes when anything but the moves of games in progress changes
    built_ms: float = 0.0  # how long the build took
    live_json: str = "null"
    _state_json: bytes | None = None

    def state_json(self) -> bytes:
        """The state document as JSON (made on the first request after a change)."""
        if self._state_json is None:
            self._state_json = json.dumps(self.state, separators=(",", ":")).encode()
        return self._state_json


def _parse_time(text: str | None) -> float | None:
    """Unix time of an ISO 8601 string (UTC when it names no zone); None if unreadable."""
    moment = parse_utc(text)
    return None if moment is None else moment.timestamp()


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- building


def build_view(config: Config, *, runner_seen: tuple[bool | None, float] | None = None) -> View:
    """Read the event (a fresh read-only connection, one read transaction, closed again)
    and build a View.

    ``runner_seen``: the runner's state and the time the watcher saw it change, which is
    more precise than what the database tells afterwards.
    """
    t0 = time.perf_counter()
    try:
        store = Store.open_readonly(config.database)
    except StoreError as exc:
        return _finish(View(state=None, error=str(exc)), t0)
    if store is None:
        return _finish(View(state=None), t0)
    try:
        begin_read(store.conn)  # one consistent snapshot of the database
        if not store.has_event():
            return _finish(View(state=None), t0)
        state = build_state(config, store, ratings=False)  # fitted below, once a round
        results = store.event_results()
        standings = None
        if results is not None:  # the full tables (build_state has the compact rows)
            rows = compute_standings(results, config.tiebreaks)
            standings = standings_json(rows, results, config.tiebreaks)
        fitted, ratings = _ratings(config, store, state)
        state["ratings"] = fitted
        view = View(state=state, standings=standings, chart=swiss_chart(results, standings),
                    ratings=ratings)
        view.live = _live_document(config, store, state, runner_seen)
    except sqlite3.Error as exc:
        return _finish(View(state=None, error=f"{config.database}: cannot read: {exc}"), t0)
    except StoreError as exc:
        return _finish(View(state=None, error=str(exc)), t0)
    except Exception as exc:  # noqa: BLE001 - a record the dashboard cannot make sense of
        return _finish(error_view(config, exc), t0)
    finally:
        store.close()
    return _finish(view, t0)


def error_view(config: Config, exc: BaseException) -> View:
    """The View of an event whose records cannot be made sense of (a malformed move log or
    GameStarted event, say): the pages say so and the watcher goes on watching."""
    if isinstance(exc, StoreError | ViewError):  # says which file (or view) and why already
        return finish(View(state=None, error=str(exc)))
    return finish(View(state=None, error=f"{config.database}: cannot read the event: "
                                         f"{type(exc).__name__}: {exc}"))


_RATINGS: dict[tuple[str, int], tuple[dict[str, Any] | None, dict[str, Any] | None]] = {}


def _ratings(config: Config, store: Store, state: dict[str, Any]
             ) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(the state document's ratings: fitted, no simulations; the ratings with their error
    margins from simulated events), computed in the dashboard's refresh thread (never while a
    request waits) and again only when a round was completed: at most once per round."""
    done = sum(1 for r in state.get("rounds") or () if r.get("state") == "complete")
    key = (str(config.database), done)
    if key not in _RATINGS:
        _RATINGS.clear()
        _RATINGS[key] = (ratings_doc(config, store) if done else None,
                         ratings_doc(config, store, margins=True) if done else None)
    return _RATINGS[key]


def refresh_live(config: Config, old: View, *,
                 runner_seen: tuple[bool | None, float] | None = None) -> View:
    """A new View in which only the games in progress are read again (their moves came in);
    the rounds, results and standings of ``old`` are kept. The caller checked (with
    :func:`structure_key`) that no game started or finished and no round was paired."""
    t0 = time.perf_counter()
    assert old.state is not None
    store = Store.open_readonly(config.database)
    if store is None:
        return build_view(config, runner_seen=runner_seen)
    try:
        begin_read(store.conn)
        state = dict(old.state)
        state["updated"] = utc_now()
        state["runner_running"] = runner_alive(config.database)
        games = {game_id: {"started_event": started}
                 for game_id, started in running_games(store.conn).items()}
        in_progress = []
        logged: dict[int, list[dict[str, Any]]] = {}
        for g in old.state["in_progress"]:
            row = games.get(g["game_id"])
            if row is None:  # it finished after all: read everything again
                return build_view(config, runner_seen=runner_seen)
            started = json.loads(row["started_event"]) if row.get("started_event") else None
            logged[g["game_id"]] = store.logged_moves(g["game_id"])
            fresh = live_game(started, logged[g["game_id"]])
            in_progress.append({k: g[k] for k in ("game_id", "round", "game_in_round",
                                                  "white", "black")} | fresh)
        state["in_progress"] = in_progress
        state["interrupted"] = interrupted_games(config, store,
                                                 runner_running=state["runner_running"])
        view = View(state=state, standings=old.standings, chart=old.chart, ratings=old.ratings)
        view.live = _live_document(config, store, state, runner_seen, logged)
    except sqlite3.Error as exc:
        return _finish(View(state=None, error=f"{config.database}: cannot read: {exc}"), t0)
    except Exception as exc:  # noqa: BLE001 - a record the dashboard cannot make sense of
        return _finish(error_view(config, exc), t0)
    finally:
        store.close()
    return _finish(view, t0)


def finish(view: View) -> View:
    """Complete a View built by hand: its live document, digest and JSON."""
    return _finish(view, time.perf_counter())


def _finish(view: View, t0: float) -> View:
    if view.state is None:
        view.live = {"format": LIVE_FORMAT, "version": LIVE_VERSION, "event": None,
                     "error": view.error, "runner": None, "progress": None, "games": []}
    view.digest = _digest(view)
    view.live["digest"] = view.digest
    view.live_json = json.dumps(view.live, separators=(",", ":"))
    view.built_ms = (time.perf_counter() - t0) * 1000
    return view


def _digest(view: View) -> str:
    """Hash of what the pages show apart from the moves and clocks of the games in play."""
    s = view.state
    if s is None:
        key: Any = ["none", view.error]
    else:
        cur = s["current_round"] or {}
        key = [s["games_finished"], s["games_total"], s["rounds_complete"], len(s["rounds"]),
               cur.get("state"), s["runner_running"], s["complete"],
               sorted((g["game_id"], g["attempt"]) for g in s["in_progress"]),
               s.get("td"), s.get("interrupted")]
    return hashlib.sha1(json.dumps(key).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- live games


def _live_document(config: Config, store: Store, state: dict[str, Any],
                   runner_seen: tuple[bool | None, float] | None,
                   logged: dict[int, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    games = []
    for g in state["in_progress"]:
        moves = (logged or {}).get(g["game_id"])
        if moves is None:
            moves = store.logged_moves(g["game_id"])
        games.append(live_extras(g, moves))
    draw = config.adjudication.tcec_draw
    win = config.adjudication.tcec_win
    return {
        "format": LIVE_FORMAT, "version": LIVE_VERSION,
        "event": state["event"], "site": state["site"], "error": None,
        "runner": runner_info(config, store, state, runner_seen),
        "progress": progress(config, store, state),
        "rules": {"draw_plies": draw.plies if draw else None,
                  "win_plies": win.plies if win else None},
        "games": games,
    }


def _number(value: Any) -> int | float | None:
    """A number the engine reported, or None (whatever else a record holds is not drawn)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value == value and abs(value) != float("inf") else None


def _white_pov(move: dict[str, Any], white_moved: bool) -> tuple[int | None, int | None]:
    sign = 1 if white_moved else -1
    cp, mate = _number(move.get("score_cp")), _number(move.get("mate"))
    return (None if cp is None else sign * cp, None if mate is None else sign * mate)


def live_extras(game: dict[str, Any], moves: list[dict[str, Any]]) -> dict[str, Any]:
    """A game of ``in_progress`` plus what a live board needs: the last move, the score
    series (White's point of view), the PVs in SAN and the first move number."""
    start_fen = game.get("start_fen") or chess.STARTING_FEN
    try:
        start = board_at(start_fen)
    except ValueError:
        start = chess.Board()
    white_first = start.turn == chess.WHITE
    scores = []
    pv_san: dict[str, str | None] = {"white": None, "black": None}
    fens = [start.fen()] + [m.get("fen", "") for m in moves]
    for m in moves:
        if m.get("book"):
            continue
        white_moved = (m["ply"] % 2 == 1) == white_first
        cp, mate = _white_pov(m, white_moved)
        if cp is not None or mate is not None:
            scores.append([m["ply"], cp, mate, "w" if white_moved else "b"])
    for side in ("white", "black"):
        last = (game.get("last") or {}).get(side)
        if not last or not last.get("pv"):
            continue
        # the PV starts with the move the side played: find that move's position
        for i in range(len(moves) - 1, -1, -1):
            white_moved = (moves[i]["ply"] % 2 == 1) == white_first
            if white_moved == (side == "white") and not moves[i].get("book"):
                pv_san[side] = _pv_san(fens[i], last["pv"])
                break
    return {**game, "lastmove": moves[-1]["uci"] if moves else None, "scores": scores,
            "pv_san": pv_san, "first_move_number": start.fullmove_number,
            "white_first": white_first}


def _pv_san(fen: str, pv: list[str]) -> str | None:
    try:
        board = board_at(fen)
        line = board.copy(stack=False)
        for uci in pv[:24]:  # parse_uci: a 960 castling in either notation
            line.push(line.parse_uci(uci))
        return board.variation_san(line.move_stack)
    except (ValueError, AssertionError, IndexError):
        return None


# --------------------------------------------------------------------------- progress, runner


def progress(config: Config, store: Store, state: dict[str, Any]) -> dict[str, Any]:
    """Games done/total and an ETA (runner.domain.eta) from the measured game lengths (the
    last 100 games), the games in play and the time control; ``mean_game_s`` its game length."""
    total, done = state["games_total"], state["games_finished"]
    durations = recent_durations(store.conn)
    out: dict[str, Any] = {"finished": done, "total": total,
                           "in_progress": state["games_in_progress"],
                           "rounds_total": state["rounds_total"],
                           "rounds_complete": state["rounds_complete"],
                           "current_round": state["current_round"]["number"]
                           if state["current_round"] else None,
                           "complete": state["complete"], "halted": halted(state),
                           "mean_game_s": None, "eta_s": None, "eta_at": None}
    if not durations or state["complete"]:
        return out
    now = time.time()
    running = []  # a stopped runner's games are not being played: no time counts for them
    for g in state["in_progress"] if state["runner_running"] is not False else ():
        started = _parse_time(g.get("started"))
        running.append(0.0 if started is None else max(0.0, now - started))
    eta = event_eta(config, durations, total, done, running) or 0.0
    mean = game_length(durations, running, expected_game_s(config.time_control))[0]
    out.update(mean_game_s=round(mean, 1), eta_s=round(eta))
    if state["runner_running"] and out["halted"] is None:
        out["eta_at"] = _iso(now + eta)
    return out



def runner_info(config: Config, store: Store, state: dict[str, Any],
                runner_seen: tuple[bool | None, float] | None) -> dict[str, Any]:
    """Running or not, and since when: the watcher's observation when it saw the change,
    else the lock file's time (written when a run starts) or the last recorded activity."""
    running = state["runner_running"]
    since: float | None = None
    if runner_seen is not None and runner_seen[0] == running:
        since = runner_seen[1]
    elif running:
        try:
            since = os.stat(lock_path(config.database)).st_mtime
        except OSError:
            since = None
    else:
        since = last_activity(store, state)
    return {"running": running, "since": _iso(since)}


def last_activity(store: Store, state: dict[str, Any]) -> float | None:
    """Unix time of the last thing the runner recorded (a move, a game, a round)."""
    times: list[float] = []
    for g in state["in_progress"]:
        at = (g.get("clocks") or {}).get("at_ms")
        if at:
            times.append(at / 1000)
        started = _parse_time(g.get("started"))
        if started:
            times.append(started)
    for recorded in last_record_times(store.conn):
        at = _parse_time(recorded)
        if at:
            times.append(at)
    return max(times) if times else None


# --------------------------------------------------------------------------- Swiss chart


def swiss_chart(results: Any, standings: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Score groups after each complete scheduled round (round 0: everyone on 0).

    Each column: ``{round, groups: [{score, engines: [{engine, delta, opponent, bye}]}]}``,
    groups best first, engines within a group in standings order. ``delta`` is what the
    engine scored in that round (None in round 0), ``opponent`` whom it met ("BYE" with
    ``bye`` true: an engine may well be named "BYE").
    """
    if results is None:
        return []
    order = {row["engine"]: row["rank"] for row in (standings or {}).get("standings", [])}
    totals = {name: 0.0 for name in results.seeds}
    columns = [_column(0, totals, {}, {}, {n: i for i, n in enumerate(results.seeds)}, None)]
    for rd in sorted(results.rounds, key=lambda r: r.number):
        games = [g for g in rd.games if not g.extra]
        if not rd.complete or (not games and rd.bye is None):
            continue
        delta = dict.fromkeys(totals, 0.0)
        opponent: dict[str, str] = {}
        for g in games:
            points = white_score(g.result)
            delta[g.white] = delta.get(g.white, 0.0) + points
            delta[g.black] = delta.get(g.black, 0.0) + 1 - points
            opponent[g.white], opponent[g.black] = g.black, g.white
        if rd.bye is not None:
            delta[rd.bye] = delta.get(rd.bye, 0.0) + results.games_per_match
            opponent[rd.bye] = "BYE"
        for name, d in delta.items():
            totals[name] = totals.get(name, 0.0) + d
        out = {name for name, first in results.withdrawn
               if rd.number >= first and name not in opponent}
        columns.append(_column(rd.number, totals, delta, opponent, order, rd.bye, out))
    return columns


def _column(number: int, totals: dict[str, float], delta: dict[str, float],
            opponent: dict[str, str], order: dict[str, int], bye: str | None,
            withdrawn: set[str] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    groups: dict[float, list[str]] = {}
    for name, score in totals.items():
        groups.setdefault(score, []).append(name)
    return {"round": number, "groups": [
        {"score": score,
         "engines": [{"engine": n, "delta": None if n in withdrawn or not number
                      else delta.get(n), "opponent": opponent.get(n), "bye": n == bye,
                      "withdrawn": n in withdrawn}
                     for n in sorted(names, key=lambda n: order.get(n, 10**6))]}
        for score, names in sorted(groups.items(), reverse=True)]}


# --------------------------------------------------------------------------- one game


_COMMENT = re.compile(r"^\s*([+-]?)(M?)(\d+(?:\.\d+)?)/(\d+)")


def game_detail(config: Config, game_id: int) -> dict[str, Any] | None:
    """A game for its page: tags, every ply with FEN and the mover's search, its PGN.

    None when the event has no such game. Moves come from the recorded PGN (finished) or
    the per-move log (in progress); scores from the move log, else from the PGN comments.
    """
    if not 0 < game_id <= MAX_GAME_ID:
        return None  # no such game (and beyond what SQLite can even be asked about)
    store = Store.open_readonly(config.database)
    if store is None:
        return None
    try:
        game = game_row(store.conn, game_id)
        if game is None:
            return None
        logged = {m["ply"]: m for m in store.logged_moves(game_id)}
    except sqlite3.Error as exc:
        raise StoreError(f"{config.database}: cannot read game {game_id}: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:  # a malformed move log
        raise StoreError(f"{config.database}: cannot read game {game_id}'s move log: "
                         f"{type(exc).__name__}: {exc}") from None
    finally:
        store.close()
    try:
        return _game_page(game, logged)
    except (ValueError, KeyError, TypeError, AttributeError, AssertionError) as exc:
        raise StoreError(f"{config.database}: cannot read game {game_id}: "
                         f"{type(exc).__name__}: {exc}") from None


MAX_GAME_ID = 2**63 - 1  # SQLite's largest integer


def _game_page(game: dict[str, Any], logged: dict[int, dict[str, Any]]) -> dict[str, Any]:
    try:
        opening = json.loads(game.pop("opening")) if game.get("opening") else None
    except ValueError:
        opening = None
    name = opening.get("name") if isinstance(opening, dict) else None
    game["opening_name"] = str(name) if name else None
    plies: list[dict[str, Any]] = []
    headers: list[tuple[str, str]] = []
    # a game in progress has no recorded start_fen yet: its opening's FEN is where it began
    book_fen = opening.get("fen") if isinstance(opening, dict) else None
    start_fen = game["start_fen"] or (book_fen if isinstance(book_fen, str) else None) \
        or chess.STARTING_FEN
    if game["status"] == "finished" and game["pgn"]:
        parsed = read_game(io.StringIO(game["pgn"]))
        if parsed is not None:
            headers = [(k, unescape_tag(v)) for k, v in parsed.headers.items()]
            board = parsed.board()
            start_fen = board.fen()
            for number, node in enumerate(parsed.mainline(), start=1):
                plies.append(_ply(board, node.move, number, logged.get(number), node.comment))
                board.push(node.move)
    else:
        board = board_at(start_fen)
        for number in sorted(logged):
            m = logged[number]
            try:
                move = board.parse_uci(m["uci"])
                plies.append(_ply(board, move, number, m, m.get("comment") or ""))
                board.push(move)
            except (ValueError, AssertionError):
                break
    game["start_fen"] = start_fen
    game["headers"] = headers
    game["plies"] = plies
    return game


def _ply(board: chess.Board, move: chess.Move, number: int, logged: dict[str, Any] | None,
         comment: str) -> dict[str, Any]:
    white_moved = board.turn == chess.WHITE
    san = board.san(move)
    out: dict[str, Any] = {"ply": number, "uci": move.uci(), "san": san, "white": white_moved,
                           "move_number": board.fullmove_number, "comment": comment,
                           "book": comment.strip() == "book", "score_cp": None, "mate": None,
                           "depth": None, "nodes": None, "time_ms": None, "clock_ms": None}
    if logged:
        cp, mate = _white_pov(logged, white_moved)
        out.update(score_cp=cp, mate=mate, depth=_number(logged.get("depth")),
                   nodes=_number(logged.get("nodes")), time_ms=_number(logged.get("time_ms")),
                   book=bool(logged.get("book")),
                   clock_ms=_number(logged.get("white_clock_ms" if white_moved
                                               else "black_clock_ms")))
    else:
        found = _COMMENT.match(comment)
        if found:
            sign = -1 if found.group(1) == "-" else 1
            if not white_moved:
                sign = -sign
            if found.group(2):
                out["mate"] = sign * int(float(found.group(3)))
            else:
                out["score_cp"] = round(sign * float(found.group(3)) * 100)
            out["depth"] = int(found.group(4))
    board.push(move)
    out["fen"] = board.fen()
    board.pop()
    return out


def event_pgn(config: Config) -> str | None:
    """Every recorded game's PGN in the order they finished (None: no event yet)."""
    store = Store.open_readonly(config.database)
    if store is None:
        return None
    try:
        return "".join(p if p.endswith("\n\n") else p.rstrip("\n") + "\n\n"
                       for p in store.finished_pgns() if p)
    except sqlite3.Error as exc:
        raise StoreError(f"{config.database}: cannot read the games: {exc}") from None
    finally:
        store.close()


def safe_filename(text: str) -> str:
    """A download file name from an event or engine name: letters, digits, - and _ only."""
    name = re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_")[:60]
    return name or "event"
