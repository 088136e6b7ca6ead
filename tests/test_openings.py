"""Opening books: every format read and every malformed book named precisely; assignment of
openings to matches reproducible from the seed and across a resume."""

from __future__ import annotations

import json
import logging
import sqlite3
import stat
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import chess
import chess.engine
import chess.polyglot
import pytest
import yaml
from testkit import backend, loop_config, run_args, write_config

import runner.books.openings as openings
from runner.books.openings import (
    BookError,
    book_fingerprint,
    check_book,
    check_book_size,
    load_book,
    matches_needed,
    opening_for_match,
    opening_order,
    opening_start_board,
)
from runner.cli import main
from runner.cli.run import cli_run
from runner.config import OpeningsConfig, load_config
from runner.domain.models import Opening
from runner.errors import StopEvent

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BOOK = REPO / "books" / "default.pgn"
GNUCHESS_BOOK = Path("/usr/share/games/gnuchess/book.bin")
STOCKFISH = Path("/usr/games/stockfish")
needs_gnuchess_book = pytest.mark.skipif(not GNUCHESS_BOOK.is_file(),
                                         reason="Debian package gnuchess-book not installed")


def book(tmp_path: Path, text: str | bytes, name: str = "book.pgn", fmt: str = "pgn",
         plies: int = 0) -> OpeningsConfig:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return OpeningsConfig(file=path, format=fmt, plies=plies)


def only_problem(config: OpeningsConfig) -> str:
    with pytest.raises(BookError) as info:
        load_book(config)
    assert len(info.value.problems) == 1, info.value.problems
    assert check_book(config) == info.value.problems
    return info.value.problems[0]


# --------------------------------------------------------------------------- default book


def test_default_book_has_100_varied_lines_of_8_to_12_plies() -> None:
    lines = load_book(OpeningsConfig(file=DEFAULT_BOOK, format="pgn"))
    assert len(lines) >= 100
    assert [o.index for o in lines] == list(range(len(lines)))
    assert all(8 <= len(o.moves) <= 12 and o.fen is None for o in lines)
    finals = {opening_start_board(o).epd() for o in lines}
    assert len(finals) == len(lines), "two lines reach the same position"
    assert all(o.name for o in lines)
    first = Counter(o.moves[0] for o in lines)
    assert len(first) >= 4 and max(first.values()) <= 0.5 * len(lines), first
    assert len({o.moves[:4] for o in lines}) >= 40  # not a hundred shades of one line


def test_default_book_records_its_balance_check() -> None:
    import chess.pgn

    evals = []
    with DEFAULT_BOOK.open(encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            evals.append(float(game.headers["BookEval"]))
    assert len(evals) >= 100 and max(abs(e) for e in evals) <= 0.80


@pytest.mark.engines
def test_default_book_lines_are_not_lost_for_either_side_by_stockfish() -> None:
    if not STOCKFISH.is_file():
        pytest.skip("stockfish not installed")
    lines = load_book(OpeningsConfig(file=DEFAULT_BOOK, format="pgn"))
    sample = lines[:: max(1, len(lines) // 8)]
    with chess.engine.SimpleEngine.popen_uci(str(STOCKFISH)) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        for opening in sample:
            info = engine.analyse(opening_start_board(opening), chess.engine.Limit(depth=10))
            cp = info["score"].white().score(mate_score=100_000)
            assert abs(cp) <= 150, (opening.name, cp)


@pytest.mark.engines
@pytest.mark.slow
@needs_gnuchess_book
def test_build_script_reproduces_the_committed_book() -> None:
    if not STOCKFISH.is_file():
        pytest.skip("stockfish not installed")
    if not Path("/usr/share/scid/data/scid.eco").is_file():
        pytest.skip("scid-data not installed: the book's opening names come from its scid.eco")
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "build_book.py"), "--check"],
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "up to date" in proc.stderr


# --------------------------------------------------------------------------- PGN


def test_pgn_tags_fen_plies_and_names(tmp_path: Path) -> None:
    text = """; a comment line before the first game
[Event "x"]
[ECO "B90"]
[Opening "Sicilian"]
[Variation "Najdorf"]

1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6 6. Be3 e5 *

[Event "y"]
[SetUp "1"]
[FEN "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"]

3. Bb5 {Ruy} a6 (3... Nf6 4. O-O) 4. Ba4 *

1.d4 Nf6 2.c4 e6 3.Nc3 Bb4 $1 4.Qc2!? *
"""
    lines = load_book(book(tmp_path, text, plies=4))
    assert len(lines) == 3
    sicilian, ruy, nimzo = lines
    assert sicilian.name == "B90 Sicilian: Najdorf"
    assert sicilian.moves == ("e2e4", "c7c5", "g1f3", "d7d6")  # Plies: 4 cuts the line
    assert sicilian.fen is None and sicilian.index == 0
    assert ruy.fen == "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3"
    assert ruy.moves == ("f1b5", "a7a6", "b5a4")  # the variation is not part of the line
    assert nimzo.name == "1. d4 Nf6 2. c4 e6"  # no tags: named by its moves
    full = load_book(book(tmp_path, text, plies=0))
    assert len(full[0].moves) == 12  # Plies: 0 keeps whole lines


@pytest.mark.parametrize(
    ("movetext", "ply", "token", "line"),
    [
        ("1. e4 c5 2. Nf3 Nf6x 3. d4 *", 4, "Nf6x", 12),  # garbage python-chess would skip
        ("1. e4 c5 2. Nf3 d6\n3. Ke3 *", 5, "Ke3", 13),  # well-formed but illegal
        ("1. e4 c5 2. Zf3 d6 *", 3, "Zf3", 12),
        ("1. e4 c5 2. Nf3 Nc6 3. Bb5 Nf6 4. O-O-O *", 7, "O-O-O", 12),
    ],
)
def test_pgn_illegal_move_names_file_game_line_ply_and_token(
    tmp_path: Path, movetext: str, ply: int, token: str, line: int
) -> None:
    text = ('[Event "1"]\n\n1. d4 d5 *\n\n'
            '[Event "2"]\n\n1. c4 e5 *\n\n'
            f'[Event "3"]\n[Opening "Sicilian"]\n\n{movetext}\n')
    message = only_problem(book(tmp_path, text, name="mybook.pgn"))
    assert message.startswith(f"{tmp_path / 'mybook.pgn'}:{line}: ")
    assert f'game 3 ("Sicilian"), ply {ply}: illegal move {token!r}' in message
    assert f"ply {ply}" in message and f"illegal move {token!r}" in message


def test_pgn_unclosed_comment(tmp_path: Path) -> None:
    message = only_problem(book(tmp_path, '[Event "a"]\n\n1. e4 e5\n2. Nf3 {good move 2... Nc6 *\n'))
    assert message.endswith("book.pgn:4: game 1: comment {good move 2... Nc6... is never closed (missing '}')")


def test_pgn_null_move_is_refused(tmp_path: Path) -> None:
    message = only_problem(book(tmp_path, "1. e4 e5 2. -- Nc6 *\n"))
    assert message.endswith("book.pgn:1: game 1, ply 3: null move '--' cannot be a book move")


def test_pgn_illegal_move_in_a_variation_is_reported(tmp_path: Path) -> None:
    message = only_problem(book(tmp_path, "1. e4 e5 2. Nf3 (2. Qh5 Nc6 3. Qxf9) Nc6 *\n"))
    assert "game 1, ply 5 (in a variation): illegal move" in message and "'Qxf9'" in message


def test_pgn_bad_fen_invalid_position_and_empty_game(tmp_path: Path) -> None:
    text = ('[Event "a"]\n[FEN "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1"]\n\n*\n\n'
            '[Event "b"]\n[Site "?"]\n[FEN "8/8/8/8/8/8/8/8 w - - 0 1"]\n\n*\n\n'
            '[Event "d"]\n\n*\n\n'
            '[Event "e"]\n\n1. e4 e5 *\n')
    problems = check_book(book(tmp_path, text))
    assert len(problems) == 3, problems
    bad_fen, no_kings, empty = problems
    assert ":2: game 1: unparsable FEN" in bad_fen and "'w' or 'b'" in bad_fen
    assert ":8: game 2: FEN '8/8/8/8/8/8/8/8 w - - 0 1': invalid position" in no_kings
    assert "no white king" in no_kings
    assert ":12: game 3: no moves and no FEN" in empty
    with pytest.raises(BookError) as info:
        load_book(book(tmp_path, text))
    assert info.value.problems == problems


def test_line_ending_the_game_loses_its_last_move_like_cutechess() -> None:
    # The cutechess-cli 1.5.1 fixture: "a book line whose last move ends the game has that
    # last ply dropped, and the engine plays on".
    fixture = REPO / "tests" / "data" / "cutechess" / "board_results" / "book.pgn"
    lines = load_book(OpeningsConfig(file=fixture, format="pgn"))
    stalemate, fools_mate = lines[0], lines[1]
    assert len(stalemate.moves) == 18 and stalemate.moves[-1] == "f7g6"  # ends 9... Kg6; 10. Qe6 dropped
    assert fools_mate.moves == ("f2f3", "e7e5", "g2g4")  # 2... Qh4# dropped
    assert all(opening_start_board(o).outcome() is None for o in lines)
    assert any(o.fen == "8/8/8/4B3/8/8/5q2/5K1k w - - 0 1" and o.moves == () for o in lines)


def test_pgn_games_without_blank_line_between_them(tmp_path: Path) -> None:
    text = '[Event "a"]\r\n\r\n1. e4 e5 *\r\n[Event "b"]\r\n\r\n1. d4 d5 *\r\n'
    message = only_problem(book(tmp_path, text))
    assert message.startswith(f"{tmp_path / 'book.pgn'}:4: game 1: tag [Event...] among the moves")
    assert "blank line" in message
    fixed = text.replace('*\r\n[Event "b"]', '*\r\n\r\n[Event "b"]')  # CRLF books are fine
    assert [o.moves for o in load_book(book(tmp_path, fixed))] == [("e2e4", "e7e5"), ("d2d4", "d7d5")]


@pytest.mark.parametrize("text", ["", "\n\n   \n", "; only a comment\n% and an escape\n"])
def test_empty_pgn_book_is_an_error(tmp_path: Path, text: str) -> None:
    assert only_problem(book(tmp_path, text)) == f"{tmp_path / 'book.pgn'}: the opening book is empty (no PGN games found)"


def test_binary_file_given_as_pgn_is_an_error(tmp_path: Path) -> None:
    message = only_problem(book(tmp_path, b"\x00\xff\xfe\x80garbage"))
    assert "book.pgn:1: not UTF-8 text" in message


def test_missing_book_file(tmp_path: Path) -> None:
    config = OpeningsConfig(file=tmp_path / "nope.pgn", format="pgn")
    assert "nope.pgn: cannot read opening book" in only_problem(config)


# --------------------------------------------------------------------------- EPD


def test_epd_positions_with_id_names(tmp_path: Path) -> None:
    text = ('rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id "King pawn";\n'
            "\n"
            "# a comment\n"
            "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - hmvc 0; fmvn 2;\n")
    lines = load_book(book(tmp_path, text, name="b.epd", fmt="epd"))
    assert [o.name for o in lines] == ["King pawn", "b.epd line 4"]
    assert lines[0].fen == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    assert lines[1].fen.endswith(" w KQkq - 0 2") and lines[1].moves == ()


def test_epd_errors_name_file_line_and_text(tmp_path: Path) -> None:
    text = ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id \"ok\";\n"
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR q KQkq -\n"
            "rnbqkbnr/pppppppp/9/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -\n"
            "8/8/8/8/8/8/8/8 w - -\n"
            "7k/5KQ1/8/8/8/8/8/8 b - - id \"mated\";\n")
    problems = check_book(book(tmp_path, text, name="b.epd", fmt="epd"))
    assert len(problems) == 4, problems
    assert problems[0].startswith(f"{tmp_path / 'b.epd'}:2: invalid EPD ")
    assert "KQkq -" in problems[0] and "'w' or 'b'" in problems[0]
    assert problems[1].startswith(f"{tmp_path / 'b.epd'}:3: invalid EPD ")
    assert ":4: invalid position (" in problems[2] and "no white king" in problems[2]
    assert ":5: the game is already over (checkmate)" in problems[3]


def test_empty_epd_book_is_an_error(tmp_path: Path) -> None:
    message = only_problem(book(tmp_path, "\n# nothing\n", name="e.epd", fmt="epd"))
    assert message == f"{tmp_path / 'e.epd'}: the opening book is empty (no EPD positions found)"


# --------------------------------------------------------------------------- polyglot


def polyglot_entry(board: chess.Board, uci: str, weight: int) -> bytes:
    move = chess.Move.from_uci(uci)
    raw = move.to_square | (move.from_square << 6)
    return struct.pack(">QHHI", chess.polyglot.zobrist_hash(board), raw, weight, 0)


def tiny_polyglot(tmp_path: Path) -> Path:
    """A book with two first moves, one answer each, and nothing after: exactly 2 lines."""
    entries = []
    start = chess.Board()
    entries.append(polyglot_entry(start, "e2e4", 10))
    entries.append(polyglot_entry(start, "d2d4", 5))
    for first, reply in (("e2e4", "c7c5"), ("d2d4", "g8f6")):
        board = chess.Board()
        board.push_uci(first)
        entries.append(polyglot_entry(board, reply, 1))
    entries.sort(key=lambda e: struct.unpack(">Q", e[:8])[0])  # polyglot files are sorted by key
    path = tmp_path / "tiny.bin"
    path.write_bytes(b"".join(entries))
    return path


def test_polyglot_walk_stops_when_the_book_is_exhausted(tmp_path: Path) -> None:
    config = OpeningsConfig(file=tiny_polyglot(tmp_path), format="polyglot", plies=8)
    lines = load_book(config, random_seed=3)
    assert sorted(o.moves for o in lines) == [("d2d4", "g8f6"), ("e2e4", "c7c5")]
    assert {o.name for o in lines} == {"1. e4 c5", "1. d4 Nf6"}


@pytest.mark.slow
@needs_gnuchess_book
def test_polyglot_walk_is_reproducible_from_the_seed() -> None:
    config = OpeningsConfig(file=GNUCHESS_BOOK, format="polyglot", plies=10)
    first = load_book(config, random_seed=42)
    again = load_book(config, random_seed=42)
    other = load_book(config, random_seed=43)
    assert first == again
    assert [o.moves for o in first] != [o.moves for o in other]
    assert len(first) == openings.POLYGLOT_LINES
    assert len({o.moves for o in first}) == len(first)  # distinct lines
    assert all(1 <= len(o.moves) <= 10 for o in first)
    assert sum(len(o.moves) == 10 for o in first) > len(first) // 2
    for opening in first[:50]:
        opening_start_board(opening)  # every move legal (push_uci raises otherwise)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "the opening book is empty (0 bytes)"),
        (b"\x01" * 20, "not a polyglot book: 20 bytes is not a multiple of the 16-byte entry size"),
        (b"\x01" * 32, "the polyglot book has no move for the start position"),
    ],
)
def test_polyglot_malformed(tmp_path: Path, data: bytes, expected: str) -> None:
    message = only_problem(book(tmp_path, data, name="x.bin", fmt="polyglot", plies=8))
    assert message.startswith(f"{tmp_path / 'x.bin'}: ") and expected in message


# --------------------------------------------------------------------------- assignment


def demo_book() -> list[Opening]:
    return load_book(OpeningsConfig(file=DEFAULT_BOOK, format="pgn"))


def assignment(book_: list[Opening], order: list[int], matches: int) -> list[Opening]:
    return [opening_for_match(order, m, book_) for m in range(matches)]


def test_opening_order_sequential_and_random() -> None:
    assert opening_order(5, "sequential", 99) == [0, 1, 2, 3, 4]
    shuffled = opening_order(120, "random", 7)
    assert sorted(shuffled) == list(range(120)) and shuffled != list(range(120))
    assert opening_order(120, "random", 7) == shuffled
    assert opening_order(120, "random", 8) != shuffled
    assert opening_order(0, "random", 7) == []
    with pytest.raises(ValueError, match="sequential | random"):
        opening_order(3, "shuffled", 1)


def test_two_tournaments_with_the_same_seed_assign_identical_openings() -> None:
    matches = matches_needed(players=7, rounds=3)
    assert matches == 9
    one_book, two_book = demo_book(), demo_book()  # loaded independently
    one = assignment(one_book, opening_order(len(one_book), "random", 20261122), matches)
    two = assignment(two_book, opening_order(len(two_book), "random", 20261122), matches)
    other = assignment(one_book, opening_order(len(one_book), "random", 20261123), matches)
    assert one == two
    assert [o.index for o in one] != [o.index for o in other]
    assert len({o.index for o in one}) == matches  # no repeats while the book lasts


def match_openings(db: Path) -> list[tuple[int, int, str | None]]:
    """(game id, match, stored opening JSON) of every game of an event, from its database."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT game_id, match_index, opening FROM games ORDER BY game_id").fetchall()
    finally:
        conn.close()


def random_order_event(directory: Path) -> Path:
    path = loop_config(directory, players=6, Rounds=4, RandomSeed=20261122)
    data = yaml.safe_load(path.read_text())
    data["Openings"] = {"File": str(DEFAULT_BOOK), "Order": "random", "Plies": 8}
    write_config(path.parent, data, path.name)
    return path


def test_a_resumed_event_gives_every_match_the_opening_of_an_uninterrupted_run(tmp_path: Path) -> None:
    """Random order, the real store and loop: an event that fails partway and is resumed
    (book re-read, order read back) plays every game from the same opening as a clean run."""
    clean = load_config(random_order_event(tmp_path / "clean"))
    assert cli_run(clean, run_args(), play_game=backend()) == 0
    reference = match_openings(clean.database)
    assert len(reference) == 4 * 3 * 2

    config = load_config(random_order_event(tmp_path / "broken"))

    def fail_in_round_2(spec) -> None:  # noqa: ANN001 - a GameSpec
        if spec.game_id == 9:
            raise StopEvent("the runner stops")

    assert cli_run(config, run_args(), play_game=backend(hook=fail_in_round_2)) == 1
    assert len(match_openings(config.database)) == 12  # rounds 3 and 4 not paired yet
    assert cli_run(config, run_args(), play_game=backend()) == 0
    assert match_openings(config.database) == reference

    # ... and those are the openings the seed's order gives, one per match, both games
    book_ = load_book(clean.openings)
    order = opening_order(len(book_), "random", 20261122)
    assert order != sorted(order)
    for _, match, stored in reference:
        assert json.loads(stored)["index"] == order[match]
        assert tuple(json.loads(stored)["moves"]) == book_[order[match]].moves


@pytest.mark.slow
def test_book_lines_that_change_under_the_same_file_are_refused_on_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The fingerprint covers the polyglot file, not the walk: a python-chess whose walk gives
    as many lines, but other ones, must not silently hand other openings to the rest."""
    path = loop_config(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["Openings"] = {"File": str(tiny_polyglot(tmp_path)), "Plies": 8, "Order": "sequential"}
    write_config(path.parent, data, path.name)
    config = load_config(path)

    def stop_in_round_2(spec) -> None:  # noqa: ANN001 - a GameSpec
        if spec.game_id == 5:
            raise StopEvent("stop")

    assert cli_run(config, run_args(), play_game=backend(hook=stop_in_round_2)) == 1
    before = config.database.read_bytes()
    original = load_book(config.openings, 0)

    # "another python-chess": the same two lines, drawn in the other order
    real = chess.polyglot.MemoryMappedReader.weighted_choice

    def other_walk(self, board, *, exclude_moves=(), random=None):  # noqa: ANN001, ANN202
        entry = real(self, board, exclude_moves=exclude_moves, random=random)
        if board.ply() == 0:
            return next(e for e in self.find_all(board) if e.move != entry.move)
        return entry

    monkeypatch.setattr(chess.polyglot.MemoryMappedReader, "weighted_choice", other_walk)
    walked = load_book(config.openings, 0)
    assert len(walked) == len(original) == 2
    assert [o.moves for o in walked] == [o.moves for o in reversed(original)]
    capsys.readouterr()
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{config.openings.file}: the opening book now gives other lines than when the event" in err
    assert config.database.read_bytes() == before

    monkeypatch.setattr(chess.polyglot.MemoryMappedReader, "weighted_choice", real)
    assert cli_run(config, run_args(), play_game=backend()) == 0


def test_wrap_around_logs_once_and_unique_mode_refuses(caplog: pytest.LogCaptureFixture) -> None:
    book_ = [Opening(index=i, name=f"o{i}", moves=(m,)) for i, m in enumerate(("e2e4", "d2d4", "c2c4"))]
    order = opening_order(3, "random", 5)
    with caplog.at_level(logging.WARNING, logger="runner.books.openings"):
        got = assignment(book_, order, 8)
    assert [o.index for o in got] == [order[m % 3] for m in range(8)]
    wrap_logs = [r for r in caplog.records if "exhausted" in r.getMessage()]
    assert len(wrap_logs) == 1 and "all 3 openings used after 3 matches" in wrap_logs[0].getMessage()
    assert opening_for_match(order, 2, book_, repeat=False) == book_[order[2]]
    with pytest.raises(BookError, match="match 4 needs a new opening but the book has only 3"):
        opening_for_match(order, 3, book_, repeat=False)


def test_changed_book_is_detected_on_resume() -> None:
    book_ = demo_book()
    order = opening_order(len(book_), "random", 1)
    with pytest.raises(BookError, match="the book changed since the tournament started"):
        opening_for_match(order, 0, book_[:-1])
    assert book_fingerprint(book_) != book_fingerprint(book_[:-1])
    assert book_fingerprint(book_) == book_fingerprint(demo_book())


def test_book_size_check_for_unique_openings(tmp_path: Path) -> None:
    check_book_size(5, 9, unique_per_match_only=True)  # repeats allowed: fine
    check_book_size(9, 9, unique_per_match_only=False)
    with pytest.raises(BookError, match=r"b\.pgn: 5 openings for up to 9 matches"):
        check_book_size(5, 9, unique_per_match_only=False, book_file="b.pgn")


# --------------------------------------------------------------------------- CLI


def test_validate_fails_naming_the_game_and_the_move(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    engine = tmp_path / "engine.sh"
    engine.write_text("#!/bin/sh\nexit 0\n")
    engine.chmod(engine.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "book.pgn").write_text(
        '[Event "1"]\n\n1. e4 e5 *\n\n[Event "2"]\n[Opening "French"]\n\n1. e4 e6 2. d4 d5 3. Nc3 Bb4x *\n')
    config = write_config(tmp_path, {
        "SwissOptions": {"Rounds": 1},
        "TimeControl": "10+0.1",
        "Openings": {"File": "book.pgn", "Format": "pgn"},
        "Engines": [{"Name": "A", "Command": "./engine.sh"}, {"Name": "B", "Command": "./engine.sh"}],
    })
    assert main(["validate", str(config)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'book.pgn'}:8: game 2 (\"French\"), ply 6: illegal move 'Bb4x'" in err

    (tmp_path / "book.pgn").write_text('[Event "1"]\n\n1. e4 e5 *\n')
    assert main(["validate", str(config)]) == 0


def test_validate_refuses_a_book_too_small_for_unique_openings_as_run_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = loop_config(tmp_path, UniquePerMatchOnly=False, Rounds=4)  # 6 openings, 8 matches
    capsys.readouterr()
    assert main(["validate", str(path)]) == 2
    validate_err = capsys.readouterr().err
    needle = (f"{tmp_path / 'book.pgn'}: 6 openings for up to 8 matches, but UniquePerMatchOnly "
              "is false")
    assert needle in validate_err
    assert main(["run", str(path)]) == 2
    assert needle in capsys.readouterr().err
    assert main(["validate", str(loop_config(tmp_path, UniquePerMatchOnly=False, Rounds=3))]) == 0
