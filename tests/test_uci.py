"""The lean UCI move exchange (runner.play.uci.UciMove) reads an engine's output the same
way whichever way the output is cut into reads, collected (the usual case) or line by line
(engine logs on). Real engines are exercised in test_referee.py; here a protocol stand-in
gets byte strings cut at random places, which no real engine run can force."""

from __future__ import annotations

import asyncio
import random
import time

import chess
import chess.engine

from runner.play.engines import TimedUciProtocol
from runner.play.uci import UciMove, last_search_lines, parse_info

LINES = [
    b"info depth 1 seldepth 1 multipv 1 score cp 20 nodes 20 nps 1 pv e2e4",
    b"info depth 2 score cp 25 lowerbound nodes 40 pv d2d4 d7d5",
    b"info depth 3 score mate 2 upperbound pv g1f3",
    b"info depth 3 multipv 2 score cp -5 pv c2c4",
    b"info string NNUE evaluation using nn.bin",
    b"info depth 4 seldepth 6 score cp 31 nodes 3000 nps 2 hashfull 0 tbhits 0 time 3 pv e2e4 e7e5",
    b"info depth 5 currmove e2e4 currmovenumber 1",
    b"info depth 6 pv b1c3",
    b"bestmovez is not a bestmove",
    b"info depth 7 score cp 7",
    b"info\xff\xfe depth 9 score cp 99 pv a2a3",  # not UTF-8: dropped
]


class _Pipe:
    def __init__(self) -> None:
        self.sent = b""
        self.written_at: list[float] = []

    def write(self, data: bytes) -> None:
        self.written_at.append(time.monotonic())
        self.sent += data


class _Transport:
    def __init__(self) -> None:
        self.stdin = _Pipe()

    def get_pipe_transport(self, fd: int) -> _Pipe:
        return self.stdin


def _Protocol(loop: asyncio.AbstractEventLoop, logged: bool) -> TimedUciProtocol:
    """The real engine client (runner.play.engines.TimedUciProtocol) over a stand-in pipe."""
    lines: list[tuple[str, str]] = []
    proto = TimedUciProtocol((lambda way, line: lines.append((way, line))) if logged else None)
    proto.connection_made(_Transport())  # type: ignore[arg-type]
    proto.lines = lines  # type: ignore[attr-defined]
    return proto


async def _play(chunks: list[bytes], *, logged: bool, new_game: bool = False):
    proto = _Protocol(asyncio.get_running_loop(), logged)
    move = UciMove(proto, "position startpos moves e2e4", "go nodes 100", new_game, chess.BLACK)
    answer = move.start()
    rest = b""
    for chunk in chunks:
        rest += move.feed(chunk)
    reply = answer.result() if answer.done() else None
    return proto, rest, None if reply is None else (
        reply.move, reply.info.get("score"), reply.info.get("depth"), reply.pv_line,
        proto.last_pv_line, proto.last_move_text)


def _cut(text: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(0, 10))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def test_the_clock_starts_before_go_is_written():
    """The engine may read ``go`` (and take the writer's core) before the write returns: the
    time charged runs from before the write, never from after it."""
    async def main():
        proto, _, reply = await _play([b"bestmove e7e5\n"], logged=False)
        return proto, reply

    proto, reply = asyncio.run(main())
    assert reply[0] == "e7e5"
    assert proto.go_sent <= proto.transport.stdin.written_at[-1]


def test_the_move_is_read_the_same_however_the_output_is_cut():
    rng = random.Random(11)

    async def main() -> int:
        checked = 0
        for _ in range(1500):
            body = [rng.choice(LINES) for _ in range(rng.randint(0, 12))]
            if rng.random() < 0.3:
                body = [line + b"\r" for line in body]  # CRLF line ends
            text = b"\n".join([*body, b"bestmove e2e4 ponder e7e5", b"info string after", b"part"])
            whole_proto, whole_rest, whole = await _play([text], logged=True)
            _, rest, cut = await _play(_cut(text, rng), logged=False)
            assert cut == whole
            assert rest == whole_rest == b"info string after\npart"  # python-chess's again
            assert whole_proto.searching is None or whole_proto.searching.result.done()
            checked += 1
        return checked

    assert asyncio.run(main()) == 1500


def test_last_score_and_pv_and_the_move_time_stamps():
    async def main():
        text = (b"info depth 1 score cp 10 pv e7e5\n"
                b"info depth 2 multipv 2 score cp 90 pv d7d5\n"  # a second line: ignored
                b"info depth 3 score cp 15 lowerbound pv c7c5\n"  # a bound: only if no score
                b"info depth 4 score mate -3 pv g8f6 g1f3\n"
                b"info depth 5 pv b8c6\n"
                b"bestmove b8c6\n")
        proto, rest, reply = await _play([text[:30], text[30:]], logged=False)
        assert reply[0] == "b8c6"
        assert reply[1] == chess.engine.PovScore(chess.engine.Mate(-3), chess.BLACK)
        assert reply[2] == 4
        assert reply[3] == "info depth 5 pv b8c6" == proto.last_pv_line
        assert proto.go_sent is not None and proto.move_received >= proto.go_sent
        assert proto.transport.stdin.sent == b"position startpos moves e2e4\ngo nodes 100\n"
        assert rest == b""

    asyncio.run(main())


def test_new_game_waits_for_readyok_before_go_and_logs_every_line():
    async def main():
        proto, rest, reply = await _play(
            [b"info string ready soon\nread", b"yok\ninfo depth 1 score cp 3 pv e7e5\n",
             b"bestmove e7e5\n"], logged=True, new_game=True)
        assert proto.transport.stdin.sent == (b"ucinewgame\nisready\n"
                                              b"position startpos moves e2e4\ngo nodes 100\n")
        assert reply[:3] == ("e7e5", chess.engine.PovScore(chess.engine.Cp(3), chess.BLACK), 1)
        assert [line for way, line in proto.lines if way == "<"] == [
            "info string ready soon", "readyok", "info depth 1 score cp 3 pv e7e5",
            "bestmove e7e5"]
        assert [line for way, line in proto.lines if way == ">"] == [
            "ucinewgame", "isready", "position startpos moves e2e4", "go nodes 100"]

    asyncio.run(main())


def test_an_engine_that_exits_mid_search_ends_the_move():
    async def main():
        proto = _Protocol(asyncio.get_running_loop(), False)
        move = UciMove(proto, "position startpos", "go nodes 100", False, chess.WHITE)
        answer = move.start()
        move.feed(b"info depth 1 score cp 3 pv e2e4\n")
        proto.exit_code.set_result(-9)
        try:
            await answer
        except chess.engine.EngineTerminatedError as exc:
            assert "exit code: -9" in str(exc)
        else:
            raise AssertionError("the move did not fail")
        await asyncio.sleep(0)
        assert proto.searching is None

    asyncio.run(main())


def test_the_move_time_is_the_read_time_stamped_by_the_caller():
    """A bestmove is charged at the moment its data was read (TimedUciProtocol stamps it
    first thing), not when the loop got round to parsing it: lines logged or parsed before it
    in the same read add nothing."""
    async def run(logged: bool) -> tuple[float | None, float]:
        proto = _Protocol(asyncio.get_running_loop(), logged)
        move = UciMove(proto, "position startpos", "go nodes 100", False, chess.WHITE)
        answer = move.start()
        read_at = proto.go_sent + 0.0123
        move.feed(b"\n".join(LINES) + b"\nbestmove e2e4\n", read_at)
        assert answer.done() and answer.result().move == "e2e4"
        return proto.move_received, read_at

    for logged in (False, True):
        received, read_at = asyncio.run(run(logged))
        assert received == read_at


def test_the_last_lines_are_found_from_the_end_as_a_line_by_line_reading_keeps_them():
    """last_search_lines reads backwards and stops early: the same lines as keeping the last
    of each kind while reading forwards, whatever the lines and their ends."""
    rng = random.Random(5)

    def forwards(text: bytes) -> tuple[str | None, str | None, str | None]:
        score = bound = pv = None
        for raw in text.split(b"\n"):
            try:
                line = raw.decode("utf-8").rstrip("\r")
            except UnicodeDecodeError:
                continue
            if not line.startswith("info ") or (" multipv " in line and " multipv 1 " not in line):
                continue
            if " score " in line:
                if " lowerbound" in line or " upperbound" in line:
                    bound = line
                else:
                    score = line
            if " pv " in line:
                pv = line
        return score, bound, pv

    assert last_search_lines(b"") == (None, None, None)
    assert last_search_lines(b"info depth 2 score cp 5 pv e2e4") == (
        "info depth 2 score cp 5 pv e2e4", None, "info depth 2 score cp 5 pv e2e4")
    for _ in range(3000):
        body = [rng.choice(LINES) for _ in range(rng.randint(0, 14))]
        if rng.random() < 0.3:
            body = [line + b"\r" for line in body]
        text = b"\n".join(body) + (b"\n" if rng.random() < 0.8 else b"")
        score, bound, pv = last_search_lines(text)
        want_score, want_bound, want_pv = forwards(text)
        assert (score, pv) == (want_score, want_pv)
        if score is None or pv is None:  # read to the first line: every bound line seen
            assert bound == want_bound


def test_a_field_that_is_not_a_number_is_skipped():
    info = parse_info("info depth x seldepth 7 score cp y nodes 30 time 5z pv e2e4", chess.WHITE)
    assert info == {"seldepth": 7, "nodes": 30}
    info = parse_info("info depth 3 score mate -2 time 1500 pv e2e4", chess.BLACK)
    assert info == {"depth": 3, "score": chess.engine.PovScore(chess.engine.Mate(-2), chess.BLACK),
                    "time": 1.5}
