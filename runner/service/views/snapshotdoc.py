"""The event's state as one versioned JSON document.

The same document is written to ``StatePath`` by the runner (the snapshot), printed by
``swiss-runner status --json`` and served by the dashboard. It is built from the database
alone (read-only), so any process can build it while the runner plays. docs/state.md
documents every key; ``format``/``version`` change only with it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.clock import utc_now as _now
from runner.config import Config
from runner.domain import standings as standing_rules  # (module: tests replace its functions)
from runner.domain.endings import classify_end
from runner.domain.gpus import gpu_table, spec_gpus
from runner.domain.models import EventResults, RoundResult
from runner.errors import ViewError, view
from runner.render import standings_report  # (module: tests replace its functions)
from runner.render.ratings_report import ratings_json
from runner.service.interrupted import interrupted_games
from runner.service.lock import runner_alive
from runner.store import decisions, queries
from runner.store.database import Store, StoredRound, atomic_write, results_of
from runner.store.tdstore import (
    Withdrawal,
    swiss_games,
    td_counts,
    voided_games,
    withdrawals,
)

_encode = json.JSONEncoder(separators=(",", ":")).encode
_ROUNDS_MARK = ',"rounds":0,"in_progress":'  # StateCache.encode: where the rounds go

if TYPE_CHECKING:
    from runner.domain.standings import StandingRow, Tally

STATE_FORMAT = "swiss-runner-state"
STATE_VERSION = 2  # 2: "td" (the tournament director's pause, decisions and notes)

# what the dashboard shows of each side's last search
_SEARCH_KEYS = ("score_cp", "mate", "depth", "seldepth", "nodes", "nps", "tbhits", "pv", "time_ms")




class _RankKey:
    """What a ranking is of (:func:`ranked`), hashed once by its rounds' numbers, byes,
    states and game counts (not by every game: a long event has thousands, ranked after
    each game) and compared whole."""

    __slots__ = ("parts", "_hash")

    def __init__(self, parts: tuple[Any, ...]) -> None:
        seeds, gpm, tiebreaks, rounds, withdrawn = parts
        self.parts = parts
        self._hash = hash((seeds, gpm, tiebreaks, withdrawn,
                           tuple([(r.number, r.bye, r.complete, len(r.games)) for r in rounds])))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _RankKey) and self.parts == other.parts


_RANKED: dict[_RankKey, list[Any]] = {}  # the last rankings computed (ranked())
_RANKED_LOCK = threading.Lock()


def ranked(results: EventResults, tiebreaks: Sequence[str], base: Tally | None = None
           ) -> list[StandingRow]:
    """``compute_standings(results, tiebreaks)``, kept for the next caller with the same games:
    the runner ranks the event for its round summary and again, a moment later, for the
    snapshot written once the next round is paired. The ranking reads the rounds that have
    a game or a bye only (tests/test_state.py checks it), so a round just paired does not
    make it another one. The rows are shared: callers must not change them. ``base``: what
    the ranking may go on from (compute_standings: the same rows, in less time)."""
    key = _RankKey((results.seeds, results.games_per_match, tuple(tiebreaks),
                    tuple(r for r in results.rounds if r.games or r.bye is not None),
                    results.withdrawn))
    with _RANKED_LOCK:
        rows = _RANKED.get(key)
    if rows is None:
        rows = standing_rules.compute_standings(results, tiebreaks, base)
        with _RANKED_LOCK:
            while len(_RANKED) >= 4:
                del _RANKED[next(iter(_RANKED))]
            _RANKED[key] = rows
    return rows


def standings_rows(config: Config, store: Store, results: EventResults | None = None
                   ) -> list[dict[str, Any]] | None:
    """Compact standings (full tables: `swiss-runner standings --format json`), of
    ``results`` when the caller read them (else read here)."""
    results = store.event_results() if results is None else results
    if results is None:
        return None
    with view("the standings"):
        rows = ranked(results, config.tiebreaks)
        return [{"place": r.place, "place_label": r.place_label, "engine": r.name, "seed": r.seed,
                 "score": float(r.score), "games": r.games, "wins": r.wins, "draws": r.draws,
                 "losses": r.losses, "byes": r.byes,
                 "tiebreaks": {k: None if r.tiebreaks.get(k) is None else float(r.tiebreaks[k])
                               for k in config.tiebreaks},
                 "extra_games": r.extra_games,
                 "extra_score": None if r.extra_score is None else float(r.extra_score),
                 "withdrawn_from_round": r.withdrawn_from}
                for r in rows]


class LiveGame:
    """A game in progress as the state document shows it (its ``in_progress`` entry less the
    game's ids and names), from its GameStarted event and its logged moves (wire form), fed
    in ply order. The runner keeps one per game between snapshots and adds only the moves
    logged since the last one."""

    def __init__(self, started: dict[str, Any] | None, started_text: str | None = None):
        self.started = started or {}
        self.started_text = started_text  # the stored GameStarted this was built from
        self.start_fen: str | None = self.started.get("start_fen")
        self.white_first = self.start_fen is None or self.start_fen.split()[1] == "w"
        self.uci: list[str] = []
        self.san: list[str] = []
        self.final: dict[str, Any] | None = None
        self.last: dict[str, dict[str, Any] | None] = {"white": None, "black": None}

    @property
    def plies(self) -> int:
        return len(self.uci)

    def add(self, move: dict[str, Any]) -> None:
        self.uci.append(move["uci"])
        self.san.append(move["san"])
        self.final = move
        if not move.get("book"):
            white_moved = (move["ply"] % 2 == 1) == self.white_first
            self.last["white" if white_moved else "black"] = move

    def doc(self) -> dict[str, Any]:
        started, final = self.started, self.final
        ply = final["ply"] if final else 0
        fen = final["fen"] if final else self.start_fen
        start_at = started.get("at_ms") or 0
        if final and (final.get("at_ms") or 0) >= start_at:  # a move of this attempt
            clocks = {"white_ms": final.get("white_clock_ms"),
                      "black_ms": final.get("black_clock_ms"), "at_ms": final.get("at_ms")}
        else:  # no move yet, or only moves logged before a resume: the clocks it started with
            clocks = {"white_ms": started.get("white_clock_ms"),
                      "black_ms": started.get("black_clock_ms"), "at_ms": start_at or None}
        clocks["turn"] = None if fen is None else ("white" if fen.split()[1] == "w" else "black")
        last = {side: None if move is None else {k: move.get(k) for k in _SEARCH_KEYS}
                for side, move in self.last.items()}
        return {
            "white_id": started.get("white_id", ""), "black_id": started.get("black_id", ""),
            "started": started.get("start_time"), "attempt": started.get("attempt", 0),
            "resumed_from_ply": started.get("resumed_from_ply", 0),
            "worker": started.get("worker", ""),
            "gpus": spec_gpus(started.get("spec") or {}),  # GPU hook (docs/gpus.md)
            "played_by": list(started.get("played_by") or ()),
            "start_fen": self.start_fen, "fen": fen, "ply": ply,
            "book_plies": started.get("book_plies", 0),
            "moves": list(self.uci), "san": list(self.san),
            "clocks": clocks, "last": last,
            "draw_plies": final.get("draw_plies", 0) if final else 0,
            "win_plies": final.get("win_plies", 0) if final else 0,
            "halfmove_clock": int(fen.split()[4]) if fen else 0,
        }


def live_game(started: dict[str, Any] | None, moves: list[dict[str, Any]]) -> dict[str, Any]:
    """A game in progress from its GameStarted event and its logged moves (wire form)."""
    live = LiveGame(started)
    for move in moves:
        live.add(move)
    return live.doc()


class StateCache:
    """What the runner keeps between two snapshots (it writes one at every game start and
    end, and every SnapshotIntervalS while moves come in), so that each costs little more
    than what changed: the document but its games in progress (built again when a game
    started or finished, a round was paired or completed, the TD decided, or the workers
    changed; then only the games whose row changed are made again), in it the standings
    (computed again when the results they rank changed: a game finished, a round was
    paired, an engine withdrawn, games voided) and the ratings (when a round was
    completed), each game in progress (only the moves logged
    since the last snapshot are read), the decoded GameStarted events, and what never
    changes once the event exists (seeds, opening order, name, creation time). One cache
    belongs to one event's database.

    ``on_view_error``: the standings or ratings could not be made (a bug in them): the
    runner reports it and the document is written with the last ones that could (tried
    again when they can have changed). Without it the error is raised."""

    def __init__(self, on_view_error: Callable[[ViewError], None] | None = None) -> None:
        self.on_view_error = on_view_error
        self.results_key: Any = None
        self.rows: list[dict[str, Any]] | None = None
        self.ratings_key: int | None = None
        self.ratings: Any = None
        self.live: dict[int, LiveGame] = {}
        self.started: dict[str, dict[str, Any]] = {}  # stored GameStarted text -> decoded
        self.fixed: dict[str, Any] | None = None
        self.base: tuple[dict[str, Any], list[dict[str, Any]]] = ({}, [])
        self.base_key: Any = None
        self.write_error: int | None = None  # errno of the failing snapshot write (reported)
        self.game_rows: dict[int, Any] = {}  # Store.game_rows(known)
        self.games_out: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # id: (row, out)
        self.rounds_out: dict[int, tuple[Any, list[dict[str, Any]], dict[str, Any]]] = {}
        self.round_texts: dict[int, tuple[dict[str, Any], str]] = {}  # number: (entry, JSON)
        self.round_results: dict[int, tuple[StoredRound, list[dict[str, Any]], RoundResult]] = {}

    def encode(self, doc: dict[str, Any]) -> str:
        """``_encode(doc)``, the same text, with each round of ``doc["rounds"]`` encoded
        again only when its entry changed (a JSON object's text is its members' texts
        joined: the rounds' part is spliced in where a placeholder was encoded)."""
        texts = {}
        for entry in doc["rounds"]:
            kept = self.round_texts.get(entry["number"])
            if kept is None or kept[0] is not entry:
                kept = self.round_texts[entry["number"]] = (entry, _encode(entry))
            texts[entry["number"]] = kept[1]
        head, mark, tail = _encode({**doc, "rounds": 0}).partition(_ROUNDS_MARK)
        if not mark:  # (no such document: the key order is fixed)
            return _encode(doc)
        return f'{head},"rounds":[{",".join(texts[e["number"]] for e in doc["rounds"])}],' \
               f'"in_progress":{tail}'

    def game_out(self, g: dict[str, Any]) -> dict[str, Any]:
        """``_game_out(g)``, made again only when the game's row changed (Store.game_rows
        hands back the same row while it does not; the caller must not change it)."""
        kept = self.games_out.get(g["game_id"])
        if kept is not None and kept[0] is g:
            return kept[1]
        out = _game_out(g, self.started_event)
        self.games_out[g["game_id"]] = (g, out)
        return out

    def started_event(self, text: str) -> dict[str, Any]:
        """A stored GameStarted, decoded once (the caller must not change it)."""
        started = self.started.get(text)
        if started is None:
            started = self.started[text] = json.loads(text)
        return started

    def forget_started(self, keep: set[str]) -> None:
        for text in [t for t in self.started if t not in keep]:
            del self.started[text]

    def live_game(self, store: Store, game_id: int, started_text: str | None) -> dict[str, Any]:
        """The game's live part, reading only the moves logged since the last call.

        The log of one attempt only grows, one ply after the other (a new attempt stores a
        new GameStarted, which starts the game's entry afresh); anything else read here
        (a gap in the plies) reads the whole log again."""
        live = self.live.get(game_id)
        if live is None or live.started_text != started_text:
            started = self.started_event(started_text) if started_text else None
            live = self.live[game_id] = LiveGame(started, started_text)
        for ply, move in store.logged_moves_after(game_id, live.plies):
            if ply != live.plies + 1:
                del self.live[game_id]
                return live_game(live.started, store.logged_moves(game_id))
            live.add(move)
        return live.doc()


WORKERS_META = "cluster_workers"  # meta key: the runner's last view of its Dask workers


def workers_table(store: Store, games: list[dict[str, Any]],
                  started: Callable[[str], dict[str, Any]] = json.loads) -> list[dict[str, Any]]:
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
        name = started(g["started_event"]).get("worker", "")
        if not name:
            continue
        row = rows.setdefault(name, {"name": name, "address": "", "slots": None, "state": "",
                                     "last_seen": None, "refused": {}, "busy": 0, "games": 0})
        row["busy" if g["status"] == "running" else "games"] += 1
    return sorted(rows.values(), key=lambda r: r["name"])


def build_state(config: Config, store: Store, *, standings: bool = True,
                cache: StateCache | None = None, runner_running: bool | None = None,
                ratings: bool = True) -> dict[str, Any]:
    """The state document (see the module docstring and docs/state.md).

    ``cache``: kept by the caller between calls on the same database (:class:`StateCache`):
    everything but the games in progress is built again only when a game started or
    finished, a round was paired or completed, or the workers changed (the standings and
    ratings only when they can have changed), and the games in progress are read on from
    where the last call left them.
    ``runner_running``: the caller knows (the runner itself); else the locks are asked.
    ``ratings`` False: ``"ratings"`` is null (the runner's own snapshot: fitting them needs
    numpy and scipy, which the runner never imports while it times engines).
    """
    fresh = cache is None
    cache = StateCache() if cache is None else cache
    key = None if fresh else (standings, ratings, _structure_key(store))
    if key is None or cache.base_key != key:
        cache.base = _base(config, store, cache, standings, fresh, ratings)
        cache.base_key = key
    doc, running = cache.base
    in_progress = []
    for g in running:
        live = cache.live_game(store, g["game_id"], g.get("started_event") or None)
        in_progress.append({"game_id": g["game_id"], "round": g["round"],
                            "game_in_round": g["game_in_round"], "white": g["white"],
                            "black": g["black"], **live})
    playing = {g["game_id"] for g in running}
    for game_id in [gid for gid in cache.live if gid not in playing]:
        del cache.live[game_id]
    doc = dict(doc)  # in the document's key order
    doc["updated"] = _now()
    doc["runner_running"] = (runner_alive(config.database) if runner_running is None
                             else runner_running)
    doc["in_progress"] = in_progress
    doc["interrupted"] = interrupted_games(config, store, runner_running=doc["runner_running"])
    doc["td"] = td_state(store)  # read each time: a TD command changes no game
    return doc


def round_complete(store: Store) -> Callable[[int], bool]:
    def complete(number: int) -> bool:
        return any(r.number > number or (r.number == number and r.state == "complete")
                   for r in store.rounds())
    return complete


def td_state(store: Store) -> dict[str, Any]:
    """The ``td`` key of the state document (docs/state.md)."""
    return decisions.td_doc(store.conn, round_complete(store))


def _structure_key(store: Store) -> tuple[Any, ...]:
    """What the document but its games in progress is made from, in short: games only get
    added, started (with a new attempt), finished or put back (no longer running); rounds
    only get added and completed; the rest is written once."""
    return (*queries.structure_counts(store.conn), store.meta(WORKERS_META),
            *td_counts(store.conn))


def _rounds_out(rounds: list[StoredRound], games: list[dict[str, Any]], cache: StateCache
                ) -> list[dict[str, Any]]:
    """The document's ``rounds``: each with its pairs and their games."""
    by_round: dict[int, list[dict[str, Any]]] = {}
    for g in games:
        by_round.setdefault(g["round"], []).append(g)
    rounds_out = []
    for rd in rounds:
        rgames = by_round.get(rd.number, [])
        kept = cache.rounds_out.get(rd.number)
        if kept is not None and kept[0] is rd and len(kept[1]) == len(rgames) and all(
                a is b for a, b in zip(kept[1], rgames, strict=True)):
            rounds_out.append(kept[2])  # neither the round's row nor its games' rows changed
            continue
        entry = {
            "number": rd.number, "extra": rd.extra, "state": rd.state, "bye": rd.bye,
            "dropped_history_rounds": list(rd.dropped),
            "pairs": [{"first": a, "second": b,
                       "games": [cache.game_out(g) for g in rgames if g["pair_index"] == i]}
                      for i, (a, b) in enumerate(rd.pairs)],
        }
        cache.rounds_out[rd.number] = (rd, rgames, entry)
        rounds_out.append(entry)
    return rounds_out


def _event_results(fixed: dict[str, Any], rounds: list[StoredRound], games: list[dict[str, Any]],
                   withdrawn: list[Withdrawal], cache: StateCache | None = None
                   ) -> EventResults | None:
    """``store.event_results()`` of the rows the document was just built from (not read again);
    with ``cache``, each round's results made again only when its round or one of its games'
    rows changed (Store.game_rows hands back the same row while it does not), and the last
    results themselves when none changed (the standings then see at once that they did not)."""
    gpm = fixed["games_per_match"]
    if gpm is None:
        return None
    kept = {} if cache is None else cache.round_results
    by_round: dict[int, list[dict[str, Any]]] = {}
    for g in games:
        by_round.setdefault(g["round"], []).append(g)
    out, now = [], {}
    for rd in rounds:
        rgames = by_round.get(rd.number, [])
        last = kept.get(rd.number)
        if last is None or last[0] is not rd or len(last[1]) != len(rgames) or not all(
                a is b for a, b in zip(last[1], rgames, strict=True)):
            rows = sorted(((g["round"], g["game_in_round"], g["white"], g["black"], g["result"],
                            g["rmobility"], g["extra"], g["status"]) for g in rgames),
                          key=lambda r: r[1])
            last = (rd, rgames, results_of((), int(gpm), [rd], rows, ()).rounds[0])
        now[rd.number] = last
        out.append(last[2])
    results = EventResults(seeds=tuple(fixed["seeds"]), games_per_match=int(gpm),
                           rounds=tuple(out),
                           withdrawn=tuple((w.engine, w.from_round) for w in withdrawn))
    if cache is not None:
        cache.round_results = now
        previous = cache.results_key
        if isinstance(previous, EventResults) and previous == results:
            return previous  # (the same object: ranked and the standings' cache see it at once)
    return results


def _base(config: Config, store: Store, cache: StateCache, standings: bool, fresh: bool,
          ratings: bool = True) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The document but its games in progress (``updated``, ``runner_running`` and
    ``in_progress`` are left None), and the rows of the games being played."""
    s = config.swiss
    rounds = store.rounds()
    games = store.game_rows(None if fresh else cache.game_rows)
    started_texts = {g["started_event"] for g in games if g.get("started_event")}
    decoded = cache.started_event
    rounds_out = _rounds_out(rounds, games, cache)
    current = rounds[-1] if rounds else None
    fixed = cache.fixed
    if fixed is None:
        fixed = {"event": store.meta("event"), "created": store.meta("created"),
                 "seeds": store.seeds(), "opening_order": store.opening_order(),
                 "games_per_match": store.meta("games_per_match")}
        if fixed["seeds"] and not fresh:  # the event exists: none of these change any more
            cache.fixed = fixed
    scheduled_total = swiss_games(store.conn, len(fixed["seeds"]), s.games_per_match, s.rounds)
    extra = sum(1 for g in games if g["extra"])
    finished = sum(1 for g in games if g["status"] == "finished")
    running = [g for g in games if g["status"] == "running"]
    complete_rounds = sum(1 for r in rounds if r.state == "complete" and not r.extra)
    done_rounds = sum(1 for r in rounds if r.state == "complete")
    withdrawn = withdrawals(store.conn)
    event_results = functools.partial(_event_results, fixed, rounds, games, withdrawn,
                                      None if fresh else cache)
    results = (_results(config, store, done_rounds, cache, ratings, event_results)
               if standings else (None, None))
    doc = {
        "format": STATE_FORMAT,
        "version": STATE_VERSION,
        "event": fixed["event"],
        "site": config.site,
        "created": fixed["created"],
        "updated": None,
        "database": str(store.path),
        "runner_running": None,
        "rounds_total": s.rounds,
        "rounds_complete": complete_rounds,
        "current_round": None if current is None else {
            "number": current.number, "extra": current.extra, "state": current.state,
            "pairs": [list(p) for p in current.pairs], "bye": current.bye},
        "games_finished": finished,
        "games_in_progress": len(running),
        "games_total": scheduled_total + extra,
        "complete": complete_rounds == s.rounds and all(g["status"] == "finished" for g in games),
        "seeds": list(fixed["seeds"]),
        "opening_order": list(fixed["opening_order"]),
        "next_match_index": store.next_match_index(),
        "rounds": rounds_out,
        "in_progress": None,
        "interrupted": None,
        "workers": workers_table(store, games, decoded),
        "gpus": gpu_table(config.gpus, rounds_out, decisions.offline_gpus(store.conn)),  # GPU hook
        "builds": store.builds(),  # each engine's builds, oldest first (TCEC rule 8)
        "standings": results[0],
        "ratings": results[1],
        "withdrawn": [{"engine": w.engine, "from_round": w.from_round, "forfeit": w.forfeit,
                       "decision_id": w.decision_id, "reason": w.reason}
                      for w in withdrawn],
        "voided_games": len(voided_games(store.conn)),
    }
    cache.forget_started(started_texts)
    return doc, running


def ratings_doc(config: Config, store: Store, *, margins: bool = False) -> dict[str, Any] | None:
    """The event's ratings (runner.domain.ratings, as `swiss-runner ratings --format json`).

    Without ``margins`` the model is fitted but not simulated (no error margins or
    likelihoods of superiority): the runner writes this document while it times engines,
    and a thousand simulated events would hold the interpreter for a second on a big event.
    `swiss-runner ratings`, `standings` and the dashboard compute the margins.
    """
    finished = [g for g in store.game_rows() if g["status"] == "finished"]
    if not finished:
        return None  # before numpy and scipy are loaded (0.5 s of CPU): nothing to rate
    # late: runner.domain.ratings loads numpy and scipy, which `run` never imports
    from runner.domain.ratings import Game, compute_ratings

    seeds = store.seeds()
    with view("the ratings"):
        games = [Game(g["white"], g["black"], g["result"], g["round"],
                      end=classify_end(g["result"], g["termination"], reason=g["reason"]),
                      extra=g["extra"], game=g["game_in_round"])
                 for g in finished]
        options = standing_rules.rating_options(config)
        if not margins:
            options = replace(options, simulations=0)
        return ratings_json(compute_ratings(games, options, seeds))


def _results(config: Config, store: Store, complete_rounds: int, cache: StateCache,
             ratings: bool, event_results: Callable[[], EventResults | None]
             ) -> tuple[list[dict[str, Any]] | None, Any]:
    """(standings rows, ratings): the standings computed again when ``event_results()``
    changed (a game finished, a round was paired, an engine withdrawn, games voided), the
    ratings when a round was completed (they need numpy/scipy: not while each game ends),
    and never without ``ratings``."""
    results = event_results()  # (the key: withdrawals and voided games change it too)
    if cache.results_key != results or cache.results_key is None:
        with _view_of_snapshot(cache):
            cache.rows, cache.results_key = standings_rows(config, store, results), results
    if not ratings:
        return cache.rows, None
    if cache.ratings_key != complete_rounds:
        with _view_of_snapshot(cache):
            cache.ratings, cache.ratings_key = ratings_doc(config, store), complete_rounds
    return cache.rows, cache.ratings


@contextlib.contextmanager
def _view_of_snapshot(cache: StateCache) -> Iterator[None]:
    """A part of the document that could not be made is handed to ``cache.on_view_error``
    (the last one that could be made stays, and it is tried again at its next change)."""
    try:
        yield
    except ViewError as exc:
        if cache.on_view_error is None:
            raise
        cache.on_view_error(exc)


_GAME_KEYS = ("game_id", "game_in_round", "pair_index", "leg", "white", "black",
              "opening_index", "status", "result", "reason", "termination", "rmobility", "plies",
              "attempt")


def _game_out(g: dict[str, Any], started: Callable[[str], dict[str, Any]] = json.loads
              ) -> dict[str, Any]:
    out = {k: g[k] for k in _GAME_KEYS}
    event = started(g["started_event"]) if g.get("started_event") else {}
    out["resumed_from_ply"] = event.get("resumed_from_ply", 0)
    spec = event.get("spec") or {}
    if spec.get("white_build") or spec.get("black_build"):  # which builds played it
        out["builds"] = {"white": spec.get("white_build", ""), "black": spec.get("black_build", "")}
    if spec_gpus(spec):  # GPU hook: the devices (docs/gpus.md)
        out["gpus"] = spec_gpus(spec)
    return out


def standings_text(config: Config, store: Store, results: EventResults | None = None,
                   base: Tally | None = None,
                   cells: standings_report.CellMemo | None = None) -> str | None:
    """The standings table of the recorded games (None before the event has results), of
    ``results`` when the caller read them (else read here), ranked from ``base`` (ranked),
    with the rounds' cells kept in ``cells`` (render_standings)."""
    results = store.event_results() if results is None else results
    if results is None:
        return None
    with view("the standings table"):
        return standings_report.render_standings(ranked(results, config.tiebreaks, base),
                                                 results, "text", cells=cells)


def write_snapshot(config: Config, store: Store, cache: StateCache | None = None, *,
                   runner_running: bool | None = None) -> bool:
    """Replace StatePath with the state document; report (not raise) a failed write.

    Only the runner writes it: its ``"ratings"`` is null (the runner never fits ratings,
    which need numpy and scipy; `status --json`, `standings` and the dashboard do).

    The file is replaced atomically (a reader sees the old document or the new one) but not
    synced to disk: it is a view, rebuilt from the database, and `run` rebuilds one that a
    power cut left cut short (:func:`check_snapshot`).

    Returns False when the write failed (the caller tries again later)."""
    path = config.swiss.state_path
    try:
        data = build_state(config, store, cache=cache, runner_running=runner_running,
                           ratings=False)
        atomic_write(path, (_encode(data) if cache is None else cache.encode(data)) + "\n",
                     durable=False)
    except OSError as exc:
        if cache is None or cache.write_error != exc.errno:  # once while it keeps failing
            print(f"error: {path}: cannot write the JSON snapshot ({exc.strerror}); the "
                  f"previous snapshot is intact and the games are safe in {store.path}; it is "
                  "written again at the next update (reported once)", file=sys.stderr,
                  flush=True)
        if cache is not None:
            cache.write_error = exc.errno
        return False
    if cache is not None:
        cache.write_error = None
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
