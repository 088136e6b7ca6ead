"""The tournament director's controls (docs/td.md): checking a command against the event's
recorded state, and applying it in the running tournament.

A command is checked twice: when it is given (`swiss-runner td`, the dashboard: refused at
once, nothing recorded) and when the runner applies it (the event may have moved on: a
game finished meanwhile); refused then, it stays in the log as ``refused`` with why.
Every write goes through the store's writer thread (runner.store.writer), the command
marked applied in the transaction of its effect (runner.store.decisions.mark).
"""

from __future__ import annotations

import asyncio
import getpass
import re
import socket
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any

from runner.clock import utc_now
from runner.config import Config
from runner.domain.adjudication import End
from runner.domain.gpus import gpu_command_problem
from runner.domain.interruption import board_after, policy_words
from runner.domain.models import GameRecord, GameSpec
from runner.errors import BadInput, StopEvent
from runner.errors import print_error as err
from runner.play.gpus import GpuPool
from runner.service.eventcheck import other_event
from runner.service.gamelife import record_from_log
from runner.service.recording import Recorder, last_attempt, next_attempt
from runner.service.running import RoundChange, RunFlags, RunningGames
from runner.service.td import rules
from runner.service.views.alerts import Alerter
from runner.service.views.runviews import EventViews
from runner.service.views.snapshotdoc import round_complete
from runner.service.writes import EventWrites
from runner.store import decisions, queries
from runner.store.database import Store, StoredGame, StoreError, damaged_state
from runner.store.decisions import Command, PauseState

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
            if c.action == "withdraw" and c.state not in ("refused", "failed")}


#: The actions that cannot apply to a complete event, and why (the others refuse it in their
#: own words: withdraw has no pairing left, adjudicate and restart find the game ended).
_NOTHING_LEFT = {"pause": "there is no game left to pause", "resume": "there is nothing to resume",
                 "gpu": "no game is left to give a GPU to or to keep one from"}


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
    if pending and action in _NOTHING_LEFT and rules.event_over(store, config):
        return (f"{action}: the event is complete (all {config.swiss.rounds} rounds played, "
                f"every game finished): {_NOTHING_LEFT[action]} (`td rewind --to GAME` voids "
                "games to play them again)")
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
        # (when applied, the rules' apply_withdraw checks it itself, once per decision)
        return _rules_check(rules.validate_withdraw, store, config, engine) if pending else None
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
        return _rules_check(rules.validate_rewind, store, config, game.game_id) \
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


def _rules_check(check: Callable[..., Any], store: Store, *args: Any) -> str | None:
    """The refusal of a runner.service.td.rules check (it raises BadInput), or None."""
    try:
        check(store, *args)
    except BadInput as exc:
        return str(exc)
    return None


def open_event_store(config: Config) -> Store | str:
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
    changed = other_event(config, store.fingerprint())
    if changed:
        store.close()
        return changed
    return store


def give_command(config: Config, action: str, args: dict[str, Any], reason: str, who: str
         ) -> tuple[int, str]:
    """Check and record one command: (its id, "") or (0, why it was refused)."""
    store = open_event_store(config)
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
        return decisions.record_command(config.database, action, args, reason, who), ""
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


class Director:
    """The runner's side of the TD's commands: polls them, applies each once as a store
    operation through the event's writes, and holds the event while the TD has paused it.
    It sees the run through values only: the store, the event's writes, the games in progress and
    the run's flags."""

    def __init__(self, config: Config, store: Store, writes: EventWrites,
                 running: RunningGames, flags: RunFlags, views: EventViews,
                 spec_for: Callable[[StoredGame], GameSpec], recorder: Recorder,
                 alerts: Alerter | None = None, gpus: GpuPool | None = None,
                 resumes: bool = True):
        self.config, self.store, self.writes = config, store, writes
        self.running, self.flags, self.views = running, flags, views
        self.spec_for = spec_for
        self.recorder = recorder  # an adjudicated game is recorded as every game is
        self.resumes = resumes  # the run's backend continues a game from a position
        self.alerts = alerts
        self.gpus = gpus  # the event's devices here (`td gpu off|on`); None: none
        self.say = views.console.say
        self.pause: PauseState | None = None
        self._changes: list[RoundChange] = []  # for the run loop (:meth:`changes`)
        self.failed: set[int] = set()  # commands whose application raised (not retried)
        self._announced: int | None = None
        self._holding = False  # a decision being applied game by game: nothing new starts

    # ---- state ---------------------------------------------------------------------------

    async def load(self) -> None:
        """Create the table if needed (through the store's writer) and read the pause in
        force (a restarted runner stays paused)."""
        def create(store: Store) -> None:
            with store.transaction() as c:
                decisions.ensure_table(c)
        await self.writes.run(create)
        self.pause = decisions.pause_state(decisions.commands(self.store.conn))

    def paused(self) -> bool:
        """No new game may start, nor a round be paired (an after-round pause: once its round
        is complete; a withdrawal --now: while its forfeits are recorded)."""
        p = self.pause
        if self._holding:
            return True
        if p is None:
            return False
        if p.mode == "after-round" and p.round is not None:
            return round_complete(self.store)(p.round)
        return True

    def pause_blocks_games(self) -> bool:
        """Does the TD's pause (or a decision being applied) keep the round from starting
        games now?"""
        return self._holding or (self.pause is not None and self.pause.mode != "after-round")

    def changes(self) -> list[RoundChange]:
        """What the decisions applied since the last call change for the run loop (the
        rounds read again, a game left to the end of its round); the loop keeps them."""
        changes, self._changes = self._changes, []
        return changes

    async def wait_while_paused(self) -> bool:
        """Wait while paused; False when the run is stopping."""
        while self.paused() and not self.flags.stopping:
            if self.pause is not None and self._announced != self.pause.command_id:
                self._announced = self.pause.command_id
                self.say(f"Paused by the TD: {self.pause.reason} (`swiss-runner td "
                         f"{self.config.path} resume --reason ...` goes on)", always=True)
                self.views.refresh()
            await asyncio.sleep(0.1)
        return not self.flags.stopping

    # ---- polling -------------------------------------------------------------------------

    async def poll(self) -> None:
        """Apply new commands every POLL_S seconds (a cheap indexed read) until cancelled."""
        while True:
            await asyncio.sleep(POLL_S)
            if self.flags.failure is None:
                await self.apply_pending()

    async def apply_pending(self) -> None:
        conn = self.store.conn
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
                await self._failed(cmd, exc)

    async def _failed(self, cmd: Command, exc: Exception) -> None:
        """A command whose application raised (its effect was not committed) is marked
        ``failed`` with why, and not tried again: the TD gives it again if still wanted
        (docs/td.md). If even the mark cannot be written, it stays pending for the next run."""
        why = f"{type(exc).__name__}: {exc}"
        try:
            marked = await self._mark_only(cmd, "failed", why)
        except Exception as mark_exc:  # noqa: BLE001 - the writer itself failed (a full disk)
            self.failed.add(cmd.id)
            err(f"TD command #{cmd.id} ({cmd.text()}) could not be applied ({why}) nor marked "
                f"failed ({type(mark_exc).__name__}: {mark_exc}); it stays pending (the next "
                "run tries it again) and the event goes on")
            return
        if marked:
            self.decided(cmd, "failed", why)
        self.views.refresh()

    async def _mark_only(self, cmd: Command, state: str, outcome: str,
                         args: dict[str, Any] | None = None) -> bool:
        def job(store: Store) -> None:
            with store.transaction() as c:
                if args is not None:
                    decisions.set_args(c, cmd.id, args)
                decisions.mark(c, cmd.id, state, outcome)
        try:
            await self.writes.run(job)
        except decisions.AlreadyDone:
            return False
        return True

    async def apply(self, cmd: Command) -> None:
        args = dict(cmd.args)
        problem = check_command(self.store, self.config, cmd.action, args, pending=False)
        if problem is not None:
            if await self._mark_only(cmd, "refused", problem):
                self.decided(cmd, "refused", problem)
            self.views.refresh()
            return
        handler = getattr(self, f"_{cmd.action.replace('-', '_')}")
        outcome = await handler(cmd, args)
        if outcome is not None:
            refused = outcome.startswith("refused: ")
            self.decided(cmd, "refused" if refused else "applied",
                         outcome.removeprefix("refused: "), args)
        self.views.refresh()

    def decided(self, cmd: Command, state: str, outcome: str,
                args: dict[str, Any] | None = None) -> None:
        """A command was applied or refused: the console line and the alert."""
        self.recorder.tags.changed()  # a restart applied: the PGN tags read it again
        who = f" by {cmd.who}" + (f" ({cmd.reason})" if cmd.reason else "")
        if state == "refused":
            self.say(f"TD command #{cmd.id} ({cmd.text()}){who} refused: {outcome}",
                     always=True)
        elif state == "failed":
            self.say(f"TD command #{cmd.id} ({cmd.text()}){who} failed: {outcome}; it is not "
                     "tried again (give it again if still wanted)", always=True)
            if self.alerts is not None:
                self.alerts.emit("td_failed", id=cmd.id, action=cmd.action, who=cmd.who,
                                 reason=outcome, arguments=cmd.args)
        else:
            self.say(f"TD #{cmd.id} {cmd.text()}{who}: {outcome}", always=True)
            if self.alerts is not None:  # runner.service.views.alerts (docs/alerts.md)
                self.alerts.emit("td_decision", action=cmd.action, reason=cmd.reason or None,
                                 who=cmd.who, arguments=cmd.args if args is None else args)

    # ---- stopping a game in progress ---------------------------------------------------

    async def stop_game(self, game_id: int, effect: Callable[[], Awaitable[bool]]) -> None:
        """Stop the game if this runner plays it, then run ``effect`` (its writes settled
        first); ``effect`` returns True when the game is to be played again at once (in its
        task, from its start)."""
        async def settled_effect() -> bool:
            await self.writes.settled(game_id)
            await self.writes.flush_moves()
            return await effect()

        await self.running.stop(game_id, settled_effect)

    # ---- the actions ---------------------------------------------------------------------

    async def _gpu(self, cmd: Command, args: dict[str, Any]) -> str | None:
        """``td gpu off|on INDEX``: no new game gets the device (or it does again)."""
        outcome = f"GPU {args['device']} " + ("out of rotation" if args["state"] == "off"
                                              else "back in rotation")
        if not await self._mark_only(cmd, "applied", outcome, args):
            return None
        if self.gpus is not None:
            self.gpus.set_offline(args["device"], args["state"] == "off")
        return outcome

    async def _note(self, cmd: Command, args: dict[str, Any]) -> str | None:
        return "noted" if await self._mark_only(cmd, "applied", "noted") else None

    async def _pause(self, cmd: Command, args: dict[str, Any]) -> str | None:
        mode = args["mode"]
        rounds = self.store.rounds()
        current = rounds[-1].number if rounds else 0
        if mode == "after-round":
            args["round"] = current
            outcome = (f"no new round after round {current}" if current else
                       "no round is paired yet: paused now")
        elif mode == "now":
            ids = ", ".join(map(str, sorted(self.running.ids())))
            outcome = (f"{len(self.running)} game(s) in progress interrupted"
                       + (f" (game{'s' if len(self.running) > 1 else ''} {ids})" if ids else "")
                       + "; when the event goes on, "
                       + policy_words(self.config.interruption.mode,
                                                  self.config.backend,
                                                  self.resumes))
        else:
            outcome = f"no new game starts; {len(self.running)} game(s) in progress finish"
        if not await self._mark_only(cmd, "applied", outcome, args):
            return None
        self.pause = PauseState(mode=mode, reason=cmd.reason, since=utc_now(),
                                round=args.get("round"), command_id=cmd.id)
        if mode == "now":
            self.running.cancel_all()
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
            game = find_game(self.store, gid)
            assert game is not None
            if game.status == "finished":
                problem = (f"game {gid} ended before the adjudication: {game.result} "
                           f"{{{game.reason}}}")
                if await self._mark_only(cmd, "refused", problem):
                    said.append(f"refused: {problem}")
                return False
            record = adjudicated_record(self.store, self.spec_for(game), game, result, cmd)
            outcome = f"game {gid} ({game.white} vs {game.black}) {result} by adjudication"
            try:  # recorded as every game is: the store (with the mark), then the views
                await self.recorder.finish(game, record, last_attempt(self.store, gid),
                                           then=lambda c: decisions.mark(c, cmd.id, "applied",
                                                                         outcome))
            except decisions.AlreadyDone:
                return False
            said.append(outcome)
            return False

        await self.stop_game(gid, effect)
        return said[0] if said else None

    async def _restart(self, cmd: Command, args: dict[str, Any]) -> str | None:
        gid, when = int(args["game"]), str(args["when"])
        said: list[str] = []
        running = gid in self.running

        async def effect() -> bool:
            outcome = (f"game {gid} is replayed from move 1 "
                       + ("now" if when == "now" else "at the end of its round") + " (rule 7.d)")

            def job(store: Store) -> bool:
                with store.transaction() as c:
                    if not queries.restart_game(c, gid):
                        decisions.mark(c, cmd.id, "refused",
                                       f"game {gid} ended before the restart")
                        return False
                    decisions.mark(c, cmd.id, "applied", outcome)
                    return True
            try:
                ok = await self.writes.run(job)
            except decisions.AlreadyDone:
                return False
            self.recorder.tags.changed()  # the PGN's TDRestart tags read it again
            said.append(outcome if ok else f"refused: game {gid} ended before the restart")
            return ok and when == "now"

        if when == "end-of-round" and not running:
            self._changes.append(RoundChange(deferred=gid))
        await self.stop_game(gid, effect)
        return said[0] if said else None

    async def _withdraw(self, cmd: Command, args: dict[str, Any]) -> str | None:
        engine, now = str(args["engine"]), bool(args.get("now"))
        self._holding = True  # no game starts and no round is paired until it is applied
        try:
            forfeited = await self._forfeit_now(cmd, engine) if now else None
            if now and forfeited is None:
                return None  # refused
            done = await self._with_mark(
                cmd, f"{engine} withdrawn" + (" (its game in progress forfeited)" if now else ""),
                lambda store, **once: rules.apply_withdraw(store, self.config, engine, now,
                                                           cmd.reason, forfeited=forfeited,
                                                           **once))
        finally:
            self._holding = False
        if done is not None:
            # the rounds are read again (a round paired anew without it)
            self._changes.append(RoundChange(rewound=True))
            await self.views.schedule_changed()
        return done

    async def _forfeit_now(self, cmd: Command, engine: str) -> list[int] | None:
        """``withdraw ENGINE --now``: each unfinished game of ENGINE (rules.withdraw_forfeits)
        stopped if in progress, then recorded as lost by forfeit (7.a) through the Recorder,
        as every game: its own commit (a crash between them: the command is still pending
        and the next run forfeits the rest), then the views. The games' numbers, or None
        when the withdrawal is refused (the event moved on: it is marked so)."""
        problem = _rules_check(rules.validate_withdraw, self.store, self.config, engine)
        if problem is not None:
            if await self._mark_only(cmd, "refused", problem):
                self.decided(cmd, "refused", problem)
            return None
        forfeited: list[int] = []
        for due in rules.withdraw_forfeits(self.store, engine):
            async def effect(gid: int = due.game_id) -> bool:
                game = find_game(self.store, gid)  # as it stands once stopped
                if game is not None and game.status != "finished":
                    record = rules.forfeit_record(self.store, self.config, game, engine)
                    await self.recorder.forfeit(game, record, next_attempt(self.store, gid))
                    forfeited.append(gid)
                return False

            await self.stop_game(due.game_id, effect)
        return forfeited

    async def _rewind(self, cmd: Command, args: dict[str, Any]) -> str | None:
        gid = int(args["game"])
        # no further game of the round starts; the rounds are read again
        self._changes.append(RoundChange(rewound=True))
        for other in self.running.ids():
            if other >= gid:
                await self.stop_game(other, _not_again)
        done = await self._with_mark(
            cmd, f"games from {gid} on voided; the event goes on from there (rule 7.e)",
            lambda store, **once: rules.apply_rewind(store, self.config, gid, cmd.reason,
                                                     **once))
        await self.views.schedule_changed()
        return done

    async def _with_mark(self, cmd: Command, outcome: str, apply: Callable[..., Any]
                         ) -> str | None:
        """Run a store function of withdraw/rewind (runner.service.td.rules) on the writer
        thread, the command marked applied in the transaction of its effect (``then``); the
        outcome, or None when it was applied already."""
        def job(store: Store) -> str:
            said: list[str] = []

            def then(c: sqlite3.Connection, text: str) -> None:
                said.append(text or outcome)
                decisions.mark(c, cmd.id, "applied", said[0])
            text = apply(store, decision_id=cmd.id, then=then)  # (and the PGN's state)
            return text if isinstance(text, str) and text else said[0]
        try:
            return str(await self.writes.run(job))
        except decisions.AlreadyDone:
            return None
        except BadInput as exc:  # the store function refused it (the event moved on)
            if await self._mark_only(cmd, "refused", str(exc)):
                self.decided(cmd, "refused", str(exc))
            return None


async def _not_again() -> bool:
    return False


def adjudicated_record(store: Store, spec: GameSpec, game: StoredGame, result: str, cmd: Command
                       ) -> GameRecord:
    """The record of a game ended by the TD's adjudication after the moves it logged:
    Termination "adjudication", the reason in TerminationDetails."""
    started = store.started_event(game.game_id) or {}
    logged = store.logged_moves(game.game_id)
    board = board_after(started.get("start_fen") or None, logged)
    end = End(result, f"Adjudicated by the tournament director: {cmd.reason}", "adjudication",
              f"TD decision #{cmd.id} by {cmd.who}: {cmd.reason}")
    return record_from_log(spec, board, started, logged, end)


__all__ = ["Director", "POLL_S", "RESULTS", "check_command", "find_game", "give_command", "open_event_store",
           "who_am_i"]
