"""`swiss-runner run` with a witness on its JSON snapshot (tests/test_snapshot_incremental.py):
every snapshot the runner writes (from its StateCache, on the executor thread) is compared,
byte for byte, with a fresh build of the document from the same read transaction, and the
snapshot is written at every event (settle 0, no gap, every move too) instead of every 0.1-1 s.

Usage: python tests/snapshot_witness.py WITNESS_DIR run CONFIG [options]. WITNESS_DIR gets
``checks`` (one line per compared snapshot) and, at the first difference, ``mismatch.json``.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import runner.service.views.snapshot as snapshot
import runner.service.views.snapshotdoc as doc
from runner.cli import main
from runner.domain.events import GameEvent

WITNESS = Path(sys.argv[1])
_written = threading.local()  # the text the runner's snapshot write produced in this thread
_real_atomic_write = doc.atomic_write
_real_write_snapshot = doc.write_snapshot


def _atomic_write(path: Path, data: str, *, durable: bool = True) -> None:
    _written.text = data
    _real_atomic_write(path, data, durable=durable)


def _witnessed_write(config: Any, store: Any, cache: Any = None, *,
                     runner_running: bool | None = None) -> bool:
    """The runner's write, then a fresh build in the same read transaction (in_thread holds
    it): the two must be the same bytes."""
    _written.text = None
    ok = _real_write_snapshot(config, store, cache, runner_running=runner_running)
    if ok and _written.text is not None:
        fresh = doc._encode(doc.build_state(config, store, runner_running=runner_running,
                                            ratings=False)) + "\n"
        with open(WITNESS / "checks", "a", encoding="utf-8") as handle:
            handle.write(f"{len(fresh)}\n")
        if fresh != _written.text and not (WITNESS / "mismatch.json").exists():
            (WITNESS / "mismatch.json").write_text(json.dumps(
                {"cached": json.loads(_written.text), "fresh": json.loads(fresh)}, indent=1))
    return ok


def _every_event(self: snapshot.SnapshotSink, event: GameEvent) -> None:
    self.request(now=True)


doc.atomic_write = _atomic_write
snapshot.write_snapshot = _witnessed_write
doc._now = lambda: "2026-01-01T00:00:00.000+00:00"  # "updated": the same in both builds
snapshot.SnapshotSink.settle = snapshot.SnapshotSink.end_settle = 0.0
snapshot.SnapshotSink.event_gap = 0.0  # type: ignore[assignment,misc]  # no gap between them
snapshot.SnapshotSink.moves = True  # handed every move too
snapshot.SnapshotSink.handle = _every_event  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(main(sys.argv[2:]))
