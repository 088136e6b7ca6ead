"""cutechess-cli backend: build the command line, run it, parse its output into GameRecords.

With ``Backend: cutechess`` the runner keeps pairing, state and resume, and hands each game
(or each two-game match) to its own cutechess-cli process. What cutechess prints
(``Finished game N (A vs B): RESULT {REASON}``) and the PGN it writes with ``-pgnout`` are
turned into the same :class:`~runner.domain.models.GameRecord` the built-in referee produces.

The TCEC draw rule: upstream cutechess's ``-draw`` has no material gate and is reset by
pawn moves and captures, so it is never passed. When ``Adjudication.TcecDraw`` is set the
exact TCEC rule is applied afterwards to the evaluations cutechess wrote into the PGN
(``{+0.12/17 0.31s}``); if it fires, the game is cut at the ply where it fired and scored
``1/2-1/2 {Draw by adjudication: TCEC draw rule}`` (see docs/cutechess.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import math
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess
import chess.pgn
import psutil

from runner.domain.adjudication import TcecDrawWindow
from runner.domain.events import GameEvent, GameFinished, GameStarted, MovePlayed, spec_to_json
from runner.domain.models import (
    DRAW,
    RESULTS,
    TIEBREAK_PAIR_TAG,
    WITHDRAWN_TAG,
    GameRecord,
    GameSpec,
    Opening,
)
from runner.domain.pgn import read_games, write_game
from runner.domain.rmobility import record_rmobility
from runner.domain.timecontrol import Clock
from runner.domain.variant import board_at, is_960
from runner.play.cutechess_live import LiveMoves, is_debug_line
from runner.play.processes import start_process

if TYPE_CHECKING:
    from runner.config.typed import EngineConfig, TcecDrawRule

log = logging.getLogger(__name__)

NOT_INSTALLED_REASON = ("cutechess-cli not found on PATH and CUTECHESS_CLI not set (it is on no package "
                        "registry: build it from its public repository, tag v1.5.1)")
TCEC_DRAW_REASON = "Draw by adjudication: TCEC draw rule"
TCEC_WIN_DETAILS = "TCEC win rule"
_CHILD_POLL_S = 0.5


class CutechessError(RuntimeError):
    """cutechess-cli could not play the game (missing binary, bad option, engine not started)."""


# --------------------------------------------------------------------------- binary check


def resolve_binary(path: str) -> str | None:
    """Absolute path of the cutechess-cli executable, or None when it cannot be found."""
    if os.sep in path:
        p = Path(os.path.expanduser(path))
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    return shutil.which(path)


def check_binary(path: str, timeout: float = 10.0) -> str | None:
    """None when ``path`` is a working cutechess-cli; otherwise a one-line reason why not."""
    if os.sep in path:
        p = Path(os.path.expanduser(path))
        if not p.exists():
            return f"{path!r} not found (expected the cutechess-cli executable)"
        if not p.is_file() or not os.access(p, os.X_OK):
            return f"{path!r} is not an executable file (expected the cutechess-cli executable)"
        resolved = str(p)
    else:
        found = shutil.which(path)
        if found is None:
            return (f"{path!r} not found on PATH (install cutechess-cli or set CutechessPath "
                    "to its full path)")
        resolved = found
    try:
        done = subprocess.run([resolved, "--version"], stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return f"'{resolved} --version' did not finish within {timeout:g} s"
    except OSError as exc:
        return f"cannot run {resolved!r}: {exc}"
    output = (done.stdout + done.stderr).strip()
    first = output.splitlines()[0] if output else "(no output)"
    if done.returncode != 0:
        return f"'{resolved} --version' failed with exit status {done.returncode}: {first}"
    if "cutechess" not in output.lower():
        return f"{resolved!r} does not look like cutechess-cli: '--version' printed {first!r}"
    return None


# --------------------------------------------------------------------------- command line


def _option_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def engine_args(engine: EngineConfig, *, per_engine_tc: str | None) -> list[str]:
    """``-engine`` and its ``key=value`` words for one engine."""
    words = ["-engine", f"name={engine.name}", f"cmd={engine.command}"]
    words += [f"arg={a}" for a in engine.args]
    if engine.working_dir:
        words.append(f"dir={engine.working_dir}")
    words.append(f"proto={engine.protocol}")
    if engine.movetime_ms is not None:
        words.append(f"st={engine.movetime_ms / 1000:g}")
    elif per_engine_tc is not None:
        words.append(f"tc={per_engine_tc}")
    if engine.nodes is not None:
        words.append(f"nodes={engine.nodes}")
    if engine.depth is not None:
        words.append(f"depth={engine.depth}")
    words += [f"option.{k}={_option_value(v)}" for k, v in engine.options.items()]
    if engine.ponder:
        words.append("ponder")  # cutechess's own pondering (Ponder: true)
    return words


def build_command(
    specs: Sequence[GameSpec],
    *,
    pgn_out: Path,
    cutechess_path: str = "cutechess-cli",
    opening_file: tuple[Path, str] | None = None,
    srand: int | None = None,
    debug: bool = False,
) -> list[str]:
    """argv for one game (one spec) or one two-game match (two specs, colours reversed).

    ``opening_file`` is ``(path, "pgn"|"epd")`` as written by :func:`write_opening_file`.
    ``debug``: ``-debug all``, cutechess prints its engine traffic (moves live, see
    runner.play.cutechess_live).
    """
    if len(specs) not in (1, 2):
        raise ValueError(f"cutechess plays 1 game or a 2-game match, got {len(specs)} specs")
    first = specs[0]
    if len(specs) == 2:
        second = specs[1]
        if (second.white.name, second.black.name) != (first.black.name, first.white.name):
            raise ValueError("the second game of a match must reverse the colours of the first")
        if second.opening != first.opening or second.time_control != first.time_control:
            raise ValueError("both games of a match must share opening and time control")
        if second.adjudication != first.adjudication:
            raise ValueError("both games of a match must share the adjudication settings")
    tc = str(first.time_control)
    engines = (first.white, first.black)
    per_engine = any(e.movetime_ms is not None for e in engines)
    argv = [cutechess_path]
    for engine in engines:
        argv += engine_args(engine, per_engine_tc=tc if per_engine else None)
        if is_960(first.variant) and engine.protocol == "uci":
            argv.append("initstr=setoption name UCI_Chess960 value true")
    each: list[str] = []
    if not per_engine:
        each.append(f"tc={tc}")
    if first.time_margin_ms > 0:
        each.append(f"timemargin={first.time_margin_ms}")
    if each:
        argv += ["-each", *each]
    if is_960(first.variant):
        argv += ["-variant", "fischerandom"]
    if opening_file is not None:
        path, fmt = opening_file
        argv += ["-openings", f"file={path}", f"format={fmt}", "order=sequential"]
    adj = first.adjudication
    # TCEC draw rule: deliberately no -draw (applied exactly afterwards, see module doc).
    if adj.tcec_win is not None:
        argv += ["-resign", f"movecount={math.ceil(adj.tcec_win.plies / 2)}",
                 f"score={adj.tcec_win.score_cp}", "twosided=true"]
    if adj.tablebases is not None and adj.tablebases.paths:
        argv += ["-tb", os.pathsep.join(str(p) for p in adj.tablebases.paths),
                 "-tbpieces", str(adj.tablebases.max_pieces)]
        if adj.tablebases.ignore50:
            argv.append("-tbignore50")
    if adj.max_moves > 0:
        argv += ["-maxmoves", str(adj.max_moves)]
    if len(specs) == 2:
        argv += ["-games", "2", "-repeat"]
    else:
        argv += ["-games", "1"]
    argv += ["-rounds", "1", "-recover",
             "-event", first.event, "-site", first.site,
             "-srand", str(first.game_id if srand is None else srand),
             "-pgnout", str(pgn_out)]
    if debug:
        argv += ["-debug", "all"]
    return argv


def write_opening_file(opening: Opening | None, directory: Path,
                       chess960: bool = False) -> tuple[Path, str] | None:
    """Write ``opening`` as a one-game opening file; None for the standard start, no moves.

    A bare FEN with default move counters becomes an EPD line (cutechess's EPD reader keeps
    only the first four FEN fields); anything else becomes a one-game PGN. ``chess960``: a
    Chess960 start, always handed over (even position 518), X-FEN castling as python-chess
    writes it (cutechess reads X-FEN and Shredder-FEN with ``-variant fischerandom``).
    """
    if opening is None or (opening.fen is None and not opening.moves and not chess960):
        return None
    board = board_at(opening.fen, chess960)
    fen_fields = board.fen().split()
    if not opening.moves and fen_fields[4:] == ["0", "1"]:
        path = directory / "opening.epd"
        path.write_text(" ".join(fen_fields[:4]) + f' id "{opening.index}";\n', encoding="utf-8")
        return path, "epd"
    game = chess.pgn.Game()
    game.headers["Event"] = opening.name or f"opening {opening.index}"
    if opening.fen:
        game.setup(board)
    node: chess.pgn.GameNode = game
    for uci in opening.moves:
        move = chess.Move.from_uci(uci)
        if move not in node.board().legal_moves:
            raise ValueError(f"opening {opening.index}: illegal book move {uci!r}")
        node = node.add_variation(move)
    path = directory / "opening.pgn"
    path.write_text(str(game) + "\n\n", encoding="utf-8")
    return path, "pgn"


# --------------------------------------------------------------------------- stdout parsing

_STARTED_RE = re.compile(r"^Started game (\d+) of (\d+) \((.*) vs (.*)\)$")
_FINISHED_RE = re.compile(
    r"^Finished game (\d+) \((.*) vs (.*)\): (1-0|0-1|1/2-1/2|\*) \{(.*)\}$")
_TERMINATING_RE = re.compile(r"^Terminating process of engine (.*)$")
_KNOWN_PREFIXES = ("Score of ", "...      ", "Elo difference:", "SPRT:", "Player: ", '   "',
                   "Finished match", "Indexing opening suite", "Rank Name", "Started game",
                   "Finished game", "Terminating process")
_RANK_ROW_RE = re.compile(r"^\s+\d+\s+\S")


@dataclass(frozen=True)
class FinishedGame:
    """One ``Finished game`` line."""

    number: int
    white: str
    black: str
    result: str
    reason: str


@dataclass
class CutechessOutput:
    """What a cutechess-cli run printed (stdout and stderr together)."""

    started: dict[int, tuple[str, str]] = field(default_factory=dict)
    finished: list[FinishedGame] = field(default_factory=list)  # in printed order
    warnings: list[str] = field(default_factory=list)  # multi-line warnings joined with '\n'
    terminated: list[str] = field(default_factory=list)  # engines cutechess had to kill
    finished_match: bool = False
    sprt: str | None = None
    other: list[str] = field(default_factory=list)

    def game(self, number: int) -> FinishedGame | None:
        for game in self.finished:
            if game.number == number:
                return game
        return None


def parse_stdout(text: str) -> CutechessOutput:
    """Parse cutechess-cli's console output; tolerant of interleaving and odd orderings."""
    out = CutechessOutput()
    in_warning = False
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if line.startswith("Warning: "):
            out.warnings.append(line[len("Warning: "):])
            in_warning = True
            continue
        if m := _STARTED_RE.match(line):
            out.started[int(m[1])] = (m[3], m[4])
        elif m := _FINISHED_RE.match(line):
            out.finished.append(FinishedGame(int(m[1]), m[2], m[3], m[4], m[5]))
        elif m := _TERMINATING_RE.match(line):
            out.terminated.append(m[1])
        elif line.startswith("Finished match"):
            out.finished_match = True
        elif line.startswith("SPRT:"):
            out.sprt = line[len("SPRT:"):].strip()
        elif not line.strip():
            in_warning = False
            continue
        elif in_warning and not line.startswith(_KNOWN_PREFIXES) and not _RANK_ROW_RE.match(line):
            out.warnings[-1] += "\n" + line  # continuation of a multi-line warning
            continue
        elif not line.startswith(_KNOWN_PREFIXES) and not _RANK_ROW_RE.match(line):
            out.other.append(line)
        in_warning = False
    return out


# --------------------------------------------------------------------------- PGN parsing

_EVAL_RE = re.compile(r"^(?P<score>[+-]?(?:M\d+|\d+(?:\.\d+)?))/(?P<depth>\d+)(?:\s|$)")
_BOARD_ENDS = ("White mates", "Black mates", "Draw by stalemate",
               "Draw by insufficient mating material", "Draw by fifty moves rule",
               "Draw by 3-fold repetition")


def read_pgn_games(text: str) -> list[chess.pgn.Game]:
    """Every game of a cutechess PGN, in file order; raises CutechessError on broken games."""
    games: list[chess.pgn.Game] = []
    for game in read_games(io.StringIO(text)):
        if game.errors:
            raise CutechessError(f"cutechess PGN game {len(games) + 1} "
                                 f"({game.headers.get('White')} vs {game.headers.get('Black')}) "
                                 f"does not parse: {game.errors[0]}")
        games.append(game)
    return games


def comment_eval_cp(comment: str) -> int | None:
    """Centipawns of a cutechess move comment (mover's view); None for book/mate/no score."""
    m = _EVAL_RE.match(comment.strip())
    if not m or "M" in m["score"] or int(m["depth"]) <= 0:
        return None
    return round(float(m["score"]) * 100)


def _split_reason(comment: str, reason: str | None) -> tuple[str, str | None]:
    """Split cutechess's last comment ``'+M1/245 0.007s, White mates'`` into (eval, reason)."""
    comment = comment.strip()
    if reason:
        if comment == reason:
            return "", reason
        if comment.endswith(", " + reason):
            return comment[: -len(reason) - 2], reason
        return comment, reason
    head, sep, tail = comment.partition(", ")
    if sep and (_EVAL_RE.match(head) or head == "book"):
        return head, tail
    if comment and not _EVAL_RE.match(comment) and comment != "book":
        return "", comment
    return comment, None


def _parse_time(value: str | None) -> datetime | None:
    """cutechess's ``2026-11-21T23:50:21.459 UTC``."""
    if not value:
        return None
    try:
        return datetime.strptime(value.replace(" UTC", ""), "%Y-%m-%dT%H:%M:%S.%f").replace(tzinfo=UTC)
    except ValueError:
        return None


def _details(reason: str) -> str | None:
    marker = "by adjudication: "
    return reason.split(marker, 1)[1] if marker in reason else None


def record_from_pgn(game: chess.pgn.Game, finished: FinishedGame | None = None) -> GameRecord:
    """GameRecord from one cutechess PGN game (+ its ``Finished game`` line when known).

    The PGN text is left as cutechess wrote it; :func:`finalize_record` rewrites the tags.
    """
    headers = game.headers
    result = headers.get("Result", "*")
    nodes = list(game.mainline())
    comments = [node.comment.strip() for node in nodes]
    if nodes:
        last_eval, reason = _split_reason(comments[-1], finished.reason if finished else None)
        comments[-1] = last_eval
    else:
        _, reason = _split_reason(game.comment, finished.reason if finished else None)
    if finished is not None and finished.result != result:
        raise CutechessError(f"game {finished.number}: stdout says {finished.result} "
                             f"{{{finished.reason}}} but the PGN says {result}")
    if result not in RESULTS:
        raise CutechessError(f"cutechess game {headers.get('White')} vs {headers.get('Black')} "
                             f"has no result ({result!r}): it did not finish")
    start = _parse_time(headers.get("GameStartTime"))
    end = _parse_time(headers.get("GameEndTime"))
    return GameRecord(
        white=headers.get("White", "?"),
        black=headers.get("Black", "?"),
        result=result,
        reason=reason or "",
        termination=headers.get("Termination"),
        termination_details=_details(reason or ""),
        moves=[node.move.uci() for node in nodes],
        comments=comments,
        pgn=str(game),
        start_time=start.isoformat(timespec="milliseconds") if start else "",
        end_time=end.isoformat(timespec="milliseconds") if end else "",
        # one cutechess-cli process, one wall clock; a step during the game: not known
        duration_s=(end - start).total_seconds() if start and end and end >= start else None,
        start_fen=headers.get("FEN"),
    )


# --------------------------------------------------------------------------- TCEC draw rule


def tcec_draw_ply(start_fen: str | None, moves: Sequence[str], comments: Sequence[str],
                  rule: TcecDrawRule) -> int | None:
    """Ply count (1-based) after which the TCEC draw rule fires, or None.

    After each ply: gate = at most ``max_pawns`` pawns and at most ``max_pieces`` non-pawn
    pieces (kings counted); a ply without a centipawn score (book, mate, none) or outside
    the gate resets the counter; ``plies`` consecutive plies with |eval| <= ``score_cp`` fire.
    """
    board = board_at(start_fen)
    window = TcecDrawWindow(rule)
    for ply, (uci, comment) in enumerate(zip(moves, comments, strict=False), start=1):
        board.push_uci(uci)
        if window.update(board, comment_eval_cp(comment), book=comment.strip() == "book"):
            return ply
    return None


def apply_tcec_draw_rule(record: GameRecord, rule: TcecDrawRule) -> GameRecord:
    """Re-adjudicate a cutechess game with the exact TCEC draw rule (cut where it fired)."""
    ply = tcec_draw_ply(record.start_fen, record.moves, record.comments, rule)
    if ply is None:
        return record
    if ply == len(record.moves) and (record.reason in _BOARD_ENDS
                                     or record.termination_details == "SyzygyTB"):
        # The game ended on that very ply by the board or the tablebases: the built-in
        # referee checks those first too. Its other checks come after the draw rule
        # (TCEC win rule, maximal game length), so the draw rule wins over them.
        return record
    return replace(record, result=DRAW, reason=TCEC_DRAW_REASON, termination="adjudication",
                   termination_details="TCEC draw rule", moves=list(record.moves[:ply]),
                   comments=list(record.comments[:ply]))


# --------------------------------------------------------------------------- final record


def _build_pgn(record: GameRecord, cutechess_headers: chess.pgn.Headers, spec: GameSpec) -> str:
    """Rebuild the game's PGN with the runner's tags (Event, Site, Round "R.G", ...).

    Written by :func:`runner.domain.pgn.write_game`, the built-in referee's writer, so both
    backends lay their PGN out the same way (cutechess's own short comments, tags sorted).
    """
    tags = {key: value for key, value in cutechess_headers.items()
            if key not in ("Termination", "TerminationDetails", "RMobilityResult")}
    tags.update({"Event": spec.event, "Site": spec.site, "Round": spec.round_label,
                 "Result": record.result, "PlyCount": str(len(record.moves))})
    for key, value in (("Termination", record.termination),
                       ("TerminationDetails", record.termination_details),
                       ("RMobilityResult", record.rmobility)):
        if value:
            tags[key] = value
    if spec.extra_pair:
        tags[TIEBREAK_PAIR_TAG] = str(spec.extra_pair)
    if spec.withdrawn:
        tags[WITHDRAWN_TAG] = ", ".join(spec.withdrawn)
    return write_game(tags, record.start_fen, record.moves, record.comments, record.reason,
                      chess960=is_960(spec.variant))


def finalize_record(record: GameRecord, spec: GameSpec,
                    cutechess_headers: chess.pgn.Headers) -> GameRecord:
    """Apply the TCEC rules cutechess lacks, name the win rule, fill r-mobility and the PGN."""
    if (record.white, record.black) != (spec.white.name, spec.black.name):
        raise CutechessError(f"cutechess played {record.white} vs {record.black}, "
                             f"expected {spec.white.name} vs {spec.black.name}")
    adj = spec.adjudication
    if adj.tcec_draw is not None:
        record = apply_tcec_draw_rule(record, adj.tcec_draw)
    if adj.tcec_win is not None and record.reason in ("White wins by adjudication",
                                                      "Black wins by adjudication"):
        record = replace(record, reason=f"{record.reason}: {TCEC_WIN_DETAILS}",
                         termination_details=TCEC_WIN_DETAILS)
    record = replace(record, opening_index=spec.opening.index if spec.opening else None)
    record.rmobility = record_rmobility(record.start_fen, record.moves, record.result)
    record.pgn = _build_pgn(record, cutechess_headers, spec)
    return record


# --------------------------------------------------------------------------- processes


async def _report_children(handle: psutil.Process, seen: dict[int, float],
                           on_process: Callable[[int, float], None] | None) -> None:
    """Report every engine process cutechess starts (for the orchestrator's orphan sweep)."""
    def children() -> list[tuple[int, float]]:  # a walk of /proc: off the loop
        found: list[tuple[int, float]] = []
        with contextlib.suppress(psutil.Error):  # the handle refuses a reused pid
            for child in handle.children(recursive=True):
                if child.pid not in seen:
                    with contextlib.suppress(psutil.Error):
                        found.append((child.pid, child.create_time()))
        return found

    while True:
        for pid, created in await asyncio.to_thread(children):
            seen[pid] = created
            if on_process is not None:
                on_process(pid, created)
        await asyncio.sleep(_CHILD_POLL_S)


async def _read_output(stream: asyncio.StreamReader, on_line: Callable[[str], None] | None) -> bytes:
    """All of cutechess's output; each complete line also goes to ``on_line`` as it comes."""
    chunks: list[bytes] = []
    pending = b""
    while data := await stream.read(65536):
        chunks.append(data)
        if on_line is not None:
            pending += data
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                on_line(raw.decode("utf-8", "replace").rstrip("\r"))
    if on_line is not None and pending:
        on_line(pending.decode("utf-8", "replace").rstrip("\r"))
    return b"".join(chunks)


async def _run_cutechess(argv: list[str], on_process: Callable[[int, float], None] | None,
                         on_line: Callable[[str], None] | None = None) -> tuple[int, str]:
    """Run cutechess-cli in its own session; kill it and its engines on cancel.

    Like the referee's engines, cutechess gets the parent-death signal and an owner token:
    if the runner is killed with ``kill -9`` the kernel kills cutechess, and the engines it
    started (in its process group, with its token) are removed by the next start's
    :func:`runner.play.processes.sweep_orphans`. ``on_line`` gets every line of its output as
    it comes; an exception it raises ends the game (cutechess and its engines are killed).
    """
    proc = await start_process(argv)  # runner.play.processes: as every process it starts
    seen: dict[int, float] = {}
    handle = proc.handle
    if on_process is not None:
        on_process(proc.pid, proc.create_time)
    watcher = asyncio.create_task(_report_children(handle, seen, on_process)) if handle else None
    reader = asyncio.create_task(_read_output(proc.stdout, on_line))
    try:
        # Wait for cutechess itself, not for EOF: a leftover engine may hold the pipe open,
        # so watch its exit (its pidfd) instead.
        while proc.returncode is None:
            await asyncio.wait({proc.exited}, timeout=0.1)
            if reader.done() and reader.exception() is not None:
                raise reader.exception()  # type: ignore[misc]  # on_line failed: stop the game
        code = proc.returncode
    except BaseException:
        if watcher is not None:
            watcher.cancel()
        reader.cancel()
        await asyncio.wrap_future(proc.kill_tree(dict(seen)))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(proc.wait(), timeout=5)
        proc.close()
        raise
    if watcher is not None:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    # cutechess is gone (and reaped); nothing it started may outlive it (off the loop)
    await asyncio.wrap_future(proc.kill_tree(dict(seen)))
    try:
        stdout = await asyncio.wait_for(reader, timeout=10)
    except TimeoutError:
        stdout = b""
        log.warning("cutechess-cli exited but its output pipe stayed open; output lost")
    proc.close()
    return code, stdout.decode("utf-8", "replace")


def _failure(code: int, output: CutechessOutput, text: str) -> str:
    if output.warnings:
        detail = "; ".join(w.replace("\n", " ") for w in output.warnings)
    else:
        detail = " | ".join(text.strip().splitlines()[-3:]) or "no output"
    return f"cutechess-cli (exit status {code}) played no game: {detail}"


async def play_match(
    specs: Sequence[GameSpec],
    *,
    on_process: Callable[[int, float], None] | None = None,
    cutechess_path: str = "cutechess-cli",
    on_line: Callable[[str], None] | None = None,
) -> list[GameRecord]:
    """Play one game, or a two-game match with colours reversed, in one cutechess-cli process.

    Returns one record per game played, in playing order (fewer than asked only if
    cutechess stopped early; with ``-recover`` it normally plays both games). With
    ``on_line``, cutechess runs with ``-debug all`` and every line it prints (its engine
    traffic too) goes to ``on_line`` as it comes.
    """
    binary = resolve_binary(cutechess_path)
    if binary is None:
        raise CutechessError(f"CutechessPath {cutechess_path!r}: not found or not executable")
    workdir = Path(tempfile.mkdtemp(prefix="swiss-cutechess-"))
    keep = False
    try:
        opening_file = write_opening_file(specs[0].opening, workdir, is_960(specs[0].variant))
        pgn_path = workdir / "games.pgn"
        argv = build_command(specs, pgn_out=pgn_path, cutechess_path=binary,
                             opening_file=opening_file, debug=on_line is not None)
        log.debug("cutechess: %s", " ".join(argv))
        code, text = await _run_cutechess(argv, on_process, on_line)
        (workdir / "stdout.txt").write_text(text, encoding="utf-8")
        if on_line is not None:  # its own lines only, without the engine traffic
            text = "\n".join(line for line in text.split("\n") if not is_debug_line(line))
        output = parse_stdout(text)
        pgn_text = pgn_path.read_text(encoding="utf-8") if pgn_path.exists() else ""
        games = read_pgn_games(pgn_text)
        if code != 0 or not games:
            keep = True
            raise CutechessError(_failure(code, output, text) + f" (files kept in {workdir})")
        for warning in output.warnings:
            log.warning("cutechess: %s", warning.replace("\n", " "))
        return _match_records(specs, games, output)
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _match_records(specs: Sequence[GameSpec], games: list[chess.pgn.Game],
                   output: CutechessOutput) -> list[GameRecord]:
    """Pair PGN games with Finished lines (same players and result, in order) and specs."""
    unused = list(output.finished)
    records: list[GameRecord] = []
    for index, game in enumerate(games):
        if index >= len(specs):
            break
        h = game.headers
        finished = next((f for f in unused if (f.white, f.black, f.result)
                         == (h.get("White"), h.get("Black"), h.get("Result"))), None)
        if finished is not None:
            unused.remove(finished)
        record = record_from_pgn(game, finished)
        records.append(finalize_record(record, specs[index], h))
    return records


async def play_game(
    spec: GameSpec,
    *,
    emit: Callable[[GameEvent], None] | None = None,
    on_process: Callable[[int, float], None] | None = None,
    attempt: int = 1,
    cutechess_path: str = "cutechess-cli",
) -> GameRecord:
    """Play one game through cutechess-cli and return its record (same contract as the referee).

    Events: GameStarted when cutechess-cli is started (the engines' id names are not known
    then); a MovePlayed for each move as cutechess passes it on to a UCI engine, read from
    its ``-debug all`` engine traffic (runner.play.cutechess_live); and once the game is
    over a MovePlayed per ply read back from cutechess's PGN (its comments give score, depth
    and time; the clocks are replayed from the times), which replaces the live ones ply by
    ply and adds the last move, then GameFinished (docs/cutechess.md).
    """
    start_board = board_at(spec.opening.fen if spec.opening else None, is_960(spec.variant))
    tc = spec.time_control
    if emit is not None:
        emit(GameStarted(
            game_id=spec.game_id, white=spec.white.name, black=spec.black.name, white_id="",
            black_id="", start_time=datetime.now(UTC).isoformat(timespec="milliseconds"),
            start_fen=start_board.fen(), book_plies=len(spec.opening.moves) if spec.opening else 0,
            white_clock_ms=None if tc.infinite else int(tc.base * 1000),  # type: ignore[operator]
            black_clock_ms=None if tc.infinite else int(tc.base * 1000),  # type: ignore[operator]
            attempt=attempt, spec=spec_to_json(spec), at_ms=int(time.time() * 1000)))
    live = LiveMoves(spec, start_board, emit, attempt) if emit is not None else None
    records = await play_match([spec], on_process=on_process, cutechess_path=cutechess_path,
                               on_line=live.line if live is not None else None)
    record = records[0]
    if emit is not None:
        for event in moves_from_record(spec, record, start_board, attempt):
            emit(event)
        emit(GameFinished(spec.game_id, record, attempt))
    return record


class CutechessBackend:
    """cutechess-cli as a backend (runner.play.backend): it starts the engines here, but
    cannot be handed the clocks of a game in progress (docs/resume.md)."""

    can_resume = False
    local_engines = True
    engine_resources = False

    def __init__(self, cutechess_path: str) -> None:
        self.cutechess_path = cutechess_path

    async def __call__(self, spec: GameSpec, *, emit: Callable[[GameEvent], None],
                       on_process: Callable[[int, float], None] | None, attempt: int,
                       **more: Any) -> GameRecord:
        return await play_game(spec, emit=emit, on_process=on_process, attempt=attempt,
                               cutechess_path=self.cutechess_path, **more)

    async def aclose(self) -> None:
        return None


_COMMENT = re.compile(r"^(?:(?P<score>[+-]?(?:\d+\.\d+|M\d+))(?:/(?P<depth>\d+))? )?"
                      r"(?P<time>\d+(?:\.\d+)?)s$")


def moves_from_record(spec: GameSpec, record: GameRecord, start_board: chess.Board,
                      attempt: int = 1) -> list[MovePlayed]:
    """MovePlayed events for a finished game, read from its moves and cutechess comments."""
    board = start_board.copy(stack=False)
    clocks = {chess.WHITE: Clock(spec.time_control), chess.BLACK: Clock(spec.time_control)}
    events = []
    for ply, (uci, comment) in enumerate(zip(record.moves, record.comments, strict=False), 1):
        move = board.parse_uci(uci)  # a 960 castling in either notation
        mover = board.turn
        san = board.san(move)
        board.push(move)
        book = comment == "book"
        match = None if book else _COMMENT.match(comment)
        time_ms = int(round(float(match["time"]) * 1000)) if match else 0
        score_cp = mate = depth = None
        if match and match["score"]:
            text = match["score"]
            if "M" in text:
                plies = int(text.lstrip("+-M"))
                mate = (plies + 1) // 2 if not text.startswith("-") else -(plies // 2)
            else:
                score_cp = int(round(float(text) * 100))
            depth = int(match["depth"]) if match["depth"] else None
        if not book:
            clocks[mover].spend(time_ms / 1000, float("inf"))
        events.append(MovePlayed(
            game_id=spec.game_id, ply=ply, uci=uci, san=san, fen=board.fen(),
            white_clock_ms=None if spec.time_control.infinite else int(round(clocks[chess.WHITE].remaining * 1000)),
            black_clock_ms=None if spec.time_control.infinite else int(round(clocks[chess.BLACK].remaining * 1000)),
            time_ms=time_ms, book=book, score_cp=score_cp, mate=mate, depth=depth,
            comment=comment, attempt=attempt))
    return events
