"""The side-by-side benches in small (bench/bench_clock.py, bench/bench_vs_peers.py): one
invocation plays every tool in both Restart modes, the same games in each, and prints one
markdown table; a peer that is not installed (cutechess-cli, fastchess: on no package
registry) is a row that says so, not a failure. The numbers themselves are not asserted here
(speed is measured by the benches, not by tests), only that the table is whole and like for
like."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
PEERS = {"cutechess-cli": "CUTECHESS_CLI", "fastchess": "FASTCHESS"}

pytestmark = [pytest.mark.engines]


def installed(tool: str) -> str | None:
    return os.environ.get(PEERS[tool]) or shutil.which(tool)


def without_peers() -> dict[str, str]:
    """The environment with neither peer findable: no variable, no PATH entry holding one."""
    env = {k: v for k, v in os.environ.items() if k not in PEERS.values()}
    env["PATH"] = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                                  if d and not any(Path(d, t).exists() for t in PEERS))
    return env


def table(out: str) -> dict[tuple[str, str], list[str]]:
    """(mode, tool) -> the row's other cells, from the bench's markdown table."""
    rows = {}
    for line in out.splitlines():
        if line.startswith(("| fresh engines", "| kept engines")):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            mode = "on" if cells[0].startswith("fresh") else "off"
            tool = next(t for t in ("swiss-runner", "cutechess-cli", "fastchess") if t in cells[1])
            rows[(mode, tool)] = cells[2:]
    return rows


def clock(env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / "bench_clock.py"), "--games", "2", "--concurrency", "1",
         "--max-moves", "3", "--think", "5", "--tc", "10+0.1", *extra],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_clock_bench_without_the_peers_still_measures_the_runner_in_both_modes() -> None:
    run = clock(without_peers())
    assert run.returncode == 0, run.stdout + run.stderr
    rows = table(run.stdout)
    assert set(rows) == {(m, t) for m in ("on", "off")
                         for t in ("swiss-runner", "cutechess-cli", "fastchess")}, run.stdout
    for mode in ("on", "off"):
        games, moves, p50, p99 = rows[(mode, "swiss-runner")][:4]
        assert games == "2" and int(moves) > 0 and float(p99) >= float(p50), run.stdout
        into, out = rows[(mode, "swiss-runner")][-1].split(", ")  # the excess's two halves
        assert float(into) >= 0 and float(out) >= 0, run.stdout
        for peer in PEERS:
            assert rows[(mode, peer)][0].startswith("not found"), run.stdout
    assert run.stdout.count("where the excess goes (ms)") == 2, run.stdout
    assert run.stdout.count("engine waited for a CPU to read go") == 2, run.stdout


@pytest.mark.skipif(not all(installed(t) for t in PEERS),
                    reason="cutechess-cli and fastchess are on no package registry: build them "
                           "by hand (docs/performance.md, 'The peers, built by hand')")
def test_clock_bench_plays_the_same_games_with_every_tool() -> None:
    run = clock(dict(os.environ))
    assert run.returncode == 0, run.stdout + run.stderr
    rows = table(run.stdout)
    for mode in ("on", "off"):
        counts = {tool: rows[(mode, tool)][:2] for tool in ("swiss-runner", *PEERS)}
        # 2 engines, each colour once: 2 games of 3 moves a side, 12 engine moves, everywhere
        assert set(map(tuple, counts.values())) == {("2", "12")}, run.stdout
        assert rows[(mode, "cutechess-cli")][5] == "+0.00", run.stdout  # p99 - its own
        assert rows[(mode, "swiss-runner")][6] == "0", run.stdout  # no time forfeit


def test_clock_bench_refuses_an_unknown_tool_and_a_peer_with_ponder() -> None:
    bad = clock(dict(os.environ), "--tools", "swiss-runner,arena")
    assert bad.returncode == 2 and "--tools: got 'arena', expected some of swiss-runner, " \
        "cutechess-cli, fastchess" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr
    ponder = clock(dict(os.environ), "--tools", "fastchess", "--ponder")
    assert ponder.returncode == 2 and "swiss-runner only" in ponder.stderr, ponder.stderr


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("stockfish", path="/usr/games")
                         and shutil.which("ethereal-chess", path="/usr/games")),
                    reason="Debian's stockfish and ethereal-chess are needed")
def test_cpu_bench_plays_the_same_plies_with_every_tool_in_both_modes() -> None:
    run = subprocess.run(
        [sys.executable, str(BENCH / "bench_vs_peers.py"), "--pairs", "1", "--nodes", "500"],
        cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = table(run.stdout)
    for mode in ("on", "off"):
        played = {tool: cells for (m, tool), cells in rows.items()
                  if m == mode and not cells[0].startswith("not found")}
        assert "swiss-runner" in played, run.stdout
        for tool in PEERS:
            assert (tool in played) == bool(installed(tool)), run.stdout
        # the same 2 games, so the same engine plies, in every tool that ran
        assert {cells[0] for cells in played.values()} == {"2"}, run.stdout
        assert len({cells[1] for cells in played.values()}) == 1, run.stdout
        if "cutechess-cli" in played:
            assert played["cutechess-cli"][4] == "1.00x", run.stdout


def test_the_clock_benchs_split_adds_up_to_each_moves_excess() -> None:
    """bench/clocktrace.py: a move's excess is split into parts that add up to it, each
    clipped to its half (an engine preempted inside its bestmove write by the reader waits
    after the read: not the read's time), and a move during an engine start is counted so."""
    sys.path.insert(0, str(BENCH))
    import clocktrace

    trace = clocktrace.Trace(detail=True)
    trace.moves = [clocktrace.Move(7, sent=10.0, read=10.0405, written=10.0001, reader_wait=2e-5),
                   clocktrace.Move(7, sent=11.0, read=11.0302, written=11.0001, reader_wait=0.0)]
    trace.starts = [(9.99, 10.01), (10.5, 10.6)]
    # per move of pid 7: go read, bestmove written, clock left, wait in the write, wait to read
    logs = {7: [(10.0003, 10.0403, 60.0, 5e-5, 1e-4), (11.0002, 11.0301, 59.0, 3e-3, 0.0)]}
    first, second = clocktrace.split(trace, logs, python_path=False)
    for move in (first, second):
        assert move.excess == pytest.approx(move.into + move.out)
        assert sum(v for v in move.parts.values() if v is not None) == pytest.approx(move.excess)
    assert first.excess == pytest.approx(5e-4) and first.starting == 1 and second.starting == 0
    assert [round(first.parts[p] * 1e6) for p in clocktrace.PARTS] == [100, 100, 100, 50, 20, 130]
    # the engine's 3 ms wait in its write: only the 0.1 ms before the read is the read's
    assert second.parts["engine waited for a CPU in its write"] == pytest.approx(1e-4)
    assert second.parts["rest of bestmove -> read"] == pytest.approx(0.0)


@pytest.mark.slow
@pytest.mark.engines
@pytest.mark.skipif(not (Path("/usr/games/stockfish").exists()
                         and Path("/usr/games/ethereal-chess").exists()),
                    reason="Debian's stockfish and ethereal-chess are not installed")
def test_the_fresh_game_bench_measures_every_row_for_both_checkouts() -> None:
    """bench/bench_fresh_game.py in small: a game's two fresh engines started and closed,
    every row measured for this checkout and a base (here the same one); the numbers are
    the bench's, not asserted."""
    run = subprocess.run([sys.executable, str(REPO / "bench" / "bench_fresh_game.py"),
                          "--games", "2", "--repeat", "1", "--base", str(REPO)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = [line for line in run.stdout.splitlines() if line.startswith("| this")
            or line.startswith("| base")]
    assert len(rows) == 2, run.stdout
    for row in rows:
        cells = [cell.strip() for cell in row.strip("| \n").split("|")][1:]
        assert len(cells) == 3 and all(float(cell.split()[0]) > 0 for cell in cells), row


@pytest.mark.slow
@pytest.mark.skipif(not (shutil.which("valgrind") and Path("/usr/games/stockfish").exists()
                         and Path("/usr/games/ethereal-chess").exists()),
                    reason="valgrind and Debian's stockfish and ethereal-chess are needed")
def test_the_instruction_bench_counts_both_runs_and_the_same_plies_again() -> None:
    """bench/bench_instructions.py in small, twice: every run counted under callgrind, the
    marginal count per ply positive, and the same games give the same plies and nearly the
    same count (the point of counting: CPU seconds here move 10-25% between runs)."""
    def once() -> list[list[str]]:
        run = subprocess.run([sys.executable, str(BENCH / "bench_instructions.py"), "--pairs",
                              "2", "--steady", "1", "--nodes", "500"],
                             cwd=REPO, capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr[-2000:]
        rows = [[c.strip() for c in line.strip("| ").split("|")]
                for line in run.stdout.splitlines() if line.startswith("| 1 ")]
        assert len(rows) == 1, run.stdout
        return rows[0]

    first, second = once(), once()
    long_plies, short_plies = (int(cell.split(",")[-1]) for cell in first[1:3])
    assert long_plies > short_plies > 0, first
    assert [c.split(",")[-1] for c in first[1:3]] == [c.split(",")[-1] for c in second[1:3]]
    assert all(float(row[4].replace(",", "")) > 0 for row in (first, second)), (first, second)
    # each run's own count repeats within 0.5% (its marginal, over 41 plies here, less so)
    for cell in (1, 2):
        a, b = (int(row[cell].rsplit(",", 1)[0].replace(",", "")) for row in (first, second))
        assert abs(a - b) / a < 0.005, (first, second)


@pytest.mark.slow
@pytest.mark.parametrize("restart", ["off", "on"])
@pytest.mark.skipif(not (Path("/usr/games/stockfish").exists()
                         and Path("/usr/games/ethereal-chess").exists()),
                    reason="Debian's stockfish and ethereal-chess are not installed")
def test_the_floor_bench_plays_the_runners_plies_and_stores_every_one(restart: str) -> None:
    """bench/bench_floor.py --vs-peers in small, kept and fresh engines: the mandated floor
    (and floor+SAN) plays as many engine plies as the runner in both runs, has a move row in
    its SQLite for each, and the table has every tool's row, median and thread split."""
    run = subprocess.run([sys.executable, str(BENCH / "bench_floor.py"), "--vs-peers", "--pairs",
                          "2", "--steady", "1", "--nodes", "500", "--repeat", "1", "--restart",
                          restart], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr[-2000:]
    rows = {cells[1]: cells[2:] for line in run.stdout.splitlines() if line.startswith("| 1 |")
            for cells in [[c.strip() for c in line.strip().strip("|").split("|")]]}
    fastchess = next((tool for tool in rows if tool.startswith("fastchess")), None)
    assert fastchess is not None and {"swiss-runner", "floor", "floor+SAN"} <= set(rows), run.stdout
    assert rows[fastchess][0].startswith("not found") != bool(installed("fastchess")), run.stdout
    plies = rows["swiss-runner"][0]
    long, short = (int(n) for n in plies.split("/"))
    assert long > short > 0, run.stdout
    for tool in ("floor", "floor+SAN"):
        assert rows[tool][0] == plies and rows[tool][1] == plies, run.stdout  # plies, rows
        assert rows[tool][2] != "-", run.stdout  # a marginal measured
    for tool in ("fastchess", "swiss-runner", "floor", "floor+SAN"):
        assert f"| **median** | {tool} |" in run.stdout, run.stdout
    split = [line for line in run.stdout.splitlines() if line.startswith("| floor")
             and line.count("|") == 7]
    assert len(split) == 2, run.stdout
