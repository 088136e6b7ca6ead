"""The typed config (runner.config.typed) from the keys the schema validated, with the plain
checks a schema cannot make: engines on PATH, books and tablebase folders that exist, the time
control's syntax, names and paths this system takes, and rules between keys. Every problem
goes to the loader's checker (file, line, key, value, expected); a key the schema already
reported is not reported again."""

from __future__ import annotations

import difflib
import os
import shlex
from pathlib import Path
from typing import Any

from runner.config.gpus import DetectGpus, apply_gpus
from runner.config.keyschema import SwissOptionsKeys
from runner.config.limits import MAX_WHITE_ADVANTAGE
from runner.config.operatorkeys import apply_operations
from runner.config.outputs import check_distinct_outputs, check_writable_outputs
from runner.config.paths import resolve_command, resolve_path
from runner.config.typed import (
    ALERT_KINDS,
    ENGINE_SEARCH_DIRS,
    AdjudicationConfig,
    AlertsConfig,
    ClusterConfig,
    Config,
    EngineConfig,
    InterruptionConfig,
    OpeningsConfig,
    RatingsConfig,
    SwissOptions,
    TablebaseConfig,
    TcecDrawRule,
    TcecWinRule,
)
from runner.config.values import name_problem, path_problem, plain_word, stat_is_special
from runner.domain.timecontrol import TimeControl, parse_time_control
from runner.domain.variant import POSITIONS, is_960

_BOOK_SUFFIX = {".pgn": "pgn", ".epd": "epd", ".bin": "polyglot"}


def _as_written(value: float | None, written: Any) -> float | None:
    """An integer written for a number key stays one (3, not 3.0): the event fingerprint
    holds the Rating as written, and a resumed event must give the same one."""
    return written if type(written) is int and value == written else value


def _given(top: dict[str, Any], block: str) -> set[str]:
    """The keys written in ``block`` of the config (valid or not)."""
    value = top.get(block)
    return {str(k) for k in value} if isinstance(value, dict) else set()


def _name(c: Any, key: str, value: str) -> str:
    problem = name_problem(value)
    if problem and not c.reported(key):
        c.bad(key, value, problem)
    return value


def _file_path(c: Any, key: str, value: str, base: Path) -> Path | None:
    """``value`` resolved against ``base``; None after reporting a path no system takes."""
    problem = path_problem(value)
    if problem:
        c.bad(key, value, problem)
        return None
    return resolve_path(base, value)


def _output_path(c: Any, key: str, value: str, base: Path) -> Path | None:
    """A file the runner writes: a usable path that names a file, not a directory."""
    path = _file_path(c, key, value, base)
    if path is None:
        return None
    if not path.name or str(value).endswith(os.sep):
        c.bad(key, value, "a file name (this names a directory)")
        return None
    return path


def _engines(c: Any, keys: Any, index: list[int], base: Path,
             written: list[Any]) -> tuple[EngineConfig, ...]:
    engines: list[EngineConfig] = []
    seen: dict[str, int] = {}
    for i, e in zip(index, keys.Engines or (), strict=True):
        key = f"Engines[{i}]"
        name = _name(c, f"{key}.Name", e.Name).strip()
        if name in seen:
            c.problem(f"{key}.Name", f"duplicate engine name {name!r} (also Engines[{seen[name]}])")
        seen.setdefault(name, i)
        command = None
        if path_problem(e.Command):
            c.bad(f"{key}.Command", e.Command, path_problem(e.Command) or "")
        else:
            command = resolve_command(e.Command, base)
            if command is None:
                where = "relative to the config file" if os.sep in e.Command else (
                    "on PATH or in " + ", ".join(ENGINE_SEARCH_DIRS))
                c.bad(f"{key}.Command", e.Command,
                      f"an executable engine ({where}); not found or not executable")
        args = e.Args
        if any(not plain_word(a) for a in args):
            c.bad(f"{key}.Args", args, "a list of strings (finite numbers allowed), each one line "
                  "without control characters")
            args = []
        options = e.Options
        if options is None:
            options = {}
        elif not isinstance(options, dict):  # 0, false, '' and [] too: not "no options"
            c.bad(f"{key}.Options", options, "a mapping of engine option names to values")
            options = {}
        options = dict(options)
        for oname, ovalue in list(options.items()):
            if not plain_word(oname) or isinstance(oname, bool) or not str(oname).strip():
                c.bad(f"{key}.Options", str(oname), "option names that are one line of "
                      "text (a newline would send the engine a command of its own)")
                options.pop(oname)
            elif (not isinstance(ovalue, (str, int, float, bool)) and ovalue is not None) or (
                    not isinstance(ovalue, bool) and ovalue is not None and not plain_word(ovalue)):
                c.bad(f"{key}.Options.{oname}", ovalue,
                      "a string (one line, no control characters), a finite number or true/false")
                options.pop(oname)
        working_dir = None
        if e.WorkingDir is not None:
            resolved = _file_path(c, f"{key}.WorkingDir", e.WorkingDir, base)
            if resolved is not None:
                working_dir = str(resolved)
                if not resolved.is_dir():
                    c.bad(f"{key}.WorkingDir", e.WorkingDir, "an existing directory")
        if command:
            engines.append(EngineConfig(
                name=name, command=command, args=tuple(str(a) for a in args),
                protocol=e.Protocol, rating=_as_written(e.Rating, written[i].get("Rating")), options={str(k): v for k, v in options.items()},
                nodes=e.Nodes, depth=e.Depth, movetime_ms=e.MoveTime, working_dir=working_dir,
                command_as_written=e.Command))
    return tuple(engines)


def _swiss(c: Any, keys: Any, base: Path) -> SwissOptions:
    s = keys.SwissOptions
    if s is None:
        s = SwissOptionsKeys()
    state_path = (_output_path(c, "SwissOptions.StatePath", s.StatePath, base)
                  or resolve_path(base, "state/swiss_state.json"))
    return SwissOptions(
        games_per_match=s.GamesPerMatch, rounds=s.Rounds, seed_group_count=s.SeedGroupCount,
        seeding=s.Seeding, random_seed=s.RandomSeed, double_round_schedule=s.DoubleRoundSchedule,
        unique_per_match_only=s.UniquePerMatchOnly, random_openings=s.RandomOpenings,
        allow_extra_pairs_on_tie=s.AllowExtraPairsOnTie, max_extra_pairs=s.MaxExtraPairs,
        state_path=state_path)


def _order(c: Any, o: Any, swiss: SwissOptions, explicit: bool) -> str:
    """Openings.Order, which must agree with SwissOptions.RandomOpenings when both are set."""
    order = o.Order
    if order and explicit and (order == "random") != swiss.random_openings:
        c.problem("Openings.Order", f"got {order!r}, but SwissOptions.RandomOpenings is "
                  f"{swiss.random_openings}; they mean the same thing: make them agree or drop one")
    return order or ("random" if swiss.random_openings else "sequential")


def _openings(c: Any, keys: Any, top: dict[str, Any], base: Path,
              swiss: SwissOptions) -> OpeningsConfig | None:
    o, variant = keys.Openings, keys.Variant
    if o is None:
        if is_960(variant) and not c.reported("Openings"):  # random numbered starts
            order = "random" if swiss.random_openings else "sequential"
            return OpeningsConfig(file=None, format="positions", order=order, variant=variant)
        return None
    order = _order(c, o, swiss, "RandomOpenings" in _given(top, "SwissOptions"))
    given = _given(top, "Openings")
    if "Positions" in given:
        return _positions(c, o, given, order, variant)
    if o.File is None:
        if not c.reported("Openings.File"):
            c.problem("Openings.File", "missing required key (or Positions, for a Chess960 event)")
        return None
    path = _file_path(c, "Openings.File", o.File, base)
    if path is None:
        return None
    fmt = o.Format
    if not fmt and not c.reported("Openings.Format"):
        fmt = _BOOK_SUFFIX.get(path.suffix.lower(), "")
        if not fmt:
            c.bad("Openings.Format", None,
                  f"pgn | epd | polyglot (cannot tell from the name {path.name!r})")
    if not path.is_file() or not os.access(path, os.R_OK) or stat_is_special(path):
        c.bad("Openings.File", o.File, f"a readable opening book file (looked at {path})")
    elif fmt == "polyglot" and o.Plies == 0 and not c.reported("Openings.Plies"):
        c.bad("Openings.Plies", o.Plies, "a positive number of plies for a polyglot book")
    return OpeningsConfig(file=path, format=fmt or "pgn", plies=o.Plies, order=order,
                          variant=variant)


def _positions(c: Any, o: Any, given: set[str], order: str,
               variant: str) -> OpeningsConfig | None:
    """``Openings.Positions``: numbered Chess960 starts (a list, or ``random``)."""
    for other in ("File", "Format", "Plies"):
        if other in given:
            c.problem(f"Openings.{other}", "not with Openings.Positions: the start positions "
                      "come either from Positions or from a File")
    value = o.Positions
    if not is_960(variant):
        c.bad("Openings.Positions", value, "no Positions in a standard event: set "
              "Variant: chess960 (or dfrc) to play numbered Chess960 start positions")
        return None
    if value == "random":
        return OpeningsConfig(file=None, format="positions", order=order, variant=variant)
    dfrc = variant == "dfrc"
    pair = "[White, Black] pairs of Chess960 numbers (0..959)" if dfrc else \
        "Chess960 numbers (0..959)"
    if not isinstance(value, list) or not value:
        c.bad("Openings.Positions", value, f"random, or a non-empty list of {pair}")
        return None
    positions: list[tuple[int, int | None]] = []
    for i, item in enumerate(value):
        numbers = item if dfrc and isinstance(item, list) else [item]
        if dfrc and len(numbers) != 2 or not all(
                isinstance(n, int) and not isinstance(n, bool) and 0 <= n < POSITIONS
                for n in numbers):
            c.bad(f"Openings.Positions[{i}]", item,
                  "a [White, Black] pair of Chess960 numbers (0..959)" if dfrc
                  else "a Chess960 position number (0..959)")
            continue
        positions.append((numbers[0], numbers[1] if dfrc else None))
    if len(positions) != len(value):
        return None
    return OpeningsConfig(file=None, format="positions", order=order, variant=variant,
                          positions=tuple(positions))


def _syzygy_problem(folder: Path) -> str | None:
    """Why ``folder`` holds no Syzygy WDL table (python-chess reads the folder itself, not
    its subfolders), or None."""
    try:
        with os.scandir(folder) as entries:
            if any(entry.name.lower().endswith(".rtbw") for entry in entries):
                return None
    except OSError as exc:
        return f"cannot list {folder}: {exc.strerror or exc}"
    return f"no .rtbw file in {folder}"


def _adjudication(c: Any, keys: Any, base: Path) -> AdjudicationConfig:
    a = keys.Adjudication
    if a is None:
        return AdjudicationConfig()
    draw = win = tb = None
    if a.TcecDraw is not None:
        d = a.TcecDraw
        draw = TcecDrawRule(max_pawns=d.MaxPawns, max_pieces=d.MaxPieces, score_cp=d.ScoreCp,
                            plies=d.Plies)
    if a.TcecWin is not None:
        win = TcecWinRule(score_cp=a.TcecWin.ScoreCp, plies=a.TcecWin.Plies)
    if a.Tablebases is not None:
        k = "Adjudication.Tablebases"
        resolved: list[Path] = []
        for i, entry in enumerate(a.Tablebases.Paths):
            if not isinstance(entry, str):
                c.bad(f"{k}.Paths[{i}]", entry, "a directory path")
                continue
            path = _file_path(c, f"{k}.Paths[{i}]", entry, base)
            if path is None:
                continue
            if not path.is_dir():
                c.bad(f"{k}.Paths[{i}]", entry,
                      f"an existing directory of Syzygy tables (looked at {path})")
            else:
                problem = _syzygy_problem(path)
                if problem:  # a typo'd folder silently turned tablebase adjudication off
                    c.bad(f"{k}.Paths[{i}]", entry, f"a directory of Syzygy tables ({problem})")
            resolved.append(path)
        if resolved:  # no tables: tablebase adjudication is off
            tb = TablebaseConfig(paths=tuple(resolved), max_pieces=a.Tablebases.MaxPieces,
                                 ignore50=a.Tablebases.Ignore50)
    return AdjudicationConfig(tcec_draw=draw, tcec_win=win, tablebases=tb, max_moves=a.MaxMoves)


def _interruption(keys: Any, top: dict[str, Any]) -> InterruptionConfig:
    i = keys.Interruption
    if i is None:
        return InterruptionConfig()
    written = top["Interruption"].get("CompensationS")
    return InterruptionConfig(
        mode=i.Mode, adjudicate=i.Adjudicate, win_score_cp=i.WinScoreCp,
        draw_score_cp=i.DrawScoreCp, draw_moves=i.DrawMoves, tablebase_pieces=i.TablebasePieces,
        compensation_s=_as_written(i.CompensationS, written))


def _fit_or_number(c: Any, r: Any, given: set[str], name: str, ok: Any, expected: str,
                   default: float | None) -> float | None:
    """None for 'fit' (or null); else a finite number ``ok`` accepts."""
    if name not in given:
        return default
    value = getattr(r, name)
    if value is None or value == "fit":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            value == value and ok(value)):
        c.bad(f"Ratings.{name}", value, f"'fit' or {expected}")
        return default
    return value


def _ratings(c: Any, keys: Any, given: set[str],
             engines: tuple[EngineConfig, ...]) -> RatingsConfig:
    r = keys.Ratings
    if r is None:
        return RatingsConfig()
    names = [e.name for e in engines]
    if r.Anchor is not None and names and r.Anchor not in names:
        hint = difflib.get_close_matches(str(r.Anchor), names, n=1)
        c.bad("Ratings.Anchor", r.Anchor, "the name of an engine in Engines"
              + (f" (did you mean {hint[0]!r}?)" if hint else ""))
    if "Average" in given and "Anchor" in given:
        c.problem("Ratings.Average", "use either Anchor (with Elo: its rating) or Average (the "
                  "pool average's rating), not both")
    if "Elo" in given and "Anchor" not in given:
        c.problem("Ratings.Elo", "Elo is the anchor's rating: set Anchor too, or use Average: "
                  "<rating> for the pool average")
    return RatingsConfig(
        anchor=r.Anchor, elo=float(r.Elo if "Anchor" in given else r.Average),
        white_advantage=_fit_or_number(
            c, r, given, "WhiteAdvantage", lambda v: abs(v) < MAX_WHITE_ADVANTAGE,
            "a fixed advantage in Elo (-1000..1000)", 0.0),
        draw_rate=_fit_or_number(c, r, given, "DrawRate", lambda v: 0 <= v < 100,
                                 "a fixed draw rate between equal engines, percent 0..100", None),
        simulations=r.Simulations, seed=r.Seed, confidence=float(r.Confidence))


def _host_and_port(address: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address)
        return bool(parts.hostname) and parts.port is not None and 0 < parts.port < 65536
    except ValueError:  # 'Port out of range', a bad IPv6 literal
        return False


def _cluster(c: Any, keys: Any) -> ClusterConfig | None:
    k = keys.Cluster
    if k is None:
        return None
    address = k.Scheduler
    if not address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        c.bad("Cluster.Scheduler", address, "a scheduler address such as tcp://HOST:8786")
    elif address.startswith(("tcp://", "tls://")) and not _host_and_port(address):
        c.bad("Cluster.Scheduler", address, "a scheduler address such as tcp://HOST:8786 (a "
              "host and a port from 1 to 65535)")
    lease_s = None if k.LeaseS is None else float(k.LeaseS)
    if lease_s is not None and lease_s >= k.OverdueS:
        c.bad("Cluster.LeaseS", k.LeaseS, f"seconds below Cluster.OverdueS ({k.OverdueS:g}): "
              "a cut-off worker must stop its game before the runner continues it elsewhere")
    return ClusterConfig(scheduler=address, wait_s=float(k.WaitS), overdue_s=float(k.OverdueS),
                         lease_s=lease_s, retry_refused_s=float(k.RetryRefusedS),
                         max_lost_attempts=k.MaxLostAttempts, insecure=k.Insecure)


def _http_url(value: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        return (parts.scheme in ("http", "https") and bool(parts.hostname)
                and (parts.port is None or 0 < parts.port < 65536)
                and not any(ch.isspace() for ch in value))
    except ValueError:  # a bad port or IPv6 literal
        return False


def _alerts(c: Any, keys: Any, given: set[str]) -> AlertsConfig | None:
    """The Alerts block (docs/alerts.md); None without one."""
    a = keys.Alerts
    if a is None:
        return None
    k = "Alerts"
    command: tuple[str, ...] | None = None
    value = a.Command
    if isinstance(value, str) and value.strip() and "\0" not in value:
        try:
            command = tuple(shlex.split(value))
        except ValueError as exc:  # an unclosed quote
            c.bad(f"{k}.Command", value, f"a command line the shell could read ({exc})")
    elif (isinstance(value, list) and value
          and all(isinstance(w, str) and w and "\0" not in w for w in value)):
        command = tuple(value)
    elif value is not None:
        c.bad(f"{k}.Command", value, "a command: a list of strings (the program first) or one "
              "string, split as a shell would")
    if command is not None and not command:
        c.bad(f"{k}.Command", value, "a command with a program")
        command = None
    url = a.Url
    if url is not None and not _http_url(url):
        c.bad(f"{k}.Url", url, "an http:// or https:// URL with a host, such as "
              "https://example.org/hook")
        url = None
    if not given & {"Command", "Url"}:
        c.problem(k, "expected Command (run with the JSON on its stdin) or Url (the JSON "
                     "POSTed to it), or both")
    kinds: tuple[str, ...] = ALERT_KINDS
    if a.On != "all":
        if not isinstance(a.On, list) or not a.On:
            c.bad(f"{k}.On", a.On, "all, or a list of: " + ", ".join(ALERT_KINDS))
        else:
            for i, kind in enumerate(a.On):
                if kind not in ALERT_KINDS:
                    hint = difflib.get_close_matches(str(kind), ALERT_KINDS, n=1)
                    c.bad(f"{k}.On[{i}]", kind, " | ".join(ALERT_KINDS)
                          + (f" (did you mean {hint[0]!r}?)" if hint else ""))
            kinds = tuple(kind for kind in ALERT_KINDS if kind in a.On)
    return AlertsConfig(command=command, url=url, timeout_s=float(a.TimeoutS),
                        retries=a.Retries, queue_size=a.QueueSize, disk_free_mb=a.DiskFreeMb,
                        on=kinds)


def build_config(c: Any, path: Path, raw: dict[str, Any], top: dict[str, Any], keys: Any,
                 index: list[int], written: Any, writes: bool,
                 detect_gpus: DetectGpus | None = None) -> Config:
    """The typed config of the validated ``keys`` (``index``: each engine's place in the
    file; ``detect_gpus``: this machine's GPUs, for ``Gpus: auto``); problems go to ``c``."""
    base = path.resolve().parent
    swiss = _swiss(c, keys, base)
    tc = TimeControl(base=None)
    if "TimeControl" in top and not c.reported("TimeControl"):
        try:
            tc = parse_time_control(top["TimeControl"])
        except ValueError as exc:
            c.bad("TimeControl", top["TimeControl"], str(exc))
    engines = _engines(c, keys, index, base, top["Engines"] if index else [])
    tiebreaks = list(keys.Tiebreaks)
    chain = top.get("Tiebreaks") if isinstance(top.get("Tiebreaks"), list) else tiebreaks
    for i, tb in enumerate(chain):  # as written: a list with a bad name was dropped
        if tb in chain[:i] and not c.reported(f"Tiebreaks[{i}]"):
            c.bad(f"Tiebreaks[{i}]", tb, f"each tiebreak once (also Tiebreaks[{chain.index(tb)}])")
    state_dir = swiss.state_path.parent
    pgn_out = (_output_path(c, "PgnOut", keys.PgnOut or str(state_dir / "games.pgn"), base)
               or state_dir / "games.pgn")
    default_db = swiss.state_path.with_suffix(".sqlite3")
    database = (_output_path(c, "Database", keys.Database or str(default_db), base)
                or default_db)
    cutechess = keys.CutechessPath
    if path_problem(cutechess):
        _file_path(c, "CutechessPath", cutechess, base)  # reports it
        cutechess = "cutechess-cli"
    elif os.sep in cutechess:
        cutechess = str(resolve_path(base, cutechess))
    config = Config(
        path=path, variant=keys.Variant, event=_name(c, "Event", keys.Event),
        site=_name(c, "Site", keys.Site), swiss=swiss, time_control=tc,
        time_margin_ms=keys.TimeMarginMs, concurrency=keys.Concurrency,
        interruption=_interruption(keys, top), snapshot_interval_s=float(keys.SnapshotIntervalS),
        backend=keys.Backend, cutechess_path=cutechess, pgn_out=pgn_out, database=database,
        openings=_openings(c, keys, top, base, swiss), adjudication=_adjudication(c, keys, base),
        engines=engines, tiebreaks=tuple(tiebreaks), raw=raw,
        ratings=_ratings(c, keys, _given(top, "Ratings"), engines), cluster=_cluster(c, keys),
        alerts=_alerts(c, keys, _given(top, "Alerts")))
    config = apply_operations(c, top, keys, index, config, base, written)
    config = apply_gpus(c, top, keys, index, config, detect_gpus)  # GPU hook: Gpus, engines' Gpus (docs/gpus.md)
    check_distinct_outputs(c, config)
    if writes and not c.problems:
        check_writable_outputs(c, config)
    return config
