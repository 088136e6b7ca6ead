"""The built-in referee: one game between two engine processes, with python-chess.

Clocks are measured by the runner (wall time from sending ``go`` to receiving the move),
never taken from the engine. Game ends, adjudication and the PGN follow cutechess-cli's
wording and format so that tournament people (and their tools) recognise them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import chess
import chess.engine

from runner.config.typed import EngineConfig
from runner.domain.adjudication import (
    SIDE,
    Adjudicator,
    RepetitionWindow,
    Verdict,
    king_can_step,
    natural_end,
    pawn_can_push,
)
from runner.domain.adjudication import End as _End
from runner.domain.adjudication import win_for as _win_for
from runner.domain.events import (
    GameEvent,
    GameFinished,
    GameStarted,
    MovePlayed,
    PartsMemo,
    ResumePoint,
    parse_utc,
    spec_to_json,
    workers_tag,
)
from runner.domain.fen import fen
from runner.domain.gamerecord import build_pgn, game_record
from runner.domain.models import (
    BLACK_WIN,
    DRAW,
    WHITE_WIN,
    GameRecord,
    GameSpec,
    Opening,
)
from runner.domain.rmobility import RMobility
from runner.domain.timecontrol import Clock
from runner.domain.variant import board_at, is_960
from runner.play import pipes
from runner.play.engine960 import chess960_fen, enable_chess960
from runner.play.enginelog import GameLog
from runner.play.engines import (
    EngineProcess,
    EngineStartError,
    TimedUciProtocol,
    TimedXBoardProtocol,
    close_engines,
    limit_problem,
    start_engine,
)
from runner.play.keep import EnginePool
from runner.play.ponder import (
    Pondering,
    drop_pondering,
    ponder_hit,
    ponder_miss,
    start_pondering,
    stop_pondering,
)
from runner.play.relay import GO_STAMP, PV, REST, STAMP, MoveRelay, open_relay
from runner.play.relay import reply as relay_reply
from runner.play.tablebases import open_tablebase
from runner.play.uci import NotReady, UciMove, UciReply, go_line, position_line

LOG = logging.getLogger(__name__)

_INFO = chess.engine.INFO_BASIC | chess.engine.INFO_SCORE

STARTUP_TIMEOUT = 30.0  # seconds for an engine's uci/xboard handshake
STALL_TIMEOUT = 60.0  # seconds without a move when no clock applies (depth/nodes limits)
GRACE = 0.5  # extra seconds waited past the flag before an engine is given up and killed


class RefereeError(Exception):
    """The game could not be played at all (bad opening, no limit, both engines dead)."""


class EnginesNotStarted(RefereeError):
    """Neither engine of the game could be started (after StartRetryS's tries)."""


def _flag_fell(board: chess.Board, color: chess.Color) -> _End:
    """``color`` ran out of time: a loss, or a draw when the opponent cannot mate at all."""
    if board.has_insufficient_material(not color):
        return _End(DRAW, "Draw by timeout", "time forfeit")
    return _End(_win_for(not color), f"{SIDE[color]} loses on time", "time forfeit")


def _stalled(board: chess.Board, color: chess.Color) -> _End:
    if board.has_insufficient_material(not color):
        return _End(DRAW, "Draw by stalled connection", "stalled connection")
    return _End(_win_for(not color), f"{SIDE[color]}'s connection stalls", "stalled connection")


def _disconnected(color: chess.Color) -> _End:
    return _End(_win_for(not color), f"{SIDE[color]} disconnects", "abandoned")


def _illegal(color: chess.Color, text: str) -> _End:
    return _End(_win_for(not color), f"{SIDE[color]} makes an illegal move: {text}", "illegal move")


def _from_verdict(v: Verdict) -> _End:
    return _End(v.result, v.reason, v.termination, v.details)


# --------------------------------------------------------------------------- comments


def format_score(score: chess.engine.Score) -> str:
    """cutechess score text: +0.35, -1.20, 0.00, +M3 / -M4 (mate distance in plies)."""
    return _score_text(score.score(), score.mate())


def _score_text(cp: int | None, mate: int | None) -> str:
    """:func:`format_score` of a score's ``score()`` and ``mate()``."""
    if mate is not None:
        return f"+M{2 * mate - 1}" if mate > 0 else f"-M{-2 * mate}"
    if not cp:
        return "0.00"
    pawns, hundredths = divmod(abs(cp), 100)  # ``f"{cp / 100:+.2f}"`` in integers
    return f"{'+' if cp > 0 else '-'}{pawns}.{hundredths:02d}"


def format_seconds(seconds: float) -> str:
    """cutechess move time: 0s, 0.007s, 0.32s, 5.1s, 12s (3/2/1/0 decimals by size)."""
    return _ms_text(round(seconds * 1000))  # (an int, as int(round(...)) is)


def _ms_text(ms: int) -> str:
    """:func:`format_seconds` of ``round(seconds * 1000)``."""
    if ms <= 0:
        return "0s"
    if ms < 100:
        return f"0.0{ms:02d}s"  # ``f"{ms / 1000:.3f}s"`` in integers
    if ms < 1000:  # (a literal format spec: one built per call, ``.{decimals}f``, costs more)
        return f"{ms / 1000:.2f}s"
    return f"{ms / 1000:.1f}s" if ms < 10000 else f"{ms / 1000:.0f}s"


def searched_info(info: chess.engine.InfoDict) -> chess.engine.InfoDict:
    """The engine's info without a score reported at depth 0.

    XBoard engines answering from their own book print a thinking line ``0 0 0 0`` (depth 0,
    score 0): that is no evaluation. It must neither feed the TCEC draw rule nor show as
    ``0.00`` in the PGN (cutechess writes only the time for such moves).
    """
    if info.get("depth") == 0 and "score" in info:
        info = dict(info)  # type: ignore[assignment]
        del info["score"]
    return info


def move_comment(info: chess.engine.InfoDict, mover: chess.Color, seconds: float) -> str:
    """``+0.35/16 5.1s`` from the engine's last info (score relative to the mover)."""
    pov = info.get("score")
    if pov is None:
        return format_seconds(seconds)
    score = pov.pov(mover)
    return _comment(score.score(), score.mate(), info.get("depth"), round(seconds * 1000))


# the texts of the centipawn scores (|cp| < 2048) and move times (under 10 s) asked so far:
# a ply's comment is then two look-ups and one format (they repeat from ply to ply)
_CP_TEXTS: dict[int, str] = {}
_MS_TEXTS: dict[int, str] = {}


def _comment(cp: int | None, mate: int | None, depth: int | None, ms: int) -> str:
    """:func:`move_comment` of the mover's score (its ``score()`` and ``mate()``, both None
    without one) at ``depth``, ``ms`` milliseconds (``round(seconds * 1000)``)."""
    time_text = _MS_TEXTS.get(ms)
    if time_text is None:
        time_text = _ms_text(ms)
        if 0 <= ms < 10000:
            _MS_TEXTS[ms] = time_text
    if mate is not None:
        score = _score_text(cp, mate)
    elif cp is None:
        return time_text
    else:
        score = _CP_TEXTS.get(cp)  # type: ignore[assignment]
        if score is None:
            score = _score_text(cp, None)
            if -2048 < cp < 2048:
                _CP_TEXTS[cp] = score
    return f"{score}/{depth} {time_text}" if depth else f"{score} {time_text}"


# --------------------------------------------------------------------------- the game


def _without_clocks(spec: GameSpec, engine: EngineConfig) -> bool:
    """Is the engine's limit sent without the clocks (then the same at every move)? A
    per-engine limit (Nodes/Depth/MoveTime) is sent alone: engines such as Ethereal ignore
    "go nodes" when clocks come with it. The runner still charges and enforces the clock,
    so a limit that is too slow for the time control still loses on time."""
    return spec.time_control.infinite or engine.nodes is not None \
        or engine.depth is not None or engine.movetime_ms is not None


def _limit(spec: GameSpec, engine: EngineConfig, clocks: dict[chess.Color, Clock],
           turn: chess.Color) -> chess.engine.Limit:
    tc = spec.time_control
    kw: dict[str, object] = {}
    if not _without_clocks(spec, engine):
        kw.update(white_clock=clocks[chess.WHITE].remaining, black_clock=clocks[chess.BLACK].remaining,
                  white_inc=tc.increment, black_inc=tc.increment,
                  remaining_moves=clocks[turn].moves_to_go)
    if engine.nodes is not None:
        kw["nodes"] = engine.nodes
    if engine.depth is not None:
        kw["depth"] = engine.depth
    if engine.movetime_ms is not None:
        kw["time"] = engine.movetime_ms / 1000
    if engine.protocol == "xboard":
        kw["clock_id"] = f"game-{spec.game_id}"  # send 'level' once per game, then time/otim
    return chess.engine.Limit(**kw)  # type: ignore[arg-type]


class _Book:
    """An opening's start position and book plies as played by :func:`_start_board` (kept
    for the next game of the same opening: a match plays it once with each colour)."""

    __slots__ = ("start", "board", "kept", "sans", "fens", "resets")

    def __init__(self, start: chess.Board, board: chess.Board, kept: list[str],
                 sans: list[str], fens: list[str], resets: list[bool]) -> None:
        self.start, self.board, self.kept, self.sans = start, board, kept, sans
        self.fens, self.resets = fens, resets


_BOOKS: dict[tuple[str | None, tuple[str, ...], bool], _Book] = {}  # the last few openings
_BOOKS_KEPT = 8


def _start_board(opening: Opening | None, chess960: bool = False,
                 mobility: RMobility | None = None, fens: list[str] | None = None
                 ) -> tuple[chess.Board, chess.Board, list[str], list[str]]:
    """(start position, position after the book, book moves kept, their SAN): fresh boards
    and lists the caller owns (the opening is played on a board once: :func:`_book`).

    A book move that ends the game is dropped (the engines play on), as cutechess does.
    ``chess960``: a Chess960 board (castling king-takes-rook), for a 960 event.
    ``mobility``: the position after each book move kept is left to count at the game's end
    (:meth:`RMobility.deferred`, as the engines' moves are). ``fens``: gets the FEN after
    each book move kept (their MovePlayed events).
    """
    key = (opening.fen, tuple(opening.moves), chess960) if opening else (None, (), chess960)
    book = _BOOKS.get(key)
    if book is None:
        book = _book(opening, chess960)
        while len(_BOOKS) >= _BOOKS_KEPT:
            del _BOOKS[next(iter(_BOOKS))]
        _BOOKS[key] = book
    if mobility is not None:
        for resets in book.resets:
            mobility.deferred(resets)
    if fens is not None:
        fens.extend(book.fens)
    return book.start.copy(), book.board.copy(), list(book.kept), list(book.sans)


def _book(opening: Opening | None, chess960: bool) -> _Book:
    """The opening played on a board (:func:`_start_board`); RefereeError for a bad one."""
    try:
        start = board_at(opening.fen if opening else None, chess960)
    except ValueError as exc:
        raise RefereeError(f"opening {opening.name or opening.index!r}: bad FEN: {exc}") from None
    board = start.copy()
    kept: list[str] = []
    sans: list[str] = []
    fens: list[str] = []
    resets: list[bool] = []
    book = opening.moves if opening else ()
    following: chess.Move | None = None  # the next book move, legal where it is played
    for ply, uci in enumerate(book):
        try:
            move = following if following is not None else board.parse_uci(uci)
        except ValueError:
            raise RefereeError(f"opening {opening.name or opening.index!r}: illegal book move "  # type: ignore[union-attr]
                               f"{uci!r} in {board.fen()}") from None
        san = board.san_and_push(move)
        zeroing = board.halfmove_clock == 0  # a pawn move or a capture reset it
        following = _legal(board, book[ply + 1]) if ply + 1 < len(book) else None
        # a legal next book move: the side to move has one (no mate or stalemate to look for)
        if natural_end(board, 1 if following is not None else _moves_left(san, board)) is not None:
            board.pop()
            break
        resets.append(zeroing)
        fens.append(fen(board))
        kept.append(move.uci())  # a 960 castling king-takes-rook, whichever way it came
        sans.append(san)
    if not kept and not any(True for _ in board.legal_moves):  # (else natural_end saw some)
        raise RefereeError(f"opening {opening.name if opening else ''!r}: the start position is already over")
    return _Book(start, board, kept, sans, fens, resets)


def _legal(board: chess.Board, uci: str) -> chess.Move | None:
    """``uci`` as python-chess reads it on ``board``; None when it is not a legal move there
    (or the null move, which python-chess reads without a look at the position).

    Most book moves (a piece's plain move or capture, a king's step: :func:`_plainly_pseudo_legal`)
    are read as they are written, asking python-chess only whether they leave the king
    attacked (``is_into_check``): ``parse_uci``'s own test, without its castling rewrites
    (none of these moves is one) and its full ``is_pseudo_legal``."""
    try:
        move = chess.Move.from_uci(uci)
    except ValueError:
        return None
    if move and _plainly_pseudo_legal(board, move):
        return None if board.is_into_check(move) else move
    try:
        move = board.parse_uci(uci)
    except ValueError:
        return None
    return move if move else None


def _wants_move_data(spec: GameSpec) -> bool:
    """Whether the PGN needs each move's search data (extended comments, TCEC fields)."""
    return spec.pgn_comments == "extended" or "TCEC" in spec.pgn_extras


def _kill_started(task: asyncio.Future[EngineProcess]) -> None:
    if not task.cancelled() and task.exception() is None:
        task.result().kill()


async def _start_both(spec: GameSpec, board: chess.Board,
                      on_process: Callable[[int, float], None] | None,
                      timeout: float, cpus: Sequence[int] | None = None,
                      engine_log: GameLog | None = None, pool: EnginePool | None = None,
                      ) -> tuple[dict[chess.Color, EngineProcess], _End | None]:
    """Start both engines at once (or take kept ones from ``pool``); ``board`` is the
    position the game starts from.

    If this is cancelled (or fails) while one engine is still starting, the one that has
    already started is killed and the other start is cancelled (which kills its process).
    """
    async def start(color: chess.Color, engine: EngineConfig) -> EngineProcess:
        kwargs: dict[str, Any] = {
            "timeout": engine.startup_timeout_s or timeout, "on_process": on_process,
            "cpus": engine_cpus(spec, color, cpus),
            "io_log": _io_log(engine_log, engine, color)}

        async def once() -> EngineProcess:
            if pool is None:
                return await start_engine(engine, **kwargs)
            return await pool.acquire(engine, note=engine_log.note if engine_log else None,
                                      **kwargs)

        for wait in engine.start_retry_s:  # StartRetryS: a failed start is tried again
            try:
                return await once()
            except EngineStartError as exc:
                LOG.warning("game %s: %s; trying again in %gs", spec.round_label, exc, wait)
                await asyncio.sleep(wait)
        return await once()

    # kept engines taken at once (no task, no turn of the loop); the others started in tasks
    procs = _kept_at_once(spec, pool, on_process, cpus, engine_log)
    tasks = {color: asyncio.ensure_future(start(color, engine))
             for color, engine in ((chess.WHITE, spec.white), (chess.BLACK, spec.black))
             if color not in procs}
    try:
        if tasks:
            await asyncio.wait(tasks.values())
    except BaseException:
        for proc in procs.values():
            proc.kill()
        pending = [task for task in tasks.values() if not task.done()]
        for task in tasks.values():
            if task.done():
                _kill_started(task)
            else:  # a start that still completes kills what it started
                task.add_done_callback(_kill_started)
                task.cancel()
        if pending:  # let the cancelled starts run their clean-up before going on
            await asyncio.wait(pending)
        raise
    failures: dict[chess.Color, BaseException] = {}
    for color, task in tasks.items():
        exc = task.exception() if not task.cancelled() else asyncio.CancelledError()
        if exc is None:
            procs[color] = task.result()
        else:
            failures[color] = exc
    for exc in failures.values():
        if not isinstance(exc, EngineStartError):
            for proc in procs.values():
                proc.kill()
            raise exc
    if len(failures) == 2:
        for proc in procs.values():
            proc.kill()
        raise EnginesNotStarted("neither engine could be started: "
                           + "; ".join(str(e) for e in failures.values()))
    end = None
    for color, exc in failures.items():
        LOG.warning("game %s: %s", spec.round_label, exc)
        assert isinstance(exc, EngineStartError)
        end = _stalled(board, color) if exc.stalled else _disconnected(color)
    return procs, end


def engine_cpus(spec: GameSpec, color: chess.Color, cpus: Sequence[int] | None
                ) -> Sequence[int] | None:
    """The cores of one engine of a game pinned to ``cpus`` (Affinity): both engines share
    them, but when one ponders both think at once and each gets its half of them."""
    if not cpus or len(cpus) < 2 or not (spec.white.ponder or spec.black.ponder):
        return cpus
    half = len(cpus) // 2
    return cpus[:half] if color == chess.WHITE else cpus[half:]


def _kept_at_once(spec: GameSpec, pool: EnginePool | None,
                  on_process: Callable[[int, float], None] | None, cpus: Sequence[int] | None,
                  engine_log: GameLog | None) -> dict[chess.Color, EngineProcess]:
    """The game's engines that ``pool`` hands over at once (EnginePool.kept: idle, alive,
    no cores to pin to), White's first as the starts' tasks would take them."""
    procs: dict[chess.Color, EngineProcess] = {}
    if pool is None:
        return procs
    for color, engine in ((chess.WHITE, spec.white), (chess.BLACK, spec.black)):
        if engine_cpus(spec, color, cpus):
            continue
        proc = pool.kept(engine, on_process=on_process, io_log=_io_log(engine_log, engine, color),
                         note=engine_log.note if engine_log else None)
        if proc is not None:
            procs[color] = proc
    return procs


def _io_log(engine_log: GameLog | None, engine: EngineConfig, color: chess.Color
            ) -> Callable[[str, str], None] | None:
    """The writer of the engine's lines into the game's engine log (None: no log)."""
    return engine_log.writer(f"{engine.name}({SIDE[color].lower()})") if engine_log else None


Emit = Callable[[GameEvent], None]


async def play_game(
    spec: GameSpec,
    *,
    emit: Emit | None = None,
    on_process: Callable[[int, float], None] | None = None,
    attempt: int = 1,
    resume: ResumePoint | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
    stall_timeout: float = STALL_TIMEOUT,
    grace: float = GRACE,
    cpus: Sequence[int] | None = None,
    engine_log: GameLog | None = None,
    worker: str = "",
    engines: EnginePool | None = None,
) -> GameRecord:
    """Play one game; always return a GameRecord (crashes and timeouts are results).

    While it runs, ``emit`` receives the game's events: GameStarted once both engines are
    up (or one failed to start), a MovePlayed for every ply (book plies first), and
    GameFinished with the record last. An exception raised by ``emit`` ends the game (both
    engines are killed) and propagates.

    With ``resume`` (TCEC rule 7.c.v) the game goes on from the position its log reached:
    fresh engines get the whole move history, the clocks and the TCEC rule counts are
    restored, and the PGN is one game from move 1 with the resume point marked.

    Raises RefereeError only when the game cannot be played at all (illegal opening, no
    limit for an engine with an infinite time control, neither engine starts).
    Cancelling the task kills both engines and their process groups.

    ``cpus``: pin both engines to these cores (Affinity). ``engine_log``: log every line to
    and from both engines there (EngineLogs); it is closed when the game ends, and a kept
    log is named in the PGN's ``EngineLog`` tag. Each engine's own ``startup_timeout_s``
    (StartupTimeoutS) replaces ``startup_timeout`` for its handshake and first ``isready``.
    ``worker``: the name of the cluster worker playing the game (docs/cluster.md), given in
    GameStarted and as the PGN tag ``Worker`` (after the workers that played the moves it
    resumes from: ``resume.workers``); "" (this machine) adds no tag of its own. ``engines``:
    the run's pool of kept engines (``Restart: off``, runner.play.keep): engines are taken
    from it and handed back to it when the game ends.
    """
    _check_limits(spec)
    g = _GameStart(spec, resume, book=emit is not None)
    start_board, board, moves, sans, comments = g.start_board, g.board, g.moves, g.sans, g.comments
    started, clocks, mobility, book_fens = g.started, g.clocks, g.mobility, g.book_fens
    procs: dict[chess.Color, EngineProcess] = {}
    move_data: list[MovePlayed] | None = [] if _wants_move_data(spec) else None
    try:
        procs, end = await _start_both(spec, board, on_process, startup_timeout, cpus, engine_log,
                                       engines)
        _check_engines(spec, procs, start_board)
        if emit is not None:
            _emit_start(emit, spec, procs, start_board, moves, sans, started, clocks, attempt,
                        book_fens, resume=resume, worker=worker)
            await asyncio.sleep(0)  # the start's views apart from the first move's (the loop)
        if end is None:  # else an engine failed to start: it loses, no move is played
            end = await _game_loop(spec, board, procs, moves, comments, stall_timeout, grace,
                                   startup_timeout, clocks=clocks, emit=emit, attempt=attempt,
                                   resume=resume, move_data=move_data, sans=sans,
                                   mobility=mobility)
    except BaseException:
        _abandon(procs, engines, engine_log)
        raise
    else:
        await _hand_back(procs, engines, end, cpus)
    # The game's end in steps of its own, each under a millisecond of the loop (an engine of
    # another game may be thinking; its pipe is read between them): the engine log's close
    # (a flush, maybe an unlink) in a thread, the record and its PGN, then its event.
    kept_log = None if engine_log is None else await asyncio.to_thread(
        engine_log.close, end.termination, end.reason)
    await _settle_mobility(mobility, board, end.result)
    record = finish_record(spec, start_board, moves, comments, end, started, g.played_s(),
                           resumed_from=resume.ply if resume is not None else 0,
                           resume_note=g.resume_note, move_data=move_data, engine_log=kept_log,
                           worker=workers_tag(resume.workers if resume else (), worker),
                           sans=sans, mobility=mobility)
    if emit is not None:
        await asyncio.sleep(0)
        emit(GameFinished(spec.game_id, record, attempt))
    return record


def _check_limits(spec: GameSpec) -> None:
    """RefereeError for an engine whose game could never end (time control 'inf', no limit)."""
    for engine in (spec.white, spec.black):
        if spec.time_control.infinite and engine.nodes is None and engine.depth is None \
                and engine.movetime_ms is None:
            raise RefereeError(f"engine {engine.name!r}: time control 'inf' needs Nodes, Depth or "
                               "MoveTime for the engine, or the game never ends")


class _GameStart:
    """Where a game starts: the opening's position and book plies, or with ``resume`` (TCEC
    rule 7.c.v) the position, clocks and moves the engines reached; the clocks and r-mobility."""

    def __init__(self, spec: GameSpec, resume: ResumePoint | None, book: bool):
        tc = spec.time_control
        self.mobility = RMobility()  # kept as the game goes: its end costs no replay
        self.book_fens: list[str] = []  # the FEN after each book ply, for their events
        self.start_board, self.board, self.moves, self.sans = _start_board(
            spec.opening, is_960(spec.variant), self.mobility, self.book_fens if book else None)
        self.comments = ["book"] * len(self.moves)
        self.started = datetime.now(UTC)
        self.began = time.monotonic()  # the attempt's length: never from the wall clock
        self.played_before: float | None = 0.0  # the game's length before this attempt
        self.clocks = {chess.WHITE: Clock(tc), chess.BLACK: Clock(tc)}
        self.resume_note = ""
        if resume is None:
            return
        self.mobility = RMobility()  # the logged moves include the book
        self.board, self.moves, self.comments, self.sans = _resume_board(
            self.start_board, resume, self.mobility)
        self.started = parse_utc(resume.start_time) or self.started
        self.played_before = resume.played_s
        for color, ms, made in ((chess.WHITE, resume.white_clock_ms, resume.white_moves),
                                (chess.BLACK, resume.black_clock_ms, resume.black_moves)):
            if ms is not None and not tc.infinite:
                self.clocks[color].remaining = ms / 1000
            self.clocks[color].moves_made = made
        self.resume_note = (f"game resumed after an interruption, clocks White "
                            f"{_clock_text(self.clocks[chess.WHITE])} Black "
                            f"{_clock_text(self.clocks[chess.BLACK])}")

    def played_s(self) -> float | None:
        """How long the game has taken to play, on a monotonic clock (None: not known)."""
        return None if self.played_before is None else \
            self.played_before + time.monotonic() - self.began


def _check_engines(spec: GameSpec, procs: dict[chess.Color, EngineProcess],
                   start_board: chess.Board) -> None:
    """RefereeError for an engine that cannot play this game (its limit, Chess960, a FEN start)."""
    for proc in procs.values():
        problem = limit_problem(proc.config, proc.protocol)
        if problem is None and is_960(spec.variant):
            problem = enable_chess960(proc.config, proc.protocol)
        if problem:
            raise RefereeError(problem)
        if getattr(proc.protocol, "no_setboard", False) and fen(start_board) != chess.STARTING_FEN:
            raise RefereeError(f"engine {proc.config.name!r} has no xboard 'setboard' command and "
                               "cannot start from a FEN position")


def _abandon(procs: dict[chess.Color, EngineProcess], engines: EnginePool | None,
             engine_log: GameLog | None) -> None:
    """The game failed or was cancelled: kill both engines (never kept), drop the engine log."""
    for proc in procs.values():
        proc.kill()
        if engines is not None:
            engines.forget(proc)
    if engine_log is not None:
        engine_log.discard()


async def _hand_back(procs: dict[chess.Color, EngineProcess], engines: EnginePool | None,
                     end: _End, cpus: Sequence[int] | None) -> None:
    """The game is over: close both engines, or hand them back to the pool of kept engines."""
    if engines is None:  # both quit at once, then one walk of /proc for their trees
        await close_engines(list(procs.values()))
    else:
        await engines.release(list(procs.values()), end.termination, cpus)


def finish_record(spec: GameSpec, start_board: chess.Board, moves: list[str],
                  comments: list[str], end: _End, started: datetime,
                  played_s: float | None = None, **kwargs: Any) -> GameRecord:
    """The record of a game the referee played, ended now (runner.domain.gamerecord);
    ``played_s``: how long it took to play (None: not known)."""
    record = game_record(spec, start_board, moves, comments, end, started, played_s,
                         finished=datetime.now(UTC), **kwargs)
    LOG.info("game %s %s - %s: %s {%s}", spec.round_label, spec.white.name, spec.black.name,
             end.result, end.reason)
    return record


def _resume_board(start_board: chess.Board, resume: ResumePoint,
                  mobility: RMobility | None = None
                  ) -> tuple[chess.Board, list[str], list[str], list[str]]:
    """(position reached, moves, comments, SAN) of the logged game ``resume`` goes on from;
    ``mobility`` (fresh) counts the position after each of its moves."""
    board = start_board.copy(stack=False)
    sans = []
    for uci in resume.moves:
        try:
            move = board.parse_uci(uci)
        except ValueError:
            raise RefereeError(f"cannot resume: logged move {uci!r} is illegal in {board.fen()}") from None
        sans.append(board.san(move))
        resets = board.is_zeroing(move)
        board.push(move)
        if mobility is not None:
            mobility.played(board, resets)
    comments = list(resume.comments) + [""] * (len(resume.moves) - len(resume.comments))
    return board, list(resume.moves), comments[:len(resume.moves)], sans


def _clock_text(clock: Clock) -> str:
    if clock.tc.infinite:
        return "-"
    minutes, seconds = divmod(clock.remaining, 60)
    return f"{int(minutes)}:{seconds:04.1f}"


def _clock_ms(clock: Clock) -> int | None:
    return None if clock.tc.infinite else int(round(clock.remaining * 1000))


# the event's config parts as JSON for GameStarted (spec_to_json's memo: the same engines,
# time control and adjudication objects in every game's spec; new ones when Gpus hands the
# engines over, hence the bound)
_SPEC_JSON: PartsMemo = {}
_SPEC_JSON_KEPT = 32


def _emit_start(emit: Emit, spec: GameSpec, procs: dict[chess.Color, EngineProcess],
                start_board: chess.Board, book: list[str], book_sans: list[str], started: datetime,
                clocks: dict[chess.Color, Clock], attempt: int,
                book_fens: Sequence[str], resume: ResumePoint | None = None,
                worker: str = "") -> None:
    """GameStarted, then a MovePlayed for each book ply (no engine data, clocks untouched).

    A resumed game's earlier moves are in its log already: only GameStarted is emitted.
    ``book_fens``: the FEN after each book ply (from :func:`_start_board`)."""
    def id_name(color: chess.Color) -> str:
        proc = procs.get(color)
        return str(proc.protocol.id.get("name", "")) if proc is not None else ""

    white_ms, black_ms = _clock_ms(clocks[chess.WHITE]), _clock_ms(clocks[chess.BLACK])
    now_ms = int(time.time() * 1000)
    if len(_SPEC_JSON) > _SPEC_JSON_KEPT:
        _SPEC_JSON.clear()
    emit(GameStarted(
        game_id=spec.game_id, white=spec.white.name, black=spec.black.name,
        white_id=id_name(chess.WHITE), black_id=id_name(chess.BLACK),
        start_time=started.isoformat(timespec="milliseconds"), start_fen=fen(start_board),
        book_plies=resume.book_plies if resume is not None else len(book),
        white_clock_ms=white_ms, black_clock_ms=black_ms,
        resumed_from_ply=resume.ply if resume is not None else 0,
        attempt=attempt, spec=spec_to_json(spec, _SPEC_JSON), worker=worker, at_ms=now_ms,
        played_by=resume.workers if resume is not None else ()))
    if resume is not None:
        return
    for ply, (uci, san, after) in enumerate(zip(book, book_sans, book_fens, strict=True), 1):
        emit(MovePlayed(game_id=spec.game_id, ply=ply, uci=uci, san=san, fen=after,
                        white_clock_ms=white_ms, black_clock_ms=black_ms, book=True,
                        comment="book", attempt=attempt, at_ms=now_ms))


# the moves after the first " pv ", up to the first token that is not a UCI move
_UCI_PV = re.compile(r"(?:^|\s)pv(?=\s|$)((?:\s+[a-h][1-8][a-h][1-8][qrbn]?(?=\s|$))*)")
_MOVE_NUMBER = re.compile(r"^\d+\.+$")


def _pv(line: str | None, board: chess.Board, xboard: bool) -> tuple[str, ...]:
    """The PV of the engine's last search line, as UCI moves (``board``: before the move).

    UCI PVs are taken as sent (checked for shape only); XBoard PVs are SAN and are read on a
    copy of the board, up to the first token that is not a legal move.
    """
    if not line:
        return ()
    if not xboard:
        found = _UCI_PV.search(line)
        return tuple(found.group(1).split()) if found else ()
    tokens = line.split()
    pos = board.copy(stack=False)
    pv = []
    for token in tokens[4:]:  # ply score time nodes, then the PV (maybe after seldepth/nps)
        token = token.rstrip("!?+#")
        if _MOVE_NUMBER.match(token):
            continue  # "12." / "12..." inside a SAN PV
        if not token or token.isdigit() or token[0] in "({<":
            if pv:  # numbers before the PV are seldepth/nps/tbhits; inside it, the end
                break
            continue
        try:
            move = pos.parse_san(token)
        except ValueError:
            if pv:
                break
            continue
        pv.append(move.uci())
        pos.push(move)
        if len(pv) >= 40:
            break
    return tuple(pv)


class _NotReady(Exception):
    """The engine did not get ready for ``go`` (``isready``/``ping`` unanswered) in time."""


async def _play_move(proto: TimedUciProtocol | TimedXBoardProtocol, board: chess.Board,
                     limit: chess.engine.Limit, game_id: int, timeout: float,
                     ready_timeout: float, *, position: str = "",
                     new_game: bool = False, ponder: bool = False,
                     go: str | None = None) -> chess.engine.PlayResult:
    """One move, with its hard deadline ``timeout`` counted from sending ``go``.

    UCI engines get ``position`` (the game so far) and ``go`` through the lean UciMove
    (runner.play.uci), ``ucinewgame`` + ``isready`` first when ``new_game``; XBoard engines
    go through python-chess's ``play`` (``new``/``ping`` before their first move). What is
    sent before ``go`` is not on the clock, as for cutechess; an engine still not ready after
    ``ready_timeout`` raises :class:`_NotReady` (a stall). Raises TimeoutError when the move
    has not come ``timeout`` seconds after ``go``. ``go``: ``go_line(limit)``, when the
    caller has it already.
    """
    if isinstance(proto, TimedUciProtocol):
        return _played(await _uci_exchange(UciMove(  # type: ignore[arg-type]
            proto, position, go or go_line(limit), new_game, board.turn, timeout=timeout,
            ready_timeout=ready_timeout)))
    went = proto.expect_go()
    task: asyncio.Future[Any] = asyncio.ensure_future(
        proto.play(board, limit, game=game_id, info=_INFO, ponder=ponder))  # hard / easy
    try:
        await asyncio.wait({task, went}, timeout=ready_timeout,
                           return_when=asyncio.FIRST_COMPLETED)
        if not went.done():
            if task.done():
                return _played(task.result())  # failed (or answered) before go: its own error
            raise _NotReady
        remaining = went.result() + timeout - time.monotonic()
        return _played(await asyncio.wait_for(task, max(remaining, 0.0)))
    finally:
        went.cancel()
        if not task.done():
            task.cancel()


async def _uci_exchange(move: UciMove) -> UciReply | None:
    """``move``'s exchange (runner.play.uci): its reply; :class:`_NotReady` when the engine
    was not ready for ``go`` in time; the move ended when the caller is cancelled."""
    try:
        return await move.start()
    except NotReady:
        raise _NotReady from None
    except asyncio.CancelledError:
        move.end()
        raise


def _played(reply: chess.engine.PlayResult | UciReply) -> chess.engine.PlayResult:
    if isinstance(reply, chess.engine.PlayResult):
        return reply
    move = None
    if reply.move not in (None, "(none)", "0000"):
        try:
            move = chess.Move.from_uci(reply.move)
        except ValueError:
            raise chess.engine.EngineError(f"invalid bestmove {reply.move!r}") from None
    ponder = None
    if reply.ponder:
        with contextlib.suppress(ValueError):
            ponder = chess.Move.from_uci(reply.ponder)
    return chess.engine.PlayResult(move, ponder, reply.info)  # type: ignore[arg-type]


async def _game_loop(*args: Any, **kwargs: Any) -> _End:
    """The moves of the game (:func:`_play_moves`); the engines that still ponder when it
    ends are stopped (or dropped with the game when it is cancelled or fails)."""
    pondering: dict[chess.Color, Pondering] = {}
    try:
        end = await _play_moves(*args, pondering=pondering, **kwargs)
    except BaseException:
        drop_pondering(pondering)
        raise
    await stop_pondering(pondering)
    return end


async def _adjudicator(spec: GameSpec, resume: ResumePoint | None) -> Adjudicator:
    """The game's adjudicator, with the TCEC rule counts as they stood at the interruption
    when the game is resumed."""
    tbc = spec.adjudication.tablebases
    # opening the Syzygy tables reads their directories (once per process): off the loop
    tablebase = await asyncio.to_thread(open_tablebase, tbc) \
        if tbc is not None and tbc.paths else None
    adjudicator = Adjudicator(spec.adjudication, tablebase)
    if resume is not None:
        if adjudicator.draw_window is not None:
            adjudicator.draw_window.count = resume.draw_plies
        if resume.win_side is not None:
            adjudicator.win_count = resume.win_plies
            adjudicator.win_side = chess.WHITE if resume.win_side == "white" else chess.BLACK
    return adjudicator


def _fixed_limits(spec: GameSpec, procs: dict[chess.Color, EngineProcess],
                  clocks: dict[chess.Color, Clock]
                  ) -> dict[chess.Color, tuple[chess.engine.Limit, str | None]]:
    """A limit without the clocks in it (Nodes, Depth, MoveTime, or no time control) is the
    same at every move: made once per game, with its go line, for each engine that has one."""
    fixed: dict[chess.Color, tuple[chess.engine.Limit, str | None]] = {}
    for color, proc in procs.items():
        if _without_clocks(spec, proc.config):
            limit = _limit(spec, proc.config, clocks, color)
            fixed[color] = (limit, go_line(limit))
    return fixed


def _failed_move(exc: BaseException, proc: EngineProcess, board: chess.Board, color: chess.Color,
                 infinite: bool) -> _End:
    """The game's end when asking ``proc`` for its move raised ``exc``."""
    if isinstance(exc, _NotReady | NotReady):
        proc.kill()
        return _stalled(board, color)
    if isinstance(exc, TimeoutError):
        proc.kill()
        if infinite and proc.config.movetime_ms is None:
            return _stalled(board, color)
        return _flag_fell(board, color)
    if isinstance(exc, chess.engine.EngineTerminatedError) or not proc.alive:
        return _disconnected(color)
    text = proc.protocol.last_move_text
    if text is None:  # protocol error without a move: treat it as an illegal reply
        LOG.warning("%s: %s", proc.config.name, exc)
        text = "(none)"
    return _illegal(color, text)


def _move_event(g: _Plies, uci: str, san: str, ms: int, cp: int | None, mate: int | None,
                depth: int | None, info: dict[str, Any], pv: Any, comment: str) -> MovePlayed:
    """The MovePlayed event of the move just pushed on ``g.board`` (ply ``len(g.moves)``),
    ``ms`` on the mover's clock, its score's ``score()`` and ``mate()`` (both None without
    one), its ``depth``; every field passed in place (no keyword matched per ply)."""
    adjudicator = g.adjudicator
    draw = adjudicator.draw_window
    if g.infinite:
        white_ms = black_ms = None
    else:  # round(x) of a float is the int int(round(x)) is
        clocks = g.clocks
        white_ms = round(clocks[chess.WHITE].remaining * 1000)
        black_ms = round(clocks[chess.BLACK].remaining * 1000)
    get = info.get
    return MovePlayed(g.spec.game_id, len(g.moves), uci, san, fen(g.board), white_ms, black_ms,
                      ms, False, cp, mate, depth, get("seldepth"), get("nodes"), get("nps"),
                      get("tbhits"), pv, comment, int(time.time() * 1000),
                      draw.count if draw is not None else 0, adjudicator.win_count, g.attempt)


def _move_timeout(infinite: bool, engine: EngineConfig, clock: Clock, slack: float,
                  stall_timeout: float) -> float:
    """How long to wait for the move: the clock (or the move time) and ``slack``, else the
    stall timeout (no clock at all)."""
    if not infinite:
        return clock.remaining + slack
    if engine.movetime_ms is not None:
        return engine.movetime_ms / 1000 + slack
    return stall_timeout


def _time_spent(proto: Any, called: float, now: float) -> float:
    """The move's time: from ``go`` sent to the move read when the protocol stamped both,
    else from the call (``called``) to ``now``."""
    if proto.go_sent is not None and proto.move_received is not None \
            and proto.move_received >= proto.go_sent:
        return proto.move_received - proto.go_sent  # type: ignore[no-any-return]
    return now - called


def _in_time(infinite: bool, engine: EngineConfig, clock: Clock, elapsed: float,
             margin: float) -> bool:
    """Charge ``elapsed`` to the clock; False when the flag fell (or the move time was exceeded)."""
    if not infinite:
        return clock.spend(elapsed, margin)
    return engine.movetime_ms is None or elapsed <= engine.movetime_ms / 1000 + margin


def _refused(move: chess.Move | None, resigned: bool, board: chess.Board, color: chess.Color,
             proto: Any) -> _End | None:
    """The game's end when the reply (``move``, or ``resigned``) is a resignation or no move
    that can be played on ``board`` (none, a null move, not pseudo-legal), else None. A
    pseudo-legal move that leaves the mover's king attacked is found as it is pushed
    (:func:`_push`)."""
    if resigned:
        return _End(_win_for(not color), f"{SIDE[color]} resigns")
    if move is None or not move or not (_plainly_pseudo_legal(board, move)
                                        or board.is_pseudo_legal(move)):
        return _illegal_reply(color, proto, move)
    return None


_SQUARES, _KING_STEPS, _PAWN_ATTACKS = chess.BB_SQUARES, chess.BB_KING_ATTACKS, chess.BB_PAWN_ATTACKS
_DOUBLE_FROM = {chess.WHITE: chess.BB_RANK_2, chess.BLACK: chess.BB_RANK_7}


def _plainly_pseudo_legal(board: chess.Board, move: chess.Move) -> bool:
    """True for a move python-chess's ``is_pseudo_legal`` surely takes, seen from the bitboards
    at once: the side to move's piece to a square not its own, a king's step, a pawn's push
    or capture short of the last rank, another piece's attack (most moves); False: not
    known (a castling, an en passant or a promotion among them): ask python-chess, whose
    search for those (its castling moves at every king move) this spares."""
    if move.promotion or move.drop:
        return False
    turn = board.turn
    ours = board.occupied_co[turn]
    start, to = move.from_square, move.to_square
    from_mask, to_mask = _SQUARES[start], _SQUARES[to]
    if not ours & from_mask or ours & to_mask:
        return False
    if board.pawns & from_mask:
        if to_mask & chess.BB_BACKRANKS:
            return False
        if _PAWN_ATTACKS[turn][start] & to_mask:  # (an en passant capture's square is empty)
            return bool(board.occupied_co[not turn] & to_mask)
        step = 8 if turn else -8
        if to == start + step:
            return not board.occupied & to_mask
        return (to == start + 2 * step and bool(_DOUBLE_FROM[turn] & from_mask)
                and not board.occupied & (to_mask | _SQUARES[start + step]))
    if board.kings & from_mask:
        return bool(_KING_STEPS[start] & to_mask)
    return bool(board.attacks_mask(start) & to_mask)


def _illegal_reply(color: chess.Color, proto: Any, move: chess.Move | None) -> _End:
    """``color`` loses by the illegal reply ``move``, named as the engine wrote it."""
    return _illegal(color, proto.last_move_text or (move.uci() if move else "(none)"))


def _push(board: chess.Board, move: chess.Move, mobility: RMobility | None) -> str | None:
    """Play the pseudo-legal ``move``: its SAN; None, the board as it was, when it is illegal.

    python-chess's ``is_legal`` is ``is_pseudo_legal`` (:func:`_refused`) and the mover's
    king not attacked after the move: asked here after the push (``was_into_check``), which
    spares a pin search. Its position's r-mobility is counted at the game's end, and only
    if it is drawn (:meth:`RMobility.settle`): a ply generates no legal-move count."""
    san = board.san_and_push(move)
    if board.was_into_check():
        board.pop()
        return None
    if mobility is not None:
        mobility.deferred(board.halfmove_clock == 0)  # a pawn move or a capture reset it
    return san


def _moves_left(san: str, board: chess.Board) -> int | None:
    """What is known, without generating moves, of the legal moves left to the side to move
    on ``board`` after the move ``san`` (python-chess's SAN): none after a mate (``#``), some
    after a check (``+``) and, out of check, some when a pawn of it can push
    (:func:`pawn_can_push`) or its king can step to a free square (:func:`king_can_step`):
    most positions; None: not known."""
    last = san[-1]
    if last == "#":
        return 0
    return 1 if last == "+" or pawn_can_push(board) or king_can_step(board) else None


async def _settle_mobility(mobility: RMobility, board: chess.Board, result: str) -> None:
    """Count the game's deferred r-mobility positions (a draw's, since its last reset), on a
    copy of the last position in a thread: the loop serves the other games meanwhile."""
    if mobility.pending and result not in (WHITE_WIN, BLACK_WIN):
        await asyncio.to_thread(mobility.settle, board.copy(stack=mobility.pending))


def _ponder_next(pondering: dict[chess.Color, Pondering], color: chess.Color,
                 proto: TimedUciProtocol, board: chess.Board, expected: chess.Move | None,
                 position: str, moves: list[str], limit: chess.engine.Limit,
                 ready_timeout: float) -> None:
    """Start the engine of ``color`` pondering on its expected reply (runner.play.ponder)."""
    started = start_pondering(proto, board, expected, position, moves, limit, color, ready_timeout)
    if started is not None:
        pondering[color] = started


class _Plies:
    """What the move loop of one game works on (both paths: Python's and the relay's)."""

    __slots__ = ("spec", "board", "procs", "moves", "comments", "sans", "clocks", "emit",
                 "attempt", "move_data", "mobility", "adjudicator", "position", "margin",
                 "infinite", "stall_timeout", "grace", "ready_timeout", "engaged", "unready",
                 "fixed", "repetitions", "wanted", "emit_move")

    def __init__(self, spec: GameSpec, board: chess.Board, procs: dict[chess.Color, EngineProcess],
                 moves: list[str], comments: list[str], sans: list[str],
                 clocks: dict[chess.Color, Clock], adjudicator: Adjudicator, **more: Any):
        self.spec, self.board, self.procs, self.moves = spec, board, procs, moves
        self.comments, self.sans, self.clocks, self.adjudicator = comments, sans, clocks, adjudicator
        self.emit: Emit | None = more["emit"]
        self.attempt: int = more["attempt"]
        self.move_data: list[MovePlayed] | None = more["move_data"]
        # each ply's MovePlayed: made when the emit or the record takes it, emitted through
        # the emit's move path when it has one (runner.play.backend.Emit)
        self.wanted = self.emit is not None or self.move_data is not None
        self.emit_move: Callable[[MovePlayed], None] | None = getattr(self.emit, "move", self.emit)
        self.mobility: RMobility | None = more["mobility"]
        self.stall_timeout: float = more["stall_timeout"]
        self.grace: float = more["grace"]
        self.ready_timeout: float = more["ready_timeout"]
        self.margin = spec.time_margin_ms / 1000
        self.infinite = spec.time_control.infinite
        # + " moves ..." (the whole game) per move; Chess960 in Shredder-FEN, as python-chess sends it
        self.position = position_line(chess960_fen(board.root()) if board.chess960
                                      else fen(board.root()))
        self.engaged: set[chess.Color] = set()  # engines that had ucinewgame
        self.unready: dict[chess.Color, Exception] = {}  # not ready for it (_new_game)
        self.fixed = _fixed_limits(spec, procs, clocks)
        self.repetitions = RepetitionWindow()  # fed every ply the game plays from here

    def timeout(self, color: chess.Color) -> float:
        """How long ``color``'s move may take from its ``go`` (:func:`_move_timeout`)."""
        return _move_timeout(self.infinite, self.procs[color].config, self.clocks[color],
                             self.margin + self.grace, self.stall_timeout)

    def stop_timeout(self, color: chess.Color) -> float:
        return self.procs[color].config.startup_timeout_s or self.ready_timeout


async def _play_moves(spec: GameSpec, board: chess.Board, procs: dict[chess.Color, EngineProcess],
                      moves: list[str], comments: list[str], stall_timeout: float, grace: float,
                      ready_timeout: float = STARTUP_TIMEOUT, *, clocks: dict[chess.Color, Clock],
                      emit: Emit | None = None, attempt: int = 1, resume: ResumePoint | None = None,
                      move_data: list[MovePlayed] | None = None, sans: list[str] | None = None,
                      pondering: dict[chess.Color, Pondering], mobility: RMobility | None = None) -> _End:
    """The per-ply loop: ask the engine on move, check and record its move, adjudicate;
    the game's end (an engine failing, a flag, an illegal move, a rule) is returned.

    Where runner.play.relay can take the game (UCI on both sides, no pondering, the compiled
    pipes), both engines get ``ucinewgame`` + ``isready`` at once (:func:`_new_game`) and
    the moves, the first one on, are relayed below Python until the game ends or the referee
    does not follow the relay; the rest, and a game the relay cannot take, is Python's."""
    g = _Plies(spec, board, procs, moves, comments, [] if sans is None else sans, clocks,
               await _adjudicator(spec, resume), emit=emit, attempt=attempt,
               move_data=move_data, mobility=mobility, stall_timeout=stall_timeout,
               grace=grace, ready_timeout=ready_timeout)
    if not (spec.white.ponder or spec.black.ponder) and pipes.native() is not None \
            and _both_uci(procs):
        end = await _new_game(g)
        if end is not None:
            return end
        relay = None if g.unready else \
            open_relay(spec, procs, {c: go for c, (_, go) in g.fixed.items() if go})
        if relay is not None:
            try:
                end = await _relay_moves(g, relay)
            finally:
                relay.close()
            if end is not None:
                return end
    return await _python_moves(g, pondering)


async def _new_game(g: _Plies) -> _End | None:
    """Both engines' ``ucinewgame`` + ``isready`` (runner.play.uci) at once, each within
    its ready timeout, before the first ``go``: the game's end when the side to move was
    not ready (as :func:`_python_moves` ends it). The other's failure is kept in
    ``g.unready``, met at its first turn (after the first move, as if it were asked then).
    Both exchanges are driven by their engines' output in this task: no task made for them."""
    colors = (g.board.turn, not g.board.turn)
    exchanges = [UciMove(g.procs[c].protocol, "", None, True, c, ready_timeout=g.stop_timeout(c))
                 for c in colors]
    answers: dict[chess.Color, asyncio.Future[UciReply | None]] = {}
    for color, exchange in zip(colors, exchanges, strict=True):
        try:
            answers[color] = exchange.start()
        except chess.engine.EngineError as exc:  # dead, or not idle
            g.unready[color] = exc
    try:
        for color, answer in answers.items():
            try:
                await answer
            except (NotReady, chess.engine.EngineError) as exc:
                g.unready[color] = exc
            else:
                g.engaged.add(color)
    except BaseException:  # cancelled (a TD's stop): neither exchange goes on
        for exchange in exchanges:
            exchange.end()
            if exchange.result.done() and not exchange.result.cancelled():
                exchange.result.exception()  # (retrieved: no "never retrieved" warning)
        raise
    mover = colors[0]
    if mover in g.unready:
        return _failed_move(g.unready[mover], g.procs[mover], g.board, mover, g.infinite)
    return None


async def _python_moves(g: _Plies, pondering: dict[chess.Color, Pondering]) -> _End:
    """The moves played through runner.play.uci (and python-chess's XBoard) to the game's
    end: ``ucinewgame`` + ``isready`` first for an engine that has not had them."""
    spec, board, procs, moves, clocks = g.spec, g.board, g.procs, g.moves, g.clocks
    engaged, fixed = g.engaged, g.fixed
    while True:
        color = board.turn
        proc = procs[color]
        engine = proc.config
        timeout = g.timeout(color)
        limit, go = fixed.get(color) or (_limit(spec, engine, clocks, color), None)
        proto = proc.protocol
        called = time.monotonic()
        new_game = color not in engaged
        if new_game:
            if color in g.unready:  # not ready for the game (:func:`_new_game`)
                return _failed_move(g.unready[color], proc, board, color, g.infinite)
            engaged.add(color)
        ponder = pondering.pop(color, None)
        try:
            if ponder is not None and moves and moves[-1] == ponder.expected:
                played = _played(await ponder_hit(ponder, timeout))
            else:
                if ponder is not None:  # it pondered on another move: stopped, not on its clock
                    await ponder_miss(ponder, g.stop_timeout(color))
                played = await _play_move(proto, board, limit, spec.game_id, timeout,
                                          g.stop_timeout(color),
                                          position=g.position + " moves " + " ".join(moves)
                                          if moves else g.position, new_game=new_game,
                                          ponder=engine.ponder, go=go)
        except (_NotReady, NotReady, TimeoutError, chess.engine.EngineError) as exc:
            return _failed_move(exc, proc, board, color, g.infinite)
        elapsed = _time_spent(proto, called, time.monotonic())
        end = await _take_move(g, color, played.move, played.info, elapsed,
                               proto.take_pv_line(), played.resigned)
        if end is not None:
            return end
        if engine.ponder and isinstance(proto, TimedUciProtocol):
            _ponder_next(pondering, color, proto, board, played.ponder, g.position, moves,
                         _limit(spec, engine, clocks, color), g.stop_timeout(color))


def _both_uci(procs: dict[chess.Color, EngineProcess]) -> bool:
    return all(isinstance(p.protocol, TimedUciProtocol) for p in procs.values())


async def _take_move(g: _Plies, color: chess.Color, move: chess.Move | None,
                     info: chess.engine.InfoDict, elapsed: float,
                     pv: str | tuple[str, ...] | None, resigned: bool = False) -> _End | None:
    """``color``'s reply (``move`` and the search's ``info``, or ``resigned``: a
    PlayResult's), ``elapsed`` on its clock: charged, checked, pushed, recorded and
    adjudicated; the game's end, or None when it goes on. ``pv``: the PV's moves, or the
    search line it is read from (:func:`_pv`)."""
    board, proc = g.board, g.procs[color]
    engine = proc.config
    if not _in_time(g.infinite, engine, g.clocks[color], elapsed, g.margin):
        return _flag_fell(board, color)
    if resigned or move is None or not (_plainly_pseudo_legal(board, move)
                                        or board.is_pseudo_legal(move)):
        return _refused(move, resigned, board, color, proc.protocol)
    wanted = g.wanted
    if wanted and not isinstance(pv, tuple):
        pv = _pv(pv, board, engine.protocol == "xboard")
    san = _push(board, move, g.mobility)
    if san is None:
        return _illegal_reply(color, proc.protocol, move)
    uci = move.uci()
    g.moves.append(uci)
    g.sans.append(san)
    # the mover's score (searched_info's rule: none reported at depth 0), its parts once
    depth = info.get("depth")
    pov = info.get("score") if depth != 0 else None
    if pov is None:
        score = cp = mate = None
    else:
        score = pov.relative if pov.turn == color else -pov.relative
        cp, mate = score.score(), score.mate()
    ms = round(elapsed * 1000)  # (the comment's time and the event's, as format_seconds rounds)
    comment = _comment(cp, mate, depth, ms)
    g.comments.append(comment)
    end = natural_end(board, _moves_left(san, board), g.repetitions.played(board))
    verdict = None
    adjudicator = g.adjudicator
    if end is None:
        if adjudicator.tablebase is not None and adjudicator.will_probe(board):
            # a Syzygy probe reads table files: off the loop
            verdict = await asyncio.to_thread(adjudicator.update, board, score)
        else:
            verdict = adjudicator.update(board, score)
    if wanted:
        event = _move_event(g, uci, san, ms, cp, mate, depth, info, pv, comment)
        if g.move_data is not None:
            g.move_data.append(event)
        if g.emit_move is not None:
            g.emit_move(event)
    if end is not None:
        return end
    if verdict is not None:
        return _from_verdict(verdict)
    return None


async def _relay_moves(g: _Plies, relay: MoveRelay) -> _End | None:
    """The moves relayed below Python (runner.play.relay), each checked here as
    :func:`_take_move` checks any: the game's end, or None when the referee leaves the
    relay (a move text python-chess writes otherwise) and the game goes on in Python."""
    board, procs, moves, clocks = g.board, g.procs, g.moves, g.clocks
    color = board.turn
    relay.arm(g.position + " moves " + " ".join(moves) if moves else g.position, g.margin)
    go_at = relay.start(color, None, clocks)
    while True:
        proc = procs[color]
        proto = proc.protocol
        try:
            event = await relay.next(color, go_at, g.timeout)
        except (TimeoutError, chess.engine.EngineError) as exc:  # both engines go (not kept)
            return _failed_move(exc, proc, board, color, g.infinite)
        text, ponder, info, move = relay_reply(event, color)
        proto.go_sent, proto.move_received = event[GO_STAMP], event[STAMP]
        proto.last_move_text = text or ""
        if move is None:  # not relayed: read as runner.play.uci's reply is
            try:
                played = _played(UciReply(text, info, None, ponder))
            except chess.engine.EngineError as exc:
                return _failed_move(exc, proc, board, color, g.infinite)
            move, info = played.move, played.info
        end = await _take_move(g, color, move, info, _time_spent(proto, 0.0, 0.0),
                               event[PV] or ())
        if event[REST]:
            proto.bytes_read(event[REST], event[STAMP])
        if end is not None or moves[-1] != text:  # over, or not the text it relayed
            await relay.settle(g.stop_timeout(not color))
            return end
        color = not color
        go_at = relay.pass_turn(event, color, text, clocks)


class RefereeBackend:
    """The built-in referee as a backend (runner.play.backend): engines started here, a game
    continued from a logged position, the run's engine logs and kept engines used."""

    can_resume = True
    local_engines = True
    engine_resources = True

    async def __call__(self, spec: GameSpec, *, emit: Emit, on_process: Callable[[int, float], Any],
                       attempt: int, **more: Any) -> GameRecord:
        return await play_game(spec, emit=emit, on_process=on_process, attempt=attempt, **more)

    async def aclose(self) -> None:
        return None


__all__ = ["RefereeBackend", "RefereeError", "build_pgn", "format_score", "format_seconds",
           "move_comment", "natural_end", "play_game"]

