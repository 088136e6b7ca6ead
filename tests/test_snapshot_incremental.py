"""The runner's JSON snapshot, kept between writes (StateCache: the rows of the games that did
not change, their entries, the standings of the games just read), is byte for byte the
document a fresh build from the database gives, at every event of real games: a run killed
with SIGKILL and resumed, a TD withdraw with a forfeit of the game in progress, a TD rewind,
Chess960 (tests/snapshot_witness.py compares the two in the runner's own read transaction)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import chess
import pytest
from test_td import ENV, REPO, Runner, five_engines_config, recorded_id, td
from testkit import write_config

pytestmark = [pytest.mark.engines, pytest.mark.slow]
WITNESS = Path(__file__).resolve().parent / "snapshot_witness.py"


class WitnessedRunner(Runner):
    """`run CONFIG` through tests/snapshot_witness.py (its checks in ``directory``)."""

    def __init__(self, config: Path, directory: Path):
        self.config = config
        self.db = config.parent / "state" / "swiss.sqlite3"
        self.out = config.parent / f"run-{len(list(config.parent.glob('run-*')))}.out"
        with open(self.out, "w") as handle:
            self.proc = subprocess.Popen(
                [sys.executable, str(WITNESS), str(directory), "run", str(config)], cwd=REPO,
                env={**ENV, "PYTHONPATH": str(REPO)}, stdout=handle, stderr=subprocess.STDOUT)


def checks(directory: Path) -> int:
    """Snapshots compared so far; fails on the first that differed."""
    mismatch = directory / "mismatch.json"
    assert not mismatch.exists(), mismatch.read_text()[:4000]
    path = directory / "checks"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_the_kept_snapshot_is_a_fresh_build_through_a_kill_a_resume_a_forfeit_and_a_rewind(
        tmp_path: Path) -> None:
    pytest.importorskip("runner.service.td.rules")
    witness = tmp_path / "witness"
    witness.mkdir()
    config = five_engines_config(tmp_path)
    run = WitnessedRunner(config, witness)
    run.two_games_under_way()
    run.kill9()  # resumed: both games go on from the plies they reached
    before = checks(witness)
    assert before > 3
    run = WitnessedRunner(config, witness)
    playing = run.wait("a game under way again", lambda: run.running_at_ply(8) or None)
    engine = run.query("SELECT black FROM games WHERE game_id=?", min(playing))[0][0]
    run.applied(recorded_id(td(config, "withdraw", engine, "--now", "--reason", "crashes")))
    run.wait("round 3 under way", lambda: run.query(
        "SELECT 1 FROM games WHERE round=3 AND status='running'"), timeout=180)
    first_of_2 = run.query("SELECT MIN(game_id) FROM games WHERE round=2")[0][0]
    run.applied(recorded_id(td(config, "rewind", "--to", str(first_of_2), "--reason", "r")))
    assert run.finish() == 0, run.output()
    assert checks(witness) > before + 50  # (one per event, less those coalesced)
    forfeit = run.query("SELECT COUNT(*) FROM games WHERE reason LIKE '%withdr%' OR "
                        "reason LIKE '%forfeit%'")[0][0]
    final = json.loads((tmp_path / "state" / "swiss.json").read_text())
    assert final["complete"] and final["voided_games"] >= 2 and forfeit >= 1
    assert [w["engine"] for w in final["withdrawn"]] == [engine]


def test_the_kept_snapshot_is_a_fresh_build_in_chess960(tmp_path: Path) -> None:
    witness = tmp_path / "witness"
    witness.mkdir()
    config = write_config(tmp_path, {
        "Event": "960", "Variant": "chess960", "TimeControl": "inf", "Concurrency": 2,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 2, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Openings": {"Positions": [0, 959, 518], "Order": "sequential"},
        "Adjudication": {"MaxMoves": 40},
        "Engines": [{"Name": n, "Command": c, "Nodes": 3000, "Options": {"Hash": 2}}
                    for n, c in (("Stockfish", "stockfish"), ("Fairy", "fairy-stockfish"),
                                 ("Ethereal", "ethereal-chess"))]})
    run = WitnessedRunner(config, witness)
    assert run.finish() == 0, run.output()
    assert checks(witness) > 20
    final = json.loads((tmp_path / "state" / "swiss.json").read_text())
    assert final["complete"] and final["games_finished"] == 4
    starts = {json.loads(r[0])["start_fen"] for r in run.query(
        "SELECT started_event FROM games")}
    assert len(starts) == 2 and chess.STARTING_FEN not in starts  # Chess960 #0 and #959
