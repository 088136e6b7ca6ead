"""A TD command that fails when the runner applies it (#48 item 4): marked ``failed`` in the
decision log with why (in the database, not only in memory), said on the console and shown by
`td log`, `status` and the state document the dashboard reads; by the rule of docs/td.md it is
not tried again (the TD gives it again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from testkit import loop_config

from runner.cli import main
from runner.service.td import rules as tdrules  # the TD rules module
from runner.store import decisions
from runner.store.database import Store


@pytest.mark.slow
def test_a_command_that_fails_when_applied_is_marked_failed_and_not_retried(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    config = loop_config(tmp_path, players=4, Rounds=1)
    assert main(["run", str(config), "--quiet"]) == 0
    assert main(["td", str(config), "rewind", "--to", "2", "--reason", "wrong opening"]) == 0
    calls: list[int] = []

    def broken(*args: object, **kwargs: object) -> str:
        calls.append(1)
        raise RuntimeError("the rules' store function broke")

    monkeypatch.setattr(tdrules, "apply_rewind", broken)
    capsys.readouterr()
    assert main(["run", str(config), "--quiet"]) == 0  # the event is not stopped by it
    out = capsys.readouterr()
    assert "failed: RuntimeError: the rules' store function broke" in out.out + out.err
    store = Store.open_readonly(tmp_path / "state" / "swiss.sqlite3")
    assert store is not None
    try:
        [cmd] = decisions.commands(store.conn)
    finally:
        store.close()
    assert (cmd.action, cmd.state) == ("rewind", "failed"), cmd
    assert cmd.outcome == "RuntimeError: the rules' store function broke"
    assert calls == [1]
    # shown by `td log`, `status` and the state document (the dashboard's source)
    assert main(["td", str(config), "log"]) == 0
    assert "FAILED: rewind" in capsys.readouterr().out
    assert main(["status", str(config), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(d["action"], d["state"]) for d in doc["td"]["decisions"]] == [("rewind", "failed")]
    assert doc["td"]["pending"] == []
    # the rule: a failed command is not tried again by the next run
    assert main(["run", str(config), "--quiet"]) == 0
    assert calls == [1]
