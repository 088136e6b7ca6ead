"""Adjudicator unit tests: synthetic eval sequences, and the real 3-4-man Syzygy tables python-chess's sdist ships."""

from __future__ import annotations

from pathlib import Path

import chess
import chess.engine
import pytest

from runner.config import AdjudicationConfig, TablebaseConfig, TcecDrawRule, TcecWinRule
from runner.domain.adjudication import Adjudicator, tablebase_verdict
from runner.play.tablebases import open_tablebase

Cp = chess.engine.Cp
Mate = chess.engine.Mate

# A position inside the TCEC draw-rule gate: 2 pawns, 4 pieces incl. kings.
GATED = "8/8/4k3/3p4/3P4/4K3/8/R6r w - - 0 1"
# 16 pawns, 16 pieces: far outside the gate.
START = chess.STARTING_FEN


def feed(adj: Adjudicator, fen: str, scores: list[chess.engine.Score | None]) -> list:
    """Feed one ply per score, the position stays the same (null-ish shuffle by kings)."""
    board = chess.Board(fen)
    verdicts = []
    for score in scores:
        move = next(m for m in board.legal_moves if board.piece_type_at(m.from_square) in (chess.KING, chess.ROOK))
        board.push(move)
        verdicts.append(adj.update(board, score))
    return verdicts


def draw_only(**kw) -> Adjudicator:
    return Adjudicator(AdjudicationConfig(tcec_draw=TcecDrawRule(**kw)))


def test_draw_rule_fires_on_the_tenth_quiet_ply_not_before():
    verdicts = feed(draw_only(), GATED, [Cp(20), Cp(-20), Cp(0), Cp(5), Cp(-3)] * 2)
    assert verdicts[:9] == [None] * 9
    v = verdicts[9]
    assert v is not None and v.result == "1/2-1/2"
    assert v.reason == "Draw by adjudication: TCEC draw rule"
    assert v.details == "TCEC draw rule" and v.termination == "adjudication"


def test_draw_rule_reset_by_big_eval_missing_score_and_mate():
    for breaker in (Cp(21), None, Mate(3), Mate(-2)):
        adj = draw_only()
        verdicts = feed(adj, GATED, [Cp(0)] * 9 + [breaker] + [Cp(0)] * 9)
        assert all(v is None for v in verdicts), breaker
        assert adj.draw_window.count == 9
        assert feed(adj, GATED, [Cp(0)])[0] is not None


def test_draw_rule_gate_counts_kings_and_pawns():
    # 16 pawns: gate closed, no count at all
    adj = draw_only()
    board = chess.Board(START)
    for _ in range(12):
        board.push(next(m for m in board.legal_moves if board.piece_type_at(m.from_square) == chess.KNIGHT))
        assert adj.update(board, Cp(0)) is None
    assert adj.draw_window.count == 0
    # 8 pieces incl. kings allowed, 9 not: K+Q+R+B vs K+R+B+N = 8 -> gated; add a knight -> 9
    eight = "r1b1k3/8/8/8/8/8/4n3/R1B1K2Q w - - 0 1"
    nine = "r1b1k3/8/8/8/8/8/4n3/RNB1K2Q w - - 0 1"
    assert feed(draw_only(plies=2), eight, [Cp(0), Cp(0)])[1] is not None
    assert feed(draw_only(plies=2), nine, [Cp(0), Cp(0)]) == [None, None]


def test_draw_rule_not_reset_by_pawn_moves_or_captures_but_by_promotion_over_the_limit():
    # Gate: MaxPieces 3 (kings + 1). White: K, R, pawn on b7; Black: K, pawn on a5.
    rule = {"max_pieces": 3, "max_pawns": 8, "plies": 4}
    adj = draw_only(**rule)
    board = chess.Board("7k/1P6/8/p7/8/8/8/R5K1 b - - 0 1")
    board.push_san("a4")  # pawn move: counts
    assert adj.update(board, Cp(0)) is None and adj.draw_window.count == 1
    board.push_san("Rxa4")  # capture: counts
    assert adj.update(board, Cp(0)) is None and adj.draw_window.count == 2
    board.push_san("Kh7")
    assert adj.update(board, Cp(0)) is None and adj.draw_window.count == 3
    board.push_san("b8=Q")  # promotion: 4 pieces now, gate fails -> reset
    assert adj.update(board, Cp(0)) is None and adj.draw_window.count == 0


def test_book_plies_do_not_count_for_the_draw_rule():
    adj = draw_only(plies=2)
    board = chess.Board(GATED)
    board.push_san("Ke2")
    assert adj.update(board, None, book=True) is None
    board.push_san("Kf6")
    assert adj.update(board, None, book=True) is None
    assert adj.draw_window.count == 0


def test_win_rule_needs_both_engines_to_agree_for_n_plies():
    adj = Adjudicator(AdjudicationConfig(tcec_win=TcecWinRule(score_cp=1000, plies=4)))
    # mover-relative scores: White +12, Black -11 (agrees White wins), ...
    verdicts = feed(adj, GATED, [Cp(1200), Cp(-1100), Cp(1000), Cp(-1000)])
    assert verdicts[:3] == [None] * 3
    assert verdicts[3] is not None and verdicts[3].reason == "White wins by adjudication: TCEC win rule"
    assert verdicts[3].result == "1-0"
    # Black thinks it is fine: reset
    adj = Adjudicator(AdjudicationConfig(tcec_win=TcecWinRule(score_cp=1000, plies=4)))
    assert all(v is None for v in feed(adj, GATED, [Cp(1200), Cp(-1100), Cp(1200), Cp(-50), Cp(1200), Cp(-1100)]))
    # mate scores count as winning; a missing score resets
    adj = Adjudicator(AdjudicationConfig(tcec_win=TcecWinRule(score_cp=1000, plies=3)))
    verdicts = feed(adj, GATED, [Mate(-5), Mate(4), None, Mate(4), Mate(-5), Cp(2000)])
    assert verdicts[:5] == [None] * 5
    assert verdicts[5] is not None and verdicts[5].reason == "Black wins by adjudication: TCEC win rule"


def test_max_moves_counts_plies_from_the_start_position():
    adj = Adjudicator(AdjudicationConfig(max_moves=3))
    verdicts = feed(adj, GATED, [None] * 6)
    assert verdicts[:5] == [None] * 5
    assert verdicts[5].reason == "Draw by adjudication: maximal game length"


# --------------------------------------------------------------------------- Syzygy

@pytest.fixture(scope="module")
def tb(syzygy_dir):
    return open_tablebase(TablebaseConfig(paths=(syzygy_dir,), max_pieces=4))


@pytest.mark.parametrize("fen, result", [
    ("8/8/8/8/8/2k5/8/K1Q5 b - - 0 1", "1-0"),  # KQvK, Black to move loses
    ("8/8/8/8/8/2k5/8/K1q5 w - - 0 1", "0-1"),  # KvKQ, White to move loses
    ("8/8/4k3/8/8/3K4/7R/r7 w - - 0 1", "1/2-1/2"),  # KRvKR
    # KPvKN has no file of its own: python-chess probes it through KNvKP (colours swapped),
    # and the b-pawn against the knight is a draw
    ("8/5k2/8/8/8/8/1P2n3/4K3 w - - 0 1", "1/2-1/2"),
])
def test_syzygy_wdl(tb, fen, result):
    verdict = tablebase_verdict(tb, chess.Board(fen), 4)
    assert verdict is not None and verdict.result == result
    assert verdict.details == "SyzygyTB" and verdict.termination == "adjudication"
    word = {"1-0": "White wins", "0-1": "Black wins", "1/2-1/2": "Draw"}[result]
    assert verdict.reason == f"{word} by adjudication: SyzygyTB"


# KBN v K, White to move: a win needing 64 plies to the next zeroing move (found by
# searching random KBNvK positions with probe_dtz; no 3-4 man table has a WDL cursed win).
KBN_LONG = "8/3B4/N7/8/8/8/5k2/7K w - - {clock} 1"


def test_cursed_win_by_the_real_halfmove_clock(tb):
    fresh = chess.Board(KBN_LONG.format(clock=0))
    assert tb.probe_wdl(fresh) == 2 and tb.probe_dtz(fresh) == 64
    assert tablebase_verdict(tb, fresh, 4).result == "1-0"
    cursed = chess.Board(KBN_LONG.format(clock=60))  # 60 + 64 > 100: the 50-move rule saves Black
    v = tablebase_verdict(tb, cursed, 4)
    assert v.result == "1/2-1/2" and v.reason == "Draw by adjudication: SyzygyTB"
    assert tablebase_verdict(tb, cursed, 4, ignore50=True).result == "1-0"
    assert tablebase_verdict(tb, chess.Board(KBN_LONG.format(clock=30)), 4).result == "1-0"
    assert tablebase_verdict(tb, chess.Board(KBN_LONG.format(clock=36)), 4) is None  # on the edge


def test_blessed_loss_by_the_real_halfmove_clock(tb):
    # same ending, the lone king to move: loses unless the clock runs out first
    board = chess.Board("8/3B4/N7/8/8/8/5k2/7K b - - 0 1")
    assert tablebase_verdict(tb, board, 4).result == "1-0"
    board.halfmove_clock = 90
    assert tablebase_verdict(tb, board, 4).result == "1/2-1/2"


def test_syzygy_not_probed_with_castling_rights_or_too_many_men(tb):
    castling = chess.Board("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1")
    assert tablebase_verdict(tb, castling, 4) is None
    castling.castling_rights = 0
    assert tablebase_verdict(tb, castling, 4).result == "1-0"
    five = chess.Board("3r2k1/8/8/8/8/8/P7/3R2K1 w - - 0 1")
    # no KRPvKR table, but python-chess resolves the winning capture Rxd8+ with 4-man tables
    assert tablebase_verdict(tb, five, 5).result == "1-0"
    assert tablebase_verdict(tb, five, 4) is None
    kqk = chess.Board("8/8/8/8/8/2k5/8/K1Q5 b - - 0 1")
    assert tablebase_verdict(tb, kqk, 2) is None  # MaxPieces below the men count


def test_adjudicator_uses_tablebases_before_the_draw_rule(syzygy_dir):
    config = AdjudicationConfig(tcec_draw=TcecDrawRule(plies=1),
                                tablebases=TablebaseConfig(paths=(syzygy_dir,), max_pieces=4))
    adj = Adjudicator(config, open_tablebase(config.tablebases))
    board = chess.Board("3r2k1/8/8/8/8/8/P7/3R2K1 w - - 0 1")
    board.push_san("Rxd8+")
    v = adj.update(board, Cp(0))
    assert v.reason == "White wins by adjudication: SyzygyTB"


def test_closing_the_tablebases_at_the_end_of_a_run_releases_them(syzygy_dir):
    """close_tablebases (the run's end) unmaps every table the process opened; a later open
    reads them again and gives the same verdicts."""
    from runner.play.tablebases import close_tablebases

    def mapped() -> bool:
        return ".rtbw" in Path("/proc/self/maps").read_text()

    config = TablebaseConfig(paths=(syzygy_dir,), max_pieces=4)
    board = chess.Board("8/8/8/8/8/2k5/8/K1Q5 b - - 0 1")
    first = open_tablebase(config)
    assert tablebase_verdict(first, board, 4).result == "1-0" and mapped()
    close_tablebases()
    assert not mapped()
    again = open_tablebase(config)
    assert again is not first and tablebase_verdict(again, board, 4).result == "1-0"


def test_a_run_closes_the_tablebases_it_opened_when_it_ends(tmp_path, syzygy_dir):
    """`run` adjudicates a 3-man ending by Syzygy, then leaves no table open (#46 item 6)."""
    from testkit import swiss_event

    from runner.cli import main
    from runner.play import tablebases

    (tmp_path / "book.epd").write_text("8/8/8/4k3/8/8/4K3/7Q w - - 0 1\n", encoding="utf-8")
    config = swiss_event(tmp_path, [
        {"Name": "Stockfish", "Command": "stockfish", "Options": {"Threads": 1}},
        {"Name": "Ethereal", "Command": "ethereal-chess", "Options": {"Threads": 1}}],
        time_control="5+0.05", concurrency=1, rounds=1, games_per_match=1,
        Openings={"File": "book.epd", "Format": "epd"},
        Adjudication={"Tablebases": {"Paths": [str(syzygy_dir)], "MaxPieces": 4}})
    assert main(["run", str(config), "--quiet"]) == 0
    pgn = (tmp_path / "state" / "games.pgn").read_text(encoding="utf-8")
    assert "1-0" in pgn and "adjudication" in pgn.lower()  # the tables were read
    assert tablebases.open_count() == 0
    assert ".rtbw" not in Path("/proc/self/maps").read_text()
