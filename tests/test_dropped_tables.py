"""The last hostile database (issue #38, item 8): a valid SQLite file with no table where the
event's database was, beside a JSON snapshot that says games were finished, and no PGN.
`run` refuses it as the other "database holds no event" cases (exit 2, naming the files,
nothing written) instead of starting a new event over it."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from testkit import backend, loop_config, run_args

from runner.cli import main
from runner.cli.run import cli_run
from runner.config import load_config


def _digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir()) if p.is_file() and p.suffix != ".lock"
            and not p.name.endswith("-shm")}  # the WAL index: rebuilt by any reader


def _drop(db: Path, how: str) -> None:
    if how == "replaced":  # another file: one table, made and dropped, no WAL
        db.unlink()
        conn = sqlite3.connect(db)
        conn.execute("CREATE TABLE t (a)")
        conn.execute("INSERT INTO t VALUES (1)")
        conn.commit()
        conn.execute("DROP TABLE t")
        conn.commit()
        conn.close()
        return
    # the event's own file, every table dropped: checkpointed, or left in the WAL (killed)
    script = textwrap.dedent(f"""
        import os, sqlite3
        conn = sqlite3.connect({str(db)!r}, isolation_level=None)
        conn.execute("PRAGMA wal_autocheckpoint=0")
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table' "
                                    "AND name NOT LIKE 'sqlite_%'").fetchall():
            conn.execute(f"DROP TABLE {{name}}")
        if {how == "dropped-in-wal"!r}:
            os._exit(0)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
    """)
    subprocess.run([sys.executable, "-c", script], check=True)


@pytest.mark.parametrize("how", ["replaced", "dropped", "dropped-in-wal"])
def test_a_database_without_tables_beside_a_snapshot_of_finished_games_is_refused(
        tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]) -> None:
    config = load_config(loop_config(tmp_path))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    config.pgn_out.unlink()  # no PGN either
    _drop(config.database, how)
    state = config.swiss.state_path.parent
    before = _digests(state)
    names = set(os.listdir(state)) - {config.database.name + ".lock"}
    capsys.readouterr()
    assert main(["run", str(config.path)]) == 2  # before the fix: 1 (dropped-in-wal)
    err = capsys.readouterr().err
    assert str(config.database) in err and "Traceback" not in err
    assert "holds no event" in err or "no event recorded in it" in err, err
    assert _digests(state) == before  # nothing written: not the snapshot, not the database
    assert not config.pgn_out.exists()
    assert set(os.listdir(state)) - {config.database.name + ".lock"} == names
