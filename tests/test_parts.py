"""Each part of the running event by its own name (docs/architecture.md "The parts of the
event"), in the fast lane: a real store and its real writer thread, no engine (the backends
here are a test's scripted players, declared as runner.play.backend says).
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from testkit import backend, loop_config, make_record

from runner.config import load_config
from runner.domain.events import GameEvent, GameFinished, GameStarted, MovePlayed
from runner.play.backend import Backend, FunctionBackend, as_backend
from runner.play.cutechess import CutechessBackend
from runner.play.referee import RefereeBackend
from runner.service.recording import Recorder, RestartTags, next_attempt, placeholder_started
from runner.service.runloop import RunLoop
from runner.service.running import RunningGames
from runner.service.schedule import Schedule
from runner.service.tournament import Tournament
from runner.service.views.console import ConsoleSink
from runner.service.views.router import EventRouter
from runner.service.views.sink import RecordError
from runner.service.views.storesink import StoreSink
from runner.service.writes import EventWrites
from runner.store import decisions
from runner.store.database import Store
from runner.store.writer import StoreWriter


class Seen:
    """A view that keeps what it was shown."""

    def __init__(self) -> None:
        self.events: list[GameEvent] = []

    def handle(self, event: GameEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.kind for e in self.events]


@pytest.fixture
def paired(tmp_path: Path) -> Any:
    """An event prepared, round 1 paired (at once: no writer thread runs yet)."""
    config = load_config(loop_config(tmp_path))
    store = Store.open(config.database)
    tour = Tournament(config, store, quiet=True, out=io.StringIO(), play_game=backend())
    assert tour.prepare() is None
    tour.pair(1)
    yield config, store, tour
    store.close()


@asynccontextmanager
async def running(config: Any, store: Store, tour: Tournament) -> AsyncIterator[RunLoop]:
    """The running event as the composition root builds it; its writer closed at the end."""
    from runner.service.assembly import build_run

    loop = build_run(config, store, tour.prepared, tour.settings, tour.flags)
    try:
        yield loop
    finally:
        await loop.writes.close()


@asynccontextmanager
async def recording(store: Store, seen: Seen) -> AsyncIterator[Recorder]:
    """The writer's path as the run builds it: the store's writer thread, the record, the
    router with ``seen`` as its one view, the recorder."""
    writer = StoreWriter(store.path).start()
    try:
        yield Recorder(EventRouter(StoreSink(store, writer), [seen]), RestartTags(store))
    finally:
        writer.close()


# --------------------------------------------------------------------------- Schedule


def test_schedule_pairs_a_round_stores_it_and_counts_the_events_games(paired: Any) -> None:
    config, store, _ = paired
    schedule = Schedule(config, store, EventWrites(store), lambda *a, **k: None)
    assert schedule.is_paired(1) and not schedule.is_paired(2)
    assert schedule.total_games() == 12  # 5 engines, 3 rounds of 2-game matches
    first = schedule.unfinished(1)
    assert len(first) == 4 and not schedule.round_done(1)
    assert schedule.first_open_round() == 1
    spec = schedule.spec_for(first[0])
    assert (spec.white.name, spec.black.name) == (first[0].white, first[0].black)
    assert spec.opening is not None  # the book's line for the match


# --------------------------------------------------------------------------- the writer's path


def test_the_recorder_commits_a_game_then_shows_it_to_the_views(paired: Any) -> None:
    config, store, _ = paired
    game = store.games(1)[0]
    spec = Schedule(config, store, EventWrites(store), print).spec_for(game)
    record = make_record(spec, "1-0")

    async def main() -> list[str]:
        seen = Seen()
        async with recording(store, seen) as recorder:
            attempt = next_attempt(store, game.game_id)
            await recorder.finish(game, record, attempt,
                                  started=placeholder_started(game, record, attempt))
            await asyncio.sleep(0)  # the views are told on the loop once it is committed
        return seen.kinds()

    assert asyncio.run(main()) == ["started", "finished"]
    stored = next(g for g in store.games(1) if g.game_id == game.game_id)
    assert (stored.status, stored.result) == ("finished", "1-0")


class SeenNoMoves(Seen):
    moves = False  # a view of starts and ends only (the console, the PGN file, ...)


def test_a_move_goes_to_the_move_log_and_to_the_views_that_show_moves_only(paired: Any) -> None:
    """A MovePlayed (one every ply) takes the router's short path: queued for the writer
    thread and handed at once to the views that show moves, never to the others."""
    config, store, _ = paired
    game = store.games(1)[0]
    record = make_record(Schedule(config, store, EventWrites(store), print).spec_for(game), "1-0")
    move = MovePlayed(game_id=game.game_id, ply=1, uci="e2e4", san="e4", fen="f",
                      white_clock_ms=None, black_clock_ms=None, comment="+0.20/9 0.01s")
    moves, ends = Seen(), SeenNoMoves()

    async def main() -> None:
        writer = StoreWriter(store.path).start()
        try:
            router = EventRouter(StoreSink(store, writer), [moves, ends])
            router.publish(placeholder_started(game, record, 1))
            router.publish(move)
            assert moves.kinds() == ["started", "move"]  # at once, before the move's commit
            writer.flush()
        finally:
            writer.close()

    asyncio.run(main())
    assert ends.kinds() == ["started"]
    assert [m["uci"] for m in store.logged_moves(game.game_id)] == ["e2e4"]


def test_a_records_commit_wakes_the_loop_once_views_first_then_the_game(paired: Any) -> None:
    """A finished game's commit reaches the loop in one callback from the writer thread: the
    views are shown the GameFinished, then the game's task waiting in ``settled`` goes on
    (the views have it by then); nothing else is scheduled from the writer for it."""
    config, store, _ = paired
    game = store.games(1)[0]
    record = make_record(Schedule(config, store, EventWrites(store), print).spec_for(game), "1-0")
    ends = SeenNoMoves()

    async def main() -> tuple[int, list[str]]:
        loop = asyncio.get_running_loop()
        calls: list[object] = []
        real = loop.call_soon_threadsafe

        def counted(callback: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append(callback)
            return real(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        writer = StoreWriter(store.path).start()
        try:
            sink = StoreSink(store, writer)
            router = EventRouter(sink, [ends])
            router.publish(placeholder_started(game, record, 1))
            await sink.settled(game.game_id)
            calls.clear()
            router.publish(GameFinished(game.game_id, record, 1))
            await sink.settled(game.game_id)
            seen_at_settled = ends.kinds()
        finally:
            writer.close()
            del loop.call_soon_threadsafe
        return len(calls), seen_at_settled

    wakes, seen = asyncio.run(main())
    assert wakes == 1
    assert seen == ["started", "finished"]
    assert next(g for g in store.games(1) if g.game_id == game.game_id).status == "finished"


def test_a_decision_already_applied_leaves_the_game_unrecorded_and_unshown(paired: Any) -> None:
    """The TD's mark runs in the record's transaction: when it refuses (the command was
    applied by an earlier run), neither the record nor the views see the game."""
    config, store, _ = paired
    game = store.games(1)[0]
    spec = Schedule(config, store, EventWrites(store), print).spec_for(game)

    def already(conn: Any) -> None:
        raise decisions.AlreadyDone("applied by an earlier run")

    async def main() -> list[str]:
        seen = Seen()
        async with recording(store, seen) as recorder:
            with pytest.raises(decisions.AlreadyDone):
                await recorder.finish(game, make_record(spec, "0-1"), 1, then=already)
        return seen.kinds()

    assert asyncio.run(main()) == []
    assert next(g for g in store.games(1) if g.game_id == game.game_id).status != "finished"


def test_the_writer_writes_at_once_before_the_run_and_through_its_thread_during_it(
        paired: Any) -> None:
    _, store, _ = paired
    EventWrites(store).set_meta("before", "1")
    assert store.meta("before") == "1"

    async def main() -> None:
        thread = StoreWriter(store.path).start()
        try:
            writes = EventWrites(store, StoreSink(store, thread))
            writes.write(lambda writer_store: writer_store.set_meta("during", "2"))
            await writes.written()
        finally:
            thread.close()

    asyncio.run(main())
    assert store.meta("during") == "2"


def test_a_running_events_withdraw_now_forfeit_reaches_the_views_through_the_recorder(
        paired: Any) -> None:
    """`td withdraw ENGINE --now` applied by the running runner: the engine's unfinished
    game is recorded through the Recorder (a GameFinished a view sees, as every game), then
    the withdrawal with its mark and its outcome line naming the forfeit."""
    config, store, tour = paired
    first = store.games(1)[0]
    second = next(g for g in store.games(1) if g.game_id != first.game_id
                  and {g.white, g.black} == {first.white, first.black})
    engine = first.white

    async def main() -> list[GameEvent]:
        seen = Seen()
        async with running(config, store, tour) as loop:
            loop.director.recorder.router.views.append(seen)
            await loop.games.play(first)  # round 1 under way: its pairing stands
            await loop.director.load()
            decisions.record_command(config.database, "withdraw",
                                     {"engine": engine, "now": True}, "hangs", "td@test")
            await loop.director.apply_pending()
            await asyncio.sleep(0)  # the views are told on the loop once it is committed
        return seen.events

    events = asyncio.run(main())
    finished = [e for e in events if isinstance(e, GameFinished)
                and e.game_id == second.game_id]
    assert len(finished) == 1 and finished[0].record.termination == "abandoned"
    assert finished[0].record.result == ("0-1" if second.white == engine else "1-0")
    stored = next(g for g in store.games(1) if g.game_id == second.game_id)
    assert (stored.status, stored.result) == ("finished", finished[0].record.result)
    command = decisions.commands(store.conn)[-1]
    assert command.state == "applied"
    assert command.outcome == (f"{engine} withdrawn from round 2 on; lost by forfeit: "
                               f"game(s) {second.game_id}")


def test_a_withdraw_now_cut_short_after_a_forfeit_forfeits_the_rest_when_applied_again(
        paired: Any) -> None:
    """The running runner's path: killed after the first forfeit's commit (the command still
    pending), the next application forfeits only the games left and names only those."""
    from runner.service.td.rules import forfeit_record

    config, store, tour = paired
    played = store.games(1)[0]
    legs = [g for g in store.games(1) if played.white not in (g.white, g.black)
            and played.black not in (g.white, g.black)][:2]
    engine = legs[0].white
    assert all(engine in (g.white, g.black) for g in legs)

    async def main() -> list[int]:
        seen = Seen()
        async with running(config, store, tour) as loop:
            loop.director.recorder.router.views.append(seen)
            await loop.games.play(played)
            await loop.director.load()
            decisions.record_command(config.database, "withdraw",
                                     {"engine": engine, "now": True}, "crashes", "td@test")
            first = legs[0]  # the first forfeit committed, then the runner died
            await loop.director.recorder.forfeit(
                first, forfeit_record(store, config, first, engine), 1)
            await loop.director.apply_pending()
            await asyncio.sleep(0)
        return [e.game_id for e in seen.events if isinstance(e, GameFinished)]

    assert asyncio.run(main()) == [played.game_id, legs[0].game_id, legs[1].game_id]
    command = decisions.commands(store.conn)[-1]
    assert (command.state, command.outcome) == (
        "applied", f"{engine} withdrawn from round 2 on; lost by forfeit: game(s) "
                   f"{legs[1].game_id}")


# --------------------------------------------------------------------------- the sinks


def test_the_console_sink_says_starts_and_ends_as_cutechess_does(paired: Any) -> None:
    config, store, _ = paired
    game = store.games(1)[0]
    record = make_record(Schedule(config, store, EventWrites(store), print).spec_for(game),
                         "1/2-1/2")
    lines: list[str] = []
    sink = ConsoleSink(lines.append, lambda: 12)
    sink.handle(placeholder_started(game, record, 1))
    sink.handle(GameFinished(game.game_id, record, 1))
    assert lines == [f"Started game {game.game_id} of 12 ({game.white} vs {game.black})",
                     f"Finished game {game.game_id} ({game.white} vs {game.black}): "
                     f"1/2-1/2 {{{record.reason}}}"]


def test_with_quiet_the_game_lines_are_not_even_made(paired: Any) -> None:
    """--quiet prints no game lines: the run has no console sink to make them (nor the
    progress summary each ``Finished game`` line ends with); without it, the lines."""
    from runner.service.views.alerts import Alerter
    from runner.service.views.console import ConsoleOut
    from runner.service.views.progress import ProgressConsoleSink
    from runner.service.views.runviews import run_views

    config, store, _ = paired
    game = store.games(1)[0]
    record = make_record(Schedule(config, store, EventWrites(store), print).spec_for(game),
                         "1-0")
    outs = {}
    for quiet in (True, False):
        out = io.StringIO()
        views = run_views(ConsoleOut(out, quiet=quiet), config, store, lambda: 12, Alerter(None))
        sinks = views.sinks()
        assert any(isinstance(s, ProgressConsoleSink) for s in sinks) is not quiet
        for event in (placeholder_started(game, record, 1), GameFinished(game.game_id, record, 1)):
            for sink in sinks:
                sink.handle(event)
        views.close()
        outs[quiet] = out.getvalue()
    assert outs[True] == ""
    assert outs[False].startswith(f"Started game {game.game_id} of 12 ") \
        and f"Finished game {game.game_id} " in outs[False] and "1/12 games" in outs[False]


def test_a_failing_view_never_keeps_the_others_from_an_event(paired: Any) -> None:
    config, store, _ = paired
    game = store.games(1)[0]
    record = make_record(Schedule(config, store, EventWrites(store), print).spec_for(game),
                         "1-0")

    class Broken:
        def handle(self, event: GameEvent) -> None:
            raise OSError("disk full")

    class Stopping:
        def handle(self, event: GameEvent) -> None:
            raise RecordError("the record failed")

    async def main() -> list[str]:
        writer = StoreWriter(store.path).start()
        try:
            seen = Seen()
            router = EventRouter(StoreSink(store, writer), [Broken(), seen])
            router.show(placeholder_started(game, record, 1))
            stopped = EventRouter(StoreSink(store, writer), [Stopping(), seen])
            with pytest.raises(RecordError):  # the store's own error still stops the event
                stopped.show(placeholder_started(game, record, 1))
            return seen.kinds()
        finally:
            writer.close()

    assert asyncio.run(main()) == ["started"]


# --------------------------------------------------------------------------- the backends


def test_every_backend_declares_what_it_can_do() -> None:
    referee, cutechess = RefereeBackend(), CutechessBackend("cutechess-cli")
    assert isinstance(referee, Backend) and isinstance(cutechess, Backend)
    assert (referee.can_resume, referee.local_engines, referee.engine_resources) == \
        (True, True, True)
    assert (cutechess.can_resume, cutechess.local_engines, cutechess.engine_resources) == \
        (False, True, False)
    scripted = as_backend(backend())
    assert isinstance(scripted, FunctionBackend) and not scripted.can_resume
    assert as_backend(referee) is referee


def test_the_cluster_backend_declares_it_resumes_and_starts_no_engine_here() -> None:
    pytest.importorskip("distributed")
    from runner.cluster.client import ClusterBackend

    cluster = ClusterBackend("tcp://127.0.0.1:1")
    assert isinstance(cluster, Backend)
    assert (cluster.can_resume, cluster.local_engines, cluster.engine_resources) == \
        (True, False, False)


# --------------------------------------------------------------------------- GameLife


def test_game_life_records_a_game_whose_backend_returns_only_its_record(paired: Any) -> None:
    config, store, tour = paired
    game = store.games(1)[0]

    async def main() -> list[str]:
        async with running(config, store, tour) as loop:
            await loop.games.play(game)
        return [g.status for g in store.games(1) if g.game_id == game.game_id]

    assert asyncio.run(main()) == ["finished"]
    assert store.attempts(game.game_id) == 1


def _endless(started: asyncio.Event, stopped: list[str]) -> Callable[..., Any]:
    async def play(spec: Any, *, emit: Any, on_process: Any, attempt: int) -> Any:
        emit(GameStarted(game_id=spec.game_id, white=spec.white.name, black=spec.black.name,
                         white_id="", black_id="", start_time="2026-01-01T00:00:00",
                         start_fen="", book_plies=0, white_clock_ms=None,
                         black_clock_ms=None, attempt=attempt))
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.append("backend stopped")
            raise
    return play


def test_game_life_takes_a_td_order_from_its_control_channel(tmp_path: Path) -> None:
    """A game in progress stops its backend call on an order and runs the order's effect in
    its own task; the task itself is never cancelled."""
    config = load_config(loop_config(tmp_path))
    store = Store.open(config.database)
    started, stopped = asyncio.Event(), []
    tour = Tournament(config, store, quiet=True, out=io.StringIO(),
                      play_game=_endless(started, stopped))
    try:
        assert tour.prepare() is None
        tour.pair(1)
        game = store.games(1)[0]

        async def main() -> tuple[bool, bool]:
            ran_in: list[asyncio.Task[Any] | None] = []

            async def effect() -> bool:
                ran_in.append(asyncio.current_task())
                return False  # not played again

            async with running(config, store, tour) as loop:
                task = asyncio.create_task(loop.games.play(game))
                loop.running.add(game.game_id, task)
                await asyncio.wait_for(started.wait(), 10)
                await asyncio.wait_for(loop.running.stop(game.game_id, effect), 10)
                await asyncio.wait_for(task, 10)
                return ran_in == [task], task.cancelled()

        in_its_task, cancelled = asyncio.run(main())
        assert in_its_task and not cancelled
        assert stopped == ["backend stopped"]
    finally:
        store.close()


def test_an_order_for_a_game_that_ended_first_runs_where_it_was_given() -> None:
    async def main() -> list[str]:
        games = RunningGames()
        said: list[str] = []
        task = asyncio.create_task(asyncio.sleep(0))
        games.add(1, task)
        await task

        async def effect() -> bool:
            said.append("effect")
            return False

        await games.stop(1, effect)
        return said

    assert asyncio.run(main()) == ["effect"]
