"""Referee: formatting units, fault injection with fake engines, real Debian engines."""

from __future__ import annotations

import asyncio
import io
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import chess
import chess.engine
import chess.pgn
import psutil
import pytest
from testkit import fake, spec_for, start_runner_playing, wait_until, write_config

from runner.config import AdjudicationConfig, EngineConfig, TablebaseConfig, TcecDrawRule
from runner.domain.models import RESULTS, GameSpec, Opening
from runner.domain.rmobility import game_rmobility
from runner.play.engines import start_engine, sweep_orphans
from runner.play.referee import (
    RefereeError,
    format_score,
    format_seconds,
    natural_end,
    play_game,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FAKE = HERE / "fakes" / "fake_uci.py"
GAMES = "/usr/games"
os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + GAMES

COMMENT = re.compile(r"^(book|(([+-]?\d+\.\d\d|[+-]M\d+)(/\d+)? )?(0|\d+\.\d+)s)$")


PEACEFUL = ("Draw by 3-fold repetition", "Draw by adjudication: maximal game length")


def real(name: str, command: str, protocol: str = "uci", **kw) -> EngineConfig:
    return EngineConfig(name=name, command=f"{GAMES}/{command}", protocol=protocol, **kw)


def play(spec: GameSpec, **kw):
    pids: list[tuple[int, float]] = []
    record = asyncio.run(play_game(spec, on_process=lambda p, c: pids.append((p, c)), **kw))
    return record, pids


def alive(pid: int, created: float) -> bool:
    """The process ``pid`` started at ``created`` still runs (not a zombie)."""
    try:
        proc = psutil.Process(pid)
        return proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_all_dead(pids: list[tuple[int, float]]) -> None:
    wait_until(lambda: not any(alive(pid, created) for pid, created in pids),
               f"engine processes {[pid for pid, _ in pids]} to end", 3)


def _with(token: str) -> bool:
    """A live process has ``token`` in its command line."""
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if token in (proc.info["cmdline"] or []) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except psutil.Error:
            pass
    return False


def no_process_with(token: str) -> bool:
    """True once no live process has ``token`` in its command line (within 3 s)."""
    try:
        wait_until(lambda: not _with(token), f"the processes with {token} to end", 3, step=0.1)
    except AssertionError:
        return False
    return True


def parse(record) -> chess.pgn.Game:
    game = chess.pgn.read_game(io.StringIO(record.pgn))
    assert game is not None
    return game


# --------------------------------------------------------------------------- units


def test_score_and_time_text_like_cutechess():
    assert format_score(chess.engine.Cp(35)) == "+0.35"
    assert format_score(chess.engine.Cp(-120)) == "-1.20"
    assert format_score(chess.engine.Cp(0)) == "0.00"
    assert format_score(chess.engine.Mate(1)) == "+M1"
    assert format_score(chess.engine.Mate(18)) == "+M35"
    assert format_score(chess.engine.Mate(-1)) == "-M2"
    assert [format_seconds(s) for s in (0, 0.0004, 0.001, 0.029, 0.32, 5.1, 12.4)] == \
        ["0s", "0s", "0.001s", "0.029s", "0.32s", "5.1s", "12s"]


@pytest.mark.parametrize("fen, reason", [
    ("7k/6Q1/6K1/8/8/8/8/8 b - - 0 1", "White mates"),
    ("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1", "Draw by stalemate"),
    ("8/8/8/2k5/8/8/8/4K3 w - - 0 1", "Draw by insufficient mating material"),
    ("8/8/8/2k5/8/8/8/R3K3 w - - 100 80", "Draw by fifty moves rule"),
])
def test_natural_ends(fen, reason):
    assert natural_end(chess.Board(fen)).reason == reason


def test_threefold_repetition_is_detected():
    board = chess.Board()
    for san in ["Nf3", "Nf6", "Ng1", "Ng8", "Nf3", "Nf6", "Ng1"]:
        board.push_san(san)
        assert natural_end(board) is None
    board.push_san("Ng8")
    assert natural_end(board).reason == "Draw by 3-fold repetition"


@pytest.mark.slow
def test_natural_ends_match_python_chess_on_shuffling_random_games():
    """The shortcuts (no 3-fold check below a halfmove clock of 8, no material check with a
    pawn, rook or queen on the board, the legal moves counted by r-mobility) decide every
    position as python-chess's own checks do: random games that shuffle pieces back and
    forth (repetitions, long non-zeroing runs, bare endings), from the start and from FENs
    with a halfmove clock already running."""
    from runner.domain.rmobility import position_halves

    rng = random.Random(3)
    ends: set[str] = set()
    for game in range(400):
        board = chess.Board() if game % 2 else chess.Board("4k3/8/8/8/8/8/8/R3K2R w KQ - 7 40")
        for _ in range(300):
            moves = list(board.legal_moves)
            quiet = [m for m in moves if not board.is_zeroing(m)]
            board.push(rng.choice(quiet if quiet and rng.random() < 0.85 else moves))
            if board.is_checkmate():
                want = "mates"
            elif board.is_stalemate():
                want = "Draw by stalemate"
            elif board.is_insufficient_material():
                want = "Draw by insufficient mating material"
            elif board.is_repetition(3):
                want = "Draw by 3-fold repetition"
            elif board.halfmove_clock >= 100:
                want = "Draw by fifty moves rule"
            else:
                want = None
            for end in (natural_end(board), natural_end(board, position_halves(board) // 2)):
                got = None if end is None else end.reason
                assert got == want or (want == "mates" and got and got.endswith(" mates")), \
                    board.fen()
            if want is not None:
                ends.add(want)
                break
    assert ends >= {"Draw by 3-fold repetition", "Draw by insufficient mating material",
                    "mates", "Draw by fifty moves rule"}


def test_limit_from_runner_clocks_with_repeating_periods():
    from runner.domain.timecontrol import Clock
    from runner.play.referee import _limit

    spec = spec_for(fake("A"), EngineConfig("X", sys.executable, protocol="xboard", depth=7), "40/60+1")
    clocks = {chess.WHITE: Clock(spec.time_control), chess.BLACK: Clock(spec.time_control)}
    assert clocks[chess.WHITE].spend(2.5)
    limit = _limit(spec, spec.white, clocks, chess.BLACK)
    assert (limit.white_clock, limit.black_clock, limit.white_inc, limit.remaining_moves) == (58.5, 60, 1, 40)
    for _ in range(39):
        assert clocks[chess.WHITE].spend(0.1)
    limit = _limit(spec, spec.white, clocks, chess.WHITE)
    assert limit.remaining_moves == 40 and limit.white_clock == pytest.approx(58.5 - 3.9 + 39 + 60)
    # a per-engine limit is sent alone (Ethereal ignores "go nodes" next to clocks);
    # the runner still charges and enforces the clock
    xb = _limit(spec, spec.black, clocks, chess.BLACK)
    assert xb.depth == 7 and xb.clock_id == "game-1"
    assert xb.white_clock is None and xb.black_clock is None and xb.remaining_moves is None


def test_infinite_time_control_without_limits_is_refused():
    with pytest.raises(RefereeError, match="needs Nodes, Depth or MoveTime"):
        asyncio.run(play_game(spec_for(fake("A"), fake("B"), "inf")))


def test_illegal_book_move_is_refused():
    with pytest.raises(RefereeError, match="illegal book move"):
        asyncio.run(play_game(spec_for(fake("A"), fake("B"), opening=Opening(3, "x", moves=("e2e5",)))))


# --------------------------------------------------------------------------- faults (fakes)


def test_crash_at_start_loses_and_leaves_nothing():
    record, pids = play(spec_for(fake("Crash", "--crash-at-start"), fake("B")))
    assert (record.result, record.reason, record.termination) == ("0-1", "White disconnects", "abandoned")
    assert record.plies == 0
    assert "{White disconnects} 0-1" in record.pgn
    assert len(pids) == 2
    assert_all_dead(pids)


def test_crash_mid_game_loses_even_against_a_bare_king():
    # KR+P vs bare K: a disconnect is always a loss (cutechess disconnect_vs_bare_king)
    record, pids = play(spec_for(fake("B"), fake("Crash", "--crash-on-go", "3"),
                                 opening=Opening(-1, fen="4k3/8/8/8/8/8/P7/R3K3 w - - 0 1")))
    assert (record.result, record.reason, record.termination) == ("1-0", "Black disconnects", "abandoned")
    assert record.plies == 5  # White's 3rd move was played, Black died on its 3rd go
    assert record.pgn.rstrip().endswith(", Black disconnects} 1-0")
    assert_all_dead(pids)


@pytest.mark.slow
def test_hang_on_go_loses_on_time_and_is_killed():
    token = uuid.uuid4().hex
    t0 = time.monotonic()
    record, pids = play(spec_for(fake("Hang", "--hang-on-go", "2", "--spawn-child", token),
                                 fake("B"), "1+0.05"), grace=0.3)
    took = time.monotonic() - t0
    assert (record.result, record.reason, record.termination) == ("0-1", "White loses on time", "time forfeit")
    assert record.plies == 2
    assert took < 6, took  # flagged after ~1.35 s, not waiting for the engine
    assert_all_dead(pids)
    assert no_process_with(token), "the engine's child process survived"


@pytest.mark.slow
def test_hang_without_clock_is_a_stalled_connection():
    white = EngineConfig("B", sys.executable, (str(FAKE),), depth=1)
    black = EngineConfig("Hang", sys.executable, (str(FAKE), "--hang-on-go", "1"), depth=1)
    record, pids = play(spec_for(white, black, "inf"), stall_timeout=1.0)
    assert (record.result, record.reason, record.termination) == \
        ("1-0", "Black's connection stalls", "stalled connection")
    assert record.plies == 1
    assert_all_dead(pids)


@pytest.mark.slow
def test_slow_move_loses_on_time_but_bare_king_opponent_means_draw():
    # the slow side has KR+P: its opponent (bare king) cannot mate -> Draw by timeout
    fen = Opening(-1, fen="4k3/8/8/8/8/8/P7/R3K3 w - - 0 1")
    record, pids = play(spec_for(fake("Slow", "--sleep-on-go", "2", "3"), fake("B"), "1+0.05", opening=fen))
    assert (record.result, record.reason, record.termination) == ("1/2-1/2", "Draw by timeout", "time forfeit")
    assert record.plies == 2
    assert_all_dead(pids)
    # the bare-king side flags: it loses
    record, pids = play(spec_for(fake("B"), fake("Slow", "--sleep-on-go", "2", "3"), "1+0.05", opening=fen))
    assert (record.result, record.reason) == ("1-0", "Black loses on time")
    assert_all_dead(pids)


@pytest.mark.slow
def test_time_margin_forgives_a_small_overrun():
    # 0.3 s sleep with 0.2 s on the clock: lost without margin, forgiven with 300 ms
    slow = fake("Slow", "--sleep-on-go", "1", "0.3")
    record, _ = play(spec_for(slow, fake("B"), "0.2+0.5"))
    assert record.reason == "White loses on time"
    record, _ = play(spec_for(slow, fake("B"), "0.2+0.5", margin_ms=300))
    assert record.reason != "White loses on time" and record.plies > 2


@pytest.mark.parametrize("move", ["a1a1", "e2e5", "zz99"])
def test_illegal_or_garbage_move_loses(move):
    record, pids = play(spec_for(fake("B"), fake("Bad", "--illegal-on-go", "2", move)))
    assert (record.result, record.termination) == ("1-0", "illegal move")
    assert record.reason == f"Black makes an illegal move: {move}"
    assert record.plies == 3
    assert_all_dead(pids)


def test_garbage_lines_are_ignored_and_the_game_goes_on():
    record, pids = play(spec_for(fake("Noisy", "--garbage"), fake("B")))
    assert record.reason in PEACEFUL and record.termination in (None, "adjudication")
    assert record.plies >= 8
    assert all(COMMENT.match(c) for c in record.comments), record.comments[:4]
    assert_all_dead(pids)


@pytest.mark.slow
def test_slow_handshake_is_not_charged_to_the_clock_but_a_dead_one_stalls():
    record, pids = play(spec_for(fake("Slow", "--handshake-delay", "1.5"), fake("B"), "0.5+0.05"))
    assert record.reason in PEACEFUL and record.plies >= 8
    assert_all_dead(pids)
    record, pids = play(spec_for(fake("B"), fake("Slow", "--handshake-delay", "5")), startup_timeout=0.5)
    assert (record.result, record.reason, record.termination) == \
        ("1-0", "Black's connection stalls", "stalled connection")
    assert record.plies == 0
    assert_all_dead(pids)


@pytest.mark.slow
def test_slow_ucinewgame_is_not_charged_to_the_clock_but_a_dead_one_stalls():
    # An engine clearing a big hash on ucinewgame answers the isready after it 1.5 s late;
    # at 0.5+0.05 that must not lose on time: the deadline starts when go is sent.
    record, pids = play(spec_for(fake("Slow", "--newgame-delay", "1.5"), fake("B"), "0.5+0.05"))
    assert record.reason in PEACEFUL and record.plies >= 8
    assert_all_dead(pids)
    # not ready for go within the start-up timeout: a stalled connection, not a time loss
    record, pids = play(spec_for(fake("B"), fake("Slow", "--newgame-delay", "5"), "0.5+0.05"),
                        startup_timeout=1.0)
    assert (record.result, record.reason, record.termination) == \
        ("1-0", "Black's connection stalls", "stalled connection")
    assert record.plies == 1
    assert_all_dead(pids)


@pytest.mark.slow
def test_failed_start_is_scored_on_the_real_start_position():
    # White KR+P, Black a bare king: White stalling at start cannot lose to a bare king
    fen = Opening(-1, fen="4k3/8/8/8/8/8/P7/R3K3 w - - 0 1")
    record, pids = play(spec_for(fake("Slow", "--handshake-delay", "5"), fake("B"), opening=fen),
                        startup_timeout=0.5)
    assert (record.result, record.reason, record.termination) == \
        ("1/2-1/2", "Draw by stalled connection", "stalled connection")
    assert "{Draw by stalled connection} 1/2-1/2" in record.pgn
    assert_all_dead(pids)
    # the bare-king side stalling loses; a crash at start is a disconnect, always a loss
    record, _ = play(spec_for(fake("B"), fake("Slow", "--handshake-delay", "5"), opening=fen),
                     startup_timeout=0.5)
    assert (record.result, record.reason) == ("1-0", "Black's connection stalls")
    record, _ = play(spec_for(fake("Crash", "--crash-at-start"), fake("B"), opening=fen))
    assert (record.result, record.reason, record.termination) == ("0-1", "White disconnects", "abandoned")


def test_both_engines_dead_is_an_error_not_a_result():
    with pytest.raises(RefereeError, match="neither engine"):
        play(spec_for(fake("A", "--crash-at-start"), fake("B", "--crash-at-start")))


@pytest.mark.slow
def test_cancel_kills_both_engines():
    pids: list[tuple[int, float]] = []

    async def main():
        task = asyncio.create_task(play_game(
            spec_for(fake("Hang", "--hang-on-go", "1"), fake("B"), "60+1"),
            on_process=lambda p, c: pids.append((p, c))))
        # both engines started (the game then hangs on "go")
        await asyncio.to_thread(wait_until, lambda: len(pids) >= 2 or task.done(),
                                "both engines started", 20, step=0.02)
        assert not task.done(), "the game ended before both engines started"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert len(pids) == 2
    assert_all_dead(pids)


def test_cancel_while_the_other_engine_is_still_starting_kills_the_started_one(tmp_path):
    # White is up at once, Black needs 30 s for its handshake; the game is cancelled in
    # between (the orchestrator stopping): White must not be left running.
    log = tmp_path / "white.log"
    pids: list[tuple[int, float]] = []

    async def main() -> None:
        white = EngineConfig("A", sys.executable, (str(FAKE), "--log", str(log)), options={"Hash": 8})
        task = asyncio.create_task(play_game(
            spec_for(white, fake("Slow", "--handshake-delay", "30"), "60+1"),
            on_process=lambda p, c: pids.append((p, c))))
        # White's options are the last thing its start sends: then it is started
        while not (log.exists() and "setoption" in log.read_text()):
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # checked inside the loop: closing the loop would reap a leaked engine anyway
        await asyncio.to_thread(wait_until, lambda: not any(alive(p, c) for p, c in pids),
                                "an engine outlived the cancelled game", 3)

    asyncio.run(asyncio.wait_for(main(), 20))
    assert len(pids) == 2


def test_engines_die_with_a_runner_killed_by_sigkill(tmp_path):
    runner, pid_file = start_runner_playing(tmp_path)
    try:
        # both engines' lines written whole (each ends with its newline)
        text = wait_until(lambda: pid_file.exists() and (t := pid_file.read_text()).endswith("\n")
                          and len(t.splitlines()) >= 2 and t, "engines did not start", 20, runner,
                          step=0.1)
        pids = [(int(a), float(b)) for a, b in (line.split() for line in text.splitlines())]
        assert all(psutil.pid_exists(p) for p, _ in pids)
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        assert_all_dead(pids)
    finally:
        runner.kill()


def test_sweep_orphans_matches_pid_and_create_time():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        created = psutil.Process(proc.pid).create_time()
        assert sweep_orphans([(proc.pid, created + 5.0)]) == 0  # pid reused by another process
        assert proc.poll() is None
        assert sweep_orphans([(proc.pid, created)]) == 1
        proc.wait(timeout=5)
        assert sweep_orphans([(proc.pid, created)]) == 0
    finally:
        proc.kill()


def test_fresh_engine_per_game_gets_ucinewgame_before_the_first_go(tmp_path):
    logs = [tmp_path / "w.log", tmp_path / "b.log"]
    for _ in range(2):  # two games: each starts its own processes
        play(spec_for(fake("A", "--log", str(logs[0])), fake("B", "--log", str(logs[1])),
                      adjudication=AdjudicationConfig(max_moves=3)))
    for log in logs:
        commands = [line.split()[0] for line in log.read_text().splitlines()]
        assert commands.count("uci") == 2 and commands.count("ucinewgame") == 2
        assert commands.count("quit") == 2
        for game in " ".join(commands).split("quit")[:2]:
            words = game.split()
            assert words.index("ucinewgame") < words.index("go")


def test_start_engine_skips_unknown_options():
    async def main():
        eng = EngineConfig("F", sys.executable, (str(FAKE),), options={"hash": 8, "NoSuch": 1})
        proc = await start_engine(eng)
        try:
            assert proc.skipped_options == ["NoSuch"]
            assert proc.protocol.config.get("Hash") == 8
        finally:
            await proc.close()
        return proc.pid, proc.create_time

    assert_all_dead([asyncio.run(main())])


# --------------------------------------------------------------------------- real engines

SF = real("Stockfish", "stockfish", options={"Hash": 16, "Threads": 1}, nodes=3000)
ETH = real("Ethereal", "ethereal-chess", options={"Hash": 16, "Threads": 1}, nodes=3000)
TOGA = real("Toga II", "toga2", options={"Hash": 16})
FAIRYMAX = real("Fairymax", "fairymax", protocol="xboard", depth=3)
PHALANX = real("Phalanx", "phalanx", protocol="xboard")
TAGS = ["Event", "Site", "Date", "Round", "White", "Black", "Result", "GameDuration", "GameEndTime",
        "GameStartTime", "PlyCount", "RMobilityResult", "TimeControl"]


def check_record(record, white: str, black: str, round_label: str = "1.1") -> chess.pgn.Game:
    game = parse(record)
    h = game.headers
    assert list(h.keys())[:7] == TAGS[:7]
    assert (h["Event"], h["Site"], h["Round"], h["White"], h["Black"]) == \
        ("Test Event", "here", round_label, white, black)
    assert h["Result"] == record.result and record.result in RESULTS
    assert int(h["PlyCount"]) == record.plies == len(list(game.mainline_moves()))
    assert [m.uci() for m in game.mainline_moves()] == record.moves
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3} UTC", h["GameStartTime"])
    assert re.fullmatch(r"\d\d:\d\d:\d\d", h["GameDuration"])
    assert h["RMobilityResult"] == record.rmobility
    # kept by the referee (counted at a draw's end): the same as computed from the whole game
    assert record.rmobility == game_rmobility(record.start_fen, record.moves, record.result)
    comments = [node.comment for node in game.mainline()]
    if not comments:  # no move played (a flag on the first move): the reason is the game's
        assert game.comment == record.reason
    else:
        assert comments[-1].endswith(", " + record.reason) or comments[-1] == record.reason
        for c in comments[:-1] + [comments[-1].split(", ")[0]]:
            assert COMMENT.match(c), c
    keys = list(h.keys())  # cutechess's order: the seven-tag roster, then the rest sorted
    assert keys[:7] == TAGS[:7] and keys[7:] == sorted(keys[7:]) and set(TAGS) <= set(keys)
    return game


@pytest.mark.engines
def test_stockfish_vs_ethereal_at_fixed_nodes():
    record, pids = play(spec_for(SF, ETH, "inf", round_=3, game=2,
                                 adjudication=AdjudicationConfig(tcec_draw=TcecDrawRule(), max_moves=80)))
    game = check_record(record, "Stockfish", "Ethereal", "3.2")
    assert game.headers["TimeControl"] == "-"
    assert record.reason in ("White mates", "Black mates", "Draw by adjudication: TCEC draw rule",
                             "Draw by 3-fold repetition", "Draw by fifty moves rule",
                             "Draw by adjudication: maximal game length",
                             "Draw by insufficient mating material", "Draw by stalemate")
    assert record.plies >= 10
    assert_all_dead(pids)


@pytest.mark.slow
@pytest.mark.engines
def test_clocks_are_measured_by_the_runner_with_real_engines():
    # Toga II at 2+0.05 vs Stockfish: the times in the comments add up within the clock
    record, pids = play(spec_for(TOGA, real("Stockfish", "stockfish", options={"Hash": 16}),
                                 "2+0.05", adjudication=AdjudicationConfig(max_moves=20)))
    check_record(record, "Toga II", "Stockfish")
    assert record.plies >= 10
    spent = {0: 0.0, 1: 0.0}
    for i, comment in enumerate(record.comments):
        spent[i % 2] += float(comment.split()[-1].split(",")[0].rstrip("s"))
    for side in (0, 1):
        moves = (record.plies + 1 - side) // 2
        assert 0.05 < spent[side] <= 2 + 0.05 * moves + 0.05, spent  # they did think, within the clock
    if record.termination != "time forfeit":
        assert record.reason == "Draw by adjudication: maximal game length" or "mates" in record.reason
    assert 0.3 < record.duration_s < 10
    assert_all_dead(pids)


@pytest.mark.engines
def test_real_engine_flagged_by_a_tiny_clock_loses_on_time():
    # A locked pawn fortress: no capture, no mate, no way through for either king, so the
    # game can only end by the fifty-move rule (100 plies) or a flag. 5 ms for the whole
    # game with Move Overhead 0 cannot last 50 moves of real process round trips.
    fortress = "8/8/1k6/p1p1p1p1/P1P1P1P1/8/3K4/8 w - - 0 1"
    opts = {"Hash": 16, "Move Overhead": 0, "Threads": 1}
    white = real("Stockfish-W", "stockfish", options=opts)
    black = real("Stockfish-B", "stockfish", options=opts)
    record, pids = play(spec_for(white, black, "0.005", adjudication=AdjudicationConfig(),
                                 opening=Opening(-1, "fortress", fen=fortress)))
    check_record(record, "Stockfish-W", "Stockfish-B")
    assert record.termination == "time forfeit", record.reason
    assert record.reason in ("White loses on time", "Black loses on time")
    assert record.result == ("0-1" if record.reason.startswith("White") else "1-0")
    flagged = record.reason.split()[0]
    # the flagged side's move was not played: it was its turn when the game ended
    turn = chess.Board(fortress)
    for m in record.moves:
        turn.push_uci(m)
    assert {chess.WHITE: "White", chess.BLACK: "Black"}[turn.turn] == flagged
    assert record.plies < 100
    assert_all_dead(pids)


@pytest.mark.slow
@pytest.mark.engines
def test_xboard_engines_fairymax_and_phalanx():
    record, pids = play(spec_for(PHALANX, FAIRYMAX, "3+0.05", adjudication=AdjudicationConfig(max_moves=25)))
    check_record(record, "Phalanx", "Fairymax")
    assert record.plies >= 10
    assert record.termination in (None, "adjudication"), record.reason
    assert_all_dead(pids)
    record, pids = play(spec_for(FAIRYMAX, SF, "inf", adjudication=AdjudicationConfig(max_moves=20),
                                 opening=Opening(4, "Italian", moves=("e2e4", "e7e5", "g1f3", "b8c6"))))
    game = check_record(record, "Fairymax", "Stockfish")
    assert game.headers["Opening"] == "Italian" and game.headers["BookIndex"] == "4"
    assert record.comments[:4] == ["book"] * 4 and record.comments[4] != "book"
    assert record.opening_index == 4
    assert_all_dead(pids)


@pytest.mark.engines
def test_fen_start_rejected_for_an_xboard_engine_without_setboard():
    with pytest.raises(RefereeError, match="setboard"):
        play(spec_for(FAIRYMAX, SF, "inf", opening=Opening(-1, fen="4k3/8/8/8/8/8/P7/R3K3 w - - 0 1")))


@pytest.mark.engines
@pytest.mark.parametrize("fen, result, reason", [
    ("3r2k1/8/8/8/8/8/P7/3R2K1 w - - 0 1", "1-0", "White wins by adjudication: SyzygyTB"),
    ("8/5k2/8/8/3n4/8/1P2Q3/4K3 b - - 0 1", "1/2-1/2", "Draw by adjudication: SyzygyTB"),
    # KBN v K with the fifty-move counter at 60: a cursed win, so a draw
    ("8/3B4/N7/8/8/8/5k2/7K w - - 60 80", "1/2-1/2", "Draw by adjudication: SyzygyTB"),
])
def test_syzygy_adjudication_in_real_games(fen, result, reason, syzygy_dir):
    adj = AdjudicationConfig(tablebases=TablebaseConfig(paths=(syzygy_dir,), max_pieces=4))
    record, pids = play(spec_for(SF, ETH, "inf", adjudication=adj, opening=Opening(-1, fen=fen)))
    game = check_record(record, "Stockfish", "Ethereal")
    assert (record.result, record.reason) == (result, reason)
    assert record.plies == 1
    assert game.headers["FEN"] == fen and game.headers["SetUp"] == "1"
    assert game.headers["Termination"] == "adjudication"
    assert game.headers["TerminationDetails"] == "SyzygyTB"
    assert record.start_fen == fen
    assert_all_dead(pids)


@pytest.mark.engines
def test_tcec_draw_rule_in_a_real_game():
    adj = AdjudicationConfig(tcec_draw=TcecDrawRule(max_pawns=8, max_pieces=8, score_cp=20, plies=10))
    fen = "r7/5k2/8/3p4/3P4/8/5K2/7R w - - 0 1"  # KR+P v KR+P, blocked pawns: a dead draw
    record, pids = play(spec_for(SF, ETH, "inf", adjudication=adj, opening=Opening(-1, fen=fen)))
    game = check_record(record, "Stockfish", "Ethereal")
    assert record.reason == "Draw by adjudication: TCEC draw rule"
    assert record.plies >= 10
    # the last ten plies were all within +-0.20 from the mover's view
    assert all(abs(float(c.split("/")[0])) <= 0.20 for c in record.comments[-10:])
    assert game.headers["TerminationDetails"] == "TCEC draw rule"
    assert_all_dead(pids)


@pytest.mark.engines
def test_book_line_ending_the_game_drops_its_last_ply():
    fools = Opening(0, "Fool's mate", moves=("f2f3", "e7e5", "g2g4", "d8h4"))
    record, pids = play(spec_for(ETH, SF, "inf", opening=fools))
    assert record.comments[:3] == ["book"] * 3
    assert record.moves[:3] == ["f2f3", "e7e5", "g2g4"]
    assert (record.result, record.reason, record.plies) == ("0-1", "Black mates", 4)
    assert record.termination is None and "Termination" not in parse(record).headers
    assert record.pgn.rstrip().endswith("2... Qh4# {+M1/1 0.001s, Black mates} 0-1") or \
        re.search(r"Qh4# \{\+M1/\d+ [\d.]+s, Black mates\} 0-1", record.pgn)
    assert_all_dead(pids)


@pytest.mark.slow
@pytest.mark.engines
def test_play_command_prints_a_pgn(tmp_path):
    cfg = write_config(tmp_path, textwrap.dedent("""
        Event: Play test
        SwissOptions: {Rounds: 1}
        TimeControl: "inf"
        Engines:
          - {Name: SF, Command: stockfish, Options: {Hash: 16}, Depth: 4}
          - {Name: Eth, Command: ethereal-chess, Options: {Hash: 16}, Depth: 2}
        Adjudication: {MaxMoves: 12}
    """), "c.yaml")
    out = subprocess.run([sys.executable, "-m", "runner", "play", str(cfg), "--white", "Eth",
                          "--black", "SF", "--moves", "1. e4 e5 Nf3"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    game = chess.pgn.read_game(io.StringIO(out.stdout))
    assert game.headers["White"] == "Eth" and game.headers["Event"] == "Play test"
    assert [n.comment for n in game.mainline()][:3] == ["book"] * 3
    bad = subprocess.run([sys.executable, "-m", "runner", "play", str(cfg), "--white", "Nope",
                          "--black", "SF"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert bad.returncode == 2 and "--white: got 'Nope'" in bad.stderr and "SF" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "runner", "play", str(cfg), "--white", "SF",
                          "--black", "Eth", "--moves", "e4 e4"], capture_output=True, text=True,
                         cwd=REPO, timeout=60)
    assert bad.returncode == 2 and "token 2 'e4'" in bad.stderr


@pytest.mark.engines
def test_xboard_node_limit_without_nps_feature_is_a_setup_error_not_a_loss():
    from runner.play.engines import probe_engine

    fmax = real("Fairymax", "fairymax", protocol="xboard", nodes=3000)
    with pytest.raises(RefereeError, match="does not declare node-limit support"):
        asyncio.run(play_game(spec_for(fmax, real("SF", "stockfish", nodes=1000), "10+0.1")))
    assert "use Depth or MoveTime" in probe_engine(fmax, timeout=10).error
    assert probe_engine(real("Fairymax", "fairymax", protocol="xboard", depth=3), timeout=10).error == ""


@pytest.mark.engines
def test_per_engine_node_limit_is_honoured_next_to_a_slow_clock():
    # Ethereal ignores "go nodes" when clocks come with it: the limit must be sent alone,
    # or this game at 40/60 would take about a minute instead of well under a second each move.
    eth = real("Ethereal", "ethereal-chess", nodes=2000, options={"Hash": 16})
    sf = real("Stockfish", "stockfish", nodes=2000, options={"Hash": 16, "Threads": 1})
    record, pids = play(spec_for(eth, sf, "40/60", adjudication=AdjudicationConfig(max_moves=20)))
    check_record(record, "Ethereal", "Stockfish")
    spent = [float(m.group(1)) for c in record.comments
             if (m := re.search(r"/\d+ (\d+(?:\.\d+)?)s\b", c))]
    assert spent and max(spent) < 0.5, spent
    assert_all_dead(pids)


def test_depth_zero_score_is_no_evaluation():
    # Phalanx answers from its own book with the thinking line "0 0 0 0" (depth 0, score 0)
    from runner.play.referee import move_comment, searched_info

    book_reply = {"depth": 0, "time": 0.0, "nodes": 0, "score": chess.engine.PovScore(chess.engine.Cp(0), chess.WHITE)}
    info = searched_info(book_reply)
    assert "score" not in info and "score" in book_reply
    assert move_comment(info, chess.WHITE, 0.001) == "0.001s"
    searched = {"depth": 12, "score": chess.engine.PovScore(chess.engine.Cp(-35), chess.WHITE)}
    assert searched_info(searched) is searched
    assert move_comment(searched, chess.BLACK, 5.1) == "+0.35/12 5.1s"


def test_extra_tiebreak_pair_games_are_tagged():
    from dataclasses import replace

    record, pids = play(replace(spec_for(fake("A"), fake("B"), "2+0.05"), round=12, extra_pair=2))
    game = chess.pgn.read_game(io.StringIO(record.pgn))
    assert game.headers["TieBreakPair"] == "2" and game.headers["Round"] == "12.1"
    record, pids = play(spec_for(fake("A"), fake("B"), "2+0.05"))
    assert "TieBreakPair" not in chess.pgn.read_game(io.StringIO(record.pgn)).headers
    assert_all_dead(pids)


def test_an_opening_is_played_on_a_board_once_and_each_game_gets_boards_of_its_own(monkeypatch):
    """A match plays its opening once with each colour: the second game's start is a copy of
    the first's (the book's plies, SAN, FENs and r-mobility as the first got them), not a
    replay, and what one game does to its boards never reaches the next."""
    from runner.domain.rmobility import RMobility
    from runner.play.referee import _start_board

    pushes = []
    san_and_push = chess.Board.san_and_push

    def counted(board, move):
        pushes.append(move.uci())
        return san_and_push(board, move)

    monkeypatch.setattr(chess.Board, "san_and_push", counted)
    book = ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "e1g1")
    opening = Opening(7, f"cached-{uuid.uuid4()}", moves=book)
    games = []
    for _ in range(2):
        mobility, fens = RMobility(), []
        start, board, kept, sans = _start_board(opening, False, mobility, fens)
        games.append((start.fen(), list(start.move_stack), board.fen(), list(board.move_stack),
                      list(kept), list(sans), list(fens),
                      (mobility.plies, mobility.pending, mobility.best)))
        board.push_uci("g8f6")  # the game goes on: on its own boards and lists only
        kept.append("g8f6")
        sans.append("Nf6")
        start.push_uci("d2d4")
    assert pushes == list(book)  # the book's plies played once for the two games
    assert games[1] == games[0]
    start_fen, start_stack, fen, stack, kept, sans, fens, mobility = games[1]
    assert start_fen == chess.STARTING_FEN and start_stack == []
    assert [m.uci() for m in stack] == kept == list(book)
    assert sans == ["e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "O-O"]
    assert len(fens) == len(book) and fens[-1] == fen
    assert mobility == (7, 2, None)  # the book's positions left to count at the game's end


def test_a_bad_opening_is_refused_for_every_game_that_has_it():
    """A refused opening is not kept: the next game with it is refused the same way."""
    for _ in range(2):
        with pytest.raises(RefereeError, match="illegal book move"):
            asyncio.run(play_game(spec_for(fake("A"), fake("B"),
                                           opening=Opening(3, "x", moves=("e2e4", "e2e4")))))
