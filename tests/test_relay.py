"""The move relay below Python (runner.play.relay, runner.play._pipes.Relay): with real
engines the relayed path plays the games the Python path plays (records, PGN, clocks); the
go lines it writes carry the referee's clocks; and where the referee does not follow it (an
illegal move, a castling written otherwise, the game's end, a flag, a stall, a crash, a TD
stop) the game ends or goes on exactly as on the Python path, the opponent stopped; the loop
is woken for relayed moves in batches, for a move not relayed at once."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import select
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import chess
import psutil
import pytest
from testkit import fake, spec_for

from runner.config import AdjudicationConfig, EngineConfig
from runner.config.typed import TcecWinRule
from runner.domain.models import Opening
from runner.play import pipes, referee
from runner.play.enginelog import GameLog
from runner.play.keep import EnginePool
from runner.play.referee import play_game
from runner.play.relay import PV, RELAYED, SETTLE_WAIT_S, SIDE, MoveRelay
from runner.play.relay import STAMP as STAMP_AT
from runner.play.relay import reply as relay_reply
from runner.play.uci import parse_info

HERE = Path(__file__).resolve().parent
STAMP = HERE / "fakes" / "stamp_uci.py"
STOCKFISH = EngineConfig(name="Stockfish", command="/usr/games/stockfish", nodes=2000,
                         options={"Threads": 1, "Hash": 16})
ETHEREAL = EngineConfig(name="Ethereal", command="/usr/games/ethereal-chess", nodes=2000,
                        options={"Threads": 1, "Hash": 16})
_TIME = re.compile(r" ?\d+(?:\.\d+)?s\b")


@pytest.fixture
def relayed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The compiled path, with a count of the moves (1: relayed, 0: not) the referee took
    from the relay."""
    monkeypatch.setenv(pipes.ENV, "native")
    seen: list[int] = []
    real = referee.relay_reply

    def counted(event, color):  # noqa: ANN001, ANN202
        seen.append(event[RELAYED])
        return real(event, color)

    monkeypatch.setattr(referee, "relay_reply", counted)
    return seen


def _pgn_moves(pgn: str) -> str:
    """The PGN's movetext and result, the move times taken out."""
    return " ".join(_TIME.sub("", pgn[pgn.index("\n\n"):]).split())


def _no_times(comments: list[str]) -> list[str]:
    return [_TIME.sub("", c) for c in comments]


def _kept(engine: EngineConfig) -> EngineConfig:
    return dataclasses.replace(engine, restart=False)


_SEARCH = ("ply", "uci", "san", "fen", "score_cp", "mate", "depth", "seldepth", "nodes",
           "tbhits", "pv", "draw_plies", "win_plies", "white_clock_ms", "black_clock_ms")


def _searches(events: list) -> list[tuple]:
    """What each MovePlayed event says of the move and its search (its time and nps aside)."""
    return [(e.game_id, *(getattr(e, k) for k in _SEARCH), _TIME.sub("", e.comment))
            for e in events if e.kind == "move"]


def _games(specs: list, kept: bool, log_dir: Path | None = None,
           events: list | None = None) -> list:
    """Play ``specs`` one after the other (on kept engines: one pool), their records;
    ``events``: gets the games' events."""
    async def main() -> list:
        pool = EnginePool(2, None) if kept else None
        records = []
        try:
            for spec in specs:
                if kept:
                    spec = dataclasses.replace(spec, white=_kept(spec.white), black=_kept(spec.black))
                log = GameLog(log_dir / f"g{spec.game_id}.log", "all") if log_dir else None
                records.append(await play_game(spec, engines=pool, engine_log=log,
                                               emit=None if events is None else events.append))
        finally:
            if pool is not None:
                await pool.aclose()
        return records
    return asyncio.run(main())


def _real_specs(tc: str = "inf") -> list:
    openings = [Opening(0, "e4", moves=("e2e4", "e7e5")), Opening(1, "d4", moves=("d2d4",)),
                Opening(2, "fen", fen="r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")]
    return [spec_for(a, b, tc, adjudication=AdjudicationConfig(max_moves=40), opening=o,
                     game=i + 1)
            for i, (o, (a, b)) in enumerate(
                (o, pair) for o in openings for pair in ((STOCKFISH, ETHEREAL), (ETHEREAL, STOCKFISH)))]


def play_on_one_pool(specs: list) -> tuple[list, list[int]]:
    """The games of ``specs`` played in turn on one pool of kept engines: their results and
    the pool's (started, reused) counts."""
    counts: list[int] = []

    async def main() -> list:
        pool = EnginePool(2)
        try:
            return [await play_game(spec, engines=pool) for spec in specs]
        finally:
            counts.extend((pool.started, pool.reused))
            await pool.aclose()

    return asyncio.run(main()), counts


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "fresh"])
def test_the_relay_plays_the_games_the_python_path_plays(kept: bool, relayed: list[int],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Stockfish and Ethereal at a node count (their moves depend only on the position): the
    same games, moves, results, reasons, comments and moves' events (times aside: the
    search info parsed in C as in Python) on both paths, with
    engines kept between games (each game's end stops an opponent already thinking, and the
    next game is still the same) and fresh; most moves relayed."""
    specs = _real_specs()
    native_events: list = []
    python_events: list = []
    native = _games(specs, kept, events=native_events)
    assert sum(relayed) > 0.8 * sum(len(r.moves) for r in native), relayed
    monkeypatch.setenv(pipes.ENV, "python")
    python = _games(specs, kept, events=python_events)
    # the search info the relay parsed in C (score, depth, nodes, PV...) as Python reads it
    assert _searches(native_events) == _searches(python_events)
    for a, b in zip(native, python, strict=True):
        assert (a.moves, a.result, a.reason) == (b.moves, b.result, b.reason)
        assert _no_times(a.comments) == _no_times(b.comments)
        assert _pgn_moves(a.pgn) == _pgn_moves(b.pgn)
        assert a.rmobility == b.rmobility


def test_a_chess960_game_is_relayed_as_played_in_python(relayed: list[int],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Chess960 castling (king takes rook, python-chess's and the engines' text alike) is
    relayed; the game is the Python path's."""
    opening = Opening(0, "960", fen="bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9")
    spec = dataclasses.replace(spec_for(STOCKFISH, ETHEREAL, "inf", opening=opening,
                                        adjudication=AdjudicationConfig(max_moves=40)),
                               variant="chess960")
    native = _games([spec], kept=False)[0]
    assert sum(relayed) > 20
    monkeypatch.setenv(pipes.ENV, "python")
    python = _games([spec], kept=False)[0]
    assert (native.moves, native.result) == (python.moves, python.result)


def _stamp(name: str, stamps: Path, *flags: str) -> EngineConfig:
    return EngineConfig(name=name, command=sys.executable,
                        args=(str(STAMP), "--stamps", str(stamps), *flags))


@pytest.mark.parametrize("engines", ["stamp", "real"])
def test_the_relayed_go_lines_carry_the_referees_clocks(engines: str, relayed: list[int],
                                                        tmp_path: Path) -> None:
    """With a clock (moves per period, an increment), every ``go`` the relay wrote has the
    clocks the referee's own Clock gives after the moves before it (the record's, to the
    ms), ``movestogo`` included; the log has the relay's lines in the engine log format.
    With stamp engines (5 ms a move) and with Stockfish and Ethereal on their clocks."""
    pair = (_stamp("W", tmp_path / "w", "--think", "5"), _stamp("B", tmp_path / "b", "--think", "5")) \
        if engines == "stamp" else (dataclasses.replace(STOCKFISH, nodes=None),
                                    dataclasses.replace(ETHEREAL, nodes=None))
    spec = spec_for(*pair, "6/2+0.1", adjudication=AdjudicationConfig(max_moves=10))
    events: list = []
    log = GameLog(tmp_path / "game.log", "all")
    record = asyncio.run(play_game(spec, emit=events.append, engine_log=log))
    assert record.termination != "time forfeit", record.reason
    assert sum(relayed) >= min(15, len(record.moves) - 3)
    gos = [line.split(" > ", 1)[1] for line in (tmp_path / "game.log").read_text().splitlines()
           if " > go " in line]
    moves = [e for e in events if e.kind == "move"]
    clocks = [(2000, 2000)] + [(e.white_clock_ms, e.black_clock_ms) for e in moves]
    made = {chess.WHITE: 0, chess.BLACK: 0}
    for ply, go in enumerate(gos[:len(moves)]):
        turn = chess.WHITE if ply % 2 == 0 else chess.BLACK
        w, b = clocks[ply]
        assert go == f"go wtime {w} btime {b} winc 100 binc 100 movestogo {6 - made[turn] % 6}", (ply, go)
        made[turn] += 1
    assert all(e.time_ms >= 5 for e in moves) and len(moves) > 8


def _commands(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _log_lines(path: Path, who: str) -> list[str]:
    return [line.split(f" {who} ", 1)[1] for line in path.read_text().splitlines()
            if f" {who} " in line]


def test_an_illegal_relayed_move_forfeits_with_the_opponent_stopped(relayed: list[int],
                                                                    tmp_path: Path) -> None:
    """A plain move text that is illegal is relayed (C checks only its shape): the referee
    forfeits it, and the opponent, already thinking on it, is stopped and its answer
    awaited (not charged)."""
    black = dataclasses.replace(STOCKFISH, nodes=None)  # it thinks on the clock: 1-2 s
    spec = spec_for(fake("W", "--illegal-on-go", "3", "e2e5"), black, "60+1")
    log = GameLog(tmp_path / "game.log", "all")
    events: list = []
    record = asyncio.run(play_game(spec, emit=events.append, engine_log=log))
    assert record.reason == "White makes an illegal move: e2e5", record.reason
    assert relayed[-1] == 1  # the move relayed
    lines = _log_lines(tmp_path / "game.log", "Stockfish(black)")
    # the position line sent with it (an info line of Stockfish's may end in e2e5 too)
    at = lines.index(next(line for line in lines
                          if line.startswith("> position ") and line.endswith(" e2e5")))
    assert lines[at + 1].startswith("> go wtime ") and lines[at + 2:].count("> stop") == 1, lines[at:]
    assert lines[-1].startswith("< bestmove ") or "< bestmove" in " ".join(lines[at + 2:])
    assert [e.uci for e in events if e.kind == "move"] == record.moves[:4]


@pytest.mark.parametrize("go", [1, 3])  # the engine's first move, a later one: both relayed
def test_a_pinned_piece_moved_forfeits_on_both_paths_the_move_unrecorded(
        relayed: list[int], monkeypatch: pytest.MonkeyPatch, go: int) -> None:
    """A move of a pinned piece is pseudo-legal (the referee's legality is python-chess's
    is_pseudo_legal, then the mover's king after the push): forfeited on both paths, as
    its first move and relayed, neither in the record nor in the events."""
    opening = Opening(0, "pinned", fen="rnbqk1nr/pppp1ppp/8/4p3/1b1P4/2N5/PPP1PPPP/R1BQKBNR "
                                       "w KQkq - 2 3")
    games = []
    for path in ("native", "python"):
        monkeypatch.setenv(pipes.ENV, path)
        spec = spec_for(fake("W", "--illegal-on-go", str(go), "c3e4"), fake("B"), "60+1",
                        opening=opening)
        events: list = []
        record = asyncio.run(play_game(spec, emit=events.append))
        assert (record.result, record.reason) == ("0-1", "White makes an illegal move: c3e4")
        assert len(record.moves) == 2 * (go - 1) and "c3e4" not in record.moves
        assert [e.uci for e in events if e.kind == "move"] == record.moves
        games.append((record.moves, record.comments, _pgn_moves(record.pgn)))
    assert relayed[-1:] == [1]  # the forfeited move came relayed (native path), the first too
    assert games[0][0] == games[1][0] and _no_times(games[0][1]) == _no_times(games[1][1])
    assert games[0][2] == games[1][2]


def test_a_castling_king_takes_rook_is_relayed_as_the_python_path_plays_it(
        relayed: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``e1h1`` for O-O in standard chess: legal for python-chess; the opponent gets the move
    as the referee records it (relayed when it is the engine's text, else stopped and given
    the recorded text), and the game is the Python path's."""
    opening = Opening(0, "castles", fen="r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1")

    def play(log: Path) -> object:
        spec = spec_for(fake("W", "--illegal-on-go", "3", "e1h1"), fake("B", "--think", "0.05"),
                        "60+1", opening=opening, adjudication=AdjudicationConfig(max_moves=8))
        return asyncio.run(play_game(spec, engine_log=GameLog(log, "all")))

    native = play(tmp_path / "native.log")
    assert native.moves[4] in ("e1h1", "e1g1") and len(native.moves) > 8
    assert sum(relayed) >= 3
    lines = _log_lines(tmp_path / "native.log", "B(black)")
    told = [line.split(" moves ")[1].split() for line in lines
            if line.startswith("> position ") and " moves " in line]
    told = [moves for moves in told if len(moves) <= len(native.moves)]  # not after the end
    assert max(map(len, told)) > 5 and all(m == native.moves[:len(m)] for m in told), told
    monkeypatch.setenv(pipes.ENV, "python")
    python = play(tmp_path / "python.log")
    assert (native.moves, native.result, native.reason) == (python.moves, python.result, python.reason)


def test_a_mate_ends_the_game_with_the_opponent_relayed_and_kept_clean(
        relayed: list[int], tmp_path: Path) -> None:
    """Stockfish mates on a relayed move; the mated engine got the position and answered (or
    was stopped), and the next game on the same kept processes is played cleanly."""
    mate = Opening(0, "mate in 2", fen="6k1/5ppp/8/8/8/8/5PPP/3RR1K1 w - - 0 1")
    white, black = _kept(STOCKFISH), _kept(ETHEREAL)
    specs = [spec_for(white, black, "inf", opening=mate, game=1),
             spec_for(white, black, "inf", opening=Opening(1, "e4", moves=("e2e4",)),
                      game=2, adjudication=AdjudicationConfig(max_moves=12))]
    (first, second), counts = play_on_one_pool(specs)
    assert first.reason == "White mates" and relayed, first.reason
    assert counts == [2, 2]  # the second game on the same two processes
    assert second.reason.endswith("maximal game length") and len(second.moves) == 24


class _SlowDisarm:
    """A Relay whose disarm() returns late: the window in which an engine's answer comes
    between the relay's disarm and the loop's taking of the answers, widened."""

    def __init__(self, relay: object) -> None:
        self.relay = relay

    def __getattr__(self, name: str) -> object:
        return getattr(self.relay, name)

    def disarm(self) -> int:
        thinking = self.relay.disarm()
        time.sleep(0.3)
        return thinking


def test_an_answer_that_comes_as_the_game_ends_is_not_waited_for(
        relayed: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Stockfish mates on a relayed move; Ethereal, relayed the mated position, answers at
    once, and its answer comes while the relay is being disarmed: it is dropped and not
    waited for (no ``stop`` and wait until the engine's StartupTimeoutS, which then lost the
    kept engine), and the next game is played on the same two processes."""
    real_init = MoveRelay.__init__

    def slow(self: MoveRelay, relay: object, *args: object, **kwargs: object) -> None:
        real_init(self, _SlowDisarm(relay), *args, **kwargs)

    monkeypatch.setattr(MoveRelay, "__init__", slow)
    # 1. Kf7 Kh7 (forced) 2. Rh1#: the mate is the first relayed move
    mate = Opening(0, "mate in 2", fen="7k/8/5K2/8/8/8/8/6R1 w - - 0 1")
    white, black = (dataclasses.replace(_kept(e), startup_timeout_s=5.0)
                    for e in (STOCKFISH, ETHEREAL))
    specs = [spec_for(white, black, "inf", opening=mate, game=1),
             spec_for(white, black, "inf", opening=Opening(1, "e4", moves=("e2e4",)),
                      game=2, adjudication=AdjudicationConfig(max_moves=4))]
    began = time.monotonic()
    (first, second), counts = play_on_one_pool(specs)
    assert first.reason == "White mates" and len(first.moves) == 3 and relayed[0] == 1, first
    assert counts == [2, 2] and time.monotonic() - began < 4, (counts, time.monotonic() - began)
    assert second.reason.endswith("maximal game length")


@pytest.mark.parametrize("kept", [True, False], ids=["kept", "fresh"])
def test_an_engine_relayed_past_the_end_that_hangs_is_not_waited_for_long(
        relayed: list[int], kept: bool) -> None:
    """Stockfish mates on a relayed move; the mated side (a fake that hangs on that ``go``,
    as Toga II hangs on the stale move a mated Ethereal answers, relayed past the end)
    never answers ``stop``: a kept engine's answer is awaited at most SETTLE_WAIT_S, a
    fresh one's not at all (it is closed with the game), not the engine's StartupTimeoutS."""
    mate = Opening(0, "mate in 2", fen="7k/8/5K2/8/8/8/8/6R1 w - - 0 1")  # 1. Kf7 Kh7 2. Rh1#
    white = dataclasses.replace(STOCKFISH, restart=not kept)
    black = dataclasses.replace(fake("B", "--hang-on-go", "2"), restart=not kept, nodes=100,
                                startup_timeout_s=20.0)
    began = time.monotonic()
    (record,), counts = play_on_one_pool([spec_for(white, black, "inf", opening=mate)])
    assert record.reason == "White mates" and len(record.moves) == 3, record.reason
    assert relayed[-1] == 1 and counts == [2, 0]
    assert time.monotonic() - began < SETTLE_WAIT_S + 6, time.monotonic() - began


def test_a_stalemate_on_a_relayed_move_then_a_clean_kept_game(relayed: list[int]) -> None:
    """A stalemate played on a relayed move (the fake's third ply): Stockfish, relayed the
    stalemated position, answers ``(none)`` or is stopped; both processes are kept and play
    the next game."""
    fen = "8/1N6/8/6Q1/8/2K5/6R1/k7 w - - 0 1"  # b7a5 Kb1(forced), then the fake stalemates
    white = dataclasses.replace(fake("W"), restart=False)
    black = dataclasses.replace(STOCKFISH, restart=False)
    specs = [spec_for(white, black, "inf", opening=Opening(0, "stalemate", fen=fen), game=1),
             spec_for(white, black, "inf", game=2, adjudication=AdjudicationConfig(max_moves=6))]
    specs = [dataclasses.replace(s, white=dataclasses.replace(s.white, nodes=100)) for s in specs]
    (first, second), counts = play_on_one_pool(specs)
    assert first.reason == "Draw by stalemate" and len(first.moves) == 3, first.reason
    assert relayed and relayed[0] == 1
    assert counts == [2, 2] and second.reason.endswith("maximal game length"), (counts, second.reason)


def test_an_adjudication_on_a_relayed_move_ends_the_game(relayed: list[int]) -> None:
    """The TCEC win rule adjudicates on a relayed move (the opponent is thinking already)."""
    spec = spec_for(dataclasses.replace(fake("W", "--score", "2000"), nodes=100),
                    dataclasses.replace(fake("B", "--score", "-2000", "--think", "0.2"), nodes=100),
                    "inf", adjudication=AdjudicationConfig(tcec_win=TcecWinRule(1000, 6)))
    began = time.monotonic()
    record = asyncio.run(play_game(spec))
    assert record.termination == "adjudication" and record.result == "1-0", record.reason
    assert sum(relayed) >= 3 and time.monotonic() - began < 20


def test_a_flag_and_a_stall_on_the_relay_end_the_game_in_time(relayed: list[int]) -> None:
    """An engine that thinks past its clock on a relayed move loses on time within the
    margin's grace; one that never answers (no clock: the stall timeout) stalls."""
    spec = spec_for(fake("W", "--sleep-on-go", "3", "30"), fake("B"), "2+0")
    began = time.monotonic()
    record = asyncio.run(play_game(spec, grace=0.2))
    assert record.reason == "White loses on time" and time.monotonic() - began < 8, record.reason
    assert relayed and len(record.moves) == 4
    relayed.clear()
    spec = spec_for(dataclasses.replace(fake("W", "--hang-on-go", "3"), nodes=100),
                    dataclasses.replace(fake("B"), nodes=100), "inf")
    began = time.monotonic()
    record = asyncio.run(play_game(spec, stall_timeout=1.0))
    assert record.reason == "White's connection stalls", record.reason
    assert time.monotonic() - began < 8 and relayed


def test_a_td_stop_mid_relay_cancels_the_game_and_its_engines(relayed: list[int]) -> None:
    """Cancelling the game (a TD's stop order) while the relay has a move on: both engines
    are gone at once."""
    spec = spec_for(fake("W", "--think", "0.05"), fake("B", "--think", "0.05"), "60+1")
    pids: list[int] = []

    async def main() -> None:
        game = asyncio.ensure_future(play_game(spec, on_process=lambda pid, _: pids.append(pid)))
        while len(relayed) < 4:
            await asyncio.sleep(0.01)
        game.cancel()
        with pytest.raises(asyncio.CancelledError):
            await game

    asyncio.run(asyncio.wait_for(main(), 30))
    deadline = time.monotonic() + 5
    while any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
              for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(pids) == 2 and not any(psutil.pid_exists(p) and psutil.Process(p).status()
                                      != psutil.STATUS_ZOMBIE for p in pids)


def test_an_engine_dying_mid_relay_is_a_disconnect(relayed: list[int]) -> None:
    """The engine to move exits on a relayed ``go``: it disconnects at once."""
    spec = spec_for(fake("W"), fake("B", "--crash-on-go", "4"), "60+1")
    began = time.monotonic()
    record = asyncio.run(play_game(spec))
    assert record.reason == "Black disconnects" and time.monotonic() - began < 10, record.reason
    assert len(record.moves) == 7 and sum(relayed) >= 4


def _relay_on_pipes() -> tuple[object, list[int], list[int], list[object]]:
    """A Relay between two compiled Readers over plain pipes (the engines' stdout and stdin,
    written and read by the test): (the relay, the stdout write ends, the stdin read ends,
    the readers: their threads run while they are referenced)."""
    module = pipes.native()
    outs = [os.pipe() for _ in range(2)]
    ins = [os.pipe() for _ in range(2)]
    readers = [module.Reader(r) for r, _ in outs]
    relay = module.Relay(*readers, ins[0][1], ins[1][1])
    for _, w in ins:
        os.close(w)  # the relay writes to its duplicates
    relay.arm(b"position startpos", False, 0.0, 0.0, 1.0, 0, (b"go nodes 1", b"go nodes 1"),
              float("inf"), float("inf"), None, (b"", b""), (b"", b""), 0.0)
    return relay, [w for _, w in outs], [r for r, _ in ins], readers


def _take(relay) -> tuple:  # noqa: ANN001
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        select.select([relay.fileno()], [], [], 0.1)
        events = relay.take()
        if events:
            assert len(events) == 1
            return events[0]
    raise AssertionError("no move came")


SEARCHES = [  # (what the engine wrote for its move, its search line with the score, the PV)
    ("info depth 1 score cp 13 pv e2e4\ninfo depth 2 seldepth 3 multipv 1 score cp -21 nodes 99 "
     "nps 5000 hashfull 1 tbhits 0 time 12 pv e2e4 e7e5\nbestmove e2e4 ponder e7e5\n", 1,
     ("e2e4", "e7e5")),
    ("info depth 9 score mate 3 lowerbound nodes 12345678901234567890 pv a7a8q\n"
     "info depth 9 multipv 2 score cp 900 pv a7a8n\nbestmove a7a8q\n", 0, ("a7a8q",)),
    ("info depth 5 score cp 7 upperbound time 3 pv h2h1b\ninfo string pv score 1\n"
     "bestmove\th2h1b\tponder  a1a2 \r\n", 1, ()),
    ("info nodes 5 score cp x pv b7b8r c7c8n e2\nbestmove b7b8r ponder\n", 0, ("b7b8r", "c7c8n")),
    # scores past the ones made once per process, words split as str.split() splits them
    ("info depth 4 score cp -3000 pv g1f3 g8f6\nbestmove g1f3 ponder\x1cg8f6\x1d\n", 0,
     ("g1f3", "g8f6")),
    ("info depth 4 score mate -2047 pv c2c4\ninfo depth 5 score mate 2048 pv c2c4\n"
     "bestmove c2c4 ponder \u00e97e5\n", 1, ("c2c4",)),
]


@pytest.mark.parametrize(("written", "scored", "pv"), SEARCHES)
def test_a_relayed_move_is_made_as_python_chess_makes_it(written: str, scored: int, pv: tuple,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Each move comes to the loop made in C (Relay.take): its text and ponder as the
    bestmove line splits, its info as runner.play.uci.parse_info reads the search's score
    line, as the Python path does (the same keys in the same order, the score a PovScore of
    the side that moved), the PV's plain moves and, relayed, chess.Move.from_uci of its
    text (one Move per text, made once): for White's move and for Black's; the same on an
    ASCII line (split in C) and on another (split by Python), for a score made once per
    process and for one past them."""
    monkeypatch.setenv(pipes.ENV, "native")
    relay, outs, ins, _readers = _relay_on_pipes()
    try:
        relay.go(0, None, 0.0, 0.0, 0, 0)
        made: list[chess.Move] = []  # the same text both times: the same Move, made once
        for side, color in ((0, chess.WHITE), (1, chess.BLACK)):
            os.write(outs[side], written.encode())
            event = _take(relay)
            text, ponder, info, move = relay_reply(event, color)
            lines = written.split("\n")  # (str.splitlines would split at \x1c too)
            words = next(x for x in lines if x.startswith("bestmove")).split()
            assert (text, ponder) == (words[1], words[3] if len(words) > 3 else None)
            search = [x for x in lines if x.startswith("info")]
            expected = parse_info(search[scored], color)
            assert list(info.items()) == list(expected.items())
            if "score" in expected:  # the very score python-chess makes: kind, value, side
                score, wanted = info["score"], expected["score"]
                assert (type(score.relative), score.relative, score.turn) \
                    == (type(wanted.relative), wanted.relative, wanted.turn)
            assert event[SIDE] == side and event[RELAYED] == 1 and event[PV] == pv
            assert move == chess.Move.from_uci(text)
            made.append(move)
            assert os.read(ins[1 - side], 4096).endswith(b"go nodes 1\n")  # relayed at once
        assert made[0] is made[1]
    finally:
        relay.close()
        for fd in outs + ins:
            os.close(fd)


def _ready_after(fd: int, began: float) -> float:
    """How long after ``began`` the relay's fd (the loop's wake) became readable."""
    assert select.select([fd], [], [], 5.0)[0], "the loop was never woken"
    return time.monotonic() - began


def test_relayed_moves_wake_the_loop_late_and_together_a_move_not_relayed_at_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A relayed move needs nothing from the loop: a quick one's wake comes RELAY_WAKE_DELAY
    after it was read (never sooner), or at once when RELAY_WAKE_MOVES relayed moves are
    queued, and take() gets them all in one wake and disarms the wake; a move thought longer
    than the delay, and a move not relayed (a text that is not a plain move, a disarmed
    relay), wake the loop at once."""
    monkeypatch.setenv(pipes.ENV, "native")
    module = pipes.native()
    delay, batch = module.RELAY_WAKE_DELAY, module.RELAY_WAKE_MOVES
    assert 0 < delay <= 0.05 and 1 < batch < module.RELAY_AHEAD
    relay, outs, ins, _readers = _relay_on_pipes()
    fd = relay.fileno()
    try:
        relay.go(0, None, 0.0, 0.0, 0, 0)
        assert os.read(ins[0], 4096).endswith(b"go nodes 1\n")
        began = time.monotonic()
        os.write(outs[0], b"bestmove e2e4\n")
        assert os.read(ins[1], 4096).endswith(b"go nodes 1\n")  # relayed at once ...
        assert _ready_after(fd, began) >= delay - 0.001  # ... the loop woken only later
        assert [e[RELAYED] for e in relay.take()] == [1]
        assert not select.select([fd], [], [], 2 * delay)[0]  # taken: no wake left
        moves = ("e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1", "f8e7")
        side, began = 1, time.monotonic()
        for move in moves[:batch]:
            os.write(outs[side], f"bestmove {move}\n".encode())
            assert os.read(ins[1 - side], 4096).endswith(b"go nodes 1\n")
            side = 1 - side
        written = time.monotonic() - began
        waited = _ready_after(fd, began)
        if written < delay / 3:  # the batch woke it, not the delay
            assert waited < delay, (written, waited)
        taken = relay.take()
        assert [e[RELAYED] for e in taken] == [1] * batch
        assert [e[SIDE] for e in taken] == [(1 + i) % 2 for i in range(batch)]
        time.sleep(1.5 * delay)  # a move thought longer than the delay: no waiting for more
        began = time.monotonic()
        os.write(outs[side], b"bestmove h2h3\n")
        assert os.read(ins[1 - side], 4096).endswith(b"go nodes 1\n")
        assert _ready_after(fd, began) < delay
        assert [e[RELAYED] for e in relay.take()] == [1]
        side = 1 - side
        for text in (b"bestmove (none)\n", None):  # not a plain move; then disarmed
            if text is None:
                relay.go(side, None, 0.0, 0.0, 0, 0)
                assert os.read(ins[side], 4096).endswith(b"go nodes 1\n")
                relay.disarm()
                text = b"bestmove a2a3\n"
            began = time.monotonic()
            os.write(outs[side], text)
            assert _ready_after(fd, began) < delay
            assert [e[RELAYED] for e in relay.take()] == [0]
    finally:
        relay.close()
        for fd_ in outs + ins:
            os.close(fd_)


def test_a_relayed_game_wakes_the_loop_fewer_times_than_it_moves_each_move_in_time(
        relayed: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """Stockfish and Ethereal at 2000 nodes (a move in a few milliseconds): the loop is woken
    for the relayed moves in batches (at most one wake per two moves), and every move still
    reaches the game's events (the store, the live views) in order, each within
    RELAY_WAKE_DELAY and the loop's own work of its bestmove, far inside the live views'
    200 ms."""
    wakes: list[int] = []  # the moves each wake of the loop brought
    real_woken = MoveRelay._woken

    def woken(self: MoveRelay) -> None:
        waiting = self.waiting if self.waiting is not None and not self.waiting.done() else None
        before = len(self.queue)
        real_woken(self)
        brought = len(self.queue) - before + (waiting is not None and waiting.done())
        if brought:
            wakes.append(brought)

    stamps: list[float] = []  # each relay move's bestmove stamp, in order
    counted = referee.relay_reply

    def stamped(event, color):  # noqa: ANN001, ANN202
        stamps.append(event[STAMP_AT])
        return counted(event, color)

    monkeypatch.setattr(MoveRelay, "_woken", woken)
    monkeypatch.setattr(referee, "relay_reply", stamped)
    emitted: list[tuple[int, float]] = []

    def emit(event) -> None:  # noqa: ANN001
        if event.kind == "move":
            emitted.append((event.ply, pipes.native().monotonic()))

    spec = spec_for(STOCKFISH, ETHEREAL, "inf", adjudication=AdjudicationConfig(max_moves=40))
    record = asyncio.run(play_game(spec, emit=emit))
    plies = len(record.moves)
    assert plies > 30 and [p for p, _ in emitted] == list(range(1, plies + 1))
    assert sum(relayed) > 0.8 * plies and len(stamps) == plies  # every move, the first too
    assert len(wakes) * 2 <= sum(relayed), wakes
    late = [at - stamp for (_, at), stamp in zip(emitted, stamps, strict=True)]
    assert max(late) < pipes.native().RELAY_WAKE_DELAY + 0.1, late


@pytest.mark.parametrize("judge", ["deadline", "exit"])
def test_a_move_waiting_in_c_for_its_wake_is_the_move_not_a_timeout_nor_a_disconnect(
        judge: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A quick relayed move waits in C for the loop's wake; when the awaited move's deadline
    passes, or its engine exits, meanwhile, the move that came is taken first: it is the
    move, not a time-out nor a disconnect."""
    monkeypatch.setenv(pipes.ENV, "native")
    relay, outs, ins, _readers = _relay_on_pipes()

    async def main() -> tuple:
        loop = asyncio.get_running_loop()
        procs = {c: SimpleNamespace(protocol=SimpleNamespace(exit_code=loop.create_future()))
                 for c in (chess.WHITE, chess.BLACK)}
        moves = MoveRelay(relay, procs, None, {}, None, None)  # type: ignore[arg-type]
        try:
            relay.go(0, None, 0.0, 0.0, 0, 0)
            assert os.read(ins[0], 4096).endswith(b"go nodes 1\n")
            os.write(outs[0], b"bestmove e2e4\n")
            assert os.read(ins[1], 4096).endswith(b"go nodes 1\n")
            time.sleep(0.002)  # queued in C; the loop not run since: its wake not taken
            moves.waiting, moves.waiting_for = loop.create_future(), chess.WHITE
            if judge == "deadline":
                moves.deadline = time.monotonic() - 1
                moves._timed_out()
            else:
                exit_code = procs[chess.WHITE].protocol.exit_code
                exit_code.set_result(0)
                moves._exited(exit_code)
            return moves.waiting.result()
        finally:
            moves.close()

    try:
        event = asyncio.run(main())
        assert event[SIDE] == 0 and event[RELAYED] == 1 and relay_reply(event, chess.WHITE)[0] == "e2e4"
    finally:
        for fd in outs + ins:
            os.close(fd)


def test_both_engines_are_readied_at_once_and_every_move_is_relayed_as_python_sends_it(
        relayed: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both engines get ``ucinewgame`` + ``isready`` at the game's start, together; once both
    ``readyok`` are in, the first engine's first ``position`` + ``go`` is the relay's: every
    move of the game comes through the relay, each engine is sent the lines the Python path
    sends it, in order, and the game is the Python path's."""
    spec = spec_for(STOCKFISH, ETHEREAL, "inf", adjudication=AdjudicationConfig(max_moves=6))
    native = asyncio.run(play_game(spec, engine_log=GameLog(tmp_path / "native.log", "all")))
    assert len(relayed) == len(native.moves)  # all, white's first too, through the relay
    monkeypatch.setenv(pipes.ENV, "python")
    python = asyncio.run(play_game(spec, engine_log=GameLog(tmp_path / "python.log", "all")))
    assert (native.moves, _no_times(native.comments)) == (python.moves, _no_times(python.comments))

    def first_exchange(log: Path, who: str) -> list[str]:
        lines = _log_lines(log, who)
        new = lines.index("> ucinewgame")
        return lines[new:lines.index(next(x for x in lines if x.startswith("< bestmove "))) + 1]

    for who in ("Stockfish(white)", "Ethereal(black)"):
        ours, theirs = (first_exchange(tmp_path / f"{p}.log", who) for p in ("native", "python"))
        sent = [x for x in ours if x.startswith(">")]
        assert sent == [x for x in theirs if x.startswith(">")] and len(sent) == 4, ours
        assert ours.index("< readyok") < ours.index(sent[2]), ours  # position only after readyok
    commands = _commands(tmp_path / "native.log")

    def at(who: str, line: str) -> int:
        return commands.index(next(x for x in commands if f" {who} {line}" in x))

    # black is readied before white's first move, and white's first go waits for its readyok
    assert at("Ethereal(black)", "> ucinewgame") < at("Stockfish(white)", "< bestmove ")
    assert at("Ethereal(black)", "< readyok") < at("Stockfish(white)", "> position ")


@pytest.mark.parametrize("path", ["native", "python"])
@pytest.mark.parametrize("slow", ["white", "black"])
def test_an_engine_not_ready_for_the_game_stalls_as_on_the_python_path(
        path: str, slow: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both engines are readied at once; one whose ``readyok`` does not come within its
    start-up timeout stalls as on the Python path: the side to move before any move, the
    other after the first move (its turn), the mover's first move played and recorded."""
    monkeypatch.setenv(pipes.ENV, path)
    late = fake("Slow", "--newgame-delay", "3")
    white, black = (late, fake("B")) if slow == "white" else (fake("W"), late)
    events: list = []
    record = asyncio.run(play_game(spec_for(white, black, "60+1"), emit=events.append,
                                   startup_timeout=0.5))
    loser = slow.capitalize()
    assert (record.result, record.reason, record.termination) == \
        ("0-1" if slow == "white" else "1-0", f"{loser}'s connection stalls", "stalled connection")
    assert len(record.moves) == (0 if slow == "white" else 1), record.moves
    assert [e.uci for e in events if e.kind == "move"] == record.moves
