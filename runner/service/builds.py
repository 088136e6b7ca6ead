"""TCEC rule 8 for the engines' files: the builds recorded when the event started are the
only ones that play (runner.play.enginebuild, runner.store.buildrecords).

- When a run opens its event, every engine's build is compared with the recorded one; a
  changed build is refused with both digests unless ``run --accept-build ENGINE --reason
  TEXT`` records it (a crash fix a decision allowed).
- Before each game played on this machine, its engines' files are checked again: an engine
  upgraded on disk in the middle of the event (``apt``) stops the event before its next game
  (:class:`BuildChanged`; the games in progress finish).
- The game's spec carries the allowed digests: a cluster worker refuses an engine whose
  build differs (runner.cluster.task), and the PGN names the builds that played.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from runner.config.typed import Config
from runner.errors import EXIT_BAD_INPUT, StopEvent
from runner.errors import print_error as _err
from runner.play.enginebuild import build_difference, build_of, cached_build
from runner.store.database import Store

ACCEPT_HINT = ("restore the event's build, or, where a decision allows the new one, record it "
               "with `swiss-runner run CONFIG --accept-build {name} --reason TEXT`")


class BuildChanged(StopEvent):
    """An engine's files changed on disk since the event started (its next game is not
    played; the event stops and resumes once the build is restored or accepted)."""




def accept_problem(config: Config, accept: Sequence[str], reason: str | None) -> str | None:
    """Why ``--accept-build``/``--reason`` cannot be used (None: they can)."""
    names = [e.name for e in config.engines]
    for name in accept:
        if name not in names:
            return (f"--accept-build {name}: no engine of that name in {config.path} "
                    f"(expected one of: {', '.join(names)})")
    if accept and not (reason or "").strip():
        return "--accept-build needs --reason TEXT: why the new build may play (it is recorded)"
    if reason and not accept:
        return "--reason goes with --accept-build ENGINE"
    return None


def open_builds(config: Config, store: Store, say: Callable[..., None], *, new_event: bool,
                accept: Sequence[str] = (), reason: str = "",
                needs_games: Callable[[], bool] = lambda: True
                ) -> tuple[dict[str, str], int | None]:
    """Record or check every engine's build; returns {engine: allowed digest} and an exit
    code when the run must not start (a changed build that was not accepted, in an event
    that still has games to play: ``needs_games``)."""
    recorded = {name: rows[-1] for name, rows in store.builds().items()}
    now = {e.name: build_of(e) for e in config.engines}
    first = {name: b.to_json() for name, b in now.items() if name not in recorded}
    if first:
        store.record_builds(first, "event start" if new_event else
                            "first recorded (the event started before builds were recorded)")
    changed = {name for name, b in now.items()
               if name in recorded and recorded[name]["digest"] != b.digest}
    refused = sorted(changed - set(accept))
    if refused and not needs_games():  # a complete event: no engine plays any more
        refused = []
    if refused:
        for name in refused:
            _err(f"{build_difference(name, recorded[name], now[name])}; "
                 + ACCEPT_HINT.format(name=name))
        _err(f"{config.path}: {len(refused)} engine build(s) changed since the event started; "
             "no game was played")
        return {}, EXIT_BAD_INPUT
    accepted = {name: now[name].to_json() for name in accept if name in changed}
    if accepted:
        store.record_builds(accepted, reason)
    for name in accept:
        if name in changed:
            say(f"Engine {name}: build {now[name].digest} accepted ({reason}); the event's was "
                f"{recorded[name]['digest']}", always=True)
        else:
            say(f"--accept-build {name}: its build is the event's already; nothing to accept",
                always=True)
    return {name: b.digest for name, b in now.items()}, None


async def check_local(spec: Any, allowed: dict[str, str],
                      recorded: Callable[[], dict[str, list[dict[str, Any]]]]) -> None:
    """Before a game played here: BuildChanged when an engine's files changed on disk since
    its build was recorded (``recorded``: Store.builds, read only then, on the loop's
    thread). The files are looked at on another thread: a changed one is hashed again
    there, never on the loop that stamps the other games' moves."""
    engines = [e for e in (spec.white, spec.black) if allowed.get(e.name)]
    if not engines:
        return
    builds = [cached_build(e) for e in engines]
    if None in builds:  # a file changed: hashed again on another thread
        builds = await asyncio.to_thread(lambda: [build_of(e) for e in engines])
    for engine, now in zip(engines, builds, strict=True):
        want = allowed[engine.name]
        if now.digest != want:
            rows = recorded().get(engine.name) or [{"digest": want}]
            old = rows[-1]
            raise BuildChanged(
                f"{build_difference(engine.name, old, now)}: its files changed on disk since "
                f"the event started, so game {spec.game_id} ({spec.white.name} vs "
                f"{spec.black.name}) was not started and the event stops here (TCEC rule 8; "
                "the games in progress finish); " + ACCEPT_HINT.format(name=engine.name)
                + ", then run the same command again")
