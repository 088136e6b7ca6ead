"""The event's state as one versioned JSON document.

The same document is written to ``StatePath`` by the runner (the snapshot), printed by
``swiss-runner status --json`` and served by the dashboard. It is built from the database
alone (read-only), so any process can build it while the runner plays. docs/state.md
documents every key; ``format``/``version`` change only with it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runner.config import Config
from runner.service.lock import runner_alive
from runner.store.database import Store, atomic_write

STATE_FORMAT = "swiss-runner-state"
STATE_VERSION = 1

# what the dashboard shows of each side's last search
_SEARCH_KEYS = ("score_cp", "mate", "depth", "seldepth", "nodes", "nps", "tbhits", "pv", "time_ms")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def standings_rows(config: Config, store: Store) -> list[dict[str, Any]] | None:
    """Compact standings (full tables: `swiss-runner standings --format json`)."""
    from runner.domain.standings import compute_standings

    results = store.event_results()
    if results is None:
        return None
    rows = compute_standings(results, config.tiebreaks)
    return [{"place": r.place, "place_label": r.place_label, "engine": r.name, "seed": r.seed,
             "score": float(r.score), "games": r.games, "wins": r.wins, "draws": r.draws,
             "losses": r.losses, "byes": r.byes,
             "tiebreaks": {k: None if r.tiebreaks.get(k) is None else float(r.tiebreaks[k])
                           for k in config.tiebreaks},
             "extra_games": r.extra_games,
             "extra_score": None if r.extra_score is None else float(r.extra_score)}
            for r in rows]


def live_game(started: dict[str, Any] | None, moves: list[dict[str, Any]]) -> dict[str, Any]:
    """A game in progress from its GameStarted event and its logged moves (wire form)."""
    started = started or {}
    last: dict[str, dict[str, Any] | None] = {"white": None, "black": None}
    start_fen = started.get("start_fen")
    white_first = start_fen is None or start_fen.split()[1] == "w"
    for move in moves:
        if move.get("book"):
            continue
        white_moved = (move["ply"] % 2 == 1) == white_first
        last["white" if white_moved else "black"] = {k: move.get(k) for k in _SEARCH_KEYS}
    final = moves[-1] if moves else None
    ply = final["ply"] if final else 0
    fen = final["fen"] if final else start_fen
    if final:
        clocks = {"white_ms": final.get("white_clock_ms"), "black_ms": final.get("black_clock_ms"),
                  "at_ms": final.get("at_ms")}
    else:
        clocks = {"white_ms": started.get("white_clock_ms"),
                  "black_ms": started.get("black_clock_ms"), "at_ms": None}
    clocks["turn"] = None if fen is None else ("white" if fen.split()[1] == "w" else "black")
    return {
        "white_id": started.get("white_id", ""), "black_id": started.get("black_id", ""),
        "started": started.get("start_time"), "attempt": started.get("attempt", 0),
        "resumed_from_ply": started.get("resumed_from_ply", 0),
        "worker": started.get("worker", ""),
        "start_fen": start_fen, "fen": fen, "ply": ply,
        "book_plies": started.get("book_plies", 0),
        "moves": [m["uci"] for m in moves], "san": [m["san"] for m in moves],
        "clocks": clocks, "last": last,
        "draw_plies": final.get("draw_plies", 0) if final else 0,
        "win_plies": final.get("win_plies", 0) if final else 0,
        "halfmove_clock": int(fen.split()[4]) if fen else 0,
    }


WORKERS_META = "cluster_workers"  # meta key: the runner's last view of its Dask workers


def workers_table(store: Store, games: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The cluster's workers (docs/cluster.md): the runner's view (name, address, slots,
    state joined/left, last_seen, refused engines) with, from the games, how many each has
    played (finished on it) and is playing (busy). [] for an event played on one machine."""
    rows: dict[str, dict[str, Any]] = {}
    try:
        known = json.loads(store.meta(WORKERS_META) or "[]")
    except ValueError:
        known = []
    for w in known:
        name = str(w.get("name", ""))
        if name and (name not in rows or w.get("state") != "left"):
            rows[name] = {"name": name, "address": w.get("address", ""),
                          "slots": w.get("slots", 0), "state": w.get("state", ""),
                          "last_seen": w.get("last_seen"), "refused": w.get("refused", {}),
                          "busy": 0, "games": 0}
    for g in games:
        if not g.get("started_event") or g["status"] == "scheduled":
            continue
        name = json.loads(g["started_event"]).get("worker", "")
        if not name:
            continue
        row = rows.setdefault(name, {"name": name, "address": "", "slots": None, "state": "",
                                     "last_seen": None, "refused": {}, "busy": 0, "games": 0})
        row["busy" if g["status"] == "running" else "games"] += 1
    return sorted(rows.values(), key=lambda r: r["name"])


def build_state(config: Config, store: Store, *, standings: bool = True,
                cache: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state document (see the module docstring and docs/state.md).

    ``cache``: a dict kept by the caller between calls; the standings (the costly part)
    are computed again only when the set of finished games changed.
    """
    s = config.swiss
    rounds = store.rounds()
    games = store.game_rows()
    by_round: dict[int, list[dict[str, Any]]] = {}
    for g in games:
        by_round.setdefault(g["round"], []).append(g)
    rounds_out = []
    for rd in rounds:
        rgames = by_round.get(rd.number, [])
        rounds_out.append({
            "number": rd.number, "extra": rd.extra, "state": rd.state, "bye": rd.bye,
            "dropped_history_rounds": list(rd.dropped),
            "pairs": [{"first": a, "second": b,
                       "games": [_game_out(g) for g in rgames if g["pair_index"] == i]}
                      for i, (a, b) in enumerate(rd.pairs)],
        })
    current = rounds[-1] if rounds else None
    scheduled_total = len(store.seeds()) // 2 * s.games_per_match * s.rounds
    extra = sum(1 for g in games if g["extra"])
    finished = sum(1 for g in games if g["status"] == "finished")
    running = [g for g in games if g["status"] == "running"]
    complete_rounds = sum(1 for r in rounds if r.state == "complete" and not r.extra)
    in_progress = []
    for g in running:
        started = json.loads(g["started_event"]) if g.get("started_event") else None
        live = live_game(started, store.logged_moves(g["game_id"]))
        in_progress.append({"game_id": g["game_id"], "round": g["round"],
                            "game_in_round": g["game_in_round"], "white": g["white"],
                            "black": g["black"], **live})
    done_rounds = sum(1 for r in rounds if r.state == "complete")
    results = _results(config, store, finished, done_rounds, cache) if standings else (None, None)
    return {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "event": store.meta("event"),
        "site": config.site,
        "created": store.meta("created"),
        "updated": _now(),
        "database": str(store.path),
        "runner_running": runner_alive(config.database),
        "rounds_total": s.rounds,
        "rounds_complete": complete_rounds,
        "current_round": None if current is None else {
            "number": current.number, "extra": current.extra, "state": current.state,
            "pairs": [list(p) for p in current.pairs], "bye": current.bye},
        "games_finished": finished,
        "games_in_progress": len(running),
        "games_total": scheduled_total + extra,
        "complete": complete_rounds == s.rounds and all(g["status"] == "finished" for g in games),
        "seeds": store.seeds(),
        "opening_order": store.opening_order(),
        "next_match_index": store.next_match_index(),
        "rounds": rounds_out,
        "in_progress": in_progress,
        "workers": workers_table(store, games),
        "standings": results[0],
        "ratings": results[1],
    }


def ratings_doc(config: Config, store: Store, *, margins: bool = False) -> dict[str, Any] | None:
    """The event's ratings (runner.domain.ratings, as `swiss-runner ratings --format json`).

    Without ``margins`` the model is fitted but not simulated (no error margins or
    likelihoods of superiority): the runner writes this document while it times engines,
    and a thousand simulated events would hold the interpreter for a second on a big event.
    `swiss-runner ratings`, `standings` and the dashboard compute the margins.
    """
    from runner.domain.endings import classify_end
    from runner.domain.ratings import Game, compute_ratings, ratings_json
    from runner.domain.standings import rating_options

    games = [Game(g["white"], g["black"], g["result"], g["round"],
                  end=classify_end(g["result"], g["termination"], reason=g["reason"]),
                  extra=g["extra"], game=g["game_in_round"])
             for g in store.game_rows() if g["status"] == "finished"]
    if not games:
        return None
    options = rating_options(config)
    if not margins:
        options = replace(options, simulations=0)
    return ratings_json(compute_ratings(games, options, store.seeds()))


def _results(config: Config, store: Store, finished: int, complete_rounds: int,
             cache: dict[str, Any] | None) -> tuple[list[dict[str, Any]] | None, Any]:
    """(standings rows, ratings): the standings computed again when a game finished, the
    ratings when a round was completed (they need numpy/scipy: not while each game ends)."""
    cache = {} if cache is None else cache
    key = (finished, len(store.rounds()))
    if cache.get("key") != key:
        cache["rows"], cache["key"] = standings_rows(config, store), key
    if cache.get("ratings_key") != complete_rounds:
        cache["ratings"], cache["ratings_key"] = ratings_doc(config, store), complete_rounds
    return cache["rows"], cache["ratings"]


def _game_out(g: dict[str, Any]) -> dict[str, Any]:
    out = {k: g[k] for k in ("game_id", "game_in_round", "pair_index", "leg", "white", "black",
                             "opening_index", "status", "result", "reason", "termination",
                             "rmobility", "plies", "attempt")}
    started = json.loads(g["started_event"]) if g.get("started_event") else {}
    out["resumed_from_ply"] = started.get("resumed_from_ply", 0)
    return out


def standings_text(config: Config, store: Store) -> str | None:
    """The standings table of the recorded games (None before the event has results)."""
    from runner.domain.standings import compute_standings, render_standings

    results = store.event_results()
    if results is None:
        return None
    return render_standings(compute_standings(results, config.tiebreaks), results, "text")


def write_snapshot(config: Config, store: Store, cache: dict[str, Any] | None = None) -> bool:
    """Replace StatePath with the state document; report (not raise) a failed write.

    Returns False when the write failed (the caller tries again later)."""
    path = config.swiss.state_path
    try:
        data = build_state(config, store, cache=cache)
        atomic_write(path, json.dumps(data, separators=(",", ":")) + "\n")
    except OSError as exc:
        print(f"error: {path}: cannot write the JSON snapshot ({exc.strerror}); the previous "
              f"snapshot is intact and the games are safe in {store.path}", file=sys.stderr,
              flush=True)
        return False
    return True


def check_snapshot(path: Path) -> bool:
    """True when an existing snapshot cannot be read (it is then simply rebuilt)."""
    if not path.exists():
        return False
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return True
    return False
