"""The tournament director's controls (docs/td.md): checking a command against the event's
recorded state, and applying it in the running tournament.

A command is checked twice: when it is given (`swiss-runner td`, the dashboard: refused at
once, nothing recorded) and when the runner applies it (the event may have moved on: a
game finished meanwhile); refused then, it stays in the log as ``refused`` with why.
Every write goes through the store's writer thread (runner.store.movelog), the command
marked applied in the transaction of its effect (runner.store.decisions.mark).
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import re
import socket
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from runner.config import Config
from runner.domain.gpus import gpu_command_problem
from runner.errors import BadInput, StopEvent
from runner.service.sinks import err
from runner.store import decisions
from runner.store.database import Store, StoredGame, StoreError, damaged_state
from runner.store.decisions import Command, PauseState
from runner.store.forensics import connect

if TYPE_CHECKING:
    from runner.service.tournament import Tournament

RESULTS = ("1-0", "0-1", "1/2-1/2")
PAUSE_MODES = ("finish", "now", "after-round")
RESTART_WHEN = ("now", "end-of-round")
POLL_S = 0.5  # how often the runner looks for new commands


def who_am_i() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def find_game(store: Store, text: str | int) -> StoredGame | None:
    """A game by its number (``GameId``, as `status` and the dashboard show it) or its PGN
    round label ``R.G``."""
    label = str(text).strip()
    games = store.games()
    m = re.fullmatch(r"(\d+)\.(\d+)", label)
    if m:
        rnd, gir = int(m.group(1)), int(m.group(2))
        return next((g for g in games if g.round == rnd and g.game_in_round == gir), None)
    if not label.isdigit():
        return None
    number = int(label)
    return next((g for g in games if g.game_id == number), None)


def withdrawn(log: list[Command]) -> set[str]:
    return {str(c.args.get("engine")) for c in log
            if c.action == "withdraw" and c.state != "refused"}


def check_command(store: Store, config: Config, action: str, args: dict[str, Any], *,
                  pending: bool = True) -> str | None:
    """Why the command cannot apply to the event as recorded now, or None. ``args`` are
    normalised in place (a game label becomes its number). ``pending``: count the commands
    given but not applied yet (giving one); False when the runner applies it."""
    log = decisions.commands(store.conn)
    if not pending:
        log = [c for c in log if c.state == "applied"]
    if action == "note":
        return None if str(args.get("text", "")).strip() else "a note needs some text"
    if action == "pause":
        if args.get("mode") not in PAUSE_MODES:
            return f"pause: mode {args.get('mode')!r}, expected one of {', '.join(PAUSE_MODES)}"
        if decisions.intended_pause(log):
            return "the event is already paused by the TD (resume it first)"
        return None
    if action == "resume":
        return None if decisions.intended_pause(log) else "the event is not paused by the TD"
    if action == "withdraw":
        engine = str(args.get("engine", ""))
        seeds = store.seeds()
        if engine not in seeds:
            return (f"withdraw: no engine {engine!r} in this event (its engines: "
                    f"{', '.join(seeds)})")
        if engine in withdrawn(log):
            return f"withdraw: {engine} is withdrawn already"
        if tdrules() is None:
            return "withdraw is not available in this swiss-runner build"
        # (when applied, tdrules' apply_withdraw checks it itself, once per decision)
        return _rules_check(tdrules(), "validate_withdraw", store, config, engine) \
            if pending else None
    if action == "gpu":  # GPU hook: a device out of rotation and back (docs/gpus.md)
        return gpu_command_problem(config.gpus, decisions.offline_gpus(store.conn, pending),
                                   args)
    if action not in ("adjudicate", "restart", "rewind"):
        return f"unknown action {action!r}"
    game = find_game(store, args.get("game", ""))
    if game is None:
        last = store.next_game_id() - 1
        return (f"{action}: no game {args.get('game')!r} in this event (games are numbered "
                + (f"1 to {last}, or R.G as in the PGN's Round tag)" if last else
                   "once the first round is paired)"))
    args["game"] = game.game_id
    if action == "rewind":
        if tdrules() is None:
            return "rewind is not available in this swiss-runner build"
        return _rules_check(tdrules(), "validate_rewind", store, config, game.game_id) \
            if pending else None
    if game.status == "finished":
        return (f"{action}: game {game.game_id} ({game.white} vs {game.black}) has ended "
                f"({game.result} {{{game.reason}}}); nothing was changed (a finished game can "
                "only be voided: `td rewind --to GAME`)")
    if action == "adjudicate":
        if args.get("result") not in RESULTS:
            return (f"adjudicate: result {args.get('result')!r}, expected one of "
                    f"{', '.join(RESULTS)}")
        if game.status != "running" and store.attempts(game.game_id) == 0:
            return (f"adjudicate: game {game.game_id} ({game.white} vs {game.black}) has not "
                    "started; nothing to adjudicate")
    if action == "restart" and args.get("when") not in RESTART_WHEN:
        return f"restart: {args.get('when')!r}, expected one of {', '.join(RESTART_WHEN)}"
    return None


def _rules_check(rules: Any, name: str, store: Store, *args: Any) -> str | None:
    """The refusal of runner.service.tdrules' check ``name`` (it raises BadInput), or None."""
    check = getattr(rules, name, None)
    if check is None:
        return None
    try:
        check(store, *args)
    except BadInput as exc:
        return str(exc)
    return None


def round_complete(store: Store) -> Callable[[int], bool]:
    def complete(number: int) -> bool:
        return any(r.number > number or (r.number == number and r.state == "complete")
                   for r in store.rounds())
    return complete


def td_state(store: Store) -> dict[str, Any]:
    """The ``td`` key of the state document (docs/state.md)."""
    return decisions.td_doc(store.conn, round_complete(store))


def open_event(config: Config) -> Store | str:
    """The event's database, read-only, or why there is none to direct."""
    try:
        store = Store.open_readonly(config.database)
        if store is None or not store.has_event():
            if store is not None:
                store.close()
            return (f"{config.path}: no event recorded yet ({config.database}); start it with "
                    "`swiss-runner run` first")
    except StoreError as exc:
        return str(exc)
    except sqlite3.Error as exc:
        return damaged_state(config.database, exc)
    from runner.cli.common import other_event  # the check `run` and `status` make

    changed = other_event(config, store.fingerprint())
    if changed:
        store.close()
        return changed
    return store


def give(config: Config, action: str, args: dict[str, Any], reason: str, who: str
         ) -> tuple[int, str]:
    """Check and record one command: (its id, "") or (0, why it was refused)."""
    store = open_event(config)
    if isinstance(store, str):
        return 0, store
    try:
        problem = check_command(store, config, action, args)
    except (sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        problem = damaged_state(config.database, exc)
    finally:
        store.close()
    if problem is not None:
        return 0, problem
    try:
        conn = connect(config.database, config.database, isolation_level=None, timeout=30.0)
        try:
            conn.execute("PRAGMA synchronous=FULL")
            return decisions.add_command(conn, action, args, reason, who), ""
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return 0, f"{config.database}: cannot record the command ({exc})"


def web_command(fields: dict[str, str]) -> tuple[str, dict[str, Any], str] | str:
    """(action, args, reason) from the dashboard's form or JSON fields, or what is wrong:
    ``action`` and ``reason`` (but for a note), then per action ``engine``/``now``,
    ``game``/``result``, ``mode``, ``when``, ``text``."""
    action = fields.get("action", "").strip()
    reason = fields.get("reason", "").strip()
    if action not in decisions.ACTIONS:
        return f"action {action!r}: expected one of {', '.join(decisions.ACTIONS)}"
    if action != "note" and not reason:
        return f"{action}: a reason is required (it is kept in the decision log)"
    flag = fields.get("now", "").lower() in ("1", "true", "on", "yes")
    args: dict[str, Any] = {
        "pause": lambda: {"mode": fields.get("mode") or "finish"},
        "resume": lambda: {},
        "withdraw": lambda: {"engine": fields.get("engine", ""), "now": flag},
        "adjudicate": lambda: {"game": fields.get("game", ""), "result": fields.get("result", "")},
        "restart": lambda: {"game": fields.get("game", ""), "when": fields.get("when") or "now"},
        "rewind": lambda: {"game": fields.get("game", "")},
        "note": lambda: {"text": fields.get("text", "")},
        "gpu": lambda: {"device": fields.get("device", ""), "state": fields.get("state", "")},
    }[action]()
    return action, args, reason


class _MarkingStore:
    """A store whose first transaction also marks the command (the adapters of the store
    functions of withdraw and rewind, which take a store and commit through its
    ``transaction()``: the mark commits with their effect)."""

    def __init__(self, store: Store, mark: Callable[[sqlite3.Connection], None]):
        self._store = store
        self._mark = mark
        self.marked = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @contextlib.contextmanager
    def transaction(self, **kwargs: Any) -> Iterator[sqlite3.Connection]:
        with self._store.transaction(**kwargs) as conn:
            yield conn
            if not self.marked:
                self._mark(conn)
                self.marked = True


class Director:
    """The runner's side: polls the commands, applies each once, and holds the event while
    the TD has paused it."""

    def __init__(self, tournament: Tournament):
        self.t = tournament
        self.pause: PauseState | None = None
        self.stops: dict[int, Callable[[], Awaitable[bool]]] = {}  # run by play_one
        self.deferred: set[int] = set()  # restart --end-of-round of a game not started yet
        self.rewound = False
        self.failed: set[int] = set()  # commands whose application raised (not retried)
        self._announced: int | None = None
        self._restarts: dict[int, list[Command]] | None = None  # applied, by game (None: read)

    # ---- state ---------------------------------------------------------------------------

    async def load(self) -> None:
        """Create the table if needed (through the store's writer) and read the pause in
        force (a restarted runner stays paused)."""
        def create(store: Store) -> None:
            with store.transaction() as c:
                decisions.ensure_table(c)
        await self._write(create)
        self.pause = decisions.pause_state(decisions.commands(self.t.store.conn))

    def paused(self) -> bool:
        """No new game may start (an after-round pause: once its round is complete)."""
        p = self.pause
        if p is None:
            return False
        if p.mode == "after-round" and p.round is not None:
            return round_complete(self.t.store)(p.round)
        return True

    def blocks(self, game_id: int) -> bool:
        """Must the round not start this game now?"""
        return self.rewound or game_id in self.deferred or (
            self.pause is not None and self.pause.mode != "after-round")

    async def hold(self) -> bool:
        """Wait while paused; False when the run is stopping."""
        while self.paused() and not self.t.stopping:
            assert self.pause is not None
            if self._announced != self.pause.command_id:
                self._announced = self.pause.command_id
                self.t.say(f"Paused by the TD: {self.pause.reason} (`swiss-runner td "
                           f"{self.t.config.path} resume --reason ...` goes on)", always=True)
                self._snapshot()
            await asyncio.sleep(0.1)
        return not self.t.stopping

    # ---- polling -------------------------------------------------------------------------

    async def poll(self) -> None:
        """Apply new commands every POLL_S seconds (a cheap indexed read) until cancelled."""
        while True:
            await asyncio.sleep(POLL_S)
            if self.t.failure is None:
                await self.apply_pending()

    async def apply_pending(self) -> None:
        conn = self.t.store.conn
        for cid in decisions.pending_ids(conn):
            if cid in self.failed:
                continue
            cmd = next((c for c in decisions.commands(conn, "pending") if c.id == cid), None)
            if cmd is None:
                continue
            try:
                await self.apply(cmd)
            except (StopEvent, asyncio.CancelledError):
                raise
            except Exception as exc:  # noqa: BLE001 - a TD command never costs the event
                self.failed.add(cid)
                err(f"TD command #{cid} ({cmd.text()}) could not be applied: "
                    f"{type(exc).__name__}: {exc}; it stays pending (the next run tries it "
                    "again) and the event goes on")

    async def _write(self, job: Callable[[Store], Any]) -> Any:
        """Run ``job(store)`` on the writer thread (its result, its exception raised here)."""
        assert self.t.router is not None and self.t.movelog is not None
        writer = self.t.router.store.writer
        return await asyncio.wrap_future(self.t.movelog.submit(lambda conn: job(writer)))

    async def _mark_only(self, cmd: Command, state: str, outcome: str,
                         args: dict[str, Any] | None = None) -> bool:
        def job(store: Store) -> None:
            with store.transaction() as c:
                if args is not None:
                    c.execute("UPDATE td_commands SET args=? WHERE id=?",
                              (json.dumps(args, sort_keys=True), cmd.id))
                decisions.mark(c, cmd.id, state, outcome)
        try:
            await self._write(job)
        except decisions.AlreadyDone:
            return False
        return True

    async def apply(self, cmd: Command) -> None:
        args = dict(cmd.args)
        problem = check_command(self.t.store, self.t.config, cmd.action, args, pending=False)
        if problem is not None:
            if await self._mark_only(cmd, "refused", problem):
                self.decided(cmd, "refused", problem)
            self._snapshot()
            return
        handler = getattr(self, f"_{cmd.action.replace('-', '_')}")
        outcome = await handler(cmd, args)
        if outcome is not None:
            refused = outcome.startswith("refused: ")
            self.decided(cmd, "refused" if refused else "applied",
                         outcome.removeprefix("refused: "), args)
        self._snapshot()

    def annotate(self, game_id: int, record: Any) -> Any:
        """A game the TD restarted (7.d) says so in its PGN: a ``TDRestart`` tag naming the
        decision (``#N by WHO: REASON``) after the game's other tags."""
        from dataclasses import replace as dc_replace

        from runner.domain.pgn import escape_tag

        if self._restarts is None:  # read once, and again after a command is decided
            self._restarts = {}
            for c in decisions.commands(self.t.store.conn, "applied"):
                if c.action == "restart":
                    self._restarts.setdefault(c.args.get("game"), []).append(c)
        restarts = self._restarts.get(game_id, [])
        head, sep, rest = record.pgn.partition("\n\n")
        if not restarts or not sep or "[TDRestart " in head:
            return record
        text = "; ".join(f"#{c.id} by {c.who}: {c.reason}" for c in restarts)
        return dc_replace(record, pgn=f'{head}\n[TDRestart "{escape_tag(text)}"]{sep}{rest}')

    def decided(self, cmd: Command, state: str, outcome: str,
                args: dict[str, Any] | None = None) -> None:
        """A command was applied or refused: the console line (and the one place a listener
        of TD decisions, such as an alert, hooks in)."""
        self._restarts = None  # a restart applied: the PGN tags read it again
        who = f" by {cmd.who}" + (f" ({cmd.reason})" if cmd.reason else "")
        if state == "refused":
            self.t.say(f"TD command #{cmd.id} ({cmd.text()}){who} refused: {outcome}",
                       always=True)
        else:
            self.t.say(f"TD #{cmd.id} {cmd.text()}{who}: {outcome}", always=True)
            alerts = getattr(self.t, "alerts", None)  # runner.service.alerts (docs/alerts.md)
            if alerts is not None:
                alerts.emit("td_decision", action=cmd.action, reason=cmd.reason or None,
                            who=cmd.who, arguments=cmd.args if args is None else args)

    def _snapshot(self) -> None:
        if self.t.snapshot is not None:
            with contextlib.suppress(RuntimeError):
                self.t.snapshot.request(now=True)

    # ---- stopping a game in progress ---------------------------------------------------

    async def _settle(self, game_id: int) -> None:
        assert self.t.router is not None and self.t.movelog is not None
        await self.t.router.store.settled(game_id)
        await asyncio.to_thread(self.t.movelog.flush)

    async def stop_game(self, game_id: int, effect: Callable[[], Awaitable[bool]]) -> None:
        """Stop the game if this runner plays it, then run ``effect`` (its writes settled
        first); ``effect`` returns True when the game is to be played again at once (in its
        task, from its start)."""
        async def settled_effect() -> bool:
            await self._settle(game_id)
            return await effect()

        task = self.t.running.get(game_id)
        if task is None or task.done():
            await settled_effect()
            return
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        async def hook() -> bool:
            try:
                replay = await settled_effect()
            except BaseException as exc:
                if not done.done():
                    done.set_exception(exc)
                raise
            done.set_result(replay)
            return replay

        self.stops[game_id] = hook
        task.cancel()
        await asyncio.wait({task, done}, return_when=asyncio.FIRST_COMPLETED)
        if done.done():
            done.result()
            return
        # the task ended outside its backend call (the hook was not run): run it here
        self.stops.pop(game_id, None)
        await settled_effect()

    # ---- the actions ---------------------------------------------------------------------

    async def _gpu(self, cmd: Command, args: dict[str, Any]) -> str | None:
        """GPU hook: ``td gpu off|on INDEX``: no new game gets the device (or it does again)."""
        outcome = f"GPU {args['device']} " + ("out of rotation" if args["state"] == "off"
                                              else "back in rotation")
        if not await self._mark_only(cmd, "applied", outcome, args):
            return None
        if self.t.gpus is not None:
            self.t.gpus.set_offline(args["device"], args["state"] == "off")
        return outcome

    async def _note(self, cmd: Command, args: dict[str, Any]) -> str | None:
        return "noted" if await self._mark_only(cmd, "applied", "noted") else None

    async def _pause(self, cmd: Command, args: dict[str, Any]) -> str | None:
        mode = args["mode"]
        rounds = self.t.store.rounds()
        current = rounds[-1].number if rounds else 0
        if mode == "after-round":
            args["round"] = current
            outcome = (f"no new round after round {current}" if current else
                       "no round is paired yet: paused now")
        elif mode == "now":
            outcome = f"{len(self.t.running)} game(s) in progress interrupted (rule 7.c on resume)"
        else:
            outcome = f"no new game starts; {len(self.t.running)} game(s) in progress finish"
        if not await self._mark_only(cmd, "applied", outcome, args):
            return None
        self.pause = PauseState(mode=mode, reason=cmd.reason, since=decisions.now(),
                                round=args.get("round"), command_id=cmd.id)
        if mode == "now":
            for task in list(self.t.running.values()):
                task.cancel()
        return outcome

    async def _resume(self, cmd: Command, args: dict[str, Any]) -> str | None:
        if not await self._mark_only(cmd, "applied", "the event goes on"):
            return None
        self.pause = None
        return "the event goes on"

    async def _adjudicate(self, cmd: Command, args: dict[str, Any]) -> str | None:
        gid, result = int(args["game"]), str(args["result"])
        said: list[str] = []

        async def effect() -> bool:
            game = find_game(self.t.store, gid)
            assert game is not None
            if game.status == "finished":
                problem = (f"game {gid} ended before the adjudication: {game.result} "
                           f"{{{game.reason}}}")
                if await self._mark_only(cmd, "refused", problem):
                    said.append(f"refused: {problem}")
                return False
            record, attempt = adjudicated_record(self.t, game, result, cmd)
            outcome = f"game {gid} ({game.white} vs {game.black}) {result} by adjudication"

            def job(store: Store) -> None:
                store.record_game(gid, record, then=lambda c: decisions.mark(
                    c, cmd.id, "applied", outcome))
            try:
                await self._write(job)
            except decisions.AlreadyDone:
                return False
            from runner.domain.events import GameFinished

            assert self.t.router is not None
            self.t.router.show(GameFinished(gid, record, attempt))  # the PGN, console, views
            said.append(outcome)
            return False

        await self.stop_game(gid, effect)
        return said[0] if said else None

    async def _restart(self, cmd: Command, args: dict[str, Any]) -> str | None:
        gid, when = int(args["game"]), str(args["when"])
        said: list[str] = []
        running = gid in self.t.running

        async def effect() -> bool:
            outcome = (f"game {gid} is played again from its start "
                       + ("now" if when == "now" else "at the end of its round") + " (rule 7.d)")

            def job(store: Store) -> bool:
                with store.transaction() as c:
                    cur = c.execute("UPDATE games SET status='scheduled', started=NULL "
                                    "WHERE game_id=? AND status!='finished'", (gid,))
                    if cur.rowcount != 1:
                        decisions.mark(c, cmd.id, "refused",
                                       f"game {gid} ended before the restart")
                        return False
                    c.execute("DELETE FROM moves WHERE game_id=?", (gid,))
                    decisions.mark(c, cmd.id, "applied", outcome)
                    return True
            try:
                ok = await self._write(job)
            except decisions.AlreadyDone:
                return False
            self._restarts = None  # the PGN's TDRestart tags read it again
            said.append(outcome if ok else f"refused: game {gid} ended before the restart")
            return ok and when == "now"

        if when == "end-of-round" and not running:
            self.deferred.add(gid)
        await self.stop_game(gid, effect)
        return said[0] if said else None

    async def _withdraw(self, cmd: Command, args: dict[str, Any]) -> str | None:
        engine, now = str(args["engine"]), bool(args.get("now"))
        rules = tdrules()
        assert rules is not None
        if now:  # its games in progress are stopped first (then lost by forfeit, 7.a)
            for gid in sorted(self.t.running):
                game = find_game(self.t.store, gid)
                if game is not None and engine in (game.white, game.black):
                    await self.stop_game(gid, _not_again)
        done = await self._with_mark(
            cmd, f"{engine} withdrawn" + (" (its game in progress forfeited)" if now else ""),
            lambda store, **once: rules.apply_withdraw(store, self.t.config, engine, now,
                                                       cmd.reason, **once),
            rules.apply_withdraw)
        if done is not None:
            self.rewound = True  # the rounds are read again (a round paired anew without it)
            await self.t.reset_schedule()
        return done

    async def _rewind(self, cmd: Command, args: dict[str, Any]) -> str | None:
        gid = int(args["game"])
        rules = tdrules()
        assert rules is not None
        self.rewound = True  # no further game of the round starts; the rounds are read again
        for other in sorted(self.t.running):
            if other >= gid:
                await self.stop_game(other, _not_again)
        done = await self._with_mark(
            cmd, f"games from {gid} on voided; the event goes on from there (rule 7.e)",
            lambda store, **once: rules.apply_rewind(store, self.t.config, gid, cmd.reason,
                                                     **once),
            rules.apply_rewind)
        await self.t.reset_schedule()
        return done

    async def _with_mark(self, cmd: Command, outcome: str, apply: Callable[..., Any],
                         function: Callable[..., Any]) -> str | None:
        """Run a store function of withdraw/rewind (runner.service.tdrules) on the writer
        thread and mark the command applied; the outcome, or None when it was applied
        already. A function that takes ``decision_id`` applies once per decision (a second
        call returns the first outcome and changes nothing): the mark follows in its own
        transaction, and a crash between the two is completed by the next run. One that
        does not has the mark in its first transaction (``_MarkingStore``)."""
        import inspect

        once = "decision_id" in inspect.signature(function).parameters

        def job(store: Store) -> str:
            if once:
                said = apply(store, decision_id=cmd.id)
                text = said if isinstance(said, str) and said else outcome
                with store.transaction() as c:
                    decisions.mark(c, cmd.id, "applied", text)
                return text
            marking = _MarkingStore(store, lambda c: decisions.mark(c, cmd.id, "applied",
                                                                    outcome))
            apply(marking)
            if not marking.marked:
                with store.transaction() as c:
                    decisions.mark(c, cmd.id, "applied", outcome)
            return outcome
        try:
            return str(await self._write(job))
        except decisions.AlreadyDone:
            return None
        except BadInput as exc:  # the store function refused it (the event moved on)
            if await self._mark_only(cmd, "refused", str(exc)):
                self.decided(cmd, "refused", str(exc))
            return None


async def _not_again() -> bool:
    return False


def tdrules() -> Any:
    """runner.service.tdrules (withdraw and rewind in the store), None when absent."""
    try:
        from runner.service import tdrules as rules  # type: ignore[attr-defined]
    except ImportError:
        return None
    return rules


def adjudicated_record(t: Tournament, game: StoredGame, result: str, cmd: Command
                       ) -> tuple[Any, int]:
    """The record of a game ended by the TD's adjudication after the moves it logged:
    Termination "adjudication", the reason in TerminationDetails (and the attempt)."""
    from runner.domain.adjudication import End
    from runner.domain.events import parse_utc, workers_tag
    from runner.domain.interruption import board_after, played_by
    from runner.domain.variant import is_960, replay_960
    from runner.play.referee import finish_record

    spec = t.spec_for(game)
    started = t.store.started_event(game.game_id) or {}
    logged = t.store.logged_moves(game.game_id)
    board = board_after(started.get("start_fen") or None, logged)
    if is_960(spec.variant) and not board.chess960:
        board = replay_960(board)
    moves = [m.uci() for m in board.move_stack]
    comments = [m.get("comment", "") for m in logged]
    start = parse_utc(started.get("start_time")) or datetime.now(UTC)
    end = End(result, f"Adjudicated by the tournament director: {cmd.reason}", "adjudication",
              f"TD decision #{cmd.id} by {cmd.who}: {cmd.reason}")
    record = finish_record(spec, board.root(), moves, comments, end, start, move_data=logged,
                           worker=workers_tag(played_by(started, logged)))
    return record, max(1, t.store.attempts(game.game_id))


__all__ = ["Director", "POLL_S", "RESULTS", "check_command", "find_game", "give", "open_event",
           "td_state", "who_am_i"]
