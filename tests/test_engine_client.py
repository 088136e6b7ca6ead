"""The engine client's state machine (runner.play.engines.TimedUciProtocol and the UCI move
exchange of runner.play.uci): every state, every bad line, and a ``bestmove`` in the wrong
state. The client is fed through its one line reader (``pipe_data_received``, as asyncio
calls it) over a stand-in pipe; real engines play in test_referee.py, test_ponder.py and
test_engine_layer.py."""

from __future__ import annotations

import asyncio
import time

import chess
import chess.engine
import pytest

from runner.play.engines import (
    GONE,
    IDLE,
    PONDERING,
    STOPPING,
    THINKING,
    TimedUciProtocol,
    TimedXBoardProtocol,
)
from runner.play.uci import NotReady, UciMove


class _Stdin:
    def __init__(self) -> None:
        self.sent = b""

    def write(self, data: bytes) -> None:
        self.sent += data


class _Transport:
    def __init__(self) -> None:
        self.stdin = _Stdin()
        self.code: int | None = None

    def get_pipe_transport(self, fd: int) -> _Stdin:
        return self.stdin

    def get_returncode(self) -> int | None:
        return self.code


def _client(cls: type = TimedUciProtocol) -> tuple[TimedUciProtocol, _Transport, list[str]]:
    logged: list[str] = []
    proto = cls(lambda way, line: logged.append(f"{way} {line}"))
    pipes = _Transport()
    proto.connection_made(pipes)
    return proto, pipes, logged


def _move(proto: TimedUciProtocol, go: str = "go nodes 10", *, new_game: bool = False,
          timeout: float | None = None) -> UciMove:
    return UciMove(proto, "position startpos", go, new_game, chess.WHITE, timeout=timeout,
                   ready_timeout=1.0)


def _run(coro):  # noqa: ANN001, ANN202
    return asyncio.run(coro)


def test_idle_thinking_idle_and_the_move_stamped_when_read() -> None:
    async def main() -> None:
        proto, pipes, logged = _client()
        assert proto.state == IDLE and proto.sound
        move = _move(proto)
        answer = move.start()
        assert proto.state == THINKING and not proto.sound
        assert pipes.stdin.sent == b"position startpos\ngo nodes 10\n"
        proto.pipe_data_received(1, b"info depth 1 score cp 12 pv e2e4\nbest")
        assert proto.state == THINKING and not answer.done()
        before = time.monotonic()
        proto.pipe_data_received(1, b"move e2e4 ponder e7e5\ninfo string after\n")
        after = time.monotonic()
        reply = answer.result()
        assert (reply.move, reply.ponder) == ("e2e4", "e7e5")
        assert reply.info["score"].relative == chess.engine.Cp(12)
        assert before <= proto.move_received <= after and proto.move_received >= proto.go_sent
        assert proto.state == IDLE and proto.sound and proto.searching is None
        assert "< info string after" in logged  # after the move: the reader's again
        assert "> go nodes 10" in logged

    _run(main())


def test_pondering_then_ponderhit_then_thinking() -> None:
    async def main() -> None:
        proto, pipes, _ = _client()
        move = _move(proto, "go ponder wtime 1000 btime 1000")
        answer = move.start()
        assert proto.state == PONDERING
        proto.pipe_data_received(1, b"info depth 3 score cp 1 pv d2d4\n")
        move.ponderhit(5.0)
        assert proto.state == THINKING and pipes.stdin.sent.endswith(b"ponderhit\n")
        proto.pipe_data_received(1, b"bestmove d2d4\n")
        assert (await answer).move == "d2d4" and proto.state == IDLE

    _run(main())


def test_stopping_answered_then_idle_and_unanswered_stays_stopping() -> None:
    async def main() -> None:
        proto, pipes, _ = _client()
        move = _move(proto, "go ponder wtime 1000 btime 1000")
        answer = move.start()
        move.stop(1.0)
        assert proto.state == STOPPING and pipes.stdin.sent.endswith(b"stop\n")
        proto.pipe_data_received(1, b"bestmove a2a3\n")
        await answer
        assert proto.state == IDLE and proto.sound

        deaf, _, _ = _client()
        move = _move(deaf, "go ponder wtime 1000 btime 1000")
        answer = move.start()
        move.stop(0.01)
        with pytest.raises(NotReady):
            await answer
        assert deaf.state == STOPPING and not deaf.sound  # never kept (runner.play.keep)
        with pytest.raises(chess.engine.EngineError, match="stopping, not idle"):
            _move(deaf).start()  # no second search on an engine that did not stop
        deaf.pipe_data_received(1, b"bestmove a2a3\n")  # too late: the answer of no search
        assert deaf.stray == "bestmove a2a3" and not deaf.sound

    _run(main())


def test_gone_ends_the_search_and_no_search_starts_after() -> None:
    async def main() -> None:
        proto, pipes, _ = _client()
        answer = _move(proto).start()
        pipes.code = -9
        proto.process_exited()
        proto.connection_lost(None)
        with pytest.raises(chess.engine.EngineTerminatedError, match="exit code: -9"):
            await answer
        assert proto.state == GONE and not proto.sound
        with pytest.raises(chess.engine.EngineTerminatedError, match="dead"):
            _move(proto).start()

    _run(main())


def test_a_bestmove_in_the_wrong_state_is_a_stray_never_an_answer() -> None:
    async def main() -> None:
        idle, _, logged = _client()  # no search at all
        idle.pipe_data_received(1, b"bestmove e2e4\n")
        assert idle.stray == "bestmove e2e4" and not idle.sound
        assert "< bestmove e2e4" in logged

        early, pipes, _ = _client()  # before go: ucinewgame + isready, readyok not yet in
        move = _move(early, new_game=True)
        answer = move.start()
        early.pipe_data_received(1, b"bestmove h2h4\n")
        assert not answer.done() and early.stray == "bestmove h2h4"
        assert early.state == IDLE and b"go" not in pipes.stdin.sent
        early.pipe_data_received(1, b"readyok\n")
        assert early.state == THINKING
        early.pipe_data_received(1, b"bestmove e2e4\n")
        assert (await answer).move == "e2e4"
        assert not early.sound  # answered, but it once sent a move nobody asked for

        twice, _, _ = _client()  # a second bestmove in the read that answered the search
        answer = _move(twice).start()
        twice.pipe_data_received(1, b"bestmove e2e4\nbestmove d2d4\n")
        assert (await answer).move == "e2e4" and twice.stray == "bestmove d2d4"

    _run(main())


@pytest.mark.parametrize("logged", [False, True])
def test_every_bad_line_is_read_past_or_named(logged: bool) -> None:
    async def main() -> None:
        proto, _, _ = _client()
        if not logged:
            proto.io_log = None  # the collected read (no engine log), not line by line
        answer = _move(proto).start()
        for bad in (b"\xff\xfe not utf-8 score cp 999 pv a2a3\n",  # dropped
                    b"\x07 ??? garbage ###\n", b"\n", b"\r\n", b"bestmovez e2e4\n",
                    b"info depth x score cp y pv\n", b"info " + b"x" * 20000 + b"\n",
                    b"info depth 2 score cp 5 pv e2e4\r\n"):
            proto.pipe_data_received(1, bad)
            assert not answer.done() and proto.state == THINKING
        proto.pipe_data_received(1, b"bestmove\n")  # no move: the referee's illegal move
        reply = await answer
        assert reply.move is None and proto.state == IDLE
        assert reply.info.get("score") == chess.engine.PovScore(chess.engine.Cp(5), chess.WHITE)

    _run(main())


def test_a_partial_line_read_before_the_search_is_the_searchs() -> None:
    async def main() -> None:
        proto, _, _ = _client()
        proto.pipe_data_received(1, b"info string hel")  # no newline yet: kept by the reader
        answer = _move(proto).start()
        proto.pipe_data_received(1, b"lo\nbestmove g1f3\n")
        assert (await answer).move == "g1f3" and proto.partial == b""

    _run(main())


def test_xboard_client_states_setboard_and_a_stray_move() -> None:
    async def main() -> None:
        proto, _, logged = _client(TimedXBoardProtocol)
        proto.pipe_data_received(1, b"feature setboard=0 done=0\n")
        assert proto.no_setboard and "< feature setboard=0 done=0" in logged
        proto.pipe_data_received(1, b"move e2e4\n")  # no go: nobody asked
        assert proto.stray == "move e2e4" and not proto.sound

        thinking, pipes, _ = _client(TimedXBoardProtocol)
        thinking.send_line("go")
        assert thinking.state == THINKING and pipes.stdin.sent == b"go\n"
        thinking.pipe_data_received(1, b"1 10 0 100 e2e4\nmove e2e4\n")
        assert thinking.state == IDLE and thinking.sound
        assert thinking.last_move_text == "e2e4" and thinking.take_pv_line() == "1 10 0 100 e2e4"

    _run(main())
