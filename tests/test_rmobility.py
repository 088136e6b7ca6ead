"""R-mobility (tcec-rules.md section 4) on real positions, and the worked examples as exact sums."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import chess
import pytest

from runner.domain.models import BLACK_WIN, DRAW, WHITE_WIN
from runner.domain.rmobility import (
    bye_points,
    format_tag,
    game_rmobility,
    parse_tag,
    position_halves,
    rmobility_points,
)


def uci(san_moves: str, fen: str | None = None) -> list[str]:
    board = chess.Board(fen) if fen else chess.Board()
    return [board.push_san(m).uci() for m in san_moves.split()]


# --------------------------------------------------------------------------- worked examples


def test_worked_example_stalemate_points():
    assert rmobility_points("G0.5", DRAW) == (Fraction(3, 4), Fraction(1, 4))


def test_worked_example_black_achieved_g25():
    white, black = rmobility_points("-G2.5", DRAW)
    assert black == Fraction("0.515625")
    assert white == Fraction("0.484375")


def test_worked_example_player_total():
    # win + draw where it achieved G1.0 + draw where the opponent achieved G2.5 + loss
    total = (
        rmobility_points("G0.0", WHITE_WIN)[0]
        + rmobility_points("-G1.0", DRAW)[1]
        + rmobility_points("G2.5", DRAW)[1]
        + rmobility_points("G0.0", BLACK_WIN)[0]
    )
    assert total == Fraction("2.109375")


def test_points_are_exact_beyond_float_precision():
    white, black = rmobility_points("G40.0", DRAW)
    assert white - Fraction(1, 2) == Fraction(1, 2**81)
    assert white != Fraction(1, 2)  # a float sum would have lost this
    assert white + black == 1


def test_decisive_result_ignores_the_tag():
    assert rmobility_points("-G3.5", WHITE_WIN) == (1, 0)
    assert rmobility_points(None, BLACK_WIN) == (0, 1)


def test_draw_without_tag_is_neutral():
    assert rmobility_points(None, DRAW) == (Fraction(1, 2), Fraction(1, 2))
    assert rmobility_points("G-", DRAW) == (Fraction(1, 2), Fraction(1, 2))


def test_bye_is_a_win_per_game():
    assert bye_points(2) == 2 and bye_points(1) == 1


@pytest.mark.parametrize("tag", ["G1.3", "G1.25", "x", "--G1.0", "G-1.0", ""])
def test_bad_tags_are_rejected(tag):
    with pytest.raises(ValueError, match="r-mobility tag"):
        rmobility_points(tag, DRAW)


def test_tag_roundtrip():
    for halves in range(0, 90):
        for white in (True, False):
            assert parse_tag(format_tag(halves, white)) == (halves, white)
    assert format_tag(5, False) == "-G2.5" and format_tag(2, True) == "G1.0"


# --------------------------------------------------------------------------- real positions


def test_mate_position_is_g0():
    moves = uci("f3 e5 g4 Qh4#")
    board = chess.Board()
    for m in moves:
        board.push_uci(m)
    assert board.is_checkmate() and position_halves(board) == 0
    assert game_rmobility(None, moves, BLACK_WIN) == "-G0.0"
    assert rmobility_points("-G0.0", BLACK_WIN) == (0, 1)


def test_decisive_game_is_g0_for_the_winner_even_without_mate():
    # White resigned after 1.e4: still G0.0 for the winner.
    assert game_rmobility(None, ["e2e4"], BLACK_WIN) == "-G0.0"
    assert game_rmobility(None, ["e2e4"], WHITE_WIN) == "G0.0"


def test_stalemate_game():
    # Sam Loyd's 10-move stalemate: 10.Qe6 leaves Black no legal move and no check.
    moves = uci("e3 a5 Qh5 Ra6 Qxa5 h5 h4 Rah6 Qxc7 f6 Qxd7+ Kf7 Qxb7 Qd3 "
                "Qxb8 Qh7 Qxc8 Kg6 Qe6")
    tag = game_rmobility(None, moves, DRAW)
    assert tag == "G0.5"
    assert rmobility_points(tag, DRAW) == (Fraction(3, 4), Fraction(1, 4))


def test_drawn_perpetual_where_white_left_one_legal_move():
    # Black is a rook up, White draws by perpetual check: Qd8+ leaves only Kh7 (g = 1, in check).
    fen = "7k/6p1/7p/8/rr6/8/5PPP/3Q2K1 w - - 0 1"
    moves = uci("Qd8+ Kh7 Qd3+ Kh8 Qd8+ Kh7 Qd3+ Kh8 Qd8+", fen)
    board = chess.Board(fen)
    for m in moves:
        board.push_uci(m)
    assert board.can_claim_threefold_repetition()
    tag = game_rmobility(fen, moves, DRAW)
    assert tag == "G1.0"
    assert rmobility_points(tag, DRAW) == (Fraction(5, 8), Fraction(3, 8))


def test_pawn_move_resets():
    # 2.Qh5+ leaves Black one move (g = 1.0), but 2...g6 is a pawn move: reset.
    moves = uci("e4 f6 Qh5+ g6 Qd1")
    assert game_rmobility(None, moves[:3], DRAW) == "G1.0"
    # after g6 White has 43 moves (Black achieves 43.5); after Qd1 Black has 20 (White 20.5)
    assert game_rmobility(None, moves[:4], DRAW) == "-G43.5"
    assert game_rmobility(None, moves, DRAW) == "G20.5"


def test_capture_resets_and_resetting_position_is_first_candidate():
    moves = uci("e4 f6 Qh5+ g6 Qxg6+ hxg6 Nf3 Rxh2")
    # 3.Qxg6+ (capture) is again G1.0 for White; 3...hxg6 resets; 4.Nf3 -> 24.5 (White);
    # 4...Rxh2 resets again: its position (28.5 for Black) replaces the smaller 24.5.
    assert game_rmobility(None, moves[:5], DRAW) == "G1.0"
    assert game_rmobility(None, moves[:7], DRAW) == "G24.5"
    assert game_rmobility(None, moves, DRAW) == "-G28.5"


def test_equal_values_keep_the_first_achiever():
    # 1.Rb8+ leaves Black 2 moves in check (White achieves 2.0); 2...Ra7+ leaves White 2 moves
    # in check (Black achieves 2.0 too): White achieved it first and keeps it.
    fen = "7k/6r1/8/8/8/8/1R6/K7 w - - 0 1"
    moves = uci("Rb8+ Kh7 Rc8 Ra7+", fen)
    assert game_rmobility(fen, moves, DRAW) == "G2.0"


def test_start_position_is_a_reset_and_not_a_candidate():
    assert game_rmobility(None, [], DRAW) == "G-"
    # one quiet move: the only candidate is the position after it
    assert game_rmobility(None, ["g1f3"], DRAW) == "G20.5"


def test_illegal_move_names_the_ply():
    with pytest.raises(ValueError, match="ply 2: illegal move 'e2e4'"):
        game_rmobility(None, ["e2e4", "e2e4"], DRAW)


def _random_plies(board: chess.Board, rng: Any, plies: int, moves: list[str]
                  ) -> Iterator[tuple[int, bool]]:
    """Push up to ``plies`` random legal moves on ``board`` (their UCI onto ``moves``);
    yields (ply, whether it reset) after each push."""
    for ply in range(plies):
        legal = list(board.legal_moves)
        if not legal:
            return
        move = rng.choice(legal)
        resets = board.is_zeroing(move)
        board.push(move)
        moves.append(move.uci())
        yield ply, resets


def test_kept_as_played_equals_the_whole_game_at_once():
    """The referee's RMobility (one count per move as the game goes) gives the tag that
    game_rmobility computes from the finished game, from any start and prefix."""
    import random

    from runner.domain.rmobility import RMobility

    rng = random.Random(7)
    starts = [None, "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1",
              "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 4 8"]
    for game in range(30):
        start = starts[game % len(starts)]
        board = chess.Board(start) if start else chess.Board()
        kept, moves = RMobility(), []
        for _, resets in _random_plies(board, rng, rng.randrange(0, 80), moves):
            kept.played(board, resets)
        for result in (DRAW, WHITE_WIN, BLACK_WIN):
            assert kept.tag(result) == game_rmobility(start, moves, result), (start, moves)
        assert kept.plies == len(moves)
        replayed = RMobility()
        replayed.replay(chess.Board(start) if start else chess.Board(), moves[:5])
        assert replayed.tag(DRAW) == game_rmobility(start, moves[:5], DRAW)


def test_deferred_and_settled_equals_the_whole_game_at_once():
    """The referee's deferred count (no count per ply; the positions since the last reset
    counted at a draw's end, after some counted as played) gives game_rmobility's tag."""
    import random

    from runner.domain.rmobility import RMobility

    rng = random.Random(11)
    starts = [None, "4k3/8/8/8/8/8/4P3/4K3 w - - 0 1", "8/8/4k3/8/8/3NB3/8/4K3 w - - 0 1"]
    for game in range(40):
        start = starts[game % len(starts)]
        board = chess.Board(start) if start else chess.Board()
        kept, moves = RMobility(), []
        eager = rng.randrange(0, 6)  # the first plies counted as played (a book)
        for ply, resets in _random_plies(board, rng, rng.randrange(0, 120), moves):
            if ply < eager:
                kept.played(board, resets)
            else:
                kept.deferred(resets)
        assert kept.plies == len(moves)
        for result in (WHITE_WIN, BLACK_WIN):  # decisive: nothing to count
            assert kept.tag(result) == game_rmobility(start, moves, result)
        kept.settle(board.copy(stack=kept.pending))
        assert kept.pending == 0
        assert kept.tag(DRAW) == game_rmobility(start, moves, DRAW), (start, moves)



def test_a_games_book_plies_are_counted_at_its_end_like_its_engines_plies():
    """The referee's start of a game from a book line (its plies left to count at the end,
    as the engines' are: no legal-move count per book ply) and the game after it give
    game_rmobility's tag for the whole game, book and engines' moves, every line of the
    default book."""
    import random
    from pathlib import Path

    from runner.books.openings import load_book
    from runner.config.typed import OpeningsConfig
    from runner.domain.rmobility import RMobility
    from runner.play.referee import _start_board

    book = Path(__file__).resolve().parents[1] / "books" / "default.pgn"
    rng = random.Random(5)
    for opening in load_book(OpeningsConfig(file=book, format="pgn", order="sequential")):
        mobility = RMobility()
        start, board, book_moves, _ = _start_board(opening, False, mobility, [])
        assert mobility.plies == len(book_moves) and mobility.best is None
        moves: list[str] = []
        for _, resets in _random_plies(board, rng, rng.randrange(0, 60), moves):
            mobility.deferred(resets)
        mobility.settle(board.copy(stack=mobility.pending))
        assert mobility.tag(DRAW) == game_rmobility(start.fen(), book_moves + moves, DRAW)
