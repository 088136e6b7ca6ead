"""cutechess-cli backend: parser on the real cutechess 1.5.1 transcripts, command builder,
the exact TCEC draw rule on PGN evaluations, binary checks, and process handling.

cutechess-cli itself is not installable here (not packaged for Debian 12 or PyPI). Tests
named ``*_fake_cutechess_*`` run a small python script standing in for the binary to inject
faults or replay a real fixture; they test OUR process handling and parsing, not cutechess.
The ``real_cutechess`` tests run only when the binary is present.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import psutil
import pytest
from testkit import wait_until, write_config

from runner.cli import main
from runner.config import (
    AdjudicationConfig,
    EngineConfig,
    TablebaseConfig,
    TcecDrawRule,
    TcecWinRule,
    load_config,
)
from runner.domain.adjudication import Adjudicator
from runner.domain.events import GameFinished, MovePlayed
from runner.domain.models import GameRecord, GameSpec, Opening
from runner.domain.timecontrol import TimeControl, parse_time_control
from runner.play.cutechess import (
    NOT_INSTALLED_REASON,
    TCEC_DRAW_REASON,
    CutechessError,
    apply_tcec_draw_rule,
    build_command,
    check_binary,
    comment_eval_cp,
    finalize_record,
    parse_stdout,
    play_game,
    play_match,
    read_pgn_games,
    record_from_pgn,
    tcec_draw_ply,
    write_opening_file,
)
from runner.play.cutechess import play_game as cutechess_play_game
from runner.play.cutechess_live import LiveMoves, is_debug_line
from runner.play.engines import sweep_orphans
from runner.play.processes import kill_tree

# Transcripts of real cutechess-cli 1.5.1 runs made by the project (see data/cutechess/README.md).
FIXTURES = Path(__file__).resolve().parent / "data" / "cutechess"
REPO = Path(__file__).resolve().parents[1]

W, B, D = "1-0", "0-1", "1/2-1/2"
ADJ, TIME, ABANDONED, STALLED, ILLEGAL = ("adjudication", "time forfeit", "abandoned",
                                          "stalled connection", "illegal move")
SF, ETH = "Stockfish", "Ethereal"

# scenario -> every game in PGN order: (white, black, result, reason, termination)
EXPECTED: dict[str, list[tuple[str, str, str, str, str | None]]] = {
    "normal": [(SF, ETH, W, "White mates", None),
               (ETH, SF, B, "Black wins by adjudication", ADJ)],
    "draw_adjudication": [("Stockfish-A", "Stockfish-B", D, "Draw by adjudication", ADJ),
                          ("Stockfish-B", "Stockfish-A", D, "Draw by adjudication", ADJ)],
    "draw_adjudication_movenumber0": [
        ("Stockfish-A", "Stockfish-B", D, "Draw by 3-fold repetition", None),
        ("Stockfish-B", "Stockfish-A", D, "Draw by 3-fold repetition", None)],
    "resign_adjudication": [(SF, "Glaurung", W, "White wins by adjudication", ADJ),
                            ("Glaurung", SF, B, "Black wins by adjudication", ADJ)],
    "syzygy": [(SF, ETH, W, "White wins by adjudication: SyzygyTB", ADJ),
               (ETH, SF, W, "White wins by adjudication: SyzygyTB", ADJ),
               (SF, ETH, D, "Draw by adjudication: SyzygyTB", ADJ),
               (ETH, SF, D, "Draw by adjudication: SyzygyTB", ADJ),
               (SF, ETH, W, "White wins by adjudication: SyzygyTB", ADJ),
               (ETH, SF, W, "White wins by adjudication: SyzygyTB", ADJ),
               (SF, ETH, D, "Draw by adjudication: SyzygyTB", ADJ),
               (ETH, SF, D, "Draw by adjudication: SyzygyTB", ADJ),
               (SF, ETH, B, "Black wins by adjudication: SyzygyTB", ADJ),
               (ETH, SF, B, "Black wins by adjudication: SyzygyTB", ADJ)],
    "time_forfeit": [(SF, "Glaurung", B, "Black mates", None),
                     ("Glaurung", SF, W, "Black loses on time", TIME)],
    "time_forfeit_fake": [(SF, "FakeSlow", W, "Black loses on time", TIME),
                          ("FakeSlow", SF, B, "White loses on time", TIME)],
    # -debug all: the engine traffic in stdout.txt changes nothing of this
    "debug_live": [(SF, "Eth (12)", B, "White loses on time", TIME)],
    "debug_time_forfeit": [(SF, "FakeSlow", W, "Black loses on time", TIME)],
    "draw_by_timeout": [("FakeSlow", SF, D, "Draw by timeout", TIME),
                        (SF, "FakeSlow", W, "Black loses on time", TIME)],
    "crash": [(SF, "FakeCrash", W, "Black disconnects", ABANDONED)],
    "crash_recover": [(SF, "FakeCrash", W, "Black disconnects", ABANDONED),
                      ("FakeCrash", SF, B, "White disconnects", ABANDONED),
                      (SF, "FakeCrash", W, "Black disconnects", ABANDONED),
                      ("FakeCrash", SF, B, "White disconnects", ABANDONED)],
    "disconnect_vs_bare_king": [("FakeCrash", SF, B, "White disconnects", ABANDONED),
                                (SF, "FakeCrash", W, "Black disconnects", ABANDONED)],
    "illegal_move": [(SF, "FakeIllegal", W, "Black makes an illegal move: a1a1", ILLEGAL),
                     ("FakeIllegal", SF, B, "White makes an illegal move: e2e5", ILLEGAL)],
    "stall": [(SF, "FakeStall", W, "Black's connection stalls", STALLED)],
    "stall_recover": [(SF, "FakeStall", W, "Black's connection stalls", STALLED),
                      ("FakeStall", SF, B, "White's connection stalls", STALLED)],
    "draw_by_stall": [("FakeStall", SF, D, "Draw by stalled connection", STALLED),
                      (SF, "FakeStall", W, "Black's connection stalls", STALLED)],
    "openings_pgn": [(SF, ETH, W, "White mates", None), (ETH, SF, B, "Black mates", None),
                     (SF, ETH, W, "White mates", None), (ETH, SF, B, "Black mates", None)],
    "board_results": [(SF, ETH, W, "White mates", None), (ETH, SF, B, "Black mates", None),
                      (SF, ETH, D, "Draw by stalemate", None),
                      (ETH, SF, D, "Draw by insufficient mating material", None)],
    "xboard": [(SF, "Fairymax", W, "White mates", None), ("Fairymax", SF, B, "Black mates", None)],
    "xboard_phalanx": [("Phalanx", "Fairymax", W, "White mates", None),
                       ("Fairymax", "Phalanx", B, "Black mates", None)],
    "maxmoves": [(SF, ETH, D, "Draw by adjudication: maximal game length", ADJ),
                 (ETH, SF, D, "Draw by adjudication: maximal game length", ADJ)],
    "sprt": [(SF, ETH, W, "White wins by adjudication", ADJ),
             (ETH, SF, B, "Black wins by adjudication", ADJ)] * 5,
    "tournament_4": [(SF, "Glaurung", W, "White mates", None),
                     ("Glaurung", SF, B, "Black mates", None),
                     (ETH, "FairyStockfish", W, "White mates", None),
                     ("FairyStockfish", ETH, B, "Black mates", None),
                     (SF, "FairyStockfish", W, "White mates", None),
                     ("FairyStockfish", SF, B, "Black mates", None),
                     ("Glaurung", ETH, D, "Draw by fifty moves rule", None),
                     (ETH, "Glaurung", W, "White mates", None),
                     (SF, ETH, W, "White mates", None),
                     (ETH, SF, B, "Black mates", None),
                     ("FairyStockfish", "Glaurung", W, "White mates", None),
                     ("Glaurung", "FairyStockfish", B, "Black mates", None)],
}
NO_GAME = ("error_engine_not_found", "error_bad_option", "error_unknown_option")


def fixture(name: str, file: str) -> str:
    return (FIXTURES / name / file).read_text(encoding="utf-8")


def test_every_fixture_scenario_is_covered():
    scenarios = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert scenarios == set(EXPECTED) | set(NO_GAME)


# --------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_pgn_and_stdout_agree_on_result_reason_termination(name):
    games = read_pgn_games(fixture(name, "games.pgn"))
    records = [record_from_pgn(g) for g in games]
    got = [(r.white, r.black, r.result, r.reason, r.termination) for r in records]
    assert got == EXPECTED[name]
    out = parse_stdout(fixture(name, "stdout.txt"))
    # the console tells the same story, game by game (in game-number order)
    by_number = sorted(out.finished, key=lambda f: f.number)
    assert [(f.white, f.black, f.result, f.reason) for f in by_number] == [e[:4] for e in EXPECTED[name]]
    assert [f.number for f in by_number] == list(range(1, len(EXPECTED[name]) + 1))
    for record in records:
        # moves replay from the start position; comments one per move, reason stripped
        board = chess.Board(record.start_fen) if record.start_fen else chess.Board()
        for uci in record.moves:
            board.push_uci(uci)
        assert len(record.comments) == len(record.moves)
        assert all(record.reason not in c for c in record.comments)
        assert record.duration_s >= 0 and record.start_time.endswith("+00:00")
        # with the reason re-read from the PGN alone, the finished line is not needed
        assert record_from_pgn(games[records.index(record)], None).reason == record.reason


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_record_matches_finished_line_when_given(name):
    out = parse_stdout(fixture(name, "stdout.txt"))
    games = read_pgn_games(fixture(name, "games.pgn"))
    unused = list(out.finished)
    for game in games:
        h = game.headers
        line = next(f for f in unused if (f.white, f.black, f.result) == (h["White"], h["Black"], h["Result"]))
        unused.remove(line)
        assert record_from_pgn(game, line).reason == line.reason
    assert unused == []


def test_finished_line_after_finished_match_is_still_parsed():
    for name in ("crash", "stall"):
        text = fixture(name, "stdout.txt")
        assert text.index("Finished match") < text.index("Finished game 1")
        out = parse_stdout(text)
        assert out.finished_match
        assert [(f.number, f.result) for f in out.finished] == [(1, W)]
        assert out.terminated == [f"Fake{'Crash' if name == 'crash' else 'Stall'}(1)"]


def test_interleaved_tournament_output_finishes_out_of_order():
    out = parse_stdout(fixture("tournament_4", "stdout.txt"))
    numbers = [f.number for f in out.finished]
    assert sorted(numbers) == list(range(1, 13)) and numbers != sorted(numbers)
    assert len(out.started) == 12 and out.started[7] == ("Glaurung", ETH)
    assert out.other == [] and out.warnings == []  # the Rank table is recognised, not noise


def test_multi_line_warning_and_errors():
    out = parse_stdout(fixture("error_engine_not_found", "stdout.txt"))
    assert out.warnings == ["Cannot start engine Missing:\nCannot execute command: no-such-engine"]
    assert out.finished == [] and out.finished_match
    out = parse_stdout(fixture("error_bad_option", "stdout.txt"))
    assert out.warnings == ['Invalid time control: "abc"', "Invalid or missing time control"]
    assert fixture("error_bad_option", "exit_code.txt").strip() == "1"
    assert parse_stdout(fixture("error_unknown_option", "stdout.txt")).warnings == [
        'Unknown option: "-frobnicate"']
    illegal = parse_stdout(fixture("illegal_move", "stdout.txt"))
    assert illegal.warnings[:2] == ["Illegal PV move a1a1 from FakeIllegal (1)", "PV:  a1a1"]
    assert len(illegal.finished) == 2


def test_sprt_line_and_syzygy_details():
    assert parse_stdout(fixture("sprt", "stdout.txt")).sprt.endswith("H1 was accepted")
    records = [record_from_pgn(g) for g in read_pgn_games(fixture("syzygy", "games.pgn"))]
    assert {r.termination_details for r in records} == {"SyzygyTB"}
    black_start = records[2]
    assert black_start.start_fen == "8/5k2/8/8/3n4/8/1P2Q3/4K3 b - - 0 1"
    assert black_start.moves == ["d4e2"] and black_start.comments == ["-0.15/16 0.18s"]
    maxm = record_from_pgn(read_pgn_games(fixture("maxmoves", "games.pgn"))[0])
    assert maxm.plies == 40 and maxm.termination_details == "maximal game length"


def test_book_comments_and_dropped_game_ending_book_ply():
    games = read_pgn_games(fixture("openings_pgn", "games.pgn"))
    for game in games:
        comments = record_from_pgn(game).comments
        assert comments[:8] == ["book"] * 8 and comments[8] != "book"
    fools = record_from_pgn(read_pgn_games(fixture("board_results", "games.pgn"))[1])
    # the book's mating ply was dropped by cutechess and played by the engine instead
    assert fools.moves == ["f2f3", "e7e5", "g2g4", "d8h4"]
    assert fools.comments[:3] == ["book"] * 3 and fools.comments[3].startswith("+M1/")


def test_comment_eval():
    assert comment_eval_cp("+0.40/17 0.32s") == 40
    assert comment_eval_cp("-0.07/18 0.022s") == -7
    assert comment_eval_cp("0.00/1 0s") == 0
    assert comment_eval_cp("+318.67/16 0.66s") == 31867
    assert comment_eval_cp("+M1/245 0.007s") is None
    assert comment_eval_cp("-M34/23 0.063s") is None
    assert comment_eval_cp("book") is None and comment_eval_cp("") is None


def test_broken_pgn_is_an_error():
    with pytest.raises(CutechessError, match="does not parse"):
        read_pgn_games('[Event "?"]\n[White "A"]\n[Black "B"]\n[Result "1-0"]\n\n1. e4 e5 2. Ke3 1-0\n')


# --------------------------------------------------------------------------- TCEC draw rule

NO_GATE = TcecDrawRule(max_pawns=16, max_pieces=32, score_cp=20, plies=10)
TCEC = TcecDrawRule()


def test_tcec_draw_rule_without_gate_fires_no_later_than_cutechess_draw():
    # cutechess -draw movenumber=1 movecount=5 score=20 also needs 10 plies within 20 cp, but
    # resets on pawn moves and captures, so the gate-less TCEC window fires no later.
    for game in read_pgn_games(fixture("draw_adjudication", "games.pgn")):
        record = record_from_pgn(game)
        ply = tcec_draw_ply(record.start_fen, record.moves, record.comments, NO_GATE)
        assert ply is not None and 10 <= ply <= record.plies
        window = [comment_eval_cp(c) for c in record.comments[ply - 10:ply]]
        assert all(v is not None and abs(v) <= 20 for v in window)


def test_tcec_draw_rule_material_gate_keeps_full_board_games_going():
    games = [record_from_pgn(g) for g in read_pgn_games(fixture("draw_adjudication", "games.pgn"))]
    # game 2 never gets down to 8 pawns and 8 pieces: cutechess's gate-less -draw ended it
    # at ply 62, the TCEC rule lets it go on
    full_board = games[1]
    assert tcec_draw_ply(None, full_board.moves, full_board.comments, NO_GATE) == 62
    assert tcec_draw_ply(None, full_board.moves, full_board.comments, TCEC) is None
    # game 1 enters the gate at ply 49; the rule fires at ply 95, after 10 quiet plies all
    # inside the gate
    record = games[0]
    ply = tcec_draw_ply(None, record.moves, record.comments, TCEC)
    assert ply == 95
    board = chess.Board()
    for n, uci in enumerate(record.moves[:ply], start=1):
        board.push_uci(uci)
        inside = chess.popcount(board.pawns) <= 8 and chess.popcount(board.occupied & ~board.pawns) <= 8
        assert inside == (n >= 49), n
        if n > ply - 10:
            cp = comment_eval_cp(record.comments[n - 1])
            assert cp is not None and abs(cp) <= 20, (n, record.comments[n - 1])


def _shuffle_record(evals: list[str], result=W, reason="White mates", termination=None) -> GameRecord:
    """Kings and rooks shuffling (4 pieces, no pawns): inside the TCEC gate."""
    fen = "r3k3/8/8/8/8/8/8/R3K3 w - - 0 1"
    cycle = ["a1a2", "a8a7", "a2a1", "a7a8"]
    moves = [cycle[i % 4] for i in range(len(evals))]
    return GameRecord(white="A", black="B", result=result, reason=reason, termination=termination,
                      moves=moves, comments=evals, start_fen=fen)


def test_tcec_draw_rule_exact_window_reset_and_cut():
    ok = "+0.20/20 1s"
    rec = _shuffle_record([ok] * 9 + ["-0.21/20 1s"] + [ok] * 10 + [ok] * 5, result=W,
                          reason="Black loses on time", termination=TIME)
    assert tcec_draw_ply(rec.start_fen, rec.moves, rec.comments, TCEC) == 20
    cut = apply_tcec_draw_rule(rec, TCEC)
    assert (cut.result, cut.reason, cut.termination, cut.termination_details) == (
        D, TCEC_DRAW_REASON, "adjudication", "TCEC draw rule")
    assert cut.moves == rec.moves[:20] and cut.comments == rec.comments[:20]
    # a mate score resets the counter; a book ply neither counts nor resets it (the same
    # runner.domain.adjudication.TcecDrawWindow as the built-in referee)
    rec2 = _shuffle_record([ok] * 9 + ["+M12/30 1s"] + [ok] * 9)
    assert tcec_draw_ply(rec2.start_fen, rec2.moves, rec2.comments, TCEC) is None
    rec3 = _shuffle_record([ok] * 9 + ["book"] + [ok] * 9)
    assert tcec_draw_ply(rec3.start_fen, rec3.moves, rec3.comments, TCEC) == 11
    # the same game with 3 rooks and 2 kings (5 pieces) but a gate of 4 pieces never fires
    small = TcecDrawRule(max_pawns=0, max_pieces=3, score_cp=20, plies=10)
    assert tcec_draw_ply(rec.start_fen, rec.moves, rec.comments, small) is None


def test_tcec_draw_rule_on_the_last_ply():
    ok = "0.00/20 1s"
    flagged = _shuffle_record([ok] * 10, result=W, reason="Black loses on time", termination=TIME)
    got = apply_tcec_draw_rule(flagged, TCEC)  # the draw came before Black's flag
    assert (got.result, got.reason, got.plies) == (D, TCEC_DRAW_REASON, 10)
    tb = _shuffle_record([ok] * 10, result=D, reason="Draw by adjudication: SyzygyTB",
                         termination=ADJ)
    tb.termination_details = "SyzygyTB"
    assert apply_tcec_draw_rule(tb, TCEC) is tb  # the tablebase ended it on that very ply
    # the move limit reached on that ply: the built-in referee checks the TCEC draw rule
    # before MaxMoves, so the draw rule is the reason here too
    maxed = _shuffle_record([ok] * 10, result=D, reason="Draw by adjudication: maximal game length",
                            termination=ADJ)
    maxed.termination_details = "maximal game length"
    got = apply_tcec_draw_rule(maxed, TCEC)
    assert (got.result, got.reason, got.termination_details, got.plies) == (
        D, TCEC_DRAW_REASON, "TCEC draw rule", 10)
    mated = _shuffle_record([ok] * 10, result=W, reason="White mates")
    assert apply_tcec_draw_rule(mated, TCEC) is mated  # the board comes first


def test_tcec_draw_rule_and_max_moves_on_the_same_ply_agree_with_the_referee():
    ok = "0.00/20 1s"
    rec = _shuffle_record([ok] * 10, result=D, reason="Draw by adjudication: maximal game length",
                          termination=ADJ)
    rec.termination_details = "maximal game length"
    adj = Adjudicator(AdjudicationConfig(tcec_draw=TCEC, max_moves=5))
    board = chess.Board(rec.start_fen)
    verdicts = []
    for uci in rec.moves:
        board.push_uci(uci)
        verdicts.append(adj.update(board, chess.engine.Cp(0)))
    assert verdicts[:9] == [None] * 9
    assert apply_tcec_draw_rule(rec, TCEC).reason == verdicts[9].reason == TCEC_DRAW_REASON


# --------------------------------------------------------------------------- command builder


def engine(name, command="/usr/games/stockfish", **kw) -> EngineConfig:
    return EngineConfig(name=name, command=command, **kw)


def spec(white, black, *, tc="45:00+4.5", adj=None, opening=None, game_id=7, rnd=3, gir=2,
         margin=0) -> GameSpec:
    return GameSpec(game_id=game_id, round=rnd, game_in_round=gir, white=white, black=black,
                    time_control=parse_time_control(tc), adjudication=adj or AdjudicationConfig(),
                    opening=opening, event="Test Swiss", site="lab", time_margin_ms=margin)


def test_command_for_one_game_exact_argv(tmp_path):
    a = engine("Stockfish", args=("--bench-off",), options={"Hash": 16, "Move Overhead": 0,
                                                            "Ponder": False},
               working_dir="/tmp", nodes=5000)
    b = engine("Fairymax", "/usr/games/fairymax", protocol="xboard", depth=6)
    argv = build_command([spec(a, b)], pgn_out=tmp_path / "g.pgn", cutechess_path="/opt/cutechess-cli")
    assert argv == [
        "/opt/cutechess-cli",
        "-engine", "name=Stockfish", "cmd=/usr/games/stockfish", "arg=--bench-off", "dir=/tmp",
        "proto=uci", "nodes=5000", "option.Hash=16", "option.Move Overhead=0", "option.Ponder=false",
        "-engine", "name=Fairymax", "cmd=/usr/games/fairymax", "proto=xboard", "depth=6",
        "-each", "tc=2700+4.5",
        "-games", "1", "-rounds", "1", "-recover", "-event", "Test Swiss", "-site", "lab",
        "-srand", "7", "-pgnout", str(tmp_path / "g.pgn"),
    ]


def test_time_controls_in_cutechess_seconds():
    assert str(parse_time_control("45:00+4.5")) == "2700+4.5"
    a, b = engine("A"), engine("B")
    for tc, want in (("45:00+4.5", "tc=2700+4.5"), ("40/90:00+30", "tc=40/5400+30"),
                     ("10+0.1", "tc=10+0.1"), ("inf", "tc=inf"), ("1:00:00", "tc=3600")):
        argv = build_command([spec(a, b, tc=tc)], pgn_out=Path("g.pgn"))
        assert argv[argv.index("-each") + 1] == want


def test_movetime_uses_st_and_moves_tc_per_engine():
    a = engine("A", movetime_ms=1500)
    b = engine("B")
    argv = build_command([spec(a, b, tc="10+0.1", margin=50)], pgn_out=Path("g.pgn"))
    first = argv[argv.index("-engine"):argv.index("-engine", 2)]
    assert "st=1.5" in first and not any(w.startswith("tc=") for w in first)
    second = argv[argv.index("-engine", 2):argv.index("-each")]
    assert "tc=10+0.1" in second
    assert argv[argv.index("-each"):argv.index("-each") + 2] == ["-each", "timemargin=50"]


def test_adjudication_options_and_no_cutechess_draw(tmp_path):
    adj = AdjudicationConfig(
        tcec_draw=TcecDrawRule(), tcec_win=TcecWinRule(score_cp=1000, plies=10),
        tablebases=TablebaseConfig(paths=(Path("/srv/syzygy"), Path("/srv/tb")), max_pieces=4,
                                   ignore50=True),
        max_moves=200)
    argv = build_command([spec(engine("A"), engine("B"), adj=adj)], pgn_out=tmp_path / "g.pgn")
    joined = " ".join(argv)
    assert "-resign movecount=5 score=1000 twosided=true" in joined
    assert f"-tb {'/srv/syzygy'}:/srv/tb -tbpieces 4 -tbignore50" in joined
    assert "-maxmoves 200" in joined
    # upstream -draw has no material gate: never passed, the exact rule is applied afterwards
    assert "-draw" not in argv


def test_match_command_repeats_the_opening_with_reversed_colours(tmp_path):
    a, b = engine("A"), engine("B")
    op = Opening(index=4, moves=("e2e4", "c7c5"))
    argv = build_command([spec(a, b, opening=op), spec(b, a, opening=op, gir=3)],
                         pgn_out=tmp_path / "g.pgn",
                         opening_file=(tmp_path / "opening.pgn", "pgn"), srand=99)
    joined = " ".join(argv)
    assert f"-openings file={tmp_path / 'opening.pgn'} format=pgn order=sequential" in joined
    assert "-games 2 -repeat" in joined and "-srand 99" in joined
    with pytest.raises(ValueError, match="reverse the colours"):
        build_command([spec(a, b), spec(a, b)], pgn_out=tmp_path / "g.pgn")
    with pytest.raises(ValueError, match="share opening"):
        build_command([spec(a, b, opening=op), spec(b, a)], pgn_out=tmp_path / "g.pgn")


def test_opening_files(tmp_path):
    assert write_opening_file(None, tmp_path) is None
    assert write_opening_file(Opening(index=0), tmp_path) is None
    fen = "4k3/8/8/8/8/8/P7/R3K3 w - - 0 1"
    path, fmt = write_opening_file(Opening(index=3, fen=fen), tmp_path)
    assert fmt == "epd" and path.read_text() == '4k3/8/8/8/8/8/P7/R3K3 w - - id "3";\n'
    # moves -> one-game PGN, python-chess reads back the same line
    path, fmt = write_opening_file(Opening(index=1, name="Sicilian", moves=("e2e4", "c7c5", "g1f3")),
                                   tmp_path)
    game = chess.pgn.read_game(path.open())
    assert fmt == "pgn" and [m.uci() for m in game.mainline_moves()] == ["e2e4", "c7c5", "g1f3"]
    # a FEN whose clocks an EPD line would lose goes into a PGN FEN tag
    fen2 = "4k3/8/8/8/8/8/P7/R3K3 b - - 12 40"
    path, fmt = write_opening_file(Opening(index=2, fen=fen2), tmp_path)
    assert fmt == "pgn" and chess.pgn.read_game(path.open()).headers["FEN"] == fen2
    with pytest.raises(ValueError, match="illegal book move"):
        write_opening_file(Opening(index=5, moves=("e2e5",)), tmp_path)


def test_finalize_rewrites_tags_and_names_rules():
    game = read_pgn_games(fixture("normal", "games.pgn"))[1]  # Ethereal-Stockfish 0-1 by resign
    record = record_from_pgn(game)
    s = spec(engine(ETH), engine(SF), adj=AdjudicationConfig(tcec_win=TcecWinRule()),
             opening=Opening(index=11))
    final = finalize_record(record, s, game.headers)
    assert final.reason == "Black wins by adjudication: TCEC win rule"
    assert final.termination_details == "TCEC win rule" and final.opening_index == 11
    reread = chess.pgn.read_game(__import__("io").StringIO(final.pgn))
    h = reread.headers
    assert (h["Event"], h["Site"], h["Round"], h["Result"]) == ("Test Swiss", "lab", "3.2", B)
    assert h["TerminationDetails"] == "TCEC win rule" and h["GameStartTime"]
    assert [m.uci() for m in reread.mainline_moves()] == final.moves
    assert reread.end().comment.endswith(", Black wins by adjudication: TCEC win rule")
    if final.rmobility is not None:  # runner.domain.rmobility present: decisive = G0.0 for the winner
        assert final.rmobility == "-G0.0" and h["RMobilityResult"] == "-G0.0"
    assert "TieBreakPair" not in h
    extra = finalize_record(record_from_pgn(game), __import__("dataclasses").replace(s, extra_pair=3),
                            game.headers)
    assert chess.pgn.read_game(__import__("io").StringIO(extra.pgn)).headers["TieBreakPair"] == "3"
    with pytest.raises(CutechessError, match="expected"):
        finalize_record(record, spec(engine(SF), engine(ETH)), game.headers)


def test_finalize_cuts_a_game_with_the_tcec_draw_rule():
    game = read_pgn_games(fixture("draw_adjudication", "games.pgn"))[0]
    record = record_from_pgn(game)
    s = spec(engine("Stockfish-A"), engine("Stockfish-B"),
             adj=AdjudicationConfig(tcec_draw=NO_GATE))
    final = finalize_record(record, s, game.headers)
    ply = tcec_draw_ply(None, record.moves, record.comments, NO_GATE)
    assert final.plies == ply and final.reason == TCEC_DRAW_REASON
    reread = chess.pgn.read_game(__import__("io").StringIO(final.pgn))
    assert reread.headers["PlyCount"] == str(ply)
    assert reread.headers["TerminationDetails"] == "TCEC draw rule"
    assert len(list(reread.mainline_moves())) == ply


def test_both_backends_write_the_same_pgn_layout():
    # cutechess's own PGN: short comments, roster first, other tags sorted (issue 4)
    game = read_pgn_games(fixture("syzygy", "games.pgn"))[0]
    s = spec(engine(SF), engine(ETH), tc="2+0.05", adj=AdjudicationConfig(tcec_draw=TCEC))
    final = finalize_record(record_from_pgn(game), s, game.headers)
    assert final.pgn.rstrip().endswith(
        "\n\n1. Rxd8+ {+M59/20 0.15s, White wins by adjudication: SyzygyTB} 1-0")
    tags = [line[1:].split(" ", 1)[0] for line in final.pgn.splitlines() if line.startswith("[")]
    roster = ["Event", "Site", "Date", "Round", "White", "Black", "Result"]
    assert tags[:7] == roster and tags[7:] == sorted(tags[7:])
    assert {"FEN", "SetUp", "Termination", "TerminationDetails", "RMobilityResult", "TimeControl",
            "PlyCount", "GameStartTime"} <= set(tags)
    # the built-in referee writes the same game identically (same writer, runner.domain.pgn)
    from datetime import datetime

    from runner.play.referee import _End, build_pgn

    start = datetime.strptime(game.headers["GameStartTime"], "%Y-%m-%dT%H:%M:%S.%f UTC")
    end = datetime.strptime(game.headers["GameEndTime"], "%Y-%m-%dT%H:%M:%S.%f UTC")
    referee_pgn = build_pgn(s, chess.Board(final.start_fen), final.moves, final.comments,
                            _End(final.result, final.reason, final.termination, final.termination_details),
                            start, end, final.rmobility)
    ref_tags = [line[1:].split(" ", 1)[0] for line in referee_pgn.splitlines() if line.startswith("[")]
    assert ref_tags[:7] == roster and ref_tags[7:] == sorted(ref_tags[7:])
    assert referee_pgn.split("\n\n", 1)[1] == final.pgn.split("\n\n", 1)[1]
    assert set(ref_tags) == set(tags)


# --------------------------------------------------------------------------- binary checks


def write_script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_check_binary_reports_each_failure(tmp_path, monkeypatch):
    assert "not found" in check_binary(str(tmp_path / "nope" / "cutechess-cli"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert "not found on PATH" in check_binary("cutechess-cli")
    plain = tmp_path / "plain"
    plain.write_text("x")
    assert "not an executable" in check_binary(str(plain))
    bad = write_script(tmp_path / "bad", "import sys; print('boom'); sys.exit(3)\n")
    assert check_binary(str(bad)) == f"'{bad} --version' failed with exit status 3: boom"
    other = write_script(tmp_path / "other", "print('Stockfish 15.1 by the Stockfish developers')\n")
    assert "does not look like cutechess-cli" in check_binary(str(other))
    good = write_script(tmp_path / "cutechess-cli", "print('cutechess-cli 1.5.1')\n")
    assert check_binary(str(good)) is None
    assert check_binary("cutechess-cli") is None  # found on PATH
    slow = write_script(tmp_path / "slow", "import time; time.sleep(5)\n")
    assert "did not finish" in check_binary(str(slow), timeout=0.5)


def _event_yaml(tmp_path: Path, cutechess_path: str) -> Path:
    data = {
        "Event": "cc", "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "StatePath": "st/s.json"},
        "TimeControl": "10+0.1", "Backend": "cutechess", "CutechessPath": cutechess_path,
        "Engines": [{"Name": "A", "Command": "stockfish"}, {"Name": "B", "Command": "ethereal-chess"}],
    }
    path = write_config(tmp_path, data)
    return path


def test_validate_missing_cutechess_exits_2_naming_the_key(tmp_path, capsys):
    path = _event_yaml(tmp_path, str(tmp_path / "bin" / "cutechess-cli"))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "CutechessPath" in err and "not found" in err and str(tmp_path / "bin") in err


def test_validate_accepts_a_working_binary(tmp_path, capsys):
    fake = write_script(tmp_path / "cutechess-cli", "print('cutechess-cli 1.5.1')\n")
    assert main(["validate", str(_event_yaml(tmp_path, str(fake)))]) == 0
    assert "OK" in capsys.readouterr().out


# --------------------------------------------------------------------------- fake binary


REPLAY = """\
import pathlib, shutil, sys
argv = sys.argv[1:]
pathlib.Path(__file__).with_name("argv.txt").write_text("\\n".join(argv))
fixture = pathlib.Path({fixture!r})
sys.stdout.write((fixture / "stdout.txt").read_text())
if (fixture / "games.pgn").exists():
    shutil.copy(fixture / "games.pgn", argv[argv.index("-pgnout") + 1])
sys.exit(int((fixture / "exit_code.txt").read_text()))
"""


def fake_replay(tmp_path: Path, scenario: str) -> Path:
    """A stand-in for cutechess-cli that prints a real fixture run and writes its PGN."""
    return write_script(tmp_path / "fake-cutechess-cli", REPLAY.format(fixture=str(FIXTURES / scenario)))


def test_play_game_with_fake_cutechess_replaying_a_real_run(tmp_path):
    fake = fake_replay(tmp_path, "normal")
    seen: list[tuple[int, float]] = []
    s = spec(engine(SF), engine(ETH, "/usr/games/ethereal-chess"), tc="2+0.05",
             opening=Opening(index=0, moves=("d2d4",)))
    events: list = []
    record = asyncio.run(play_game(s, on_process=lambda pid, ct: seen.append((pid, ct)),
                                   cutechess_path=str(fake), emit=events.append, attempt=2))
    assert (record.result, record.reason, record.termination) == (W, "White mates", None)
    # the event stream: started, one MovePlayed per ply read back from the PGN, finished
    assert [e.kind for e in events] == ["started"] + ["move"] * record.plies + ["finished"]
    moves = events[1:-1]
    assert [m.uci for m in moves] == record.moves and all(e.attempt == 2 for e in events)
    assert (moves[0].score_cp, moves[0].depth, moves[0].time_ms, moves[0].san) == (40, 17, 320, "d4")
    assert all(m.depth is not None for m in moves[1:] if m.score_cp is not None)
    assert any(m.mate is not None for m in moves) and events[-1].record == record
    assert moves[-1].san.endswith("#")
    assert record.plies == 45 and record.moves[-1] == "b6c8" and record.opening_index == 0
    assert '[Round "3.2"]' in record.pgn and '[Event "Test Swiss"]' in record.pgn
    assert len(seen) >= 1 and seen[0][1] > 0
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[:3] == ["-engine", "name=Stockfish", "cmd=/usr/games/stockfish"]
    assert argv[argv.index("-openings") + 2] == "format=pgn"
    assert not Path(argv[argv.index("-pgnout") + 1]).parent.exists()  # temp dir removed


def test_play_match_with_fake_cutechess_returns_both_games(tmp_path):
    fake = fake_replay(tmp_path, "illegal_move")
    a, b = engine(SF), engine("FakeIllegal", "/bin/true")
    records = asyncio.run(play_match([spec(a, b), spec(b, a, gir=3)], cutechess_path=str(fake)))
    assert [(r.result, r.reason, r.termination) for r in records] == [
        (W, "Black makes an illegal move: a1a1", ILLEGAL),
        (B, "White makes an illegal move: e2e5", ILLEGAL)]
    assert '[Round "3.3"]' in records[1].pgn


@pytest.mark.parametrize(("scenario", "message"), [
    ("error_engine_not_found", "Cannot start engine Missing: Cannot execute command: no-such-engine"),
    ("error_unknown_option", 'exit status 1) played no game: Unknown option: "-frobnicate"'),
])
def test_fake_cutechess_failures_raise_with_cutechess_words(tmp_path, scenario, message):
    fake = fake_replay(tmp_path, scenario)
    with pytest.raises(CutechessError, match="played no game") as info:
        asyncio.run(play_game(spec(engine("Missing"), engine(SF)), cutechess_path=str(fake)))
    assert message in str(info.value)


def test_fake_cutechess_crash_with_garbage_output(tmp_path):
    fake = write_script(tmp_path / "crashy", "import sys; print('Segmentation fault?!'); sys.exit(139)\n")
    with pytest.raises(CutechessError, match=r"exit status 139\) played no game: Segmentation"):
        asyncio.run(play_game(spec(engine("A"), engine("B")), cutechess_path=str(fake)))
    with pytest.raises(CutechessError, match="not found or not executable"):
        asyncio.run(play_game(spec(engine("A"), engine("B")), cutechess_path=str(tmp_path / "no")))


HANG = """\
import pathlib, subprocess, sys, time
engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
pathlib.Path(__file__).with_name("engine.pid").write_text(str(engine.pid))
print("Started game 1 of 1 (A vs B)", flush=True)
{tail}
"""


def _wait_for(path: Path, timeout: float = 10.0) -> str:
    return wait_until(lambda: path.exists() and path.read_text(), f"{path} to be written",
                      timeout)


def _gone(pid: int, process: psutil.Process | None = None) -> bool:
    """The process has ended (or is a zombie): ``process`` when given (the one seen before,
    never a later process given its pid), else whatever runs as ``pid``."""
    try:
        proc = process or psutil.Process(pid)
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.slow
def test_cancel_kills_fake_cutechess_and_its_engine(tmp_path):
    fake = write_script(tmp_path / "hang", HANG.format(tail="time.sleep(300)"))
    seen: dict[int, float] = {}

    async def scenario() -> None:
        task = asyncio.create_task(play_game(spec(engine("A"), engine("B")),
                                             on_process=lambda p, c: seen.__setitem__(p, c),
                                             cutechess_path=str(fake)))
        pid_file = tmp_path / "engine.pid"
        # the watcher reports the engine it started (polled off the loop, which runs on)
        await asyncio.to_thread(
            wait_until, lambda: pid_file.exists() and int(pid_file.read_text() or 0) in seen,
            "the watcher to report the engine", 20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(scenario(), 20))
    engine_pid = int(_wait_for(tmp_path / "engine.pid"))
    assert len(seen) == 2
    for pid in seen:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert engine_pid in seen


def test_engine_left_behind_by_fake_cutechess_is_killed(tmp_path):
    tail = "print('Finished game 1 (A vs B): 1-0 {White mates}')"
    fake = write_script(tmp_path / "leaky", HANG.format(tail=tail))
    with pytest.raises(CutechessError, match="played no game"):
        asyncio.run(play_game(spec(engine("A"), engine("B")), cutechess_path=str(fake)))
    engine_pid = int(_wait_for(tmp_path / "engine.pid"))
    wait_until(lambda: _gone(engine_pid), "the engine outlived cutechess", 5)


def test_fake_cutechess_dies_with_a_runner_killed_by_sigkill_and_its_engine_is_swept(tmp_path):
    # The parent-death signal kills cutechess; the engine it started lives on in cutechess's
    # process group (ppid 1) until the next start's sweep, which is given only cutechess's
    # record (an engine started after the last 0.5 s poll was never reported).
    fake = write_script(tmp_path / "hang", HANG.format(tail="time.sleep(300)"))
    records = tmp_path / "records"
    script = tmp_path / "runner.py"
    script.write_text(textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(REPO)!r})
        from runner.play.cutechess import _run_cutechess
        def note(pid, created):
            with open({str(records)!r}, "a") as f:
                f.write(f"{{pid}} {{created}}\\n")
        asyncio.run(_run_cutechess([{str(fake)!r}], note))
    """))
    runner = subprocess.Popen([sys.executable, str(script)], cwd=REPO)
    engine_pid = 0
    try:
        engine_pid = int(_wait_for(tmp_path / "engine.pid"))
        _wait_for(records)
        cc_pid, cc_created = records.read_text().splitlines()[0].split()
        cc = psutil.Process(int(cc_pid))
        assert abs(cc.create_time() - float(cc_created)) < 0.01
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        wait_until(lambda: _gone(cc.pid, cc), "cutechess-cli outlived the runner", 5)
        engine = psutil.Process(engine_pid)
        assert engine.status() != psutil.STATUS_ZOMBIE  # cutechess's engine is not its business
        assert sweep_orphans([(int(cc_pid), float(cc_created))]) == 1
        wait_until(lambda: _gone(engine_pid, engine),
                   "the sweep left cutechess's engine running", 5)
    finally:
        runner.kill()
        for pid in [engine_pid] + [int(line.split()[0]) for line in
                                   (records.read_text().splitlines() if records.exists() else [])]:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def test_cleanup_after_cutechess_was_reaped_never_hits_a_reused_pid():
    # After cutechess exited and asyncio reaped it, its pid may belong to another process:
    # the clean-up must not signal that pid (nor its group), nor list its children.
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    from runner.play.engines import new_owner_token

    try:
        for reused in (other.pid, bystander.pid):
            kill_tree(reused, new_owner_token())  # reaped: never by bare pid
        time.sleep(0.2)
        assert other.poll() is None and bystander.poll() is None
    finally:
        other.kill()
        bystander.kill()


# --------------------------------------------------------------------------- real binary


def real_cutechess() -> str | None:
    path = os.environ.get("CUTECHESS_CLI") or shutil.which("cutechess-cli")
    return path if path and check_binary(path) is None else None


needs_cutechess = pytest.mark.skipif(real_cutechess() is None, reason=NOT_INSTALLED_REASON)


def real_pair(monkeypatch, eth_name: str = "Ethereal", **sf_limit) -> tuple[EngineConfig, EngineConfig]:
    """Debian's Stockfish (``sf_limit``, default depth 6) and Ethereal (depth 6)."""
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") + os.pathsep + "/usr/games")
    sf = engine("Stockfish", shutil.which("stockfish"), options={"Hash": 16, "Threads": 1},
                **(sf_limit or {"depth": 6}))
    return sf, engine(eth_name, shutil.which("ethereal-chess"), options={"Hash": 16}, depth=6)


@needs_cutechess
@pytest.mark.engines
def test_real_cutechess_plays_a_match(monkeypatch):
    sf, eth = real_pair(monkeypatch)
    op = Opening(index=0, moves=("e2e4", "e7e5"))
    adj = AdjudicationConfig(tcec_draw=TcecDrawRule(), max_moves=60)
    records = asyncio.run(play_match(
        [spec(sf, eth, tc="inf", opening=op, adj=adj), spec(eth, sf, tc="inf", opening=op, adj=adj, gir=3)],
        cutechess_path=real_cutechess()))
    assert [(r.white, r.black) for r in records] == [("Stockfish", "Ethereal"), ("Ethereal", "Stockfish")]
    for r in records:
        assert r.result in (W, B, D) and r.reason and r.moves[:2] == ["e2e4", "e7e5"]
        assert r.comments[:2] == ["book", "book"] and r.plies <= 120


@needs_cutechess
@pytest.mark.engines
def test_real_cutechess_swiss_run_and_audit(tmp_path):
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + os.pathsep + "/usr/games")
    data = {
        "Event": "cutechess swiss", "Site": "ci",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 2, "Seeding": "listed",
                         "StatePath": "state/s.json"},
        "TimeControl": "inf", "Backend": "cutechess", "CutechessPath": real_cutechess(),
        "Adjudication": {"TcecDraw": {}, "MaxMoves": 60},
        "Engines": [{"Name": n, "Command": c, "Depth": 4} for n, c in
                    (("Stockfish", "stockfish"), ("Ethereal", "ethereal-chess"),
                     ("Glaurung", "glaurung"), ("Toga", "toga2"))],
    }
    path = write_config(tmp_path, data)
    config = load_config(path)
    run = subprocess.run([sys.executable, "-m", "runner", "run", str(path), "--quiet"], env=env,
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(e["Name"] for e in data["Engines"]) + "\n")
    audit = subprocess.run([sys.executable, "-m", "runner", "audit", str(config.pgn_out),
                            "--seeds", str(seeds)], env=env, cwd=REPO, capture_output=True,
                           text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_time_control_str_is_cutechess_syntax():
    assert str(TimeControl(base=2700, increment=4.5)) == "2700+4.5"


# --------------------------------------------------------------------------- stand-in + real engines

STAND_IN = """\
# NOT cutechess: a stand-in that understands the argv runner.play.cutechess builds and plays the
# game with python-chess between the REAL engines named in it, printing cutechess-style
# console lines and writing a cutechess-style PGN. It lets the whole pipeline (orchestrator,
# cutechess backend, store, PGN, audit) run here; cutechess's own behaviour is not tested.
import datetime, sys
import chess, chess.engine, chess.pgn

argv = sys.argv[1:]
if argv == ["--version"]:
    print("cutechess-cli stand-in (not cutechess) 0.0")
    sys.exit(0)
engines, opts, i = [], {}, 0
while i < len(argv):
    word = argv[i]
    if word == "-engine":
        engines.append({"args": [], "options": {}})
        i += 1
        while i < len(argv) and not argv[i].startswith("-"):
            key, _, value = argv[i].partition("=")
            e = engines[-1]
            if key == "arg": e["args"].append(value)
            elif key.startswith("option."): e["options"][key[7:]] = value
            else: e[key] = value
            i += 1
        continue
    if word.startswith("-"):
        values = []
        i += 1
        while i < len(argv) and not argv[i].startswith("-"):
            values.append(argv[i]); i += 1
        opts[word] = values
        continue
    i += 1
board = chess.Board()
book = []
if "-openings" in opts:
    spec = dict(v.partition("=")[::2] for v in opts["-openings"])
    if spec["format"] == "epd":
        board = chess.Board(" ".join(open(spec["file"]).read().split()[:4]) + " 0 1")
    else:
        g = chess.pgn.read_game(open(spec["file"]))
        board = g.board(); book = list(g.mainline_moves())
start_fen = board.fen()
maxmoves = int(opts.get("-maxmoves", ["0"])[0])
w, b = engines
print(f"Started game 1 of 1 ({w['name']} vs {b['name']})", flush=True)
procs = []
for e in engines:
    opener = chess.engine.SimpleEngine.popen_uci if e.get("proto", "uci") == "uci" else chess.engine.SimpleEngine.popen_xboard
    p = opener([e["cmd"], *e["args"]])
    p.configure({k: v for k, v in e["options"].items() if k in p.options})
    procs.append(p)
start = datetime.datetime.now(datetime.timezone.utc)
comments, reason = [], None
for move in book:
    board.push(move); comments.append("book")
while reason is None:
    if board.is_game_over(claim_draw=True):
        outcome = board.outcome(claim_draw=True)
        t = outcome.termination
        reason = {chess.Termination.CHECKMATE: ("White" if outcome.winner else "Black") + " mates",
                  chess.Termination.STALEMATE: "Draw by stalemate",
                  chess.Termination.INSUFFICIENT_MATERIAL: "Draw by insufficient mating material",
                  chess.Termination.FIFTY_MOVES: "Draw by fifty moves rule",
                  chess.Termination.THREEFOLD_REPETITION: "Draw by 3-fold repetition"}.get(t, "Draw")
        result = outcome.result()
        break
    if maxmoves and board.ply() >= 2 * maxmoves:
        reason, result = "Draw by adjudication: maximal game length", "1/2-1/2"
        break
    e = engines[0 if board.turn == chess.WHITE else 1]
    p = procs[0 if board.turn == chess.WHITE else 1]
    limit = chess.engine.Limit(depth=int(e["depth"]) if "depth" in e else None,
                               nodes=int(e["nodes"]) if "nodes" in e else None)
    info = p.play(board, limit, info=chess.engine.INFO_SCORE | chess.engine.INFO_BASIC)
    score = info.info.get("score")
    depth = info.info.get("depth", 1)
    if score is None:
        text = "0.00"
    else:
        pov = score.relative if hasattr(score, "relative") else score
        text = (f"{'+' if pov.mate() > 0 else '-'}M{abs(pov.mate())}" if pov.is_mate()
                else f"{pov.score() / 100:+.2f}".replace("+0.00", "0.00"))
    comments.append(f"{text}/{depth} 0.01s")
    board.push(info.move)
for p in procs:
    p.quit()
end = datetime.datetime.now(datetime.timezone.utc)
game = chess.pgn.Game()
game.headers.update({"Event": opts["-event"][0], "Site": opts["-site"][0], "Round": "1",
                     "White": w["name"], "Black": b["name"], "Result": result,
                     "GameStartTime": start.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + " UTC",
                     "GameEndTime": end.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + " UTC"})
if "adjudication" in reason:
    game.headers["Termination"] = "adjudication"
if start_fen != chess.STARTING_FEN:
    game.setup(start_fen)
node = game
for move, comment in zip(board.move_stack, comments):
    node = node.add_variation(move, comment=comment)
node.comment = f"{node.comment}, {reason}"
with open(opts["-pgnout"][0], "a") as f:
    f.write(str(game) + "\\n\\n")
print(f"Finished game 1 ({w['name']} vs {b['name']}): {result} {{{reason}}}", flush=True)
print("Finished match", flush=True)
"""


@pytest.mark.slow
@pytest.mark.engines
def test_swiss_run_through_the_backend_with_a_stand_in_and_real_engines(tmp_path):
    """The whole Backend: cutechess pipeline with real engines; the binary is a stand-in."""
    stand_in = write_script(tmp_path / "cutechess-stand-in", STAND_IN)
    env = dict(os.environ, PATH=os.environ.get("PATH", "") + os.pathsep + "/usr/games")
    names = ("Stockfish", "Ethereal", "Glaurung", "Toga")
    data = {
        "Event": "stand-in swiss", "Site": "ci",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 2, "Seeding": "listed",
                         "StatePath": "state/s.json"},
        "TimeControl": "inf", "Backend": "cutechess", "CutechessPath": str(stand_in),
        "Concurrency": 2,
        "Adjudication": {"TcecDraw": {}, "MaxMoves": 25},
        "Engines": [{"Name": n, "Command": c, "Depth": 2, "Options": {"Hash": 8}} for n, c in
                    zip(names, ("stockfish", "ethereal-chess", "glaurung", "toga2"), strict=True)],
    }
    path = write_config(tmp_path, data)
    config = load_config(path)
    run = subprocess.run([sys.executable, "-m", "runner", "run", str(path), "--quiet"], env=env,
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    games = read_pgn_games(config.pgn_out.read_text())
    assert len(games) == 8
    assert sorted(g.headers["Round"] for g in games) == ["1.1", "1.2", "1.3", "1.4",
                                                         "2.1", "2.2", "2.3", "2.4"]
    for g in games:
        assert g.headers["Event"] == "stand-in swiss" and g.headers["Site"] == "ci"
        assert int(g.headers["PlyCount"]) <= 50 and g.headers["RMobilityResult"]
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(names) + "\n")
    audit = subprocess.run([sys.executable, "-m", "runner", "audit", str(config.pgn_out),
                            "--seeds", str(seeds)], env=env, cwd=REPO, capture_output=True,
                           text=True, timeout=120)
    assert audit.returncode == 0, audit.stdout + audit.stderr
    leftovers = [p for p in psutil.process_iter(["cmdline"])
                 if str(stand_in) in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []


def test_run_with_a_missing_cutechess_is_refused_before_any_state(tmp_path, capsys):
    from runner.cli import main

    cfg = write_config(
        tmp_path,
        "SwissOptions: {GamesPerMatch: 1, Rounds: 1, StatePath: st/s.json}\n"
        "TimeControl: 1+0.1\nBackend: cutechess\nCutechessPath: /nonexistent/cutechess-cli\n"
        "Engines: [{Name: A, Command: stockfish}, {Name: B, Command: stockfish}]\n", "ev.yaml")
    assert main(["run", str(cfg)]) == 2
    assert "CutechessPath" in capsys.readouterr().err
    assert not (tmp_path / "st").exists()


# --------------------------------------------------------------------------- moves live (-debug)


def _live_from_transcript(scenario: str, opening: Opening | None, tc: str) -> tuple[list, chess.pgn.Game]:
    folder = FIXTURES / scenario
    game = chess.pgn.read_game(io.StringIO((folder / "games.pgn").read_text()))
    assert game is not None
    white, black = engine(game.headers["White"]), engine(game.headers["Black"])
    events: list = []
    live = LiveMoves(spec(white, black, tc=tc, opening=opening), chess.Board(), events.append)
    for line in (folder / "stdout.txt").read_text().split("\n"):
        live.line(line)
    return events, game


def test_debug_traffic_gives_each_move_with_cutechess_own_scores() -> None:
    events, game = _live_from_transcript("debug_live", Opening(index=0, moves=("e2e4", "e7e5")),
                                         "2+0.05")
    played = [m.uci() for m in game.mainline_moves()]
    assert [e.uci for e in events] == played[:len(events)] and len(events) >= len(played) - 1
    assert [e.ply for e in events] == list(range(1, len(events) + 1))
    assert [e.book for e in events[:3]] == [True, True, False]
    comments = [node.comment for node in game.mainline()]
    for event, comment in zip(events[2:], comments[2:], strict=False):
        # score and depth as cutechess wrote them in its PGN ("+0.31/13 0.24s")
        assert comment.split(" ")[0] == event.comment.split(" ")[0], (event.ply, comment, event.comment)
        assert event.time_ms >= 0 and event.white_clock_ms is not None
    assert any(e.depth for e in events) and any(e.score_cp is not None for e in events)
    # the clocks: each side's time spent comes off its clock, the increment goes on
    last = events[-1]
    assert 0 < last.white_clock_ms <= 2000 + 50 * 40 and 0 < last.black_clock_ms <= 2000 + 50 * 40
    # cutechess's own lines still parse without the engine traffic
    text = (FIXTURES / "debug_live" / "stdout.txt").read_text()
    own = "\n".join(line for line in text.split("\n") if not is_debug_line(line))
    assert [f.result for f in parse_stdout(own).finished] == ["0-1"]
    assert "position startpos" not in own and parse_stdout(own).warnings == []


def test_a_move_that_came_after_the_flag_is_never_reported_live() -> None:
    events, game = _live_from_transcript("debug_time_forfeit", None, "1+0.05")
    played = [m.uci() for m in game.mainline_moves()]
    assert played == ["e2e4", "a7a5", "d2d4", "a5a4", "f1d3"]
    assert [e.uci for e in events] == played  # not a4a3, answered 1.6 s after the flag
    assert events[-1].san == "Bd3" and events[3].time_ms < 100


@needs_cutechess
@pytest.mark.engines
def test_real_cutechess_moves_come_while_it_plays(monkeypatch):
    sf, eth = real_pair(monkeypatch, "Ethereal (12)", nodes=20000)
    pids: list[int] = []
    seen: list[tuple[object, bool]] = []

    def running() -> bool:
        with contextlib.suppress(psutil.Error):
            return psutil.Process(pids[0]).status() != psutil.STATUS_ZOMBIE
        return False

    def emit(event) -> None:  # noqa: ANN001 - a GameEvent
        seen.append((event, bool(pids) and running()))

    game = spec(sf, eth, tc="inf", opening=Opening(index=0, moves=("e2e4", "e7e5")),
                adj=AdjudicationConfig(max_moves=40))
    record = asyncio.run(cutechess_play_game(game, emit=emit, on_process=lambda p, c: pids.append(p),
                                             cutechess_path=real_cutechess()))
    moves = [(e, alive) for e, alive in seen if isinstance(e, MovePlayed)]
    live = [e for e, alive in moves if alive]
    assert len(live) >= len(record.moves) - 1 >= 10  # all but perhaps the last, while it ran
    assert [e.uci for e in live] == record.moves[:len(live)]
    assert any(e.depth for e in live if not e.book)
    # at the end the whole game once more from cutechess's PGN (it replaces the live rows),
    # after cutechess-cli exited; the last live move may itself come just after its exit
    final = moves[len(moves) - len(record.moves):]
    assert [e.uci for e, _ in final] == record.moves
    assert not any(alive for _, alive in final)
    assert len(moves) - len(final) in (len(live), len(live) + 1)
    assert isinstance(seen[-1][0], GameFinished)
