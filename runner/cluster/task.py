"""The worker side of a game: the Dask task that plays it, and the plugin that probes engines.

Runs in a Dask worker process (`swiss-runner worker`, or `dask worker --preload
runner.cluster.preload`). The task never touches the store: everything goes back to the runner
as messages on runner.cluster.TOPIC::

    {"epoch", "token", "worker" (address), "name", "kind": "claim" | "refused" | "event", ...}

``claim`` comes first (the runner accepts one claimant per attempt: a rerun of the task that
Dask starts by itself after a worker died is recognised and dropped), then ``refused`` (an
engine failed its probe on this worker) or the game's events in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import sys
import threading
import time
import weakref
from typing import Any

from distributed import WorkerPlugin, get_worker
from distributed.core import Status

from runner.cluster import PLUGIN, TOPIC
from runner.cluster.lease import Lease
from runner.domain.events import (
    event_to_json,
    record_to_json,
    resume_from_json,
    spec_from_json,
)
from runner.play import eventloop
from runner.play.enginebuild import build_difference, build_of
from runner.play.engines import probe_engines
from runner.play.gpus import WorkerGpus
from runner.play.referee import play_game

POLL_S = 0.25  # how often a game checks that the runner still wants it
PROBE_TIMEOUT_S = 20.0  # an engine without StartupTimeoutS


class EngineProbes(WorkerPlugin):
    """Probes each engine once per worker process, before its first game (a worker that
    cannot run an engine refuses that engine's games instead of forfeiting them)."""

    name = PLUGIN

    def __init__(self, engines: dict[str, str] | None = None,
                 gpus: tuple[int, ...] = ()) -> None:
        # (command, args, protocol, startup timeout) -> (why not, or "", monotonic time)
        self.results: dict[tuple[Any, ...], tuple[str, float]] = {}
        self.lock = threading.Lock()
        # per-worker engine commands: engine name in the event -> command on this machine
        self.engines = dict(engines or {})
        self.gpus = WorkerGpus(gpus) if gpus else None  # GPU hook: --gpus (docs/gpus.md)

    def local(self, spec: Any) -> Any:
        """The spec with this worker's engine commands (``--engine NAME=COMMAND``)."""
        changes = {side: dataclasses.replace(engine, command=self.engines[engine.name])
                   for side, engine in (("white", spec.white), ("black", spec.black))
                   if engine.name in self.engines}
        return dataclasses.replace(spec, **changes) if changes else spec

    def setup(self, worker: Any) -> None:  # noqa: D401 - WorkerPlugin hook
        self.results = {}

    def problem(self, engine: Any, retry_s: float = float("inf")) -> str:
        """"" when the engine starts, completes its handshake and takes its Options here
        (within its StartupTimeoutS), else why not. A failure is probed again after
        ``retry_s`` seconds (the runner asks again after Cluster.RetryRefusedS)."""
        key = (engine.command, tuple(engine.args), engine.protocol, engine.startup_timeout_s)
        with self.lock:
            known = self.results.get(key)
            if known is None or (known[0] and time.monotonic() - known[1] >= retry_s):
                result = probe_engines([engine], None, default=PROBE_TIMEOUT_S)[0]
                known = self.results[key] = (result.error, time.monotonic())
            return known[0]


def build_problem(engine: Any, want: str) -> str:
    """"" when this worker's build of the engine (its own command, the game's Args and
    Options) is the event's (``want``; "" = not checked), else why not, with both digests
    (TCEC rule 8: runner.play.enginebuild). Checked before every game: a file replaced on this
    machine is caught at its next game."""
    if not want:
        return ""
    now = build_of(engine)
    if now.digest == want:
        return ""
    return build_difference(engine.name, {"digest": want}, now, named=False) + (
        f" on worker {get_worker().name}: install the event's build here (or start this "
        "worker without that engine)")


class Abandoned(Exception):
    """The runner no longer wants this game (it was cancelled, or the worker is closing)."""


# a worker started without the preload (plain ``dask worker``): its probes, kept here (no
# attribute is set on Dask's object)
_UNPLUGGED: weakref.WeakKeyDictionary[Any, EngineProbes] = weakref.WeakKeyDictionary()


def _probes(worker: Any) -> EngineProbes:
    plugin = worker.plugins.get(PLUGIN)
    if not isinstance(plugin, EngineProbes):  # plain `dask worker` without the preload
        plugin = _UNPLUGGED.get(worker)
        if plugin is None:
            plugin = _UNPLUGGED[worker] = EngineProbes()
    return plugin


def _wanted(worker: Any, key: Any) -> bool:
    if worker.status not in (Status.running, Status.paused):
        return False
    ts = worker.state.tasks.get(key)
    return ts is not None and ts.state not in ("cancelled", "released", "forgotten")


def play_task(epoch: str, token: str, spec_json: dict[str, Any],
              resume_json: dict[str, Any] | None, attempt: int,
              retry_refused_s: float = float("inf"), lease_s: float = 0.0) -> dict[str, Any]:
    """Play one game here and stream its events; returns ``{"record": ...}`` or
    ``{"refused": engine, "reason": ...}`` (the runner has the events already). The game
    stops, its engines killed, when the runner's lease lapses for ``lease_s`` (lease.py)."""
    worker = get_worker()
    key = worker.get_current_task()
    name = str(worker.name)

    def send(kind: str, **body: Any) -> None:
        worker.log_event(TOPIC, {"epoch": epoch, "token": token, "worker": worker.address,
                                 "name": name, "kind": kind, **body})

    send("claim")
    probes = _probes(worker)
    spec = probes.local(spec_from_json(spec_json))
    resume = resume_from_json(resume_json) if resume_json is not None else None
    if probes.gpus is not None:  # GPU hook: this worker's devices for the game, then back
        handed = probes.gpus.hand_over(spec, lambda: _wanted(worker, key))
        if handed is None:
            raise Abandoned(f"game {spec.game_id}: abandoned on {name} (no longer wanted)")
        try:
            return _checked_play(worker, key, probes, handed, resume, attempt, name, send,
                                 retry_refused_s, (epoch, lease_s))
        finally:
            probes.gpus.give_back(spec.game_id)
    return _checked_play(worker, key, probes, spec, resume, attempt, name, send, retry_refused_s,
                         (epoch, lease_s))


def _checked_play(worker: Any, key: Any, probes: EngineProbes, spec: Any, resume: Any,
                  attempt: int, name: str, send: Any, retry_refused_s: float,
                  lease_of: tuple[str, float]) -> dict[str, Any]:
    """The engines probed here (refused: why), then the game played under the runner's
    lease (``lease_of``: its epoch and LeaseS)."""
    for engine, want in ((spec.white, spec.white_build), (spec.black, spec.black_build)):
        problem = probes.problem(engine, retry_refused_s) or build_problem(engine, want)
        if problem:
            send("refused", engine=engine.name, reason=problem)
            return {"refused": engine.name, "reason": problem}
    lease = Lease(worker, *lease_of)
    try:
        record = eventloop.run(_play(worker, key, spec, resume, attempt, name, send, lease))
    finally:
        lease.close()
    return {"record": record_to_json(record)}


async def _play(worker: Any, key: Any, spec: Any, resume: Any, attempt: int, name: str,
                send: Any, lease: Lease) -> Any:
    def emit(event: Any) -> None:
        send("event", event=event_to_json(event))

    game = asyncio.create_task(play_game(spec, emit=emit, attempt=attempt, resume=resume,
                                         worker=name))
    while True:
        done, _ = await asyncio.wait({game}, timeout=POLL_S)
        if done:
            return game.result()
        expired = lease.expired()
        if expired or not _wanted(worker, key):
            game.cancel()  # kills both engines and their process groups
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await game
            why = (f"the runner's lease lapsed (nothing heard for {lease.lease_s:g} s)"
                   if expired else "no longer wanted")
            if expired:  # the worker's own log says why its game stopped
                print(f"swiss-runner worker: game {spec.game_id} stopped on {name}: {why}; "
                      "its engines were killed", file=sys.stderr, flush=True)
            raise Abandoned(f"game {spec.game_id}: abandoned on {name} ({why})")
