"""Alerts: tell a person when the event needs one (the ``Alerts`` block, docs/alerts.md).

An :class:`Alerter` owns one thread and a bounded queue. ``emit(kind, **fields)`` only puts
a small tuple in the queue (the oldest is dropped when it is full, counted and reported): it
never blocks the game loop and never raises. The thread turns each alert into one versioned
JSON document (``"format": "swiss-runner-alert"``, ``"version"``: :data:`ALERT_VERSION`;
its JSON Schema is :data:`ALERT_SCHEMA`, published as docs/alert.schema.json) and delivers it
to ``Alerts.Command`` (the JSON on its stdin; killed with its whole process group after
``TimeoutS``) and/or ``Alerts.Url`` (POSTed), each with ``Retries`` retries and a back-off.
A delivery that fails is reported once per kind and target on stderr, without a traceback,
and the event goes on. The thread also watches the free space of the record's directories
(``DiskFreeMb``). :meth:`Alerter.close` sends what it can within :data:`FLUSH_S` seconds.

The runner makes one per run (runner.cli.run) and hands it to the tournament
(``Tournament.alerts``) and to a cluster backend (``ClusterBackend.alert``); other code
reaches it there: ``tournament.alerts.emit("td_decision", action=..., reason=..., who=...)``.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from runner.clock import utc_now as _now
from runner.config.typed import ALERT_KINDS, AlertsConfig, Config
from runner.domain.endings import GameEnd, classify_end
from runner.domain.events import GameEvent, GameFinished
from runner.domain.models import EventResults
from runner.errors import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK
from runner.service.views.snapshotdoc import standings_rows
from runner.store.database import Store

ALERT_FORMAT = "swiss-runner-alert"
ALERT_VERSION = 1
FLUSH_S = 10.0  # close(): the longest the runner waits for queued alerts at its end
WAIT_SLICE_S = 0.1  # close()'s wait for the last alerts looks for a stop signal this often
DISK_CHECK_S = 120.0  # free space is checked after each game and at least this often
DISK_RECOVERED = 1.1  # low until free space is back above 110% of DiskFreeMb (no flapping)
BACKOFF_S = 0.5  # before retry n: BACKOFF_S * 2**n seconds, at most MAX_BACKOFF_S
MAX_BACKOFF_S = 30.0

_ENGINE_KINDS = {GameEnd.DISCONNECT: "engine_crashed", GameEnd.STALL: "engine_stalled",
                 GameEnd.TIME_FORFEIT: "engine_forfeit", GameEnd.ILLEGAL_MOVE: "engine_forfeit"}


# --------------------------------------------------------------------------- the document


def _object(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "required": sorted(required),
            "properties": {**required, **(optional or {})}}


_INT = {"type": "integer"}
_COUNT = {"type": "integer", "minimum": 0}
_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}
_COUNT_OR_NULL = {"type": ["integer", "null"], "minimum": 0}
_STANDINGS = {"type": "array", "items": _object(
    {"place": {"type": "integer", "minimum": 1}, "engine": _STR, "score": {"type": "number"}})}
_GAME = _object({"game_id": _COUNT, "round": _COUNT, "white": _STR, "black": _STR,
                 "engine": _STR_OR_NULL, "result": {"enum": ["1-0", "0-1", "1/2-1/2"]},
                 "reason": _STR, "termination": _STR_OR_NULL, "end": _STR})
_END = {"exit_code": _INT, "reason": _STR, "games_finished": _COUNT_OR_NULL,
        "games_total": _COUNT_OR_NULL}
_DATA: dict[str, dict[str, Any]] = {
    "event_stopped": _object(_END),
    "event_failed": _object(_END),
    "engine_crashed": _GAME,
    "gpu_failed": _object({"device": _COUNT, "game_id": _COUNT, "engine": _STR, "reason": _STR}),
    "engine_stalled": _GAME,
    "engine_forfeit": _GAME,
    "worker_lost": _object({"worker": _STR, "address": _STR, "reason": _STR,
                            "games": {"type": "array", "items": _COUNT}}),
    "disk_low": _object({"path": _STR, "free_mb": _COUNT, "threshold_mb": _COUNT,
                         "low": {"type": "boolean"}}),
    "round_ended": _object({"round": _COUNT, "extra": {"type": "boolean"}, "games": _COUNT,
                            "white_wins": _COUNT, "black_wins": _COUNT, "draws": _COUNT,
                            "bye": _STR_OR_NULL,
                            "standings": {"anyOf": [_STANDINGS, {"type": "null"}]}}),
    "event_ended": _object({"games_finished": _COUNT, "games_total": _COUNT,
                            "standings": {"anyOf": [_STANDINGS, {"type": "null"}]}}),
    "td_decision": _object({"action": _STR, "reason": _STR_OR_NULL, "who": _STR},
                           {"arguments": {"type": "object"}}),
    "td_failed": _object({"id": _COUNT, "action": _STR, "who": _STR, "reason": _STR},
                         {"arguments": {"type": "object"}}),
    "game_held": _object({"game_id": _COUNT, "round": _COUNT, "white": _STR, "black": _STR,
                          "reason": _STR}),
}

# The payload's JSON Schema, published as docs/alert.schema.json (schema_text(); the tests
# compare the two). A key added within a version is optional; the version changes only
# when a key is removed or changes meaning.
ALERT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://swiss-runner.invalid/alert.schema.json",
    "title": "swiss-runner alert",
    "type": "object",
    "required": ["format", "version", "kind", "seq", "time", "event", "site", "host",
                 "config", "message", "dropped", "data"],
    "properties": {
        "format": {"const": ALERT_FORMAT},
        "version": {"const": ALERT_VERSION},
        "kind": {"enum": list(ALERT_KINDS)},
        "seq": {"type": "integer", "minimum": 1},
        "time": {"type": "string", "format": "date-time"},
        "event": _STR, "site": _STR, "host": _STR, "config": _STR,
        "message": _STR,
        "dropped": _COUNT,
        "data": {"type": "object"},
    },
    "allOf": [{"if": {"properties": {"kind": {"const": kind}}},
               "then": {"properties": {"data": schema}}} for kind, schema in _DATA.items()],
}


def schema_text() -> str:
    """docs/alert.schema.json as it must read."""
    return json.dumps(ALERT_SCHEMA, indent=2) + "\n"




def _message(kind: str, data: dict[str, Any], event: str) -> str:
    """One line for a person (a chat hook shows only this)."""
    d = data
    if kind in ("engine_crashed", "engine_stalled", "engine_forfeit"):
        return (f"{event}: game {d.get('game_id')} ({d.get('white')} vs {d.get('black')}): "
                f"{d.get('reason')} ({d.get('result')})")
    if kind == "round_ended":
        label = "extra pair round" if d.get("extra") else "round"
        lead = d.get("standings") or []
        leader = f"; leader {lead[0]['engine']} {lead[0]['score']:g}" if lead else ""
        return (f"{event}: {label} {d.get('round')} complete: {d.get('games')} games{leader}")
    if kind == "event_ended":
        lead = d.get("standings") or []
        winner = f"; first: {lead[0]['engine']} {lead[0]['score']:g}" if lead else ""
        return f"{event}: event complete, {d.get('games_finished')} games{winner}"
    if kind in ("event_stopped", "event_failed"):
        word = "stopped" if kind == "event_stopped" else "failed"
        return f"{event}: the runner {word}: {d.get('reason')}"
    if kind == "worker_lost":
        return f"{event}: worker {d.get('worker')} lost: {d.get('reason')}"
    if kind == "disk_low":
        state = "low" if d.get("low") else "recovered"
        return (f"{event}: disk space {state}: {d.get('free_mb')} MB free in {d.get('path')} "
                f"(threshold {d.get('threshold_mb')} MB)")
    if kind == "td_failed":
        return (f"{event}: TD command #{d.get('id')} ({d.get('action')}) by {d.get('who')} "
                f"failed: {d.get('reason')}")
    if kind == "game_held":
        return (f"{event}: game {d.get('game_id')} ({d.get('white')} vs {d.get('black')}) "
                f"held, the next round waits: {d.get('reason')}")
    if kind == "gpu_failed":  # runner.service.views.gpualerts (docs/gpus.md)
        return (f"{event}: GPU {d.get('device')} failed in game {d.get('game_id')} "
                f"({d.get('engine')}): {d.get('reason')}")
    if kind == "td_decision":
        return f"{event}: TD decision by {d.get('who')}: {d.get('action')} ({d.get('reason')})"
    return f"{event}: {kind}"


# --------------------------------------------------------------------------- the alerter


class Alerter:
    """Sends alerts from its own thread; disabled (every call a no-op) without a config."""

    def __init__(self, config: AlertsConfig | None, *, event: str = "", site: str = "",
                 config_path: str = "", watch: Iterable[Path] = (),
                 report: Callable[[str], None] | None = None,
                 disk_usage: Callable[[str], Any] = shutil.disk_usage):
        self.config = config
        self.event, self.site, self.config_path = event, site, config_path
        self.host = socket.gethostname()
        self.watch = [Path(p) for p in dict.fromkeys(str(p) for p in watch)]
        self.report = report or (lambda text: print(f"warning: {text}", file=sys.stderr,
                                                    flush=True))
        self.disk_usage = disk_usage
        size = config.queue_size if config is not None else 1
        self._queue: collections.deque[tuple[str, dict[str, Any], str, int]] = (
            collections.deque(maxlen=size))
        self._cond = threading.Condition()
        self._seq = itertools.count(1)
        self._wake = threading.Event()  # set by close(): back-offs stop waiting
        self._done = threading.Event()  # set when the thread has ended
        self._thread: threading.Thread | None = None
        self._closing = False
        self._deadline = float("inf")
        self._disk_due = True
        self._disk_low: dict[str, bool] = {}
        self._proc: subprocess.Popen[bytes] | None = None  # the command being run
        self._reported: set[tuple[str, ...]] = set()
        self.dropped = 0  # alerts dropped from a full queue (or unsent at the end)
        self.sent: list[dict[str, Any]] = []  # the last payloads delivered (at most 50)
        self.failures = 0  # deliveries that failed every attempt

    @classmethod
    def for_config(cls, config: Config, **kwargs: Any) -> Alerter:
        """The alerter of an event (disabled without an Alerts block): it watches the
        directories of the database and of the JSON state."""
        return cls(config.alerts, event=config.event, site=config.site,
                   config_path=str(config.path),
                   watch=(config.database.parent, config.swiss.state_path.parent), **kwargs)

    @property
    def enabled(self) -> bool:
        return self.config is not None

    def start(self) -> Alerter:
        if self.config is None or self._thread is not None:
            return self
        command = self.config.command
        if command and shutil.which(command[0]) is None:
            self._report_once(("start",), f"Alerts.Command: {command[0]!r} is not an "
                              "executable program here; alerts by command will fail")
        self._thread = threading.Thread(target=self._loop, name="alerts", daemon=True)
        self._thread.start()
        return self

    def emit(self, kind: str, **fields: Any) -> None:
        """Queue an alert (a no-op when disabled or when ``Alerts.On`` leaves ``kind`` out).
        Never blocks and never raises."""
        try:
            if self.config is None or kind not in self.config.on:
                if self.config is not None and kind not in ALERT_KINDS:
                    self._report_once(("kind", kind), f"alerts: unknown kind {kind!r} ignored "
                                      "(a bug in swiss-runner, reported once)")
                return
            with self._cond:
                if len(self._queue) == self._queue.maxlen:
                    self._drop(1)
                self._queue.append((kind, fields, _now(), next(self._seq)))
                self._cond.notify()
        except Exception:  # noqa: BLE001 - an alert never costs the event
            return

    def check_disk(self) -> None:
        """Ask the thread to check the free space now (after a game)."""
        if self.config is None or not self.config.disk_free_mb:
            return
        with self._cond:
            self._disk_due = True
            self._cond.notify()

    def sink(self) -> AlertSink | None:
        """The view of the game stream that reports engine crashes, stalls and forfeits."""
        return AlertSink(self) if self.enabled else None

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued within ``timeout`` seconds (:data:`FLUSH_S`), then stop the
        thread (a command still running is killed); what is left is counted and reported. A
        stop signal meanwhile ends the wait at once (the run still exits with its own code)."""
        thread = self._thread
        if thread is None:
            return
        timeout = FLUSH_S if timeout is None else timeout
        with self._cond:
            self._closing = True
            self._deadline = time.monotonic() + timeout
            self._cond.notify()
        self._wake.set()
        # an Event, not thread.join: a join interrupted by a signal can leave the thread
        # looking finished (is_alive() False) while it still runs. In slices: a stop signal
        # the kernel gave another thread of the process is only acted on when this thread
        # runs Python again.
        end = time.monotonic() + timeout
        try:
            while not self._done.wait(min(WAIT_SLICE_S, max(end - time.monotonic(), 0.0))):
                if time.monotonic() >= end:
                    break
        except KeyboardInterrupt:  # SIGINT/SIGTERM while waiting: stop waiting, not the run
            with self._cond:
                self._deadline = time.monotonic()
        proc = self._proc
        if not self._done.is_set() and proc is not None:  # a command past the deadline
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(KeyboardInterrupt):
            self._done.wait(1.0)  # a URL still waiting: the daemon thread ends with the process
        running = not self._done.is_set()
        with self._cond:
            left = len(self._queue)
            self._queue.clear()
        if running or left:
            self._drop(left + (1 if running else 0), at_end=True)
        self._thread = None

    # ---- the thread ----------------------------------------------------------------------

    def _drop(self, count: int, at_end: bool = False) -> None:
        self.dropped += count
        why = (f"the run ended before {'they' if count > 1 else 'it'} could be sent "
               f"(the runner waits at most {FLUSH_S:g} s for them)") if at_end else (
            f"the queue of Alerts.QueueSize = {self.config.queue_size if self.config else 0} "
            "was full: the oldest was dropped")
        self._report_once(("drop", str(at_end)), f"alerts: {count} alert(s) not sent: {why} "
                          "(reported once; the count is in the next alerts' \"dropped\")")

    def _report_once(self, key: tuple[str, ...], text: str) -> None:
        if key in self._reported:
            return
        self._reported.add(key)
        with contextlib.suppress(Exception):
            self.report(text)

    def _loop(self) -> None:
        try:
            self._serve()
        finally:
            self._done.set()

    def _serve(self) -> None:
        assert self.config is not None
        next_disk = 0.0
        while True:
            with self._cond:
                while not self._queue and not self._closing:
                    due = self._disk_due or time.monotonic() >= next_disk
                    if due and self.config.disk_free_mb:
                        break
                    self._cond.wait(max(0.05, next_disk - time.monotonic())
                                    if self.config.disk_free_mb else None)
                item = self._queue.popleft() if self._queue else None
                check = self._disk_due or time.monotonic() >= next_disk
                self._disk_due = False
                if item is None and self._closing:
                    return
            try:
                if check and self.config.disk_free_mb and not self._closing:
                    next_disk = time.monotonic() + DISK_CHECK_S
                    self._check_disk()
                if item is not None:
                    if self._closing and time.monotonic() >= self._deadline:
                        with self._cond:  # too late: close() counts and reports what is left
                            self._queue.appendleft(item)
                        return
                    self._deliver(*item)
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any bug
                self._report_once(("bug", type(exc).__name__),
                                  f"alerts: {type(exc).__name__}: {exc} (a bug in "
                                  "swiss-runner, reported once); the event goes on")

    def _check_disk(self) -> None:
        assert self.config is not None
        threshold = self.config.disk_free_mb
        seen: set[int] = set()
        for folder in self.watch:
            try:
                device = os.stat(folder).st_dev
                if device in seen:
                    continue
                seen.add(device)
                free_mb = int(self.disk_usage(str(folder)).free // (1 << 20))
            except OSError:
                continue
            low = self._disk_low.get(str(folder), False)
            if not low and free_mb < threshold:
                self._disk_low[str(folder)] = True
            elif low and free_mb >= threshold * DISK_RECOVERED:
                self._disk_low[str(folder)] = False
            else:
                continue
            self.emit("disk_low", path=str(folder), free_mb=free_mb, threshold_mb=threshold,
                      low=not low)

    def payload(self, kind: str, fields: dict[str, Any], at: str, seq: int) -> dict[str, Any]:
        data = json.loads(json.dumps(fields, default=str))  # what JSON can carry
        return {"format": ALERT_FORMAT, "version": ALERT_VERSION, "kind": kind, "seq": seq,
                "time": at, "event": self.event, "site": self.site, "host": self.host,
                "config": self.config_path, "message": _message(kind, data, self.event),
                "dropped": self.dropped, "data": data}

    def _deliver(self, kind: str, fields: dict[str, Any], at: str, seq: int) -> None:
        assert self.config is not None
        doc = self.payload(kind, fields, at, seq)
        body = json.dumps(doc, separators=(",", ":")).encode("utf-8")
        ok = True
        if self.config.command:
            ok &= self._attempts(kind, "Alerts.Command", lambda t: self._run_command(body, kind, t))
        if self.config.url:
            ok &= self._attempts(kind, "Alerts.Url", lambda t: self._post(body, t))
        if ok:
            self.sent.append(doc)
            del self.sent[:-50]

    def _attempts(self, kind: str, target: str, attempt: Callable[[float], str | None]) -> bool:
        """Try up to 1 + Retries times with a back-off; report a failure once per kind."""
        assert self.config is not None
        why = ""
        tries = 0
        for n in range(self.config.retries + 1):
            budget = self.config.timeout_s
            if self._closing:
                budget = min(budget, self._deadline - time.monotonic())
                if budget <= 0:
                    why = why or "the run ended first"
                    break
            tries += 1
            problem = attempt(budget)
            if problem is None:
                return True
            why = problem
            if n < self.config.retries:
                self._pause(min(MAX_BACKOFF_S, BACKOFF_S * 2 ** n))
        self.failures += 1
        self._report_once(("fail", kind, target),
                          f"alerts: {kind} not delivered by {target} after {tries} attempt(s): "
                          f"{why}; the event goes on (reported once per kind)")
        return False

    def _pause(self, seconds: float) -> None:
        if not self._closing:
            self._wake.wait(seconds)
        if self._closing:  # at the end: still back off, within the deadline
            time.sleep(max(0.0, min(seconds, self._deadline - time.monotonic())))

    def _run_command(self, body: bytes, kind: str, timeout: float) -> str | None:
        assert self.config is not None and self.config.command
        env = {**os.environ, "SWISS_RUNNER_ALERT_KIND": kind}
        with tempfile.TemporaryFile() as errors:
            try:
                proc = subprocess.Popen(list(self.config.command), stdin=subprocess.PIPE,
                                        stdout=subprocess.DEVNULL, stderr=errors, env=env,
                                        start_new_session=True)
            except OSError as exc:
                return f"cannot start {self.config.command[0]!r}: {exc.strerror or exc}"
            self._proc = proc
            try:
                proc.communicate(body, timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the command and what it started
                proc.wait()
                return f"timed out after {timeout:g} s (killed)"
            finally:
                self._proc = None
            if proc.returncode == 0:
                return None
            errors.seek(0)
            said = errors.read(2000).decode("utf-8", "replace").strip().splitlines()
            status = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
                      else f"exit status {proc.returncode}")
            return status + (f" ({said[-1][:200]})" if said else "")

    def _post(self, body: bytes, timeout: float) -> str | None:
        assert self.config is not None and self.config.url
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            self.config.url, data=body, method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "swiss-runner alerts"})
        try:
            with _opener().open(request, timeout=timeout) as response:
                response.read(65536)
                return None
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code} {exc.reason}"
        except urllib.error.URLError as exc:
            return f"{exc.reason}"
        except (OSError, ValueError) as exc:  # a timeout, a reset, a bad response
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        except Exception as exc:  # noqa: BLE001 - http.client's errors (a bad status line)
            return f"{type(exc).__name__}: {exc}"


@functools.cache
def _opener() -> Any:
    """urllib's opener without redirects: urllib would follow a 301/302/303 of a POST as a
    GET, without the document, and call it a success. (Imported on first use: a run without
    an Alerts URL does not load urllib, http.client and ssl.)"""
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return urllib.request.build_opener(NoRedirect)


# --------------------------------------------------------------------------- the runner's hooks


class AlertSink:
    """A view of the game stream: a game that ended by a crash, a stall or a forfeit (time,
    illegal move) alerts; every finished game asks for a disk check."""

    moves = False

    def __init__(self, alerter: Alerter):
        self.alerter = alerter

    def handle(self, event: GameEvent) -> None:
        if not isinstance(event, GameFinished):
            return
        self.alerter.check_disk()
        r = event.record
        end = classify_end(r.result, r.termination, r.termination_details, r.reason)
        kind = _ENGINE_KINDS.get(end)
        if kind is None:
            return
        side = r.reason.split(" ", 1)[0].split("'", 1)[0] if r.reason else ""
        engine = {"White": r.white, "Black": r.black}.get(side) or {
            "1-0": r.black, "0-1": r.white}.get(r.result)
        self.alerter.emit(kind, game_id=event.game_id, round=_round_of(r.pgn), white=r.white,
                          black=r.black, engine=engine, result=r.result, reason=r.reason,
                          termination=r.termination, end=end.value)


def _round_of(pgn: str) -> int:
    """The round of a game from its PGN's Round tag ("3.2" -> 3); 0 when it has none."""
    for line in pgn.splitlines():
        if line.startswith('[Round "'):
            head = line[8:].split(".", 1)[0].split('"', 1)[0]
            return int(head) if head.isdigit() else 0
        if not line.startswith("["):
            break
    return 0


def describe(config: AlertsConfig, path: Any) -> list[str]:
    """What `validate` says of the Alerts block: where alerts go, and a command that is not
    an executable program here (a warning: `run` goes on, and reports each failure once)."""
    targets = [f"URL {config.url}"] if config.url else []
    if config.command:
        targets.append(f"command {' '.join(config.command)}")
    kinds = "all kinds" if config.on == ALERT_KINDS else ", ".join(config.on)
    disk = (f"disk_low under {config.disk_free_mb} MB free" if config.disk_free_mb
            else "no disk check")
    lines = [f"Alerts: {kinds} to the {' and the '.join(targets)} (TimeoutS "
             f"{config.timeout_s:g}, Retries {config.retries}, QueueSize {config.queue_size}, "
             f"{disk})"]
    if config.command and shutil.which(config.command[0]) is None:
        lines.append(f"warning: {path}: Alerts.Command: {config.command[0]!r} is not an "
                     "executable program here; alerts by command would fail")
    return lines


def brief_standings(config: Config, store: Any, results: EventResults | None = None
                    ) -> list[dict[str, Any]] | None:
    """Place, engine and score of every engine (None when they cannot be made), of
    ``results`` when the caller read them (else read here)."""
    try:
        rows = standings_rows(config, store, results)
    except Exception:  # noqa: BLE001 - an alert never costs the event
        return None
    return None if rows is None else [
        {"place": r["place"], "engine": r["engine"], "score": r["score"]} for r in rows]


class RunOutcome(Protocol):
    """What the end-of-run alerts read of a run (runner.service.tournament.Tournament)."""

    config: Config
    store: Store

    @property
    def failure(self) -> str | None: ...

    def total_games(self) -> int: ...


def after_run(alerts: Alerter, tournament: RunOutcome, code: int) -> int:
    """The alert of how the run ended (runner.cli.run, with the loop's exit code)."""
    counts = _counts(tournament)
    if code == EXIT_OK:
        alerts.emit("event_ended", **counts,
                    standings=brief_standings(tournament.config, tournament.store))
    elif tournament.failure:
        alerts.emit("event_failed", exit_code=code, reason=tournament.failure, **counts)
    else:
        why = ("interrupted (SIGINT or SIGTERM); run the same command to resume"
               if code == EXIT_INTERRUPTED else "stopped before the end of the event")
        alerts.emit("event_stopped", exit_code=code, reason=why, **counts)
    return code


def after_crash(alerts: Alerter, tournament: RunOutcome, exc: BaseException) -> None:
    """The alert of a run ended by an exception (the CLI reports it)."""
    if isinstance(exc, KeyboardInterrupt):
        alerts.emit("event_stopped", exit_code=EXIT_INTERRUPTED, reason="interrupted",
                    **_counts(tournament))
    else:
        alerts.emit("event_failed", exit_code=EXIT_FAIL, reason=f"{type(exc).__name__}: {exc}",
                    **_counts(tournament))


def _counts(tournament: RunOutcome) -> dict[str, int | None]:
    try:
        return {"games_finished": int(tournament.store.counts().get("finished", 0)),
                "games_total": int(tournament.total_games())}
    except Exception:  # noqa: BLE001 - the store may be what failed
        return {"games_finished": None, "games_total": None}


__all__ = ["ALERT_FORMAT", "ALERT_SCHEMA", "ALERT_VERSION", "AlertSink", "Alerter",
           "after_crash", "after_run", "brief_standings", "describe", "schema_text"]
