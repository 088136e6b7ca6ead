"""The operator keys of a config: Affinity, Ponder, EngineLogs, StartupTimeoutS, PgnComments,
PgnExtras, EpdOut (docs/operators.md), LivePgn (docs/broadcast.md). Their types and bounds
are in the schema (runner.config.keyschema); what is checked here (cores, backends, files) goes to
the loader's checker, so every problem names the file, line, key, bad value and what was
expected; none of them changes the event (they may change between resumes and are not in the
fingerprint).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner.config.limits import RESTART_EXPECTED
from runner.config.paths import resolve_path
from runner.config.typed import (
    AffinityConfig,
    Config,
    EngineConfig,
    EngineLogsConfig,
)

DEFAULT_STARTUP_TIMEOUT_S = 30.0
THREAD_OPTIONS = ("threads", "cores")  # UCI Threads; some XBoard engines call it Cores


def available_cores() -> list[int]:
    """The cores this process may run on (its own affinity mask, e.g. under taskset/cgroups)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


def engine_threads(engine: EngineConfig) -> int:
    """Threads the engine is configured to search with (Threads / Cores option, default 1)."""
    for name, value in engine.options.items():
        if name.lower() in THREAD_OPTIONS:
            try:
                return max(1, int(value))
            except (TypeError, ValueError):
                return 1
    return 1


def _ranges(cores: list[int]) -> str:
    return ", ".join(map(str, cores)) if len(cores) < 8 else f"{cores[0]}-{cores[-1]} ({len(cores)})"


def _affinity(c: Any, value: Any, concurrency: int, engines: tuple[EngineConfig, ...],
              backend: str, given: bool = True) -> AffinityConfig | None:
    cores = available_cores()
    threads = max((engine_threads(e) for e in engines), default=1)
    per_game = f"Threads {threads}"
    if any(e.ponder for e in engines):
        per_game = f"2 pondering engines x Threads {threads}"
        # both engines of a game think at once: each needs cores of its own
        threads *= 2
        if not given and concurrency * threads > len(cores):
            c.problem("Ponder", f"Concurrency {concurrency} x 2 engines x Threads "
                      f"{threads // 2} = {concurrency * threads} cores, and this machine lets "
                      f"the runner use {len(cores)} (cores {_ranges(cores)}): pondering "
                      "engines would take each other's cores; lower Concurrency or Threads, "
                      "or say 'Affinity: off' to ponder anyway")
    if value is None or value is False or value == "off":
        return None
    if backend != "python-chess":
        c.bad("Affinity", value, "no Affinity with Backend: cutechess (cores are pinned by the "
              "built-in referee, which starts the engines itself)")
        return None
    if value == "auto":
        need = concurrency * threads
        if need > len(cores):
            c.problem("Affinity", f"got 'auto', but Concurrency {concurrency} x {per_game} "
                      f"= {need} cores and this machine lets the runner use {len(cores)} "
                      f"(cores {_ranges(cores)}); lower Concurrency or Threads")
            return None
        slots = tuple(tuple(cores[i * threads:(i + 1) * threads]) for i in range(concurrency))
        return AffinityConfig("auto", slots)
    if not isinstance(value, list) or not all(
            isinstance(s, list) and s and all(isinstance(x, int) and not isinstance(x, bool)
                                              for x in s) for s in value):
        c.bad("Affinity", value, "auto, off, or a list of core lists, one per game slot "
              "(e.g. [[0, 1], [2, 3]])")
        return None
    ok = True
    if len(value) < concurrency:
        c.bad("Affinity", value, f"at least Concurrency = {concurrency} core lists (one per "
              "game played at once)")
        ok = False
    owner: dict[int, int] = {}
    for i, slot in enumerate(value):
        key = f"Affinity[{i}]"
        missing = [x for x in slot if x not in cores]
        if missing:
            c.bad(key, slot, f"cores this machine lets the runner use ({_ranges(cores)}); "
                  f"no core {', '.join(map(str, missing))}")
            ok = False
        for x in slot:
            if x in owner and owner[x] != i:
                c.bad(key, slot, f"cores of this slot only; core {x} is also in Affinity[{owner[x]}] "
                      "(game slots never share a core)")
                ok = False
            owner.setdefault(x, i)
        if len(set(slot)) < threads:
            c.bad(key, slot, f"at least {threads} cores ({per_game})")
            ok = False
    if not ok:
        return None
    return AffinityConfig("explicit", tuple(tuple(sorted(set(s))) for s in value[:concurrency]))




def _restart_value(c: Any, data: dict[str, Any], prefix: str) -> bool | None:
    """``Restart`` of ``data`` as a bool (YAML reads on/off as booleans), None when absent."""
    value = data.get("Restart")
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("on", "off"):
        return value.strip().lower() == "on"
    c.bad(f"{prefix}.Restart" if prefix else "Restart", value, RESTART_EXPECTED)
    return None


def _from_engines_file(written: Any, name: str) -> bool:
    """Whether ``name``'s Restart came from EnginesFile: ``written`` (the YAML's own Engines)
    has no entry of that name with a Restart."""
    for entry in written if isinstance(written, list) else []:
        if isinstance(entry, dict) and str(entry.get("Name", "")).strip() == name:
            return "Restart" not in entry
    return True


def _restart(c: Any, top: dict[str, Any], raw_by_name: dict[str, tuple[int, Any]],
             engines: list[EngineConfig], config: Config, written: Any) -> list[EngineConfig]:
    """``Restart`` (event default ``on``) and each engine's own, checked against the backend:
    engines are kept only by the built-in referee on this machine (runner.play.keep)."""
    default = _restart_value(c, top, "")
    out = []
    for engine in engines:
        i, raw = raw_by_name.get(engine.name, (None, {}))
        own = _restart_value(c, raw, f"Engines[{i}]") if i is not None else None
        restart = own if own is not None else default if default is not None else True
        if (not restart and own is not None and top.get("EnginesFile") is not None
                and _from_engines_file(written, engine.name)):
            # cutechess's restart=off for an engine of EnginesFile: kept where this backend
            # can keep engines; elsewhere fresh engines, as cutechess-cli started per game gives
            restart = config.backend != "python-chess" or config.cluster is not None
        if not restart:
            key = f"Engines[{i}].Restart" if own is not None else "Restart"
            if config.backend != "python-chess":
                c.bad(key, "off", "on with Backend: cutechess (cutechess-cli is started for each "
                      "game and starts its engines itself); Restart: off needs the built-in "
                      "referee (Backend: python-chess)")
                restart = True
            elif config.cluster is not None:
                c.bad(key, "off", "on with Cluster (each game is played by a task on a worker, "
                      "which starts its own engines)")
                restart = True
        out.append(replace(engine, restart=False) if not restart else engine)
    return out


def apply_operations(c: Any, top: dict[str, Any], keys: Any, index: list[int], config: Config,
                     base: Path, written: Any = None) -> Config:
    """``config`` with the operator keys (validated by the schema in ``keys``) applied and
    checked against each other (problems go to ``c``). ``top``'s Engines are merged with
    EnginesFile (``index``: the place of each of ``keys.Engines`` there); ``written`` is the
    YAML's own list."""
    engines_raw = top.get("Engines") if isinstance(top.get("Engines"), list) else []
    engine_keys = dict(zip(index, keys.Engines or (), strict=True))
    raw_by_name = {str(e.get("Name", "")).strip(): (i, e) for i, e in enumerate(engines_raw)
                   if isinstance(e, dict)}
    startup = keys.StartupTimeoutS
    engines = []
    for engine in config.engines:
        i, raw = raw_by_name.get(engine.name, (None, {}))
        own = engine_keys.get(i) if i is not None else None
        timeout = own.StartupTimeoutS if own is not None and own.StartupTimeoutS is not None \
            else startup
        engine = replace(engine, startup_timeout_s=float(timeout)) if timeout else engine
        engine = replace(engine, start_retry_s=tuple(float(s) for s in keys.StartRetryS))
        own_ponder = own.Ponder if own is not None else None
        if own_ponder if own_ponder is not None else keys.Ponder:
            engine = replace(engine, ponder=True)
        engines.append(engine)
    engines = _restart(c, top, raw_by_name, engines, config, written)
    logs = None
    if keys.EngineLogs is not None:
        folder = keys.EngineLogs.Dir
        path = resolve_path(base, folder)
        if path.exists() and not path.is_dir():
            c.bad("EngineLogs.Dir", folder, f"a directory (looked at {path}: it is a file)")
        logs = EngineLogsConfig(path, keys.EngineLogs.Keep)
    epd_path = resolve_path(base, keys.EpdOut) if keys.EpdOut is not None else None
    taken = {config.pgn_out: "PgnOut", config.database: "Database",
             config.swiss.state_path: "SwissOptions.StatePath"}
    if epd_path is not None and epd_path in taken:
        c.bad("EpdOut", keys.EpdOut, f"a file of its own (it is {taken[epd_path]}: the "
              "positions would be written into it)")
    # LivePgn is checked with the other outputs by the loader
    live_path = resolve_path(base, keys.LivePgn) if keys.LivePgn is not None else None
    engines_file = top.get("EnginesFile")
    return replace(
        config, engines=tuple(engines), engine_logs=logs,
        startup_timeout_s=float(startup) if startup is not None else None,
        start_retry_s=tuple(float(s) for s in keys.StartRetryS),
        affinity=_affinity(c, top.get("Affinity"), config.concurrency, tuple(engines),
                           config.backend, "Affinity" in top),
        pgn_comments=keys.PgnComments, pgn_extras=tuple(keys.PgnExtras),
        epd_out=epd_path, live_pgn=live_path,
        engines_file=resolve_path(base, engines_file) if isinstance(engines_file, str) else None)


__all__ = ["DEFAULT_STARTUP_TIMEOUT_S", "apply_operations", "available_cores", "engine_threads"]
