"""One ply as the referee plays it (runner.play.referee) decides what python-chess decides:
a reply is legal exactly when ``Board.is_legal`` says so (checked as ``is_pseudo_legal``,
then the mover's king after the push), its SAN is python-chess's, the natural end told by
the SAN's ``#`` / ``+`` is the one found by generating the moves, an illegal reply leaves
the board as it was; the comment's score and time texts are the float formats' to the
character."""

from __future__ import annotations

import random
import types
from pathlib import Path

import chess
import chess.engine
import chess.pgn

from runner.domain.adjudication import RepetitionWindow, king_can_step, natural_end, pawn_can_push
from runner.domain.rmobility import RMobility
from runner.play import referee

PROTO = types.SimpleNamespace(last_move_text="")
DATA = Path(__file__).parent / "data" / "cutechess"


def _take(board: chess.Board, move: chess.Move) -> tuple[str | None, referee._End | None]:
    """(SAN, None) when the referee plays ``move`` on ``board``; (None, the end) when it
    refuses it."""
    refused = referee._refused(move, False, board, board.turn, PROTO)
    if refused is not None:
        return None, refused
    san = referee._push(board, move, RMobility())
    return san, None if san is not None else referee._illegal_reply(board.turn, PROTO, move)


def _candidates(board: chess.Board, rng: random.Random) -> list[chess.Move]:
    """Every pseudo-legal move (pinned pieces, king steps into check, castling written
    both ways), and a few that are not even that (wrong side, empty squares, bad
    promotions)."""
    moves = list(board.generate_pseudo_legal_moves())
    moves += [chess.Move(rng.randrange(64), rng.randrange(64)) for _ in range(6)]
    moves += [chess.Move(rng.randrange(64), rng.randrange(64), chess.QUEEN) for _ in range(2)]
    king = board.king(board.turn)
    if king is not None:  # castling as king-takes-rook and as the king's two steps
        for rook in chess.scan_forward(board.castling_rights & board.occupied_co[board.turn]):
            moves.append(chess.Move(king, rook))
        moves += [chess.Move(king, to) for to in (king + 2, king - 2) if 0 <= to < 64]
    return moves


#: a mate in one, an en passant capture that opens the king's rank, castling through an
#: attacked square, a double check
FIXED = ("7k/8/6K1/8/8/8/8/Q7 w - - 0 1", "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 1",
         "r3k2r/8/8/8/8/8/5q2/R3K2R w KQkq - 0 1", "4k3/8/8/8/1b6/8/4r3/4K3 w - - 0 1",
         "4k3/8/8/1b6/8/8/4r3/R3K2R w KQ - 0 1")


def _positions(seed: int, games: int) -> list[chess.Board]:
    """The :data:`FIXED` positions, and a sample of the positions of random games (a third
    of them Chess960) biased to checks."""
    rng = random.Random(seed)
    boards = [chess.Board(fen) for fen in FIXED]
    for game in range(games):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if game % 3 == 0 \
            else chess.Board()
        for _ in range(rng.randrange(20, 140)):
            moves = list(board.legal_moves)
            if not moves:
                break
            checks = [m for m in moves if board.gives_check(m)]
            board.push(rng.choice(checks if checks and rng.random() < 0.3 else moves))
            if rng.random() < 0.25:
                boards.append(board.copy())
    return boards


def test_a_reply_is_taken_exactly_when_python_chess_calls_it_legal() -> None:
    rng = random.Random(52)
    seen = {"legal": 0, "into check": 0, "not pseudo-legal": 0, "mate": 0, "check": 0}
    for position in _positions(52, 10):
        for move in _candidates(position, rng):
            board = position.copy()
            san, end = _take(board, move)
            legal = position.is_legal(move)
            assert (san is not None) == legal, (position.fen(), move)
            if not legal:
                assert end is not None and end.termination == "illegal move"
                assert board == position and board.move_stack == position.move_stack
                seen["into check" if position.is_pseudo_legal(move) else "not pseudo-legal"] += 1
                continue
            seen["legal"] += 1
            assert san == position.san(move), (position.fen(), move)
            after = position.copy()
            after.push(move)
            assert board == after and board.move_stack == after.move_stack
            told = natural_end(board, referee._moves_left(san, board))
            assert told == natural_end(board), (board.fen(), san)
            if san.endswith("#"):
                seen["mate"] += 1
            elif san.endswith("+"):
                seen["check"] += 1
    assert min(seen.values()) > 0, seen  # every case was met


def test_the_moves_left_after_a_move_as_its_san_tells() -> None:
    boxed = chess.Board("k7/8/1QK5/8/8/8/8/8 b - - 0 1")  # stalemate: no king step is free
    free = chess.Board()
    assert referee._moves_left("Qh7#", boxed) == 0
    assert referee._moves_left("Nf3+", boxed) == 1
    assert referee._moves_left("O-O", boxed) is None and referee._moves_left("e8=Q", boxed) is None
    assert referee._moves_left("Nf3", free) == 1  # its king boxed in, a pawn can push
    boxed_in = chess.Board("k7/8/8/8/8/p7/P7/KB6 w - - 0 1")  # b2 attacked, a2 blocked
    assert referee._moves_left("Kb8", boxed_in) is None and any(boxed_in.legal_moves)
    assert referee._moves_left("Kf1", chess.Board("4k3/8/8/8/8/8/8/4K3 b - - 0 1")) == 1
    mate = chess.Board("7k/8/6K1/8/8/8/8/Q7 w - - 0 1")
    san = referee._push(mate, mate.parse_san("Qa8"), None)
    assert san == "Qa8#" and natural_end(mate, referee._moves_left(san, mate)).reason == "White mates"


def _recorded_plies() -> list[tuple[chess.Board, chess.Move]]:
    """Every ply of the games in tests/data (real engines' games, cutechess's PGNs): the
    position before it and its move."""
    plies = []
    for path in sorted(DATA.glob("*/games.pgn")):
        with path.open(encoding="utf-8") as handle:
            while (game := chess.pgn.read_game(handle)) is not None:
                board = game.board()
                for move in game.mainline_moves():
                    plies.append((board.copy(stack=False), move))
                    board.push(move)
    return plies


def _recorded_positions() -> list[chess.Board]:
    """Every position after a ply of :func:`_recorded_plies`."""
    boards = []
    for board, move in _recorded_plies():
        board.push(move)
        boards.append(board)
    return boards


STALEMATES = ("k7/8/1QK5/8/8/8/8/8 b - - 0 1", "8/5b2/5P2/8/p7/1k6/p7/K7 w - - 1 122",
              "8/8/3q4/4R3/6pp/3k1p2/7K/3n1r2 w - - 0 116",
              "5kbQ/8/1P3BP1/8/8/4R3/6N1/6K1 b - - 0 103")


def test_a_free_king_step_is_python_chess_s_legal_king_step() -> None:
    """Out of check, :func:`king_can_step` says what python-chess's legal moves say: the
    king has a move that is no castling. Over the recorded games' positions (the most of
    them), random games' (Chess960, checks, castling) and stalemates, whose natural end
    is then python-chess's."""
    stalemates = [chess.Board(fen) for fen in STALEMATES]
    recorded = _recorded_positions()
    seen = {True: 0, False: 0}
    for board in recorded + _positions(53, 40) + stalemates:
        if board.is_check():
            continue
        king = board.king(board.turn)
        steps = any(m.from_square == king and not board.is_castling(m) for m in board.legal_moves)
        assert king_can_step(board) == steps, board.fen()
        seen[steps] += 1
        left = 1 if steps else None
        assert natural_end(board, left, False) == natural_end(board, None, False), board.fen()
    assert len(recorded) > 3000 and seen[True] > 3000 and seen[False] > 200, seen


def test_a_pawn_that_can_push_has_python_chess_s_legal_push() -> None:
    """Out of check, when :func:`pawn_can_push` says yes, python-chess has a legal push of a
    pawn one square (its natural end then the same), over the recorded games' positions,
    random games' (Chess960, checks), positions with pinned pawns and stalemates (none of
    them a yes)."""
    pinned = [chess.Board(fen) for fen in (
        "4k3/8/8/8/8/8/4P3/4KR2 w - - 0 1",  # the e-pawn on its king's file: it may push
        "4k3/4r3/8/8/8/8/4P3/4K3 w - - 0 1",  # pinned on the file: it may still push
        "7k/8/8/8/1b6/8/3P4/4K3 w - - 0 1",  # pinned on the diagonal: no push is legal
        "4k3/8/8/8/8/8/r2PK3/8 w - - 0 1",  # pinned on the rank: no push is legal
        "8/8/8/8/8/3p4/3P4/K6k w - - 0 1")]  # blocked: no push at all
    stalemates = [chess.Board(fen) for fen in STALEMATES]
    recorded = _recorded_positions()
    seen = {True: 0, False: 0}
    for board in recorded + _positions(54, 40) + pinned + stalemates:
        if board.is_check():
            continue
        said = pawn_can_push(board)
        seen[said] += 1
        if not said:
            continue
        step = 8 if board.turn else -8
        assert any(board.pawns & chess.BB_SQUARES[m.from_square] and m.to_square == m.from_square + step
                   for m in board.legal_moves), board.fen()
        assert natural_end(board, 1, False) == natural_end(board, None, False), board.fen()
    assert [pawn_can_push(board) for board in pinned] == [False, False, False, False, False]
    assert not any(pawn_can_push(board) for board in stalemates)
    assert len(recorded) > 3000 and seen[True] > 2000 and seen[False] > 500, seen


def test_a_pinned_piece_or_a_king_stepping_into_check_is_refused_the_board_unchanged() -> None:
    pinned = "rnbqk1nr/pppp1ppp/8/4p3/1b1P4/2N5/PPP1PPPP/R1BQKBNR w KQkq - 2 3"
    rook = "4k3/8/8/8/8/8/r7/4K3 w - - 0 1"  # the second rank is the rook's
    for fen, text in ((pinned, "c3e4"), (rook, "e1e2"), (rook, "e1f2")):
        board = chess.Board(fen)
        san, end = _take(board, chess.Move.from_uci(text))
        assert san is None and end == referee._illegal(chess.WHITE, text)
        assert board.fen() == fen and not board.move_stack
    board = chess.Board(rook)
    assert _take(board, chess.Move.from_uci("e1f1")) == ("Kf1", None)


def test_score_and_time_texts_are_the_float_formats_to_the_character() -> None:
    for cp in range(-40000, 40001):
        want = "0.00" if cp == 0 else f"{cp / 100:+.2f}"
        assert referee.format_score(chess.engine.Cp(cp)) == want
    rng = random.Random(7)
    for seconds in [ms / 1000 for ms in range(0, 12000)] + [rng.uniform(0, 60) for _ in range(20000)]:
        ms = int(round(seconds * 1000))
        decimals = 3 if ms < 100 else 2 if ms < 1000 else 1 if ms < 10000 else 0
        want = "0s" if ms <= 0 else f"{ms / 1000:.{decimals}f}s"
        assert referee.format_seconds(seconds) == want, seconds


def test_the_repetition_window_never_hides_a_threefold_repetition() -> None:
    """Random games that shuffle pieces back and forth (threefold repetitions, long runs
    without a pawn move or capture), from the start and from a FEN with a halfmove clock
    already running, the window fed from the first ply or only from a later one (a resumed
    game, book plies before the engines'): the natural end is python-chess's every time."""
    rng = random.Random(11)
    repeated = skipped = 0
    for game in range(120):
        board = chess.Board() if game % 2 else chess.Board("4k3/8/8/8/8/8/8/R3K2R w KQ - 7 40")
        window, first_fed = RepetitionWindow(), rng.choice((0, 0, 5, 12))
        for ply in range(200):
            moves = list(board.legal_moves)
            quiet = [m for m in moves if not board.is_zeroing(m)]
            back = chess.Move(board.move_stack[-2].to_square, board.move_stack[-2].from_square) \
                if len(board.move_stack) > 1 else None  # the side's last move undone
            if back in quiet and rng.random() < 0.6:
                board.push(back)
            else:
                board.push(rng.choice(quiet if quiet and rng.random() < 0.9 else moves))
            if ply < first_fed:
                continue
            may = window.played(board)
            end = natural_end(board, None, may)
            assert end == natural_end(board), board.fen()
            assert may or not board.is_repetition(3)
            skipped += board.halfmove_clock >= 8 and not may
            if end is not None:
                repeated += end.reason == "Draw by 3-fold repetition"
                break
    assert repeated > 10 and skipped > 100  # both met, often


def test_a_plainly_pseudo_legal_move_is_python_chess_s_pseudo_legal_move() -> None:
    """The referee's quick yes (:func:`referee._plainly_pseudo_legal`) is never said to a
    move python-chess's ``is_pseudo_legal`` refuses, over every pseudo-legal move and some
    that are not of the recorded games' positions (a sample) and random games'; it is said
    to most moves the engines played, so python-chess is asked for few."""
    rng = random.Random(54)
    recorded = _recorded_plies()
    said = asked = 0
    for board in [board for board, _ in recorded[::7]] + _positions(54, 20):
        for move in _candidates(board, rng):
            quick = referee._plainly_pseudo_legal(board, move)
            assert not quick or board.is_pseudo_legal(move), (board.fen(), move)
            said += quick
            asked += 1
    assert said > asked // 3, (said, asked)
    played = sum(referee._plainly_pseudo_legal(board, move) for board, move in recorded)
    assert played > 0.95 * len(recorded), (played, len(recorded))


def test_the_comment_from_the_score_s_parts_is_the_comment_of_the_score() -> None:
    """The comment the referee writes from a score's ``score()`` / ``mate()`` and the move's
    rounded milliseconds (computed once a ply, for the comment and the event) is the text
    :func:`format_score` and :func:`format_seconds` write from the score and the seconds."""
    rng = random.Random(55)
    scores: list[chess.engine.Score | None] = [None, chess.engine.MateGiven]
    scores += [chess.engine.Cp(cp) for cp in range(-3000, 3001, 7)]
    scores += [chess.engine.Mate(m) for m in range(-40, 41) if m]
    for score in scores:
        for depth in (None, 0, 1, rng.randrange(2, 99)):
            seconds = rng.choice((0.0, 0.0004, rng.uniform(0, 0.1), rng.uniform(0, 2),
                                  rng.uniform(0, 100)))
            want = referee.format_seconds(seconds) if score is None else (
                f"{referee.format_score(score)}/{depth} {referee.format_seconds(seconds)}" if depth
                else f"{referee.format_score(score)} {referee.format_seconds(seconds)}")
            cp, mate = (None, None) if score is None else (score.score(), score.mate())
            for _ in range(2):  # (the second time from the texts kept: the same)
                assert referee._comment(cp, mate, depth, round(seconds * 1000)) == want
            info = {} if score is None else {"score": chess.engine.PovScore(score, chess.BLACK)}
            if depth is not None:
                info["depth"] = depth
            assert referee.move_comment(info, chess.BLACK, seconds) == want
