"""The dashboard shows a cluster's workers (table on the overview, worker of a live game);
no Dask needed: the runner's view of its workers is in the store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from web_event import generate_event

try:
    from starlette.testclient import TestClient

    from runner.web.app import create_app
except ImportError as exc:  # pragma: no cover - the web extra is missing
    pytest.skip(f"the web extra is not installed ({exc.name})", allow_module_level=True)

from runner.service.views.snapshotdoc import WORKERS_META
from runner.store.database import Store

HOSTILE = "<b>box</b>"


def test_overview_shows_the_workers(tmp_path: Path) -> None:
    config = generate_event(tmp_path, engines=4, rounds=2, finished_rounds=1, running=1,
                            plies=10)
    store = Store.open(config.database)
    try:
        game_id, started = store.conn.execute(
            "SELECT game_id, started_event FROM games WHERE status='running'").fetchone()
        event = json.loads(started) | {"worker": HOSTILE}
        with store.transaction() as c:
            c.execute("UPDATE games SET started_event=? WHERE game_id=?",
                      (json.dumps(event), game_id))
        store.set_meta(WORKERS_META, json.dumps([
            {"address": "tcp://10.0.0.2:4000", "name": HOSTILE, "slots": 2, "state": "joined",
             "last_seen": "2026-11-23T02:00:00+00:00", "refused": {}},
            {"address": "tcp://10.0.0.3:4000", "name": "b2", "slots": 1, "state": "left",
             "last_seen": "2026-11-23T01:00:00+00:00", "refused": {"E1": "cannot start"}}]))
    finally:
        store.close()
    with TestClient(create_app(config)) as client:
        state = client.get("/api/state").json()
        page = client.get("/").text
    workers = {w["name"]: w for w in state["workers"]}
    assert workers[HOSTILE]["busy"] == 1 and workers[HOSTILE]["slots"] == 2
    assert workers["b2"]["refused"] == {"E1": "cannot start"}
    assert "<h2>Workers</h2>" in page and HOSTILE not in page
    assert "&lt;b&gt;box&lt;/b&gt;" in page and "E1: cannot start" in page
    assert "2026-11-23 02:00:00 UTC" in page
    assert "on &lt;b&gt;box&lt;/b&gt;</span>" in page  # the live board names its worker
