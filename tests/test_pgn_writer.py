"""The PGN of a game whose SAN is known (the referee's, written straight from the moves'
SAN and comments: runner.domain.pgn) is the text python-chess's exporter writes for the
game replayed on a board, byte for byte: real cutechess games, Chess960, FEN starts with
Black to move, long games, comments with braces or over a line, non-ASCII names."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.pgn

from runner.domain.pgn import read_games, write_game

DATA = Path(__file__).parent / "data"


def _both(tags: dict[str, str], start: str | None, moves: list[str], comments: list[str],
          reason: str | None, sans: list[str], chess960: bool = False) -> str:
    known = write_game(tags, start, moves, comments, reason, sans=sans, chess960=chess960)
    replayed = write_game(tags, start, moves, comments, reason, chess960=chess960)
    assert known == replayed, (known, replayed)
    return known


def test_real_games_are_written_as_python_chess_exports_them() -> None:
    """Every game of the test data's PGN files (cutechess-cli's games and books): its tags,
    start, moves, comments and result, written both ways."""
    games = 0
    for path in sorted(DATA.rglob("*.pgn")):
        with path.open(encoding="utf-8", errors="replace") as handle:
            for game in read_games(handle):
                if game.errors:
                    continue
                board = game.board()
                start = None if board.fen() == chess.STARTING_FEN else board.fen()
                moves, sans, comments = [], [], []
                for node in game.mainline():
                    sans.append(node.parent.board().san(node.move))
                    moves.append(node.move.uci())
                    comments.append(node.comment)
                if not moves:
                    continue
                tags = {k: v for k, v in game.headers.items() if k not in ("FEN", "SetUp")}
                for reason in (None, "White wins by adjudication"):
                    text = _both(tags, start, moves, comments, reason, sans,
                                 chess960=board.chess960)
                games += 1
                assert text.endswith(game.headers.get("Result", "*"))
    assert games >= 50  # the data holds that many real games


def test_generated_games_cover_the_layouts_edges() -> None:
    """Chess960 (castling king-takes-rook), FEN starts with either side to move and a high
    move number, games of hundreds of plies, comments with ``}``, blanks or over 80
    columns, names and comments outside ASCII: written alike both ways."""
    rng = random.Random(5252)
    comments = ["", "book", "+0.35/16 5.1s", "}x}", "  spaced  ", "é" * 90, "a" * 79,
                "-M3/40 0.00s", "Schach – matt ♔"]
    names = ["Stockfish 17", "Löwe Δ", "引擎", 'Deep "Blue"', "tab\there"]
    for n in range(200):
        chess960 = n % 3 == 0
        if chess960:
            board = chess.Board.from_chess960_pos(rng.randrange(960))
        else:
            board = chess.Board(rng.choice([
                chess.STARTING_FEN, "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
                "4k3/8/8/8/8/8/4P3/4K3 b - - 0 57", "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 3 99"]))
        start = None if board.fen() == chess.STARTING_FEN and not chess960 else board.fen()
        moves, sans = [], []
        for _ in range(rng.choice([1, 2, 40, 150, 400])):
            legal = list(board.legal_moves)
            if not legal:
                break
            castles = [m for m in legal if board.is_castling(m)]
            move = rng.choice(castles if castles and rng.random() < 0.5 else legal)
            sans.append(board.san(move))
            moves.append(move.uci())
            board.push(move)
        said = [rng.choice(comments) for _ in moves]
        tags = {"Event": rng.choice(["E", "ein Turnier " * 9]), "Site": "?", "Round": "3.1",
                "White": rng.choice(names), "Black": rng.choice(names), "Result": "1-0",
                "Opening": "Ruy López", "PlyCount": str(len(moves))}
        _both(tags, start, moves, said, rng.choice([None, "", "Black mates"]), sans, chess960)


def test_a_tag_python_chess_refuses_is_refused_on_both_paths() -> None:
    """The known-SAN path builds the headers without python-chess's ``Headers``: a tag name
    it refuses, or a line break in a tag's value, raises the same ValueError either way
    (and the roster's own values are taken as they are, as ``Headers`` takes them)."""
    import pytest

    for bad, words in (({"Bad Tag": "x"}, "invalid pgn header tag"),
                       ({"Opening": "two\nlines"}, "line break in pgn header Opening")):
        tags = {"Event": "E", "Result": "1-0", **bad}
        for sans in (["e4"], None):
            with pytest.raises(ValueError, match=words):
                write_game(tags, None, ["e2e4"], [""], None, sans=sans)
    assert _both({"Event": "line\nbreak", "Result": "*"}, None, ["e2e4"], [""], None, ["e4"])


def test_the_time_tags_are_strftimes_text() -> None:
    """GameStartTime/GameEndTime, written out field by field, are what strftime writes
    (``%Y-%m-%dT%H:%M:%S.`` + milliseconds + `` UTC``)."""
    from datetime import UTC, datetime

    from runner.domain.gamerecord import _utc_tag

    rng = random.Random(8)
    for _ in range(2000):
        moment = datetime(rng.randint(1000, 9999), rng.randint(1, 12), rng.randint(1, 28),
                          rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59),
                          rng.randint(0, 999999), tzinfo=UTC)
        assert _utc_tag(moment) == moment.strftime("%Y-%m-%dT%H:%M:%S.") \
            + f"{moment.microsecond // 1000:03d} UTC"
