"""TCEC rule 7.c: deciding an interrupted game from its log (pure), and a real game resumed
from the position it reached with clocks and history restored."""

from __future__ import annotations

import asyncio
import io
import json
import random

import chess
import chess.pgn
import pytest

from runner.config import AdjudicationConfig, EngineConfig, TablebaseConfig, TcecDrawRule
from runner.config.typed import InterruptionConfig, TcecWinRule
from runner.domain import gamerecord
from runner.domain.adjudication import natural_end
from runner.domain.events import (
    GameStarted,
    MovePlayed,
    ResumePoint,
    event_to_json,
    resume_from_json,
    resume_to_json,
    workers_tag,
)
from runner.domain.interruption import attempt_words, decide, foresee, played_by
from runner.domain.models import GameSpec, Opening
from runner.domain.rmobility import game_rmobility
from runner.domain.timecontrol import parse_time_control
from runner.play.referee import play_game
from runner.play.tablebases import open_tablebase

TC = parse_time_control("60+1")
RULES = InterruptionConfig()


def log(start_fen: str | None, sans: list[str], scores: list[int | None] | None = None, *,
        book: int = 0, mates: dict[int, int] | None = None, clock0: int = 60000,
        draw_plies: int = 0, win_plies: int = 0) -> tuple[dict, list[dict]]:
    """A game's GameStarted and MovePlayed events (wire form): ``scores`` per ply, mover's view."""
    board = chess.Board(start_fen) if start_fen else chess.Board()
    started = event_to_json(GameStarted(
        game_id=1, white="W", black="B", white_id="w", black_id="b",
        start_time="2026-11-23T10:00:00.000+00:00", start_fen=board.fen(), book_plies=book,
        white_clock_ms=clock0, black_clock_ms=clock0))
    moves = []
    clocks = {chess.WHITE: clock0, chess.BLACK: clock0}
    for ply, san in enumerate(sans, 1):
        move = board.parse_san(san)
        mover = board.turn
        board.push(move)
        is_book = ply <= book
        if not is_book:
            clocks[mover] -= 500 - 1000  # 0.5 s used, 1 s increment
        score = None if scores is None or is_book else scores[ply - 1]
        mate = (mates or {}).get(ply)
        moves.append(event_to_json(MovePlayed(
            game_id=1, ply=ply, uci=move.uci(), san=san, fen=board.fen(),
            white_clock_ms=clocks[chess.WHITE], black_clock_ms=clocks[chess.BLACK],
            time_ms=0 if is_book else 500, book=is_book,
            score_cp=None if mate is not None else score, mate=mate,
            depth=None if is_book else 20, comment="book" if is_book else f"x{ply}",
            draw_plies=draw_plies if ply == len(sans) else 0,
            win_plies=win_plies if ply == len(sans) else 0)))
    return started, moves


def run(started, moves, *, rules=RULES, adjudication=None, tablebase=None):
    return decide(started, moves, interruption=rules,
                  adjudication=adjudication or AdjudicationConfig(), time_control=TC,
                  tablebase=tablebase)


def walk(plies: int, seed: int = 1) -> list[str]:
    """A legal game of ``plies`` plies that does not end by the rules on the way."""
    rng = random.Random(seed)
    board = chess.Board()
    sans = []
    while len(sans) < plies:
        moves = list(board.legal_moves)
        rng.shuffle(moves)
        for move in moves:
            board.push(move)
            ok = natural_end(board) is None and not board.can_claim_threefold_repetition()
            board.pop()
            if ok:
                sans.append(board.san(move))
                board.push(move)
                break
        else:
            raise AssertionError("stuck")
    return sans


OPEN = ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"]


def test_both_engines_winning_for_the_same_side_is_a_win() -> None:
    # mover's view: White +12.00, Black -10.50 (= +10.50 for White)
    d = run(*log(None, OPEN, [0, 0, 0, 0, 1200, -1050]))
    assert (d.action, d.rule, d.end.result) == ("finish", "7.c.ii", "1-0")
    assert d.end.reason == "White wins by adjudication: server interruption"
    assert (d.end.termination, d.end.details) == ("adjudication", "server interruption")
    # Black winning, one side by a mate score
    d = run(*log(None, OPEN, [0, 0, 0, 0, -1000, 0], mates={6: 7}))
    assert (d.rule, d.end.result) == ("7.c.ii", "0-1")
    # only one engine thinks so: the game goes on
    assert run(*log(None, OPEN, [0, 0, 0, 0, 1200, -900])).action == "resume"
    # a threshold of the config's own
    d = run(*log(None, OPEN, [0, 0, 0, 0, 1200, -900]),
            rules=InterruptionConfig(win_score_cp=900))
    assert d.rule == "7.c.ii"


def test_dead_draw_needs_both_scores_small_and_35_moves_each() -> None:
    shuffle = walk(72)  # 72 plies: 36 moves each
    scores = [5, -10] * 36
    d = run(*log(None, shuffle[:70], scores[:70]))  # 35 moves each
    assert (d.action, d.rule, d.end.result, d.end.reason) == (
        "finish", "7.c.iii", "1/2-1/2", "Draw by adjudication: server interruption")
    assert run(*log(None, shuffle[:68], scores[:68])).action == "resume"  # 34 each
    # book moves do not count as the engines' moves
    assert run(*log(None, shuffle[:70], scores[:70], book=4)).action == "resume"
    # one score above 0.15
    bad = scores[:70]
    bad[-1] = 16
    assert run(*log(None, shuffle[:70], bad)).action == "resume"
    # rules off: the game goes on
    assert run(*log(None, shuffle[:70], scores[:70]),
               rules=InterruptionConfig(adjudicate=False)).action == "resume"


def test_tablebase_position_is_adjudicated_with_the_real_halfmove_clock(syzygy_dir) -> None:
    tb = open_tablebase(TablebaseConfig((syzygy_dir,), 4))
    adj = AdjudicationConfig(tablebases=TablebaseConfig((syzygy_dir,), 3))  # 3 men in play
    # KQ v KR, 4 men: above Adjudication.MaxPieces (3), so only rule 7.c.iv decides it
    d = run(*log("8/8/8/4k3/8/8/2r5/K2Q4 w - - 0 60", ["Kb1", "Rc8"], [300, -400]),
            adjudication=adj, tablebase=tb)
    assert (d.action, d.rule, d.end.result, d.end.reason) == (
        "finish", "7.c.iv", "1-0", "White wins by adjudication: SyzygyTB")
    # KBN v K with the fifty-move counter at 60 and DTZ 64: a cursed win, so a draw
    d = run(*log("8/3B4/N7/8/8/8/5k2/7K w - - 60 80", ["Kh2", "Kf3"], [500, -500]),
            adjudication=adj, tablebase=tb)
    assert (d.rule, d.end.result, d.end.reason) == ("7.c.iv", "1/2-1/2",
                                                    "Draw by adjudication: SyzygyTB")
    # ... unless Ignore50
    ignore = AdjudicationConfig(tablebases=TablebaseConfig((syzygy_dir,), 3, ignore50=True))
    d = run(*log("8/3B4/N7/8/8/8/5k2/7K w - - 60 80", ["Kh2", "Kf3"], [500, -500]),
            adjudication=ignore, tablebase=tb)
    assert (d.rule, d.end.result) == ("7.c.iv", "1-0")
    # TablebasePieces: 0 turns the rule off
    d = run(*log("8/8/8/4k3/8/8/2r5/K2Q4 w - - 0 60", ["Kb1", "Rc8"], [300, -400]),
            adjudication=adj, tablebase=tb, rules=InterruptionConfig(tablebase_pieces=0))
    assert d.action == "resume"


def test_an_end_the_log_already_shows_is_kept() -> None:
    d = run(*log(None, ["f3", "e5", "g4", "Qh4#"], [0, 0, 0, 0]))
    assert (d.action, d.rule, d.end.result, d.end.reason) == ("finish", "log", "0-1", "Black mates")
    rules = AdjudicationConfig(tcec_draw=TcecDrawRule(plies=10), tcec_win=TcecWinRule(1000, 10))
    d = run(*log(None, OPEN, [0, 0, 0, 0, 10, -10], draw_plies=10), adjudication=rules)
    assert (d.rule, d.end.reason) == ("log", "Draw by adjudication: TCEC draw rule")
    d = run(*log(None, OPEN, [0, 0, 0, 0, 10, -10], draw_plies=9), adjudication=rules)
    assert d.action == "resume" and d.resume.draw_plies == 9
    d = run(*log(None, OPEN, [0, 0, 0, 0, 900, -1200], win_plies=10), adjudication=rules)
    assert (d.rule, d.end.reason) == ("log", "White wins by adjudication: TCEC win rule")


def test_resume_point_keeps_history_clocks_and_counts() -> None:
    started, moves = log(None, OPEN + ["Ba4"], [0, 0, 0, 0, 30, -40, 1100], book=2,
                         win_plies=3)
    d = run(started, moves, rules=InterruptionConfig(compensation_s=30))
    point = d.resume
    assert (d.action, d.rule) == ("resume", "7.c.v")
    assert point.moves == tuple(m["uci"] for m in moves) and point.ply == 7
    assert point.comments[:2] == ("book", "book") and point.book_plies == 2
    assert (point.white_moves, point.black_moves) == (3, 2)
    # 60 s + 3 x 0.5 s net gain (1 s increment - 0.5 s used) + 30 s compensation
    assert (point.white_clock_ms, point.black_clock_ms) == (60000 + 1500 + 30000,
                                                            60000 + 1000 + 30000)
    assert point.compensation_ms == 30000
    assert (point.win_plies, point.win_side) == (3, "white")
    assert point.start_time == "2026-11-23T10:00:00.000+00:00"
    assert resume_from_json(resume_to_json(point)) == point
    # the default compensation: 2% of the base time, at least 1 s, at most 60 s
    assert run(started, moves).resume.compensation_ms == 1200
    assert InterruptionConfig().compensation(2700) == 54.0
    assert InterruptionConfig().compensation(10) == 1.0


def test_the_workers_that_played_the_logged_moves() -> None:
    """Provenance (docs/cluster.md): the resume point names the cluster workers whose moves
    it keeps, in order: an attempt that logged no move past its resume point played none."""
    started, moves = log(None, OPEN, [0] * 6)
    assert run(started, moves).resume.workers == ()  # a game played on this machine
    on_w1 = {**started, "worker": "w1"}
    assert played_by(on_w1, moves) == ("w1",)
    on_w2 = {**started, "worker": "w2", "resumed_from_ply": 6, "played_by": ["w1"]}
    assert played_by(on_w2, moves) == ("w1",)  # w2 was lost before its first move
    more = moves + [{**moves[-1], "ply": 7}]
    assert played_by(on_w2, more) == ("w1", "w2")
    assert played_by({**on_w2, "worker": "w1", "played_by": ["w1", "w2"]}, more) == ("w1", "w2")
    assert run(on_w1, moves).resume.workers == ("w1",)
    point = run(on_w1, moves).resume
    assert resume_from_json(resume_to_json(point)) == point
    assert workers_tag(("w1", "w2"), "w1") == "w1, w2" and workers_tag((), "") == ""
    assert workers_tag(("w1",), "w3") == "w1, w3"


def test_replay_mode_and_logs_without_engine_moves() -> None:
    assert run(*log(None, OPEN, [0] * 6), rules=InterruptionConfig(mode="replay")).action == "replay"
    assert run(*log(None, OPEN[:2], None, book=2)).action == "replay"
    assert run(None, []).action == "replay"


@pytest.mark.engines
def test_a_real_game_resumes_from_the_position_with_its_clocks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    white = EngineConfig("Stockfish", "/usr/games/stockfish", nodes=2000)
    black = EngineConfig("Ethereal", "/usr/games/ethereal-chess", nodes=2000)
    spec = GameSpec(game_id=3, round=1, game_in_round=3, white=white, black=black,
                    time_control=parse_time_control("60+1"),
                    adjudication=AdjudicationConfig(max_moves=40),
                    opening=Opening(index=5, name="Ruy Lopez", moves=("e2e4", "e7e5")))
    board = chess.Board()
    sans = ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7", "Re1", "b5",
            "Bb3", "d6"]
    ucis = []
    for san in sans:
        ucis.append(board.push_san(san).uci())
    point = ResumePoint(moves=tuple(ucis), comments=("book", "book") + tuple(
        f"+0.{i}0/10 1.0s" for i in range(12)), book_plies=2, white_clock_ms=41234,
        black_clock_ms=37000, white_moves=6, black_moves=6, compensation_ms=1200,
        start_time="2026-11-23T10:00:00.000+00:00")
    events: list = []

    def replayed(*args: object) -> None:
        pytest.fail("the r-mobility was replayed from the record instead of kept move by move")

    monkeypatch.setattr(gamerecord, "record_rmobility", replayed)  # (the record's builder)
    record = asyncio.run(play_game(spec, emit=events.append, attempt=2, resume=point))
    # kept from the logged moves (book included) and the moves played after them
    assert record.rmobility == game_rmobility(None, record.moves, record.result)
    started = events[0]
    assert isinstance(started, GameStarted) and started.resumed_from_ply == 14
    assert (started.white_clock_ms, started.black_clock_ms) == (41234, 37000)
    assert started.start_time == "2026-11-23T10:00:00.000+00:00"
    first = events[1]
    assert isinstance(first, MovePlayed) and first.ply == 15 and not first.book
    assert first.black_clock_ms == 37000  # White moves first here: Black's clock untouched
    assert abs(first.white_clock_ms - (41234 - first.time_ms + 1000)) <= 2
    assert record.moves[:14] == ucis and len(record.moves) > 14
    game = chess.pgn.read_game(io.StringIO(record.pgn))
    assert game.headers["ResumedFromPly"] == "14"
    nodes = list(game.mainline())
    assert [n.move.uci() for n in nodes[:14]] == ucis
    assert nodes[13].comment.startswith("+0.110/10 1.0s, game resumed after an interruption")
    assert "White 0:41.2 Black 0:37.0" in nodes[13].comment
    assert record.start_time.startswith("2026-11-23T10:00:00")


def rows_of(moves: list[dict]) -> list[tuple[int, str]]:
    return [(m["ply"], json.dumps(m)) for m in moves]


def test_foresee_names_what_becomes_of_the_game_in_one_wording() -> None:
    """runner.domain.interruption.foresee: the one source every surface says (#54)."""
    started, moves = log(None, walk(12), [10] * 12)
    kw = {"interruption": RULES, "adjudication": AdjudicationConfig(), "time_control": TC}
    assert foresee(started, rows_of(moves), **kw).words() == \
        "continues from ply 12 (TCEC rule 7.c.v)"
    assert foresee(started, rows_of(moves), backend="cutechess", resumes=False,
                   **kw).words() == ("replayed from move 1: the cutechess backend cannot "
                                     "continue a game from a position")
    assert foresee(started, rows_of(moves), **{**kw, "interruption": InterruptionConfig(
        mode="replay")}).words() == "replayed from move 1: Interruption.Mode is replay"
    assert foresee(started, [], **kw).words() == "replayed from move 1: no move was logged"
    book, book_moves = log(None, walk(4), book=4)
    assert foresee(book, rows_of(book_moves), **kw).words() == \
        "replayed from move 1: no engine move was logged"
    bad = rows_of(moves)
    bad[0] = (1, "{not json")
    assert foresee(started, bad, **kw).words().startswith(
        "replayed from move 1: its move log does not replay: the logged move of ply 1 is not")
    won, won_moves = log(None, walk(12), [1200, -1200] * 6)
    said = foresee(won, rows_of(won_moves), **kw).words()
    assert said == "decided at ply 12: 1-0 (TCEC rule 7.c.ii)", said
    # a score that is not a number (a damaged or hostile log) is no score: the game goes on
    hostile = [dict(m, score_cp="x") if i % 2 else m for i, m in enumerate(won_moves)]
    assert foresee(won, rows_of(hostile), **kw).words() == \
        "continues from ply 12 (TCEC rule 7.c.v)"
    # a game's current attempt, as status and the dashboard label it
    assert attempt_words(2, 73) == "continued from ply 73 (attempt 2)"
    assert attempt_words(3, 0) == "replayed from move 1 (attempt 3)"
    assert attempt_words(1, 0) == ""
