"""A generated event for the dashboard's tests and bench: filled through the Store API.

Rounds are paired by the real pairing (``Tournament.pair``), games are recorded with
``Store.record_game`` (PGN written by ``runner.domain.pgn.write_game`` and a per-move log
with scores, depths, nodes and clocks), and games in progress are started with
``Store.start_game`` and given logged moves, as the runner would. Results are drawn from a
seeded random generator that favours the better seed, so standings, shared places and the
Swiss chart look like those of a real event. No engine is run.
"""

from __future__ import annotations

import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import chess
from testkit import write_config

from runner.config import Config, load_config
from runner.config.fingerprint import event_fingerprint
from runner.domain.events import GameStarted, MovePlayed, event_to_json
from runner.domain.models import GameRecord
from runner.domain.pgn import write_game
from runner.service.tournament import Tournament
from runner.store.database import Store
from runner.store.writer import INSERT_MOVES, move_row

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
GAME_S = 95.0


def web_config(directory: Path, names: list[str], rounds: int, **extra: Any) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = write_config(directory, {
        "Event": extra.pop("Event", "Generated Swiss"), "Site": extra.pop("Site", "bench"),
        "TimeControl": "60+1",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": rounds, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"TcecDraw": {"MaxPawns": 8, "MaxPieces": 8, "ScoreCp": 20, "Plies": 10}},
        "Engines": [{"Name": n, "Command": sys.executable} for n in names],
        **extra,
    })
    return path


def _play(rng: random.Random, game_id: int, plies: int, start: datetime,
          attempt: int = 1) -> tuple[list[MovePlayed], chess.Board]:
    board = chess.Board()
    clocks = [60_000, 60_000]
    moves: list[MovePlayed] = []
    score = rng.randint(-30, 30)
    at = start.timestamp() * 1000
    for ply in range(1, plies + 1):
        legal = sorted(board.legal_moves, key=lambda m: m.uci())
        if not legal:
            break
        move = legal[rng.randrange(len(legal))]
        san = board.san(move)
        mover = 0 if board.turn == chess.WHITE else 1
        board.push(move)
        book = ply <= 8
        used = 0 if book else rng.randint(200, 1500)
        clocks[mover] = clocks[mover] - used + (0 if book else 1000)
        at += used + 5
        score += rng.randint(-25, 25)
        pv = [move.uci()] + [m.uci() for m in list(board.legal_moves)[:1]]
        moves.append(MovePlayed(
            game_id=game_id, ply=ply, uci=move.uci(), san=san, fen=board.fen(),
            white_clock_ms=clocks[0], black_clock_ms=clocks[1], time_ms=used, book=book,
            score_cp=None if book else (score if mover == 0 else -score),
            depth=None if book else rng.randint(14, 30), seldepth=None,
            nodes=None if book else rng.randint(10**5, 10**7), nps=None, tbhits=None,
            pv=() if book else tuple(pv), comment="book" if book else f"{score / 100:+.2f}/20 1.0s",
            at_ms=int(at), draw_plies=0, win_plies=0, attempt=attempt))
    return moves, board


def _result(rng: random.Random, seeds: dict[str, int], white: str, black: str) -> str:
    edge = (seeds[black] - seeds[white]) / max(len(seeds), 1)
    r = rng.random()
    if r < 0.35 + 0.3 * edge:
        return "1-0"
    if r < 0.65 + 0.1 * edge:
        return "1/2-1/2"
    return "0-1"


def generate_event(directory: Path, *, engines: int = 42, rounds: int = 11,
                   finished_rounds: int | None = None, running: int = 2, plies: int = 90,
                   names: list[str] | None = None, seed: int = 7, **extra: Any) -> Config:
    """Create the event; the first ``finished_rounds`` rounds complete (default: all but the
    last), the next one paired with ``running`` games in progress (moves logged).
    ``extra``: more config keys (``Event``, ``Site``, ...)."""
    rng = random.Random(seed)
    names = names or [f"Engine {i + 1:02d}" for i in range(engines)]
    config = load_config(web_config(directory, names, rounds, **extra))
    if finished_rounds is None:
        finished_rounds = rounds - 1
    store = Store.open(config.database)
    store.conn.execute("PRAGMA synchronous=OFF")  # set-up only: no fsync per generated game
    try:
        store.init_event(event_fingerprint(config), names, [], event=config.event,
                         games_per_match=2, rounds=rounds)
        tour = Tournament(config, store, quiet=True)
        seeds = {n: i + 1 for i, n in enumerate(names)}
        clock = T0
        for number in range(1, min(rounds, finished_rounds + 1) + 1):
            tour.pair(number)
            games = store.games(number)
            last_round = number > finished_rounds
            for g in games:
                if last_round:
                    break
                result = _result(rng, seeds, g.white, g.black)
                n = rng.randint(plies // 2, plies * 2)
                moves, board = _play(rng, g.game_id, n, clock)
                reason = {"1-0": "White wins by adjudication", "0-1": "Black wins by adjudication",
                          "1/2-1/2": "Draw by adjudication: TCEC draw rule"}[result]
                pgn = write_game({"Event": config.event, "Site": config.site,
                                  "Round": f"{number}.{g.game_in_round}", "White": g.white,
                                  "Black": g.black, "Result": result},
                                 None, [m.uci for m in moves], [m.comment for m in moves], reason)
                end = clock + timedelta(seconds=GAME_S + rng.uniform(-20, 20))
                record = GameRecord(
                    white=g.white, black=g.black, result=result, reason=reason,
                    termination="adjudication", moves=[m.uci for m in moves],
                    comments=[m.comment for m in moves], pgn=pgn,
                    start_time=clock.isoformat(timespec="milliseconds"),
                    end_time=end.isoformat(timespec="milliseconds"),
                    duration_s=(end - clock).total_seconds(), rmobility="G1.0")
                store.record_game(g.game_id, record, [move_row(m) for m in moves])
                clock = end
            if last_round:
                for g in games[:running]:
                    start_live_game(store, g.game_id, g.white, g.black, rng.randint(20, 60), rng)
    finally:
        store.close()
    return config


def start_live_game(store: Store, game_id: int, white: str, black: str, plies: int,
                    rng: random.Random | None = None) -> list[MovePlayed]:
    """Mark a game running (GameStarted kept) and log ``plies`` moves ending now."""
    rng = rng or random.Random(game_id)
    now = datetime.now(UTC)
    started = GameStarted(game_id=game_id, white=white, black=black, white_id=f"{white} 1.0",
                          black_id=f"{black} 1.0", start_time=now.isoformat(timespec="milliseconds"),
                          start_fen=chess.STARTING_FEN, book_plies=8, white_clock_ms=60_000,
                          black_clock_ms=60_000, attempt=1)
    store.start_game(game_id, 1, json.dumps(event_to_json(started)))
    moves, _ = _play(rng, game_id, plies, now - timedelta(seconds=plies))
    add_moves(store, moves)
    return moves


def start_next_scheduled(store: Store, plies: int) -> Any:
    """Start the event's first scheduled game with ``plies`` moves (start_live_game); the game."""
    game = next(g for g in store.games() if g.status == "scheduled")
    start_live_game(store, game.game_id, game.white, game.black, plies)
    return game


def add_moves(store: Store, moves: list[MovePlayed]) -> None:
    with store.transaction() as c:
        c.executemany(INSERT_MOVES, [move_row(m) for m in moves])


def play_first_move(store: Store, game_id: int, board: chess.Board, ply: int) -> str:
    """Record on ``store`` the first legal move (by UCI) of ``board`` as ply ``ply`` of the
    game, with 5 s on each clock; the move is pushed on ``board``. Returns its SAN."""
    move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
    san = board.san(move)
    board.push(move)
    add_moves(store, [MovePlayed(
        game_id=game_id, ply=ply, uci=move.uci(), san=san, fen=board.fen(),
        white_clock_ms=5000, black_clock_ms=5000, score_cp=0, depth=5,
        at_ms=int(time.time() * 1000))])
    return san
