"""How a game ended: runner.domain.endings.classify_end on our, cutechess-cli's and TCEC's wordings."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.cli.ratings import _reason, read_pgn
from runner.domain.endings import LABELS, GameEnd, classify_end

E = GameEnd


@pytest.mark.parametrize(("result", "reason", "expected"), [
    ("1-0", "White mates", E.MATE),
    ("0-1", "Black mates", E.MATE),
    ("1/2-1/2", "Draw by 3-fold repetition", E.REPETITION),
    ("1/2-1/2", "Draw by fifty moves rule", E.FIFTY_MOVES),
    ("1/2-1/2", "Draw by stalemate", E.STALEMATE),
    ("1/2-1/2", "Draw by insufficient mating material", E.INSUFFICIENT_MATERIAL),
    ("1/2-1/2", "Draw by adjudication: TCEC draw rule", E.ADJ_TCEC_DRAW),
    ("1-0", "White wins by adjudication: TCEC win rule", E.ADJ_TCEC_WIN),
    ("0-1", "Black wins by adjudication: SyzygyTB", E.ADJ_TABLEBASE),
    ("1/2-1/2", "Draw by adjudication: SyzygyTB", E.ADJ_TABLEBASE),
    ("1/2-1/2", "Draw by adjudication: maximal game length", E.ADJ_MOVE_LIMIT),
    ("1/2-1/2", "Draw by adjudication: move limit", E.ADJ_MOVE_LIMIT),
    ("1/2-1/2", "Draw by adjudication", E.ADJ_DRAW),  # cutechess -draw
    ("1-0", "White wins by adjudication", E.ADJ_RESIGN),  # cutechess -resign
    ("0-1", "White loses on time", E.TIME_FORFEIT),
    ("1/2-1/2", "Draw by timeout", E.TIME_FORFEIT),
    ("1-0", "Black disconnects", E.DISCONNECT),
    ("0-1", "White's connection stalls", E.STALL),
    ("1/2-1/2", "Draw by stalled connection", E.STALL),
    ("1-0", "Black makes an illegal move: e2e5", E.ILLEGAL_MOVE),
    ("0-1", "White makes an illegal move: Qxh7#", E.ILLEGAL_MOVE),  # the move text never matters
    ("0-1", "White resigns", E.RESIGN),
    ("1/2-1/2", "Draw by agreement", E.AGREEMENT),
    ("1-0", "", E.UNKNOWN),
    ("1/2-1/2", "White mates", E.UNKNOWN),  # contradicts the result
    ("1-0", "Draw by 3-fold repetition", E.UNKNOWN),
])
def test_reason_texts(result, reason, expected):
    assert classify_end(result, reason=reason) is expected


@pytest.mark.parametrize(("result", "termination", "details", "expected"), [
    ("1/2-1/2", "adjudication", "TCEC draw rule", E.ADJ_TCEC_DRAW),
    ("0-1", "adjudication", "SyzygyTB", E.ADJ_TABLEBASE),
    ("1-0", "adjudication", "White mates", E.MATE),  # TCEC writes natural ends this way
    ("1/2-1/2", "adjudication", "3-Fold repetition", E.REPETITION),
    ("1/2-1/2", "adjudication", "50 moves rule", E.FIFTY_MOVES),
    ("1-0", "adjudication", "something new", E.ADJ_OTHER),
    ("1-0", "time forfeit", None, E.TIME_FORFEIT),
    ("1-0", "abandoned", None, E.DISCONNECT),
    ("0-1", "stalled connection", None, E.STALL),
    ("1-0", "illegal move", None, E.ILLEGAL_MOVE),
    ("1-0", "rules infraction", None, E.ILLEGAL_MOVE),
    ("1-0", "normal", None, E.UNKNOWN),
])
def test_pgn_tags(result, termination, details, expected):
    assert classify_end(result, termination, details) is expected


def test_every_class_has_a_label_and_a_stable_value():
    assert set(LABELS) == set(GameEnd)
    assert str(GameEnd.ADJ_TCEC_DRAW) == "adjudication-tcec-draw"


@pytest.mark.parametrize(("comment", "reason"), [
    ("+M1/245 0.007s, White mates", "White mates"),
    ("Draw by adjudication: SyzygyTB", "Draw by adjudication: SyzygyTB"),
    ("-1.20/18 0.5s, Black makes an illegal move: a1a1", "Black makes an illegal move: a1a1"),
    ("d=30, sd=50, tb=123, wv=0.35", None),  # a TCEC move comment is no reason ("tb" is not Syzygy)
])
def test_reason_from_the_last_pgn_comment(comment, reason):
    assert _reason(comment) == reason


def test_read_pgn_takes_the_reason_from_comments_tags_or_the_board(tmp_path: Path):
    pgn = tmp_path / "g.pgn"
    pgn.write_text(
        '[White "A"]\n[Black "B"]\n[Result "0-1"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n\n'  # no comment
        '[White "B"]\n[Black "A"]\n[Result "1-0"]\n[Termination "time forfeit"]\n\n'
        '1. e4 {+0.3/10 1s} e5 {+0.1/9 1s, Black loses on time} 1-0\n\n'
        '[White "A"]\n[Black "B"]\n[Result "1/2-1/2"]\n[Termination "adjudication"]\n'
        '[TerminationDetails "TCEC draw rule"]\n\n1/2-1/2\n\n'
        '[White "A"]\n[Black "B"]\n[Result "*"]\n\n1. e4 *\n\n'
        '[White "A"]\n[Black "B"]\n[Result "1-0"]\n[TieBreakPair "1"]\n\n1. e4 1-0\n\n')
    games, notes = read_pgn(pgn)
    assert [g.end for g in games] == [E.MATE, E.TIME_FORFEIT, E.ADJ_TCEC_DRAW, E.UNKNOWN]
    assert [g.extra for g in games] == [False, False, False, True]
    assert notes == [f"{pgn}: 1 game(s) left out: unfinished (result '*' or missing)"]
