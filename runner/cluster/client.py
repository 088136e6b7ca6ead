"""The runner's side of a cluster: a backend with the play_game signature that plays each
game as a Dask task on some worker and forwards the task's events to the runner's sinks.

The runner remains the only writer: a task sends events, never touches the store. What can
go wrong, and what this module does about it:

- **A worker dies mid-game** (kill -9, reboot, cut off): the scheduler drops it (its
  heartbeats stop or its connection closes) and says so on the ``all`` topic; it would also
  rerun the task on another worker from move 1. The backend takes the retry over instead:
  the first worker to *claim* an attempt owns it, the attempt is lost when its owner leaves
  or another worker claims it (that is Dask's rerun), the task is cancelled (a cancelled
  game kills its engines) and :class:`ReplayGame` tells the tournament to decide the game
  again from its move log (TCEC rule 7.c: fresh engines, whole history, clocks +
  compensation). Neither engine loses.
- **The runner dies**: its client's tasks are released by the scheduler, and a released
  game stops itself (runner.cluster.task). Every message carries this run's *epoch*: events
  of an earlier run that still arrive are ignored; the new run resumes each interrupted
  game once, from its logged position (the ordinary resume path).
- **The scheduler dies**: the futures fail, the game is replayed from its position when a
  scheduler (and a worker) is back; the backend waits up to ``Cluster.WaitS``, says so, and
  makes a new Client when the old one gave up reconnecting.
- **A worker cannot run an engine** (its probe failed): the task refuses before the game
  starts; that worker gets no games of that engine for ``Cluster.RetryRefusedS``, then it
  is asked again (and probes the engine again: the operator may have fixed it), and the
  console says why.
- **A game that ends its worker again and again** (an engine that brings the machine down):
  after ``Cluster.MaxLostAttempts`` attempts lost with their worker the event stops with a
  message naming the game, the workers and why (:class:`GameEndsWorkers`; TCEC pauses the
  event), instead of taking down one worker after another for ever.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from runner.cluster import RESOURCE, TOPIC
from runner.cluster.lease import LeaseKeeper, Suspects, default_lease_s
from runner.domain.events import (
    GameEvent,
    GameFinished,
    GameStarted,
    MovePlayed,
    ResumePoint,
    event_from_json,
    record_from_json,
    record_to_json,
    resume_to_json,
    spec_to_json,
)
from runner.domain.models import GameRecord, GameSpec
from runner.errors import ReplayGame, StopEvent
from runner.play.gpus import game_resources, gpu_need_text, gpu_workers
from runner.play.referee import EnginesNotStarted

FINISH_WAIT_S = 10.0  # after the task's result, how long the GameFinished event may lag
# from the claim to GameStarted: two engine probes (20 s each at most) and the engines' start
STARTUP_BUDGET_S = 120.0


class ClusterUnavailable(StopEvent):
    """No scheduler (or no worker able to play) within Cluster.WaitS."""


class GameEndsWorkers(StopEvent):
    """One game lost its worker Cluster.MaxLostAttempts times: the event stops (paused)."""


@dataclass
class _Attempt:
    token: str
    game_id: int
    emit: Callable[[GameEvent], None]
    owner: str | None = None  # worker address that claimed it
    owner_name: str = ""
    ply: int = 0
    lost: asyncio.Event = field(default_factory=asyncio.Event)
    why: str = ""
    error: BaseException | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)
    heard: float | None = None  # monotonic time of the owner's last message (None: no claim)
    record: GameRecord | None = None  # the GameFinished's record, once it was recorded
    budget_s: float = STARTUP_BUDGET_S  # how long the owner may be silent before overdue

    def lose(self, why: str) -> None:
        if not self.lost.is_set():
            self.why = why
            self.lost.set()


def move_budget(event: MovePlayed | GameStarted, overdue_s: float) -> float:
    """How long the next move may take before the worker counts as cut off: the mover's
    clock plus Cluster.OverdueS (the referee itself flags a move over its clock, so a
    silent worker past this is gone, whatever Dask has noticed yet)."""
    if isinstance(event, GameStarted):
        white_to_move = " w " in event.start_fen
    else:
        white_to_move = " w " in event.fen
    ms = event.white_clock_ms if white_to_move else event.black_clock_ms
    return (ms or 0) / 1000 + overdue_s


async def _connect(address: str, wait_s: float, epoch: str, say: Callable[..., None]) -> Any:
    """A Dask client of the scheduler at ``address``, tried each second for up to ``wait_s``
    (said once); ClusterUnavailable past that."""
    from distributed import Client  # late: distributed loads only once a cluster is used

    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            return await Client(address, asynchronous=True, timeout=max(5.0, min(30.0, wait_s)),
                                name=f"swiss-runner {epoch}")
        except (OSError, TimeoutError) as exc:
            if time.monotonic() > deadline:
                raise ClusterUnavailable(
                    f"no Dask scheduler at {address} within Cluster.WaitS = {wait_s:g} s "
                    f"({exc}); start it (docs/cluster.md) and run the same command again: "
                    "nothing recorded is lost") from None
            if not said:
                say(f"Waiting for the Dask scheduler at {address} (up to {wait_s:g} s): {exc}",
                    always=True)
                said = True
            await asyncio.sleep(1.0)


class ClusterBackend:
    """``await backend(spec, emit=..., attempt=..., resume=...) -> GameRecord`` on a cluster."""

    # what it can do (runner.play.backend.Backend)
    can_resume = True  # games continue from a position (the referee plays them)
    local_engines = False  # engines start on the workers, which check their builds
    engine_resources = False  # a worker on another machine has no use for this one's

    def __init__(self, address: str, *, wait_s: float = 600.0, overdue_s: float = 60.0,
                 retry_refused_s: float = 600.0, max_lost_attempts: int = 3,
                 lease_s: float | None = None, say: Callable[..., None] | None = None,
                 on_workers: Callable[[list[dict[str, Any]]], None] | None = None,
                 alert: Callable[..., None] | None = None):
        self.address = address
        self.wait_s = wait_s
        self.overdue_s = overdue_s
        # a game's worker that has not seen this runner's lease renewed for lease_s stops it
        self.lease_s = default_lease_s(overdue_s) if lease_s is None else lease_s
        self.retry_refused_s = retry_refused_s
        self.max_lost_attempts = max_lost_attempts
        self.refused_at: dict[tuple[str, str], float] = {}  # (worker, engine) -> monotonic
        self.lost_attempts: dict[int, list[str]] = {}  # game id -> why each attempt was lost
        self.say: Callable[..., None] = say or (lambda text, **_: print(text, flush=True))
        self.epoch = f"{os.getpid()}-{time.time_ns()}"
        self.lease = LeaseKeeper(self.epoch)
        self.suspects = Suspects()  # workers given up as cut off, until heard again
        self.client: Any = None
        self.attempts: dict[str, _Attempt] = {}
        self.refused: dict[str, dict[str, str]] = {}  # worker address -> engine -> why
        self.names: dict[str, str] = {}  # worker address -> name
        self.latencies: list[float] = []  # move-to-sink latency (ms), for bench_cluster
        self._submits = 0
        self._scheduler_id = ""
        # the workers table of status and the JSON state: address -> name, slots, state,
        # last_seen (ISO 8601 UTC), refused {engine: why}; handed to on_workers on changes
        self.workers: dict[str, dict[str, Any]] = {}
        self.on_workers = on_workers
        self.alert: Callable[..., None] = alert or (lambda kind, **fields: None)  # Alerter.emit
        self._connecting: asyncio.Lock | None = None

    def _seen(self, address: str, *, name: str | None = None, slots: float | None = None,
              state: str | None = None, publish: bool = False) -> None:
        row = self.workers.setdefault(address, {"address": address, "name": address,
                                                "slots": 0, "state": "joined",
                                                "last_seen": None, "refused": {}})
        if name:
            row["name"] = name
        if slots is not None:
            row["slots"] = int(slots)
        if state is not None:
            row["state"] = state
        row["last_seen"] = datetime.now(UTC).isoformat(timespec="seconds")
        if publish and self.on_workers is not None:
            try:
                self.on_workers(list(self.workers.values()))
            except Exception as exc:  # noqa: BLE001 - a view: never costs a game
                self.say(f"cannot record the workers table: {exc}", always=True)

    # ---- connection ----------------------------------------------------------------------

    async def _client(self) -> Any:
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            if self.client is not None and self.client.status in ("running", "connecting"):
                return self.client
            if self.client is not None:  # it gave up reconnecting: a new one
                with contextlib.suppress(Exception):
                    await self.client.close()
                self.client = None
            self.client = await _connect(self.address, self.wait_s, self.epoch, self.say)
            self._scheduler_id = ""
            self.lease.start(self.client)
            workers = await self._workers() or {}
            self.names.update({a: str(w.get("name", a)) for a, w in workers.items()})
            for a, w in workers.items():
                self._seen(a, name=self.names[a], slots=w.get("resources", {}).get(RESOURCE))
            self._seen_all()
            listed = ", ".join(f"{self.names[a]} ({int(w.get('resources', {}).get(RESOURCE, 0))}"
                               " slots)" for a, w in workers.items()) or "none yet"
            self.say(f"Connected to the Dask scheduler at {self.address}; workers: {listed}",
                     always=True)
            return self.client

    async def _workers(self) -> dict[str, dict[str, Any]] | None:
        """The workers with game slots; None when the scheduler cannot be reached.

        A scheduler started again forgets every subscription: they are made again whenever
        the scheduler's id changes."""
        try:
            info = await self.client.scheduler.identity(n_workers=-1)
        except Exception:  # noqa: BLE001 - OSError, CommClosedError: it is away
            return None
        if info.get("id") != self._scheduler_id:
            if self._scheduler_id:
                self.say(f"The Dask scheduler at {self.address} is back: dispatching again",
                         always=True)
            self._scheduler_id = str(info.get("id"))
            self.client.subscribe_topic(TOPIC, self._on_message)
            self.client.subscribe_topic("all", self._on_cluster)
        return {a: w for a, w in info.get("workers", {}).items()
                if w.get("resources", {}).get(RESOURCE, 0) > 0}

    def _seen_all(self) -> None:
        if self.on_workers is not None and self.workers:
            self.on_workers(list(self.workers.values()))

    async def aclose(self) -> None:
        await self.lease.stop()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
            self.client = None

    # ---- messages (on the event loop, from the client's subscription) -------------------

    def _on_cluster(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        if not isinstance(msg, dict):
            return
        action, address = msg.get("action"), msg.get("worker")
        if action == "add-worker" and address:
            self.say(f"Worker joined: {address}", always=True)
            self._seen(address, state="joined", publish=True)
            if self.client is not None:  # its name and slots, when the scheduler answers
                asyncio.ensure_future(self._describe(address))
        elif action == "remove-worker" and address:
            name = self.names.get(address, address)
            self.say(f"Worker left: {name} ({address})", always=True)
            self._seen(address, state="left", publish=True)
            games = []
            for attempt in self.attempts.values():
                if attempt.owner == address:
                    games.append(attempt.game_id)
                    attempt.lose(f"worker {name} was lost at ply {attempt.ply}")
            self.alert("worker_lost", worker=name, address=address, games=games,
                       reason="it left the cluster")

    async def _describe(self, address: str) -> None:
        """A joined worker's name and slots (a task nobody awaits: it never raises; the
        table is updated at the next message of that worker anyway)."""
        try:
            workers = await self._workers() or {}
        except Exception:  # noqa: BLE001 - the client closing meanwhile
            return
        if address in workers:
            w = workers[address]
            self.names[address] = str(w.get("name", address))
            self._seen(address, name=self.names[address],
                       slots=w.get("resources", {}).get(RESOURCE), publish=True)

    def _on_message(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        if not isinstance(msg, dict) or msg.get("epoch") != self.epoch:
            return  # an earlier run's task: ignored
        attempt = self.attempts.get(str(msg.get("token")))
        if attempt is None or attempt.lost.is_set():
            return  # an attempt given up already
        worker, name, kind = msg.get("worker"), str(msg.get("name", "")), msg.get("kind")
        if worker:
            self.names[worker] = name
            self._seen(worker, name=name, publish=kind in ("claim", "refused"))
        if kind == "claim":
            if attempt.owner is None:
                attempt.owner, attempt.owner_name = worker, name
                attempt.heard = time.monotonic()
            elif attempt.owner != worker:  # Dask reran the task elsewhere: its owner died
                attempt.lose(f"worker {attempt.owner_name} was lost at ply {attempt.ply}")
            return
        if worker != attempt.owner:
            return
        attempt.heard = time.monotonic()
        if kind == "refused":
            self.refused.setdefault(worker, {})[str(msg.get("engine"))] = str(msg.get("reason"))
            self.refused_at[(worker, str(msg.get("engine")))] = time.monotonic()
            self.workers[worker]["refused"] = dict(self.refused[worker])
            self._seen_all()
            return
        if kind != "event":
            return
        try:
            game_event = event_from_json(msg["event"])
            if isinstance(game_event, MovePlayed | GameStarted):
                attempt.budget_s = move_budget(game_event, self.overdue_s)
            ply = getattr(game_event, "ply", None)
            if ply is not None:
                attempt.ply = ply
            attempt.emit(game_event)
            at_ms = getattr(game_event, "at_ms", 0)
            if at_ms:
                self.latencies.append(time.time() * 1000 - at_ms)
            if isinstance(game_event, GameFinished):
                attempt.record = game_event.record
                attempt.finished.set()
        except BaseException as exc:  # noqa: BLE001 - a sink failed: the game stops
            attempt.error = exc
            attempt.lose(f"recording failed: {exc}")

    # ---- playing a game ------------------------------------------------------------------

    async def __call__(self, spec: GameSpec, *, emit: Callable[[GameEvent], None],
                       on_process: Callable[[int, float], None] | None = None,
                       attempt: int = 1, resume: ResumePoint | None = None,
                       **_local: Any) -> GameRecord:
        """``_local``: this machine's per-game resources (Affinity cores), which a worker on
        another machine has no use for."""
        # late: runner.cluster.task imports distributed, which loads only once a cluster is used
        from runner.cluster.task import play_task

        token = f"{spec.game_id}:{attempt}"
        spec_json = spec_to_json(spec)
        resume_json = resume_to_json(resume) if resume is not None else None
        while True:
            workers = await self._allowed(spec)
            client = await self._client()
            state = self.attempts[token] = _Attempt(token, spec.game_id, emit,
                                                    budget_s=self._startup_budget(spec))
            self._submits += 1
            future = client.submit(play_task, self.epoch, token, spec_json, resume_json,
                                   attempt, self.retry_refused_s, self.lease_s, key=f"swiss-runner-game-{self.epoch}-{token}-"
                                   f"{self._submits}", resources={RESOURCE: 1, **game_resources(spec)}, retries=0,
                                   pure=False, workers=workers, allow_other_workers=False)
            try:
                result = await self._outcome(future, state)
            except ReplayGame as exc:
                self._count_lost(spec, state, exc)
                raise
            finally:
                self.attempts.pop(token, None)
                if not future.done():
                    with contextlib.suppress(Exception):
                        await client.cancel([future], reason="swiss-runner gave the attempt up")
            if "refused" in result:
                self.say(f"Worker {state.owner_name} refused game {spec.game_id}: engine "
                         f"{result['refused']}: {result['reason']}; it gets no games of "
                         f"{result['refused']} for {self.retry_refused_s:g} s (then it is "
                         "asked again)", always=True)
                continue
            if not state.finished.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(state.finished.wait(), FINISH_WAIT_S)
            return record_from_json(result["record"])

    def _startup_budget(self, spec: GameSpec) -> float:
        """From the claim to GameStarted: each engine's probe and start, within its
        StartupTimeoutS (the probe's own default when it has none), and the usual slack."""
        # late: runner.cluster.task imports distributed, which loads only once a cluster is used
        from runner.cluster.task import PROBE_TIMEOUT_S

        startup = sum(2 * (e.startup_timeout_s or PROBE_TIMEOUT_S) for e in (spec.white, spec.black))
        return max(STARTUP_BUDGET_S, startup + self.overdue_s)

    def _count_lost(self, spec: GameSpec, state: _Attempt, exc: ReplayGame) -> None:
        """Count an attempt lost with its worker; stop the event at Cluster.MaxLostAttempts
        (a lost scheduler is no fault of the game and does not count)."""
        if state.owner is None or getattr(exc, "scheduler_lost", False):
            return
        lost = self.lost_attempts.setdefault(spec.game_id, [])
        lost.append(f"{state.owner_name or state.owner}: {exc}")
        if len(lost) < self.max_lost_attempts:
            return
        names = sorted({why.split(":", 1)[0] for why in lost})
        raise GameEndsWorkers(
            f"game {spec.game_id} ({spec.white.name} vs {spec.black.name}) lost its worker in "
            f"{len(lost)} attempts in a row (Cluster.MaxLostAttempts = {self.max_lost_attempts}), "
            f"on {', '.join(names)}: " + " | ".join(f"attempt {i}: {why}" for i, why in
                                                    enumerate(lost, 1))
            + ". The event stops here (as TCEC pauses an event whose game brings its machines "
            "down): check those workers and the two engines, then run the same command again; "
            "every recorded game is intact and this game continues from its last logged "
            "position") from exc

    async def _watch(self, state: _Attempt) -> None:
        """Give the attempt up when its owner has been silent past its budget."""
        while not state.lost.is_set():
            await asyncio.sleep(min(1.0, self.overdue_s / 4))
            if state.heard is not None and time.monotonic() - state.heard > state.budget_s:
                name = state.owner_name or state.owner or "?"
                if state.owner:
                    self.suspects.add(state.owner)
                state.lose(f"worker {name} sent nothing for {state.budget_s:.0f} s (cut off?) "
                           f"at ply {state.ply}")
                self.alert("worker_lost", worker=name, address=state.owner or "",
                           games=[state.game_id], reason=state.why)

    async def _outcome(self, future: Any, state: _Attempt) -> dict[str, Any]:
        async def result() -> Any:
            try:
                return await future
            except BaseException as exc:  # noqa: BLE001 - reported below
                return exc

        waiting = asyncio.ensure_future(result())
        lost = asyncio.ensure_future(state.lost.wait())
        watch = asyncio.ensure_future(self._watch(state))
        try:
            await asyncio.wait({waiting, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            lost.cancel()
            watch.cancel()
            if not waiting.done():
                waiting.cancel()
        if state.error is not None:
            raise state.error
        if state.record is not None:
            # the game's end was recorded (the task's result is the same record): whatever
            # came after, its worker or the scheduler lost before the task's result arrived,
            # the game is over, never replayed nor scored twice
            return {"record": record_to_json(state.record)}
        if state.lost.is_set():
            raise ReplayGame(f"{state.why}; the game continues from its last logged position")
        outcome = waiting.result()
        if isinstance(outcome, EnginesNotStarted):  # that game's trouble: held, not replayed
            raise outcome
        if isinstance(outcome, BaseException):
            where = f" on worker {state.owner_name}" if state.owner_name else ""
            if "scheduler-connection-lost" in str(outcome):
                lost = ReplayGame(f"the Dask scheduler was lost at ply {state.ply}{where}; the "
                                  "game continues from its last logged position when it is back")
                lost.scheduler_lost = True  # type: ignore[attr-defined]
                raise lost
            raise ReplayGame(f"the task failed{where} at ply {state.ply} "
                             f"({type(outcome).__name__}: {outcome}); the game continues from "
                             "its last logged position")
        return outcome

    def _forgive_refusals(self) -> None:
        """Refusals older than Cluster.RetryRefusedS are dropped: the worker is asked again
        (it probes the engine again; the operator may have fixed it meanwhile)."""
        now = time.monotonic()
        for (worker, engine), when in list(self.refused_at.items()):
            if now - when < self.retry_refused_s:
                continue
            del self.refused_at[(worker, engine)]
            refused = self.refused.get(worker, {})
            refused.pop(engine, None)
            if not refused:
                self.refused.pop(worker, None)
            if worker in self.workers:
                self.workers[worker]["refused"] = dict(refused)
            self.say(f"Worker {self.names.get(worker, worker)} may play {engine} again (it "
                     f"refused it {now - when:.0f} s ago): it probes it again", always=True)
            self._seen_all()

    async def _allowed(self, spec: GameSpec) -> list[str] | None:
        """Workers that have not refused either engine (None: any worker); waits while there
        is none, up to Cluster.WaitS."""
        engines = {spec.white.name, spec.black.name}
        deadline = time.monotonic() + self.wait_s
        said = ""
        while True:
            self._forgive_refusals()
            await self._client()
            workers = gpu_workers(await self._workers(), spec)  # enough GPUs
            barred = self.suspects.barred(workers or {})
            if workers and not self.refused and not barred:
                return None
            ok = [a for a in workers or {}
                  if a not in barred and not engines & set(self.refused.get(a, {}))]
            if ok:
                return ok
            why = self._why_no_worker(workers, barred, engines, spec)
            if time.monotonic() > deadline:
                raise ClusterUnavailable(f"game {spec.game_id} cannot be played: {why} (waited "
                                         f"Cluster.WaitS = {self.wait_s:g} s)")
            if why != said:
                self.say(f"Game {spec.game_id} waits for a worker: {why}", always=True)
                said = why
            await asyncio.sleep(1.0)

    def _why_no_worker(self, workers: dict[str, Any] | None, barred: set[str],
                       engines: set[str], spec: GameSpec) -> str:
        """Why no worker may play a game of ``engines`` now (for the console)."""
        if workers is None:
            return f"the Dask scheduler at {self.address} is unreachable"
        if not workers:
            return f"no worker {gpu_need_text(spec)}is connected"
        why = [f"{self.names.get(a, a)}: {r}" for a in workers
               for e, r in self.refused.get(a, {}).items() if e in engines]
        why += [f"{self.names.get(a, a)}: cut off (given up, not heard from since)"
                for a in sorted(barred)]
        return "every worker refused " + " or ".join(sorted(engines)) + (
            " or is cut off" if barred else "") + ": " + "; ".join(why)
