"""Issue 48 item 5 (issue 38 item 8 exactly as written): the database replaced by a fresh
SQLite file with no table, the PGN deleted, the JSON snapshot that says 4 games were
finished kept. `run` refuses (exit 2, naming the files, nothing written), also when the
event's directory was moved or restored elsewhere (the snapshot names the old path)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import backend, loop_config, run_args

REPO = Path(__file__).resolve().parent.parent


def tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("where", ["in place", "moved"])
def test_a_schemaless_database_beside_a_snapshot_of_finished_games_is_refused(
        tmp_path: Path, where: str) -> None:
    from runner.cli.run import cli_run
    from runner.config import load_config

    first = tmp_path / "first"
    config = load_config(loop_config(first, players=4, Rounds=1))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    directory = first
    if where == "moved":  # restored from a backup to another directory
        directory = tmp_path / "restored"
        shutil.copytree(first, directory)
        shutil.rmtree(first)
    state = directory / "state"
    database = state / config.database.name
    for path in state.iterdir():
        if path.name.startswith(database.name):  # the database and its side files
            path.unlink()
    conn = sqlite3.connect(database)
    conn.executescript("CREATE TABLE t(x); DROP TABLE t;")
    conn.close()
    (state / config.pgn_out.name).unlink()
    snapshot = state / config.swiss.state_path.name
    assert json.loads(snapshot.read_text())["games_finished"] == 4
    before = tree(tmp_path)
    run = subprocess.run([sys.executable, "-m", "runner", "run", "event.yaml"], cwd=directory,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert str(database) in run.stderr and str(snapshot) in run.stderr, run.stderr
    assert "4 game(s)" in run.stderr and "Traceback" not in run.stderr
    assert tree(tmp_path) == before  # nothing written: the snapshot is intact
