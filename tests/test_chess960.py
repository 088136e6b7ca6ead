"""Chess960 and Double Fischer Random events (issue 29): config, starts, real engines, resume.

The event tests play real Debian engines (those that declare UCI_Chess960: Stockfish,
Fairy-Stockfish, Ethereal, Glaurung) at small node/depth limits; the kill -9 test uses a
deterministic fake engine (tests/fakes/castler960.py) that keeps its castling rights until a
given ply and then castles, so the castling after the resume is certain.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
from testkit import pgn_games as games_of
from testkit import run_args, wait_until, write_config

from runner.books.openings import BookError, load_book, opening_order
from runner.cli.run import cli_run
from runner.config import load_config
from runner.config.fingerprint import event_fingerprint
from runner.config.typed import OpeningsConfig
from runner.domain.models import GameSpec, Opening
from runner.domain.pgn import write_game
from runner.domain.timecontrol import parse_time_control
from runner.domain.variant import board_at, position_fen, replay_960, start_problem
from runner.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK, ConfigError
from runner.play.cutechess import build_command, write_opening_file
from runner.web.app import board_svg
from runner.web.model import game_detail

REPO = Path(__file__).resolve().parent.parent
CASTLER = REPO / "tests" / "fakes" / "castler960.py"
HAS_960 = ("stockfish", "fairy-stockfish", "ethereal-chess", "glaurung")


def replay(game: chess.pgn.Game) -> chess.Board:
    """Replay a game's moves on a chess960=True board built from its FEN tag alone."""
    assert game.headers["Variant"] == "Chess960"
    assert game.headers["SetUp"] == "1"
    board = chess.Board(game.headers["FEN"], chess960=True)
    for node in game.mainline():
        move = board.parse_san(node.san())
        assert move in board.legal_moves
        board.push(move)
    assert len(board.move_stack) == int(game.headers["PlyCount"])
    assert not game.errors
    return board


# --------------------------------------------------------------------------- start positions


def test_numbered_positions_are_python_chess_ones_and_dfrc_mixes_two_back_ranks() -> None:
    assert position_fen(518) == chess.STARTING_FEN
    assert position_fen(0) == chess.Board.from_chess960_pos(0).fen()
    fen = position_fen(0, 959)
    board = chess.Board(fen, chess960=True)
    assert board.is_valid()
    assert fen.split("/")[7].split()[0] == "BBQNNRKR"  # White: position 0
    assert fen.split("/")[0] == "rkrnnqbb"  # Black: position 959
    # every castling of both sides survives: two per side
    assert bin(board.castling_rights).count("1") == 4
    with pytest.raises(ValueError, match="0..959"):
        position_fen(960)


def test_a_960_fen_is_read_as_960_where_standard_chess_would_lose_castling_rights() -> None:
    assert board_at(position_fen(0)).chess960
    assert not board_at(None).chess960 and not board_at(chess.STARTING_FEN).chess960
    assert board_at(None, True).chess960
    assert "not valid in standard chess" in (start_problem(position_fen(0), "standard") or "")
    assert "dfrc" in (start_problem(position_fen(0, 959), "chess960") or "")
    assert start_problem(position_fen(0, 959), "dfrc") is None


def test_the_pgn_of_a_960_game_has_variant_setup_and_fen_even_from_position_518() -> None:
    text = write_game({"Event": "t", "White": "a", "Black": "b", "Result": "*"},
                      chess.STARTING_FEN, ["e2e4"], [""], None, chess960=True)
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None
    assert game.headers["Variant"] == "Chess960" and game.headers["SetUp"] == "1"
    assert game.headers["FEN"] == chess.STARTING_FEN
    plain = write_game({"Event": "t", "Result": "*"}, None, ["e2e4"], [""], None)
    assert "Variant" not in plain and "FEN" not in plain


# --------------------------------------------------------------------------- config


def config_text(tmp_path: Path, variant: str | None, openings: dict[str, Any] | None,
                engines: list[dict[str, Any]] | None = None, **top: Any) -> Path:
    data: dict[str, Any] = {"Event": "960 test"}
    if variant is not None:
        data["Variant"] = variant
    data.update({"SwissOptions": {"Rounds": 2, "RandomSeed": 5, "StatePath": "state/s.json"},
                 "TimeControl": "inf", **top})
    if openings is not None:
        data["Openings"] = openings
    data["Engines"] = engines or [{"Name": f"E{i}", "Command": "stockfish", "Nodes": 2000}
                                  for i in range(4)]
    return write_config(tmp_path, data)


def test_positions_list_random_and_dfrc_pairs_load_and_become_the_book(tmp_path: Path) -> None:
    config = load_config(config_text(tmp_path / "a", "chess960",
                                     {"Positions": [518, 0, 959], "Order": "sequential"}))
    assert config.variant == "chess960"
    assert config.openings is not None and config.openings.file is None
    book = load_book(config.openings, config.swiss.random_seed)
    assert [o.fen for o in book] == [position_fen(518), position_fen(0), position_fen(959)]
    assert [o.name for o in book] == ["Chess960 #518", "Chess960 #0", "Chess960 #959"]

    config = load_config(config_text(tmp_path / "b", "chess960", {"Positions": "random"}))
    book = load_book(config.openings, config.swiss.random_seed)
    assert len(book) == 960 and config.openings.order == "random"
    order = opening_order(len(book), config.openings.order, config.swiss.random_seed)
    assert order == opening_order(960, "random", 5) and order != list(range(960))

    config = load_config(config_text(tmp_path / "c", "dfrc", None))  # no Openings: random
    first = load_book(config.openings, 5)
    assert len(first) == 960 and first == load_book(config.openings, 5)  # same seed: same starts
    assert first != load_book(config.openings, 6)
    assert all(board_at(o.fen, True).is_valid() for o in first)

    config = load_config(config_text(tmp_path / "d", "dfrc", {"Positions": [[0, 959], [518, 518]]}))
    book = load_book(config.openings)
    assert [o.fen for o in book] == [position_fen(0, 959), chess.STARTING_FEN]
    assert book[0].name == "DFRC #0/#959"


@pytest.mark.parametrize(("variant", "openings", "expected"), [
    ("chess960", {"Positions": [0, 960]}, "Openings.Positions[1]: got 960, expected a Chess960 position number (0..959)"),
    ("chess960", {"Positions": []}, "Openings.Positions: got [], expected random, or a non-empty list"),
    ("dfrc", {"Positions": [[0, 1], 5]}, "Openings.Positions[1]: got 5, expected a [White, Black] pair"),
    ("standard", {"Positions": [0]}, "no Positions in a standard event"),
    ("chess960", {"Positions": [0], "File": "x.epd"}, "Openings.File: not with Openings.Positions"),
    ("fischer", None, "Variant: got 'fischer', expected standard | chess960 | dfrc"),
])
def test_bad_variant_or_positions_name_the_key_the_value_and_what_is_expected(
        tmp_path: Path, variant: str, openings: dict | None, expected: str) -> None:
    path = config_text(tmp_path, variant, openings)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert any(expected in problem and str(path) in problem for problem in caught.value.problems), \
        caught.value.problems


def test_the_fingerprint_of_a_standard_event_is_unchanged_and_the_variant_is_in_a_960_one(
        tmp_path: Path) -> None:
    standard = event_fingerprint(load_config(config_text(tmp_path / "s", None, None)))
    assert set(standard) == {"Engines", "TimeControl", "TimeMarginMs", "SwissOptions",
                             "Openings", "Adjudication"}  # the keys events were started with
    assert standard["Openings"] is None
    c960 = event_fingerprint(load_config(config_text(tmp_path / "c", "chess960",
                                                     {"Positions": [1, 2]})))
    assert c960["Variant"] == "chess960"
    assert c960["Openings"] == {"positions": [1, 2], "order": "random"}
    dfrc = event_fingerprint(load_config(config_text(tmp_path / "d", "dfrc", None)))
    assert dfrc["Variant"] == "dfrc" and dfrc["Openings"]["positions"] == "random"


def test_960_books_in_epd_and_pgn_with_and_without_moves(tmp_path: Path) -> None:
    epd = tmp_path / "starts.epd"
    epd.write_text(f"{' '.join(position_fen(0).split()[:4])} id \"p0\";\n"
                   f"{chess.Board.from_chess960_pos(100).fen(shredder=True)}\n")
    book = load_book(OpeningsConfig(file=epd, format="epd", variant="chess960"))
    assert [o.fen for o in book] == [position_fen(0), position_fen(100)]
    # the same file in a standard event: the castling rights are refused, naming the line
    with pytest.raises(BookError) as caught:
        load_book(OpeningsConfig(file=epd, format="epd"))
    assert f"{epd}:1: castling rights 'KQkq' are not valid in standard chess (they are in " \
           "Chess960: set Variant: chess960" in caught.value.problems[0]

    start = chess.Board.from_chess960_pos(518)  # a 960 game from 518 castles king-takes-rook
    game = chess.pgn.Game()
    game.setup(start)
    node: chess.pgn.GameNode = game
    for san in ("e4", "e5", "Nf3", "Nc6", "Bc4", "Bc5", "O-O"):
        node = node.add_variation(node.board().parse_san(san))
    bare = chess.pgn.Game()
    bare.setup(chess.Board.from_chess960_pos(300))
    pgn = tmp_path / "starts.pgn"
    pgn.write_text(f"{game}\n\n{bare}\n\n")
    assert '[Variant "Chess960"]' in pgn.read_text()
    book = load_book(OpeningsConfig(file=pgn, format="pgn", variant="chess960"))
    assert book[0].fen == chess.STARTING_FEN and book[0].moves[-1] == "e1h1"  # king takes rook
    assert book[1].fen == position_fen(300) and book[1].moves == ()
    with pytest.raises(BookError) as caught:
        load_book(OpeningsConfig(file=pgn, format="pgn"))
    assert "variant 'Chess960' is not supported" in caught.value.problems[0]


# --------------------------------------------------------------------------- cutechess


def test_the_cutechess_command_line_and_start_file_of_a_960_match(tmp_path: Path) -> None:
    from runner.config.typed import AdjudicationConfig, EngineConfig

    a = EngineConfig(name="A", command="/usr/games/stockfish")
    b = EngineConfig(name="B", command="/usr/games/ethereal-chess")
    opening = Opening(index=3, name="Chess960 #518", fen=chess.STARTING_FEN)
    specs = [GameSpec(game_id=n, round=1, game_in_round=n, white=w, black=k,
                      time_control=parse_time_control("10+0.1"),
                      adjudication=AdjudicationConfig(), opening=opening, variant="chess960")
             for n, (w, k) in ((1, (a, b)), (2, (b, a)))]
    written = write_opening_file(opening, tmp_path, chess960=True)
    assert written is not None  # 518 is handed over too: cutechess would pick its own start
    path, fmt = written
    assert fmt == "epd"
    assert path.read_text().split(" id ")[0] == "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"
    argv = build_command(specs, pgn_out=tmp_path / "g.pgn", opening_file=written)
    at = argv.index("-variant")
    assert argv[at + 1] == "fischerandom"
    assert argv[argv.index("-openings") + 1:argv.index("-openings") + 3] == [f"file={path}",
                                                                             "format=epd"]
    assert "-repeat" in argv
    standard = [GameSpec(**{**vars(s), "variant": "standard"}) for s in specs]
    assert "-variant" not in build_command(standard, pgn_out=tmp_path / "g.pgn")
    assert write_opening_file(Opening(index=0), tmp_path) is None


# --------------------------------------------------------------------------- real engines


def engine(name: str, command: str, **limit: Any) -> dict[str, Any]:
    return {"Name": name, "Command": command, "Protocol": "uci", **limit,
            "Options": {"Hash": 8} if command != "glaurung" else {}}


SIX = [engine("Stockfish", "stockfish", Nodes=4000), engine("Fairy-Stockfish", "fairy-stockfish", Nodes=4000),
       engine("Ethereal", "ethereal-chess", Nodes=4000), engine("Glaurung", "glaurung", Nodes=4000),
       engine("Stockfish-d4", "stockfish", Depth=4), engine("Ethereal-d4", "ethereal-chess", Depth=4)]


def check_event(config_path: Path, *, dfrc: bool = False) -> list[chess.pgn.Game]:
    config = load_config(config_path)
    assert cli_run(config, run_args()) == EXIT_OK
    games = games_of(config.pgn_out)
    players = len(config.engines)
    assert len(games) == config.swiss.rounds * (players // 2) * 2
    by_match: dict[tuple[str, frozenset[str]], list[chess.pgn.Game]] = {}
    castled = 0
    for game in games:
        # no engine loses a 960 game for want of 960 castling (an engine that answers
        # `bestmove (none)` in a legal position, as Glaurung now and then does, is its own bug)
        if game.headers.get("Termination") == "illegal move":
            assert "illegal move: (none)" in str(game), str(game)[:600]
        board = replay(game)
        castled += sum(1 for node in game.mainline() if node.san().startswith("O-O"))
        assert board.chess960
        fen = game.headers["FEN"]
        if dfrc:
            ranks = fen.split()[0].split("/")
            assert ranks[0].upper() != ranks[7], fen  # asymmetric back ranks
        round_ = game.headers["Round"].split(".")[0]
        by_match.setdefault((round_, frozenset((game.headers["White"], game.headers["Black"]))),
                            []).append(game)
    assert len(by_match) == len(games) // 2
    for pair in by_match.values():
        first, second = pair
        assert first.headers["FEN"] == second.headers["FEN"]  # same start, colours reversed
        assert (first.headers["White"], first.headers["Black"]) == (second.headers["Black"],
                                                                    second.headers["White"])
    # the database and the JSON state agree with the PGN
    conn = sqlite3.connect(config.database)
    rows = conn.execute("SELECT status, start_fen FROM games").fetchall()
    conn.close()
    assert {status for status, _ in rows} == {"finished"}
    assert {fen for _, fen in rows} == {g.headers["FEN"] for g in games}
    state = json.dumps(json.loads(config.swiss.state_path.read_text()))
    for game in games:  # the JSON state names every game's players and result
        assert game.headers["White"] in state and game.headers["Result"] in state
    return games


@pytest.mark.slow
@pytest.mark.engines
@pytest.mark.skipif(not all(shutil.which(e) for e in HAS_960), reason="Debian engines missing")
def test_a_real_six_engine_chess960_swiss_runs_to_the_end(tmp_path: Path) -> None:
    path = config_text(tmp_path, "chess960", {"Positions": [0, 959, 100, 518, 700, 250]},
                       SIX, Concurrency=2, Adjudication={"MaxMoves": 60})
    games = check_event(path)
    # the engines castled (king-takes-rook between runner and engines, O-O in the PGN)
    assert any(node.san().startswith("O-O") for game in games for node in game.mainline())
    assert {g.headers["Opening"] for g in games} <= {f"Chess960 #{n}" for n in (0, 959, 100, 518, 700, 250)}
    standings = subprocess.run([sys.executable, "-m", "runner", "standings", str(path)],
                               capture_output=True, text=True, cwd=REPO, timeout=60)
    assert standings.returncode == 0 and "Stockfish" in standings.stdout
    config = load_config(path)
    conn = sqlite3.connect(config.database)
    seeds = [name for (name,) in conn.execute("SELECT name FROM players ORDER BY seed")]
    conn.close()
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
    audit = subprocess.run([sys.executable, "-m", "runner", "audit", str(config.pgn_out),
                            "--seeds", str(tmp_path / "seeds.txt")],
                           capture_output=True, text=True, cwd=REPO, timeout=60)
    assert audit.returncode == 0, audit.stdout + audit.stderr  # the pairings replay exactly


@pytest.mark.engines
@pytest.mark.skipif(not shutil.which("cutechess-cli"), reason="cutechess-cli is not installed")
def test_a_real_chess960_swiss_runs_to_the_end_with_cutechess(tmp_path: Path) -> None:
    path = config_text(tmp_path, "chess960", {"Positions": [0, 959, 100, 518]}, SIX[:4],
                       Backend="cutechess", Adjudication={"MaxMoves": 60})
    check_event(path)


@pytest.mark.slow
@pytest.mark.engines
@pytest.mark.skipif(not all(shutil.which(e) for e in HAS_960[:3]), reason="Debian engines missing")
def test_a_real_dfrc_event_with_asymmetric_back_ranks_runs_to_the_end(tmp_path: Path) -> None:
    four = [SIX[0], SIX[1], SIX[2], SIX[4]]
    path = config_text(tmp_path, "dfrc", {"Positions": [[0, 959], [100, 200], [12, 400]]},
                       four, Concurrency=2, Adjudication={"MaxMoves": 60})
    check_event(path, dfrc=True)


@pytest.mark.slow
@pytest.mark.engines
def test_engines_without_960_support_are_refused_by_name_before_any_game(tmp_path: Path) -> None:
    if not all(shutil.which(e) for e in ("stockfish", "toga2", "fairymax")):
        pytest.skip("Debian engines missing")
    engines = [engine("Stockfish", "stockfish", Nodes=1000), engine("Toga II", "toga2", Depth=2),
               {"Name": "Fairymax", "Command": "fairymax", "Protocol": "xboard", "Depth": 2},
               engine("Ethereal", "ethereal-chess", Nodes=1000)]
    path = config_text(tmp_path, "chess960", None, engines)
    run = subprocess.run([sys.executable, "-m", "runner", "run", str(path)], capture_output=True,
                         text=True, cwd=REPO, timeout=120)
    assert run.returncode == EXIT_BAD_INPUT
    assert "'Toga II': cannot play this Variant: chess960 event: engine 'Toga II' does not " \
           "support Chess960: it has no UCI option 'UCI_Chess960'" in run.stderr
    assert "'Fairymax': cannot play this Variant: chess960 event: engine 'Fairymax' does not " \
           "support Chess960: its xboard 'feature variants' has no 'fischerandom'" in run.stderr
    assert "'Stockfish'" not in run.stderr and "'Ethereal'" not in run.stderr
    assert not (tmp_path / "state" / "s.sqlite3").exists()  # nothing written, no game
    probe = subprocess.run([sys.executable, "-m", "runner", "validate", "--probe", str(path)],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
    assert probe.returncode == EXIT_FAIL
    fails = [line for line in probe.stdout.splitlines() if line.startswith("FAIL")]
    assert [line.split(":")[0] for line in fails] == ["FAIL Toga II", "FAIL Fairymax"]
    # the same engines in a standard event are fine (no 960 check there)
    standard = config_text(tmp_path / "std", None, None, engines)
    ok = subprocess.run([sys.executable, "-m", "runner", "validate", "--probe", str(standard)],
                        capture_output=True, text=True, cwd=REPO, timeout=120)
    assert "Chess960" not in ok.stdout + ok.stderr


# --------------------------------------------------------------------------- kill -9


CASTLE_PLY = 14


def castler_config(tmp_path: Path) -> Path:
    engines = [{"Name": f"C{i}", "Command": sys.executable,
                "Args": [str(CASTLER), str(CASTLE_PLY), "250", f"salt{i}"], "Nodes": 1}
               for i in (1, 2)]
    # 192 is BBQNRKNR: both sides can castle long once the queen, bishops and knights are out
    return config_text(tmp_path, "chess960", {"Positions": [192]}, engines,
                       SwissOptions={"Rounds": 1, "GamesPerMatch": 1, "StatePath": "state/s.json"},
                       Interruption={"Mode": "resume", "Adjudicate": False},
                       Adjudication={"MaxMoves": 15})


def logged_plies(db: Path) -> list[dict[str, Any]]:
    if not db.exists():
        return []
    try:
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return [json.loads(row[0]) for row in conn.execute(
                "SELECT data FROM moves ORDER BY ply")]
        finally:
            conn.close()
    except sqlite3.Error:
        return []


@pytest.mark.slow
@pytest.mark.engines
def test_kill_9_in_a_960_game_that_can_still_castle_then_run_castles_after_the_resume(
        tmp_path: Path) -> None:
    path = castler_config(tmp_path)
    config = load_config(path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(path)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_until(lambda: len(logged_plies(config.database)) >= 5, "five moves logged", 60, proc)
        os.killpg(proc.pid, signal.SIGKILL)  # the runner and its engines, no handler runs
    finally:
        proc.wait(10)
    logged = logged_plies(config.database)
    cut = len(logged)
    assert 5 <= cut < CASTLE_PLY
    rights = chess.Board(logged[-1]["fen"], chess960=True).castling_rights
    assert rights & chess.BB_RANK_1 and rights & chess.BB_RANK_8  # both sides may castle

    page = game_detail(config, 1)  # the dashboard's game page, from the move log
    assert page is not None and page["start_fen"] == position_fen(192)
    assert len(page["plies"]) == cut

    assert cli_run(config, run_args()) == EXIT_OK
    (game,) = games_of(config.pgn_out)
    assert game.headers["ResumedFromPly"] == str(cut)
    board = replay(game)  # from the FEN tag, chess960=True
    sans = [node.san() for node in game.mainline()]
    castles = [ply for ply, san in enumerate(sans, 1) if san.startswith("O-O")]
    assert castles and min(castles) > cut >= 5  # castled after the resume, both legal
    assert min(castles) == CASTLE_PLY + 1
    conn = sqlite3.connect(config.database)
    (moves,) = conn.execute("SELECT moves FROM games").fetchone()
    conn.close()
    stored = moves.split()
    assert [m.uci() for m in board.move_stack] == stored
    check = chess.Board(position_fen(192), chess960=True)
    for ply, uci in enumerate(stored, 1):
        move = chess.Move.from_uci(uci)
        if ply in castles:  # recorded king-takes-rook: the king's move ends on its own rook
            assert check.is_castling(move)
            assert check.piece_at(move.to_square) == chess.Piece(chess.ROOK, check.turn)
        check.push(move)
    page = game_detail(config, 1)  # the finished game's page: the castling as a board shows it
    assert page is not None
    ply = page["plies"][CASTLE_PLY]
    assert ply["san"] == sans[CASTLE_PLY] and ply["uci"] == stored[CASTLE_PLY]
    after = chess.Board(ply["fen"], chess960=True)
    king = after.king(chess.WHITE)  # ply 15 is White's: O-O king g1 rook f1, O-O-O c1 and d1
    rook = {chess.G1: chess.F1, chess.C1: chess.D1}.get(king)  # type: ignore[arg-type]
    assert rook is not None and after.piece_at(rook) == chess.Piece(chess.ROOK, chess.WHITE)
    assert not after.castling_rights & chess.BB_RANK_1  # White's castling rights are gone
    assert b"<svg" in board_svg(ply["fen"], ply["uci"], 200)


@pytest.mark.engines
@pytest.mark.skipif(not all(shutil.which(e) for e in HAS_960), reason="Debian engines missing")
def test_the_shipped_chess960_config_validates_and_its_engines_pass_the_probe() -> None:
    path = REPO / "configs" / "chess960.yaml"
    config = load_config(path)
    assert config.variant == "chess960" and config.openings is not None
    assert config.openings.file is None and config.openings.positions is None  # random
    probe = subprocess.run([sys.executable, "-m", "runner", "validate", "--probe", str(path)],
                           capture_output=True, text=True, cwd=REPO, timeout=120)
    assert probe.returncode == EXIT_OK, probe.stdout + probe.stderr
    assert "FAIL" not in probe.stdout


def test_a_960_game_read_back_as_standard_is_replayed_with_king_takes_rook_castling() -> None:
    board = chess.Board()  # position 518 read without its variant: castling as e1g1
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "e1g1"):
        board.push_uci(uci)
    again = replay_960(board)
    assert again.chess960 and again.fen() == board.fen()
    assert [m.uci() for m in again.move_stack][-1] == "e1h1"
    assert again.root().fen() == chess.STARTING_FEN


@pytest.mark.engines
def test_an_xboard_engine_plays_960_after_variant_fischerandom_and_castles_as_o_o(
        tmp_path: Path) -> None:
    import asyncio

    from runner.config.typed import AdjudicationConfig, EngineConfig
    from runner.play.referee import play_game

    uci = EngineConfig(name="UCI", command=sys.executable, args=(str(CASTLER), "14", "0", "u"),
                       depth=1)
    xboard = EngineConfig(name="XB", command=sys.executable, protocol="xboard", depth=1,
                          args=(str(REPO / "tests" / "fakes" / "xboard960.py"), "14", "x"))
    for white, black in ((uci, xboard), (xboard, uci)):
        spec = GameSpec(game_id=1, round=1, game_in_round=1, white=white, black=black,
                        time_control=parse_time_control("inf"),
                        adjudication=AdjudicationConfig(max_moves=12),
                        opening=Opening(index=0, fen=position_fen(192)), variant="chess960")
        record = asyncio.run(play_game(spec))
        assert record.reason == "Draw by adjudication: maximal game length", record.reason
        game = chess.pgn.read_game(io.StringIO(record.pgn))
        assert game is not None
        replay(game)
        sans = [node.san() for node in game.mainline()]
        assert sans[14].startswith("O-O") and sans[15].startswith("O-O")  # both sides castled


def test_a_960_game_spec_keeps_its_variant_on_the_way_to_a_cluster_worker() -> None:
    from runner.config.typed import AdjudicationConfig, EngineConfig
    from runner.domain.events import spec_from_json, spec_to_json

    engine_ = EngineConfig(name="A", command="/usr/games/stockfish")
    spec = GameSpec(game_id=3, round=1, game_in_round=1, white=engine_, black=engine_,
                    time_control=parse_time_control("1+0.1"), adjudication=AdjudicationConfig(),
                    opening=Opening(index=0, fen=position_fen(7, 8)), variant="dfrc")
    again = spec_from_json(json.loads(json.dumps(spec_to_json(spec))))
    assert again.variant == "dfrc" and again == spec
    plain = GameSpec(**{**vars(spec), "variant": "standard"})
    data = spec_to_json(plain)
    del data["variant"]  # a spec written before the key existed
    assert spec_from_json(data).variant == "standard"
