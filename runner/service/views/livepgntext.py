"""The live PGN of a round, read from the database (read-only): shared by the dashboard
(``/live.pgn``, ``/round/N.pgn``) and the runner's ``LivePgn`` file (runner.service.views.livepgn).

:class:`LivePgnBuilder` keeps what does not change between two builds: the text of each
finished game, and the moves of each game in progress (only the moves logged since the last
build are read). The text itself comes from runner.domain.livepgn.
"""

from __future__ import annotations

import io
import json
from typing import Any

import chess
import chess.pgn

from runner.domain.livepgn import join_games, live_game_pgn
from runner.domain.pgn import unescape_tag
from runner.domain.timecontrol import TimeControl
from runner.service.views.snapshotdoc import live_game
from runner.store import queries
from runner.store.database import Store


def _date(iso: str | None) -> str:
    return iso[:10].replace("-", ".") if iso and len(iso) >= 10 else "????.??.??"


def _recorded_moves(start_fen: str | None, uci: str) -> list[dict[str, Any]]:
    """The moves of a finished game without a move log (recorded before it existed)."""
    board = chess.Board(start_fen or chess.STARTING_FEN)
    out = []
    for ply, text in enumerate(uci.split(), start=1):
        move = chess.Move.from_uci(text)
        out.append({"ply": ply, "uci": text, "san": board.san(move)})
        board.push(move)
    return out


class LivePgnBuilder:
    """Builds the PGN of one round (or the current one) from a read-only Store."""

    def __init__(self, event: str = "?", site: str = "?") -> None:
        self.event, self.site = event, site  # for games started without them in their spec
        self._finished: dict[int, tuple[int, str]] = {}  # game_id -> (finish_seq, text)
        self._moves: dict[int, tuple[int, list[dict[str, Any]]]] = {}  # game_id -> (attempt, moves)

    @staticmethod
    def current_round(store: Store) -> int | None:
        """The last paired round (the state document's ``current_round``), None before."""
        return queries.last_round_number(store.conn)

    def live(self, store: Store) -> str:
        """Every started game of the current round ("" before the first pairing)."""
        number = self.current_round(store)
        return "" if number is None else self.round(store, number) or ""

    def round(self, store: Store, number: int) -> str | None:
        """Every started game (in progress or finished) of round ``number`` in board order;
        None when there is no such round."""
        if not queries.round_exists(store.conn, number):
            return None
        texts = []
        for game in queries.started_games_of_round(store.conn, number, store.version):
            if game["status"] == "finished":
                texts.append(self._finished_text(store, game))
            elif game["started_event"]:
                texts.append(self._running_text(store, game))
        return join_games(texts)

    def _finished_text(self, store: Store, game: dict[str, Any]) -> str:
        gid = game["game_id"]
        cached = self._finished.get(gid)
        if cached is not None and cached[0] == game["finish_seq"]:
            return cached[1]
        self._moves.pop(gid, None)
        game["pgn"], game["moves"], game["start_fen"] = queries.game_text(store.conn, gid)
        recorded = chess.pgn.read_headers(io.StringIO(game["pgn"] or ""))
        tags = {k: unescape_tag(v) for k, v in (recorded or {}).items()}
        tags.setdefault("Round", f"{game['round']}.{game['game_in_round']}")
        tags.update(White=game["white"], Black=game["black"])
        logged = store.logged_moves(gid)
        uci = game["moves"] or ""
        if [m.get("uci") for m in logged] != uci.split():
            logged = _recorded_moves(game["start_fen"], uci)
        text = live_game_pgn(tags, game["start_fen"], logged, reason=game["reason"],
                             clocks=_final_clocks(logged))
        self._finished[gid] = (game["finish_seq"], text)
        return text

    def _running_text(self, store: Store, game: dict[str, Any]) -> str:
        gid = game["game_id"]
        started = json.loads(game["started_event"])
        attempt, moves = self._moves.get(gid, (None, []))
        if attempt != game["attempt"]:
            moves = []
        last = moves[-1]["ply"] if moves else 0
        moves = moves + [m for _, m in store.logged_moves_after(gid, last)]
        self._moves[gid] = (game["attempt"], moves)
        spec = started.get("spec") or {}
        tags = {"Event": str(spec.get("event", self.event)),
                "Site": str(spec.get("site", self.site)),
                "Date": _date(started.get("start_time")),
                "Round": f"{game['round']}.{game['game_in_round']}",
                "White": game["white"], "Black": game["black"], "Result": "*"}
        if spec.get("time_control"):
            tags["TimeControl"] = TimeControl(**spec["time_control"]).pgn_tag()
        opening = spec.get("opening") or {}
        if opening.get("name"):
            tags["Opening"] = str(opening["name"])
        clocks = live_game(started, moves)["clocks"]
        return live_game_pgn(tags, started.get("start_fen"), moves,
                             clocks=(clocks["white_ms"], clocks["black_ms"]))


def _final_clocks(moves: list[dict[str, Any]]) -> tuple[int | None, int | None] | None:
    last = moves[-1] if moves else None
    if last is None:
        return None
    return (last.get("white_clock_ms"), last.get("black_clock_ms"))


def read_live(store: Store, builder: LivePgnBuilder, number: int | None = None) -> str | None:
    """The current round's live PGN (``number`` None) or round ``number``'s, read in one
    transaction (one consistent snapshot of the database)."""
    with queries.read_snapshot(store.conn):
        return builder.live(store) if number is None else builder.round(store, number)


__all__ = ["LivePgnBuilder", "read_live"]
