"""The engine's pipes read below Python (runner.play._pipes) and in Python: both paths play
the same games, charge the same time, log every line and see an engine die mid-move; the
pure-Python path is chosen when the compiled part is missing or switched off."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import chess
import pytest
from testkit import fake, spec_for

import runner.play
from runner.config import AdjudicationConfig, EngineConfig
from runner.play import pipes, referee
from runner.play.enginelog import GameLog
from runner.play.engines import start_engine
from runner.play.eventloop import referee_refused
from runner.play.referee import play_game
from runner.play.relay import RELAYED

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STAMP = HERE / "fakes" / "stamp_uci.py"
PATHS = ("native", "python")


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once with the compiled reader and once with Python's (SWISS_RUNNER_PIPES)."""
    monkeypatch.setenv(pipes.ENV, request.param)
    assert pipes.path_name() == request.param  # native: the module is built (install.sh)
    return request.param


def stamp_engine(name: str, stamps: Path, *flags: str) -> EngineConfig:
    return EngineConfig(name=name, command=sys.executable,
                        args=(str(STAMP), "--stamps", str(stamps), *flags))


def charges(monkeypatch: pytest.MonkeyPatch) -> list[tuple[float, float]]:
    """(go sent, move read) of every move the referee charges, as it stamped them."""
    seen: list[tuple[float, float]] = []
    real = referee._time_spent

    def spent(proto, called, now):  # noqa: ANN001, ANN202
        seen.append((proto.go_sent, proto.move_received))
        return real(proto, called, now)

    monkeypatch.setattr(referee, "_time_spent", spent)
    return seen


def read_stamps(path: Path) -> list[tuple[float, float]]:
    return [tuple(map(float, line.split())) for line in path.read_text().splitlines()]  # type: ignore[misc]


def _excess(seen: list[tuple[float, float]], stamps: list[Path]) -> list[float]:
    """Per move: the charge (the runner's ``go`` sent to ``bestmove`` read) minus the
    engine's own thinking (its ``go`` read to its ``bestmove`` written), checking on the
    way that the four stamps are of one clock and in order."""
    own = sorted(stamp for path in stamps for stamp in read_stamps(path))
    if len(own) > len(seen):  # relayed: the engines went on after the game's last move
        del own[len(seen):]  # (a few moves ahead of the loop), stopped at its end: no moves
    assert len(own) == len(seen)
    excess = []
    for (go_sent, move_read), (go_read, move_written) in zip(seen, own, strict=True):
        assert go_sent <= go_read < move_written <= move_read
        excess.append((move_read - go_sent) - (move_written - go_read))
    return sorted(excess)


def _stamped_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moves: int,
                  hog: float = 0.0) -> tuple[list[float], list[int], list[tuple[float, float]]]:
    """A game of two stamp engines (``moves`` moves each): the excess of every charge, the
    record's times (ms) and the runner's stamps. ``hog``: meanwhile the event loop is kept
    busy (blocked ``hog`` seconds at a time, free for 1 ms between)."""
    seen = charges(monkeypatch)
    white, black = tmp_path / "white", tmp_path / "black"
    spec = spec_for(stamp_engine("W", white), stamp_engine("B", black), "60+1",
                    adjudication=AdjudicationConfig(max_moves=moves))
    events: list = []

    async def main():  # noqa: ANN202
        async def busy() -> None:
            while True:
                await asyncio.sleep(0.001)
                time.sleep(hog)

        hogging = asyncio.create_task(busy()) if hog else None
        try:
            return await play_game(spec, emit=events.append)
        finally:
            if hogging is not None:
                hogging.cancel()

    record = asyncio.run(main())
    assert record.reason == "Draw by adjudication: maximal game length", record.reason
    return (_excess(seen, [white, black]), [e.time_ms for e in events if e.kind == "move"],
            seen)


def test_the_charge_is_the_engines_own_thinking_within_1_ms(path: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamp engine records when its read of ``go`` returned and when it wrote
    ``bestmove``; the runner stamps ``go`` before writing it (on the compiled path, relayed:
    the reader thread that read the opponent's move writes it) and ``bestmove`` when it is
    read. So every charge covers the engine's thinking and exceeds it only by the pipes'
    two crossings, within 1 ms, on both paths. On a machine loaded beyond its cores the
    processes wait for a CPU (several ms at load 5 on 2 cores, whatever reads the pipes):
    then a third of the moves must still be within 1 ms, and the median only when the load
    is under the cores."""
    relayed: list[int] = []
    real = referee.relay_reply
    monkeypatch.setattr(referee, "relay_reply",
                        lambda event, color: relayed.append(event[RELAYED]) or real(event, color))
    excess, times, seen = _stamped_game(tmp_path, monkeypatch, 15)
    assert len(excess) == 30
    # the compiled path relays the moves below Python (runner.play.relay), the first one
    # on: 30 moves, each relayed (the last one's opponent then stopped)
    assert sum(relayed) == (30 if path == "native" else 0), relayed
    assert all(e >= 0 for e in excess)
    assert excess[len(excess) // 3] < 0.001, excess
    if os.getloadavg()[0] < (os.cpu_count() or 1):
        assert statistics.median(excess) < 0.001, excess
    assert times == [round((m - g) * 1000) for g, m in seen]  # what the record got (whole ms)


def test_a_busy_loop_is_not_charged_on_the_compiled_path(path: str, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """With the event loop blocked 40 ms at a time (another game's work, a slow sink), the
    compiled reader still stamps ``bestmove`` when its bytes arrive: the charge stays the
    engine's thinking. The Python path stamps when the loop gets to the pipe: the block is
    charged (this is what issue #52 removes)."""
    excess, _, _ = _stamped_game(tmp_path, monkeypatch, 5, hog=0.04)
    if path == "native":
        assert statistics.median(excess) < 0.003, excess
    else:
        assert statistics.median(excess) > 0.005, excess


def test_the_engine_log_has_every_line_on_both_paths(path: str, tmp_path: Path) -> None:
    """Every line an engine printed during its moves is in the log (on the compiled path the
    reader thread writes them into the game's log itself), after the ``go`` it answers."""
    log = GameLog(tmp_path / "game.log", "all", "pipes")
    spec = spec_for(stamp_engine("W", tmp_path / "w", "--lines", "7"),
                    stamp_engine("B", tmp_path / "b", "--lines", "7"), "30+1",
                    adjudication=AdjudicationConfig(max_moves=6))
    record = asyncio.run(play_game(spec, engine_log=log))
    log.close(record.termination, record.reason)
    lines = (tmp_path / "game.log").read_text().splitlines()
    for who in ("W(white)", "B(black)"):
        mine = [line.split(f" {who} ", 1)[1] for line in lines if f" {who} " in line]
        gos = [i for i, line in enumerate(mine) if line.startswith("> go ")]
        # relayed: the engines may go on past the game's last move (ply 12), and are stopped
        assert len(gos) == 6 if path == "python" else len(gos) >= 6, mine
        if len(gos) > 6:
            assert "> stop" in mine[gos[6]:], mine
        for n, at in enumerate(gos[:6], start=1):
            after = mine[at + 1:at + 9]
            assert after[:7] == [f"< info depth {k} seldepth {k} score cp {10 * k} nodes "
                                 f"{100 * n + k} nps 1000 tbhits 0 hashfull 0 pv "
                                 f"{after[7].split()[-1]}" for k in range(1, 8)], after
            assert after[7].startswith("< bestmove "), after
    assert lines[-1].endswith("# game over: Draw by adjudication: maximal game length")


@pytest.mark.parametrize("how", ["crash on go", "half a line then exit"])
def test_an_engine_dying_mid_move_is_a_disconnect(path: str, how: str, tmp_path: Path) -> None:
    """An engine that exits while its move is on (nothing after ``go``, or half an ``info``
    line) loses by disconnection at once, on both paths, and nothing waits for its clock."""
    dying = fake("Dying", "--crash-on-go", "3") if how == "crash on go" else \
        stamp_engine("Dying", tmp_path / "d", "--die-mid-move", "3")
    spec = spec_for(dying, fake("Other"), "60+1")
    started = asyncio.run(_timed(play_game(spec)))
    record, took = started
    assert record.reason == "White disconnects" and record.termination == "abandoned", record.reason
    assert len(record.moves) == 4  # two moves each, then the crash on white's third
    assert took < 10  # not the 60 s clock


async def _timed(coro):  # noqa: ANN001, ANN202
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    result = await coro
    return result, loop.time() - t0


def test_the_compiled_reader_owns_stdout_only_on_the_native_path(path: str) -> None:
    """On the native path an engine's stdout is a NativeOutput (the loop's own pipe
    transport on the Python path); the engine plays the same moves either way."""

    async def main() -> tuple[str, str]:
        proc = await start_engine(fake("F"))
        try:
            kind = type(proc.transport.get_pipe_transport(1)).__name__
            result = await proc.protocol.play(chess.Board(), chess.engine.Limit(nodes=10))
            return kind, result.move.uci()
        finally:
            await proc.close()

    kind, move = asyncio.run(main())
    assert (kind == "NativeOutput") == (path == "native")
    assert move == sorted(m.uci() for m in chess.Board().legal_moves)[0]


def test_without_the_compiled_module_the_python_path_is_taken(monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """A module that cannot be imported (not built: no compiler) means the Python path,
    without a word; asked for by name (native) it is a clear error; a bad value too."""
    monkeypatch.setitem(sys.modules, "runner.play._pipes", None)  # an import now fails
    monkeypatch.delattr(runner.play, "_pipes", raising=False)
    monkeypatch.setattr(pipes, "_loaded", False)
    monkeypatch.setattr(pipes, "_module", None)
    monkeypatch.delenv(pipes.ENV, raising=False)
    assert pipes.native() is None and pipes.path_name() == "python"
    monkeypatch.setenv(pipes.ENV, "native")
    with pytest.raises(pipes.PipesChoiceError, match="SWISS_RUNNER_PIPES=native, but"):
        pipes.native()
    monkeypatch.setenv(pipes.ENV, "fast")
    with pytest.raises(pipes.PipesChoiceError, match="got 'fast', expected auto | native"):
        pipes.native()
    monkeypatch.setenv(pipes.ENV, "auto")
    record = asyncio.run(play_game(spec_for(fake("A"), fake("B"), "10+0.1",
                                            adjudication=AdjudicationConfig(max_moves=3))))
    assert record.reason == "Draw by adjudication: maximal game length"


def test_a_bad_switch_is_refused_before_any_game(tmp_path: Path) -> None:
    """``swiss-runner play`` with SWISS_RUNNER_PIPES naming no path: its one line, exit 2."""
    done = subprocess.run([sys.executable, "-m", "runner", "play", str(REPO / "configs" / "demo.yaml"),
                           "--white", "Stockfish", "--black", "Ethereal"],
                          capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, pipes.ENV: "fast"}, check=False)
    assert done.returncode == 2, done.stderr
    assert "SWISS_RUNNER_PIPES: got 'fast', expected auto | native | python" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_process_without_the_module_plays_on_python(tmp_path: Path) -> None:
    """The same in a fresh process where the module is missing (as after an install without
    a compiler): it plays a game and says which path it took."""
    script = (
        "import sys; sys.modules['runner.play._pipes'] = None\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import asyncio\n"
        "from testkit import fake, spec_for\n"
        "from runner.config import AdjudicationConfig\n"
        "from runner.play import pipes\n"
        "from runner.play.referee import play_game\n"
        "r = asyncio.run(play_game(spec_for(fake('A'), fake('B'), '10+0.1',"
        " adjudication=AdjudicationConfig(max_moves=2))))\n"
        "print(pipes.path_name(), r.reason)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "python Draw by adjudication: maximal game length"


def test_a_compiled_module_built_from_other_source_is_refused(monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """A checkout updated without a rebuild: the compiled module's interface is not this
    source's. The runner says so and what to do before any game (never a game played half
    on one and half on the other); the Python path, asked for, still plays."""
    import types

    old = types.ModuleType("runner.play._pipes")
    old.INTERFACE = pipes.INTERFACE - 1  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "runner.play._pipes", old)
    monkeypatch.setattr(runner.play, "_pipes", old, raising=False)
    monkeypatch.setattr(pipes, "_loaded", False)
    monkeypatch.setattr(pipes, "_module", None)
    monkeypatch.setattr(pipes, "_stale", None)
    monkeypatch.delenv(pipes.ENV, raising=False)
    with pytest.raises(pipes.PipesChoiceError,
                       match=rf"built from other source than this checkout's \(interface "
                             rf"{pipes.INTERFACE - 1}, this one needs {pipes.INTERFACE}\)"):
        pipes.native()
    said: list[str] = []
    assert referee_refused(said.append) == 2 and "scripts/install.sh" in said[0]
    monkeypatch.setenv(pipes.ENV, "python")
    assert pipes.native() is None and referee_refused(said.append) is None


def test_the_built_module_is_this_source_s() -> None:
    """The module built here has the interface this source expects (a change to _pipes.c's
    interface bumps both)."""
    module = pytest.importorskip("runner.play._pipes")
    assert module.INTERFACE == pipes.INTERFACE
