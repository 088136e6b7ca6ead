"""What test modules share (no test module imports another): the one helper that writes an
event config, the scripted backend of the tournament-loop tests, and the fake-engine game
helpers of the referee tests."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import chess
import chess.pgn
import pytest
import yaml

from runner.config import AdjudicationConfig, EngineConfig
from runner.domain.events import GameStarted
from runner.domain.models import TIEBREAK_PAIR_TAG, GameRecord, GameSpec, Opening
from runner.domain.timecontrol import parse_time_control

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FAKE_UCI = HERE / "fakes" / "fake_uci.py"
DET_ENGINE = HERE / "fakes" / "det_engine.py"


# --------------------------------------------------------------------------- configs


def write_config(directory: Path, data: dict[str, Any] | str, name: str = "event.yaml") -> Path:
    """Write an event config into ``directory`` (created if missing): a dict as YAML in its
    own key order, or a string as it is. Returns the file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path


def swiss_event(directory: Path, engines: list[dict[str, Any]], *, event: str = "event",
                time_control: str = "30+0.5", concurrency: int = 2, rounds: int = 2,
                games_per_match: int = 2, max_moves: int | None = None,
                state: str = "state/swiss.json", **top: Any) -> Path:
    """The config of a small Swiss between ``engines`` (config entries, real engines with
    their limits) in listed seeding, its state at ``state``; ``top``: more top-level keys.
    Written into ``directory`` as event.yaml; returns its path."""
    data: dict[str, Any] = {
        "Event": event, "TimeControl": time_control, "Concurrency": concurrency,
        "SwissOptions": {"GamesPerMatch": games_per_match, "Rounds": rounds,
                         "Seeding": "listed", "StatePath": state}}
    if max_moves is not None:
        data["Adjudication"] = {"MaxMoves": max_moves}
    return write_config(directory, {**data, "Engines": engines, **top})


def loop_config(tmp_path: Path, players: int = 5, **swiss: object) -> Path:
    """A small event of deterministic fake engines (tests/fakes/det_engine.py) with a book of
    six openings, for the tournament-loop tests; ``swiss`` overrides SwissOptions."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    book = tmp_path / "book.pgn"
    book.write_text("".join(f'[Event "o{i}"]\n\n1. {m} *\n\n' for i, m in enumerate(
        ["e4 e5", "d4 d5", "c4 c5", "Nf3 Nf6", "e4 c5", "d4 Nf6"])))
    return write_config(tmp_path, {
        "Event": "Loop test",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 3, "Seeding": "listed",
                         "StatePath": "state/swiss.json", **swiss},
        "TimeControl": "60+1",
        "Concurrency": 1,
        "Openings": {"File": "book.pgn", "Order": "sequential"},
        "Engines": [{"Name": f"P{i}", "Command": sys.executable,
                     "Args": [str(DET_ENGINE), "random", str(i), "0"],
                     "Rating": 3000 - i} for i in range(1, players + 1)],
    })


@contextlib.contextmanager
def unwritable(directory: Path):
    """Make a directory unwritable, even for root (chattr +i), and restore it afterwards."""
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode:
            pytest.skip("cannot make a directory immutable here")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(directory)], check=True)
    else:
        directory.chmod(0o500)
        try:
            yield
        finally:
            directory.chmod(0o700)


def simple_record(white: str, black: str, result: str = "1-0", n: int = 0, size: int = 0) -> GameRecord:
    """A finished game record (1. e4 e5 2. Nf3) of ``white`` against ``black``; ``size``
    pads its PGN with a comment of that many characters."""
    moves = ["e2e4", "e7e5", "g1f3"]
    pgn = (f'[Event "t"]\n[Round "{n}"]\n[White "{white}"]\n[Black "{black}"]\n'
           f'[Result "{result}"]\n\n1. e4 e5 2. Nf3 {{{"x" * size}}} {result}\n')
    return GameRecord(white=white, black=black, result=result, reason="White mates",
                      termination=None, moves=moves, pgn=pgn, rmobility="G0.0",
                      start_time="2026-01-01T00:00:00Z", end_time="2026-01-01T00:01:00Z",
                      duration_s=60.0)


# --------------------------------------------------------------------------- scripted backend


def scripted_result(spec: GameSpec) -> str:
    """A fixed result per (white, black, round) so every run gives the same event."""
    h = hashlib.sha256(f"{spec.white.name}|{spec.black.name}|{spec.round}".encode()).digest()[0]
    return ("1-0", "0-1", "1/2-1/2")[h % 3]


def make_record(spec: GameSpec, result: str) -> GameRecord:
    board = chess.Board()
    moves = list(spec.opening.moves) if spec.opening else []
    for uci in moves:
        board.push_uci(uci)
    game = chess.pgn.Game.from_board(board)
    game.headers.update({"Event": spec.event, "Round": spec.round_label, "White": spec.white.name,
                         "Black": spec.black.name, "Result": result})
    if spec.extra_pair:  # as both real backends write it
        game.headers[TIEBREAK_PAIR_TAG] = str(spec.extra_pair)
    reason = {"1-0": "White mates", "0-1": "Black mates", "1/2-1/2": "Draw by agreement"}[result]
    return GameRecord(white=spec.white.name, black=spec.black.name, result=result, reason=reason,
                      moves=moves, pgn=str(game), rmobility="G0.0" if result != "1/2-1/2" else "G9.5",
                      opening_index=spec.opening.index if spec.opening else None)


def backend(result_of: Callable[[GameSpec], str] = scripted_result, *, delay: float = 0.0,
            hook: Callable[[GameSpec], None] | None = None, log: list | None = None):
    """A game backend (as play_game) that plays no engine: ``result_of(spec)`` decides."""
    async def play(spec: GameSpec, *, on_process=None, emit=None, attempt: int = 1) -> GameRecord:
        # Emits GameStarted like a real backend; leaves GameFinished to the loop (which
        # publishes it for backends that only return their record).
        if log is not None:
            log.append(("start", spec.game_id))
        if on_process is not None:
            on_process(10_000_000 + spec.game_id, 1.0)  # no such process: the sweep ignores it
        if emit is not None:
            emit(GameStarted(game_id=spec.game_id, white=spec.white.name, black=spec.black.name,
                             white_id="", black_id="", start_time="2026-01-01T00:00:00",
                             start_fen=chess.STARTING_FEN, book_plies=0, white_clock_ms=None,
                             black_clock_ms=None, attempt=attempt))
        if hook is not None:
            hook(spec)
        await asyncio.sleep(delay)
        if log is not None:
            log.append(("end", spec.game_id))
        return make_record(spec, result_of(spec))

    return play


# what a user's environment may hold that changes what a command prints or accepts
_USER_SETTINGS = ("SWISS_RUNNER_TRACEBACK", "SWISS_RUNNER_TOKEN")


def run_cli(*argv: str, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m runner ARGV`` as a user runs it: its own process, text output captured,
    from the repository (or ``cwd``), this tree's package first on the path, none of
    _USER_SETTINGS; ``env``: variables set over that environment."""
    base = {k: v for k, v in os.environ.items() if k not in _USER_SETTINGS}
    return subprocess.run([sys.executable, "-m", "runner", *argv], cwd=cwd or REPO,
                          env={**base, "PYTHONPATH": str(REPO), **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


def wait_until(ready: Callable[[], Any], what: str = "the condition", timeout: float = 10.0,
               proc: subprocess.Popen[Any] | None = None, *, step: float = 0.05,
               log: Path | None = None) -> Any:
    """The first true value of ``ready()``, polled every ``step`` s: the tests' one polling
    helper. AssertionError naming ``what`` after ``timeout`` s, or as soon as ``proc`` has
    ended; ``log``: a file whose last 3000 characters the message carries (the output of
    ``proc``). Inside an event loop: ``await asyncio.to_thread(wait_until, ...)`` (the loop
    runs on while it polls; ``ready`` then runs on that thread, so it only reads)."""
    deadline = time.monotonic() + timeout
    while True:
        value = ready()
        if value:
            return value
        ended = proc is not None and proc.poll() is not None
        if ended or time.monotonic() > deadline:
            why = (f"the process ended first (exit {proc.returncode})" if ended and proc
                   else f"not within {timeout} s")
            tail = f"\n{log.read_text(errors='replace')[-3000:]}" if log is not None else ""
            raise AssertionError(f"{what}: {why}{tail}")
        time.sleep(step)


def run_args(**kw: object) -> argparse.Namespace:
    """The parsed arguments of ``swiss-runner run`` (defaults), for cli_run."""
    return argparse.Namespace(finish_games=False, quiet=False, json=False, **kw)


def event_games(db: Path) -> list[tuple]:
    """Every game row of an event's database, in game order (read-only)."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT game_id, round, game_in_round, white, black, opening_index, "
                            "status, result, extra FROM games ORDER BY game_id").fetchall()
    finally:
        conn.close()


# --------------------------------------------------------------------------- referee games


def fake(name: str = "Fake", *flags: str) -> EngineConfig:
    """The fault-injecting fake UCI engine (tests/fakes/fake_uci.py) with ``flags``."""
    return EngineConfig(name=name, command=sys.executable, args=(str(FAKE_UCI), *flags))


def spec_for(white: EngineConfig, black: EngineConfig, tc: str = "2+0.05", *,
             adjudication: AdjudicationConfig | None = None, opening: Opening | None = None,
             margin_ms: int = 0, round_: int = 1, game: int = 1) -> GameSpec:
    return GameSpec(game_id=game, round=round_, game_in_round=game, white=white, black=black,
                    time_control=parse_time_control(tc),
                    adjudication=adjudication or AdjudicationConfig(max_moves=30),
                    opening=opening, event="Test Event", site="here", time_margin_ms=margin_ms)


def start_runner_playing(tmp_path: Path, *white_flags: str) -> tuple[subprocess.Popen, Path]:
    """A separate runner process playing a fake engine that hangs on its first ``go`` (plus
    ``white_flags``) against another fake; it writes each engine's "pid create_time" to the
    returned file. For tests that kill the runner with SIGKILL."""
    pid_file = tmp_path / "pids"
    script = tmp_path / "runner.py"
    flags = ("--hang-on-go", "1", *white_flags)
    script.write_text(textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(REPO)!r}); sys.path.insert(0, {str(HERE)!r})
        from testkit import fake, spec_for
        from runner.play.referee import play_game
        def note(pid, created):
            with open({str(pid_file)!r}, "a") as f:
                f.write(f"{{pid}} {{created}}\\n")
        asyncio.run(play_game(spec_for(fake("H", *{flags!r}), fake("B"), "600+1"), on_process=note))
    """))
    return subprocess.Popen([sys.executable, str(script)], cwd=REPO), pid_file


def need_distributed() -> None:
    """Skip the calling test module when Dask's `distributed` is not installed (the cluster
    extra, part of the dev set-up: on CI it must be there)."""
    try:
        import distributed  # noqa: F401
    except ImportError:  # pragma: no cover
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("the 'distributed' package is not installed (pip install '.[cluster]')",
                    allow_module_level=True)


def pgn_games(path: Path) -> list[chess.pgn.Game]:
    """Every game of a PGN file, in order."""
    games = []
    with open(path, encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
    return games


# four Debian engines that play short games fast, one thread each (the TD tests)
FOUR_ENGINES = [
    {"Name": "Stockfish", "Command": "stockfish", "Options": {"Threads": 1, "Hash": 1}},
    {"Name": "Toga", "Command": "toga2"},
    {"Name": "Fairy", "Command": "fairy-stockfish", "Options": {"Threads": 1, "Hash": 1}},
    {"Name": "Ethereal", "Command": "ethereal-chess", "Options": {"Threads": 1, "Hash": 2}},
]
