"""YAML tournament configuration: loading, validation with precise messages, typed result.

Keys are PascalCase so a TCEC/Encroissant ``SwissOptions`` block can be pasted in verbatim.
Relative paths in the file (books, state, PGN, tablebases, engine commands containing a
``/``) are resolved against the directory of the config file, so the same command works
from any working directory.
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from runner.config.schema import (
    DEFAULT_TIEBREAKS,
    ENGINE_SEARCH_DIRS,
    TIEBREAKS,
    AdjudicationConfig,
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
from runner.domain.timecontrol import TimeControl, parse_time_control
from runner.errors import ConfigError

# --------------------------------------------------------------------------- YAML + lines


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that records the line of every key path and rejects duplicate keys."""


def _compose_lines(node: yaml.Node, path: str, lines: dict[str, int], dups: list[str]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = str(key_node.value)
            child = f"{path}.{key}" if path else key
            if key in seen:
                dups.append(f"{child} (line {key_node.start_mark.line + 1})")
            seen.add(key)
            _compose_lines(value_node, child, lines, dups)
            lines[child] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _compose_lines(item, f"{path}[{i}]", lines, dups)


def _load_yaml(path: Path) -> tuple[Any, dict[str, int], list[str]]:
    text = path.read_text(encoding="utf-8")
    node = yaml.compose(text, Loader=_UniqueKeyLoader)
    lines: dict[str, int] = {}
    dups: list[str] = []
    if node is not None:
        _compose_lines(node, "", lines, dups)
    return yaml.load(text, Loader=_UniqueKeyLoader), lines, dups


# --------------------------------------------------------------------------- validation


class _Checker:
    """Collects problems; each names file, key path (and line), bad value and expectation."""

    def __init__(self, path: Path, lines: dict[str, int]):
        self.path = path
        self.lines = lines
        self.problems: list[str] = []

    def problem(self, key: str, message: str) -> None:
        line = self.lines.get(key)
        where = f"{self.path}:{line}" if line else str(self.path)
        self.problems.append(f"{where}: {key}: {message}")

    def bad(self, key: str, value: Any, expected: str) -> None:
        self.problem(key, f"got {value!r}, expected {expected}")

    def mapping(self, key: str, value: Any, allowed: dict[str, bool]) -> dict[str, Any]:
        """Check ``value`` is a mapping with only ``allowed`` keys (True = required)."""
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.bad(key, value, "a mapping of keys")
            return {}
        names = list(allowed)
        for k in value:
            if str(k) not in allowed:
                child = f"{key}.{k}" if key else str(k)
                hint = difflib.get_close_matches(str(k), names, n=1, cutoff=0.6)
                if not hint:
                    lowered = {n.lower(): n for n in names}
                    hint = [lowered[str(k).lower()]] if str(k).lower() in lowered else []
                suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
                self.problem(child, f"unknown key{suggestion} (allowed: {', '.join(names)})")
        for k, required in allowed.items():
            if required and k not in value:
                self.problem(f"{key}.{k}" if key else k, "missing required key")
        return value

    def get(
        self,
        data: dict[str, Any],
        prefix: str,
        name: str,
        kind: str,
        default: Any = None,
        check: Callable[[Any], bool] | None = None,
        expected: str = "",
    ) -> Any:
        """Fetch ``data[name]`` and check its type (int, float, bool, str, list) and rule."""
        key = f"{prefix}.{name}" if prefix else name
        if name not in data or (data[name] is None and default is None):
            return default
        value = data[name]
        ok_type = {
            "int": isinstance(value, int) and not isinstance(value, bool),
            "float": isinstance(value, (int, float)) and not isinstance(value, bool),
            "bool": isinstance(value, bool),
            "str": isinstance(value, str) and value.strip() != "",
            "list": isinstance(value, list),
        }[kind]
        if not ok_type or (check is not None and not check(value)):
            what = expected or {"int": "an integer", "float": "a number", "bool": "true or false",
                                "str": "a non-empty string", "list": "a list"}[kind]
            self.bad(key, value, what)
            return default
        return value

    def choice(self, data: dict, prefix: str, name: str, choices: tuple[str, ...], default: str) -> str:
        return self.get(data, prefix, name, "str", default, lambda v: v in choices,
                        " | ".join(choices))


def _resolve_path(base: Path, value: str | os.PathLike[str]) -> Path:
    p = Path(os.path.expanduser(str(value)))
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def resolve_command(command: str, base: Path) -> str | None:
    """Absolute path of an engine executable: a path (relative to ``base``) or a PATH name."""
    if os.sep in command:
        p = _resolve_path(base, command)
        return str(p) if p.is_file() and os.access(p, os.X_OK) else None
    found = shutil.which(command)
    if found:
        return found
    extra = os.pathsep.join(ENGINE_SEARCH_DIRS)
    return shutil.which(command, path=extra)


_TOP = {
    "Event": False, "Site": False, "SwissOptions": True, "TimeControl": True,
    "TimeMarginMs": False, "Concurrency": False, "Backend": False, "CutechessPath": False,
    "PgnOut": False, "Database": False, "Openings": False, "Adjudication": False,
    "Engines": True, "Tiebreaks": False, "SnapshotIntervalS": False, "Interruption": False,
    "Ratings": False, "Cluster": False,
}
_CLUSTER = {"Scheduler": True, "WaitS": False, "OverdueS": False}
_RATINGS = {
    "Anchor": False, "Average": False, "Elo": False, "WhiteAdvantage": False, "DrawRate": False,
    "Simulations": False, "Seed": False, "Confidence": False,
}
_INTERRUPTION = {"Mode": False, "Adjudicate": False, "WinScoreCp": False, "DrawScoreCp": False,
                 "DrawMoves": False, "TablebasePieces": False, "CompensationS": False}
_SWISS = {
    "GamesPerMatch": False, "Rounds": False, "SeedGroupCount": False, "Seeding": False,
    "RandomSeed": False, "DoubleRoundSchedule": False, "UniquePerMatchOnly": False,
    "RandomOpenings": False, "AllowExtraPairsOnTie": False, "MaxExtraPairs": False,
    "StatePath": False,
}
_ENGINE = {
    "Name": True, "Command": True, "Args": False, "Protocol": False, "Rating": False,
    "Options": False, "Nodes": False, "Depth": False, "MoveTime": False, "WorkingDir": False,
}
_OPENINGS = {"File": True, "Format": False, "Plies": False, "Order": False}
_ADJ = {"TcecDraw": False, "TcecWin": False, "Tablebases": False, "MaxMoves": False}
_BOOK_SUFFIX = {".pgn": "pgn", ".epd": "epd", ".bin": "polyglot"}


def _positive(v: Any) -> bool:
    return v > 0


def _non_negative(v: Any) -> bool:
    return v >= 0


def _engines(c: _Checker, raw: Any, base: Path) -> tuple[EngineConfig, ...]:
    if not isinstance(raw, list):
        if raw is not None:
            c.bad("Engines", raw, "a list of engines (Name, Command, ...)")
        return ()
    engines: list[EngineConfig] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        key = f"Engines[{i}]"
        data = c.mapping(key, item, _ENGINE)
        if not data:
            continue
        name = c.get(data, key, "Name", "str")
        if isinstance(name, str):
            name = name.strip()
            if name in seen:
                c.problem(f"{key}.Name", f"duplicate engine name {name!r} (also Engines[{seen[name]}])")
            seen.setdefault(name, i)
        command_raw = c.get(data, key, "Command", "str")
        command = None
        if isinstance(command_raw, str):
            command = resolve_command(command_raw, base)
            if command is None:
                where = "relative to the config file" if os.sep in command_raw else (
                    "on PATH or in " + ", ".join(ENGINE_SEARCH_DIRS))
                c.bad(f"{key}.Command", command_raw, f"an executable engine ({where}); not found or not executable")
        args = c.get(data, key, "Args", "list", [])
        if any(not isinstance(a, (str, int, float)) or isinstance(a, bool) for a in args):
            c.bad(f"{key}.Args", args, "a list of strings")
            args = []
        protocol = c.choice(data, key, "Protocol", ("uci", "xboard"), "uci")
        rating = c.get(data, key, "Rating", "float")
        options = data.get("Options") or {}
        if not isinstance(options, dict):
            c.bad(f"{key}.Options", options, "a mapping of engine option names to values")
            options = {}
        for oname, ovalue in options.items():
            if not isinstance(ovalue, (str, int, float, bool)) and ovalue is not None:
                c.bad(f"{key}.Options.{oname}", ovalue, "a string, number or true/false")
        nodes = c.get(data, key, "Nodes", "int", None, _positive, "a positive integer (nodes per move)")
        depth = c.get(data, key, "Depth", "int", None, _positive, "a positive integer (plies per move)")
        movetime = c.get(data, key, "MoveTime", "int", None, _positive, "a positive integer (ms per move)")
        wd = c.get(data, key, "WorkingDir", "str")
        working_dir = None
        if wd is not None:
            working_dir = str(_resolve_path(base, wd))
            if not Path(working_dir).is_dir():
                c.bad(f"{key}.WorkingDir", wd, "an existing directory")
        if isinstance(name, str) and command:
            engines.append(EngineConfig(
                name=name, command=command, args=tuple(str(a) for a in args), protocol=protocol,
                rating=rating, options={str(k): v for k, v in options.items()}, nodes=nodes,
                depth=depth, movetime_ms=movetime, working_dir=working_dir,
                command_as_written=command_raw,
            ))
    if len(raw) < 2:
        c.bad("Engines", f"{len(raw)} engine(s)", "at least 2 engines")
    return tuple(engines)


def _swiss(c: _Checker, raw: Any, base: Path) -> SwissOptions:
    d = c.mapping("SwissOptions", raw, _SWISS)
    p = "SwissOptions"
    gpm = c.get(d, p, "GamesPerMatch", "int", 2, lambda v: v in (1, 2),
                "1 (single rounds) or 2 (double rounds, colours reversed)")
    rounds = c.get(d, p, "Rounds", "int", 11, lambda v: v >= 1, "an integer >= 1")
    groups = c.get(d, p, "SeedGroupCount", "int", 1, lambda v: v >= 1, "an integer >= 1")
    seeding = c.choice(d, p, "Seeding", ("groups", "random", "listed"), "groups")
    seed = c.get(d, p, "RandomSeed", "int", 0, _non_negative, "a non-negative integer")
    schedule = c.choice(d, p, "DoubleRoundSchedule", ("split", "consecutive"), "split")
    unique = c.get(d, p, "UniquePerMatchOnly", "bool", True)
    random_openings = c.get(d, p, "RandomOpenings", "bool", True)
    extra = c.get(d, p, "AllowExtraPairsOnTie", "bool", False)
    max_extra = c.get(d, p, "MaxExtraPairs", "int", 10, _positive, "a positive integer")
    state = c.get(d, p, "StatePath", "str", "state/swiss_state.json")
    return SwissOptions(
        games_per_match=gpm, rounds=rounds, seed_group_count=groups, seeding=seeding,
        random_seed=seed, double_round_schedule=schedule, unique_per_match_only=unique,
        random_openings=random_openings, allow_extra_pairs_on_tie=extra,
        max_extra_pairs=max_extra, state_path=_resolve_path(base, state),
    )


def _openings(c: _Checker, raw: Any, base: Path, swiss: SwissOptions, swiss_raw: Any) -> OpeningsConfig | None:
    if raw is None:
        return None
    d = c.mapping("Openings", raw, _OPENINGS)
    file = c.get(d, "Openings", "File", "str")
    fmt = c.choice(d, "Openings", "Format", ("pgn", "epd", "polyglot"), "")
    plies = c.get(d, "Openings", "Plies", "int", 0, _non_negative, "a non-negative integer (0 = whole line)")
    order = c.choice(d, "Openings", "Order", ("sequential", "random"), "")
    explicit_random = isinstance(swiss_raw, dict) and "RandomOpenings" in swiss_raw
    if order and explicit_random and (order == "random") != swiss.random_openings:
        c.problem("Openings.Order", f"got {order!r}, but SwissOptions.RandomOpenings is "
                  f"{swiss.random_openings}; they mean the same thing: make them agree or drop one")
    order = order or ("random" if swiss.random_openings else "sequential")
    if file is None:
        return None
    path = _resolve_path(base, file)
    if not fmt:
        fmt = _BOOK_SUFFIX.get(path.suffix.lower(), "")
        if not fmt:
            c.bad("Openings.Format", None, f"pgn | epd | polyglot (cannot tell from the name {path.name!r})")
    if not path.is_file() or not os.access(path, os.R_OK):
        c.bad("Openings.File", file, f"a readable opening book file (looked at {path})")
    elif fmt == "polyglot" and plies == 0:
        c.bad("Openings.Plies", plies, "a positive number of plies for a polyglot book")
    return OpeningsConfig(file=path, format=fmt or "pgn", plies=plies, order=order)


def _adjudication(c: _Checker, raw: Any, base: Path) -> AdjudicationConfig:
    d = c.mapping("Adjudication", raw, _ADJ)
    p = "Adjudication"
    draw = win = tb = None
    if d.get("TcecDraw") is not None:
        k = f"{p}.TcecDraw"
        dd = c.mapping(k, d["TcecDraw"], {"MaxPawns": False, "MaxPieces": False, "ScoreCp": False, "Plies": False})
        draw = TcecDrawRule(
            max_pawns=c.get(dd, k, "MaxPawns", "int", 8, _non_negative, "an integer 0..16"),
            max_pieces=c.get(dd, k, "MaxPieces", "int", 8, lambda v: v >= 2, "an integer >= 2 (kings count)"),
            score_cp=c.get(dd, k, "ScoreCp", "int", 20, _non_negative, "centipawns >= 0"),
            plies=c.get(dd, k, "Plies", "int", 10, _positive, "a positive number of plies"),
        )
    if d.get("TcecWin") is not None:
        k = f"{p}.TcecWin"
        dw = c.mapping(k, d["TcecWin"], {"ScoreCp": False, "Plies": False})
        win = TcecWinRule(
            score_cp=c.get(dw, k, "ScoreCp", "int", 1000, _positive, "positive centipawns"),
            plies=c.get(dw, k, "Plies", "int", 10, _positive, "a positive number of plies"),
        )
    if d.get("Tablebases") is not None:
        k = f"{p}.Tablebases"
        dt = c.mapping(k, d["Tablebases"], {"Paths": False, "MaxPieces": False, "Ignore50": False})
        paths = c.get(dt, k, "Paths", "list", [])
        resolved: list[Path] = []
        for i, entry in enumerate(paths):
            if not isinstance(entry, str):
                c.bad(f"{k}.Paths[{i}]", entry, "a directory path")
                continue
            path = _resolve_path(base, entry)
            if not path.is_dir():
                c.bad(f"{k}.Paths[{i}]", entry, f"an existing directory of Syzygy tables (looked at {path})")
            resolved.append(path)
        tb = TablebaseConfig(
            paths=tuple(resolved),
            max_pieces=c.get(dt, k, "MaxPieces", "int", 6, lambda v: 3 <= v <= 7, "an integer 3..7"),
            ignore50=c.get(dt, k, "Ignore50", "bool", False),
        )
        if not resolved:
            tb = None  # no tables: tablebase adjudication is off
    max_moves = c.get(d, p, "MaxMoves", "int", 0, _non_negative, "a non-negative integer (0 = off)")
    return AdjudicationConfig(tcec_draw=draw, tcec_win=win, tablebases=tb, max_moves=max_moves)


def _interruption(c: _Checker, raw: Any) -> InterruptionConfig:
    d = c.mapping("Interruption", raw, _INTERRUPTION)
    k = "Interruption"
    return InterruptionConfig(
        mode=c.choice(d, k, "Mode", ("resume", "replay"), "resume"),
        adjudicate=c.get(d, k, "Adjudicate", "bool", True),
        win_score_cp=c.get(d, k, "WinScoreCp", "int", 1000, lambda v: 1 <= v <= 100000,
                           "centipawns from 1 to 100000"),
        draw_score_cp=c.get(d, k, "DrawScoreCp", "int", 15, lambda v: 0 <= v <= 100000,
                            "centipawns from 0 to 100000"),
        draw_moves=c.get(d, k, "DrawMoves", "int", 35, lambda v: 0 <= v <= 10000,
                         "moves from 0 to 10000"),
        tablebase_pieces=c.get(d, k, "TablebasePieces", "int", 7, lambda v: 0 <= v <= 7,
                               "an integer 0..7 (0 = off)"),
        compensation_s=c.get(d, k, "CompensationS", "float", None,
                             lambda v: 0 <= v <= 86400 and v == v, "seconds from 0 to 86400"),
    )


def _fit_or_number(c: _Checker, d: dict[str, Any], key: str, name: str,
                   check: Callable[[Any], bool], expected: str) -> float | None:
    value = d.get(name, "fit")
    if value == "fit":
        return None
    return c.get(d, key, name, "float", None, check, f"'fit' or {expected}")


def _ratings(c: _Checker, raw: Any, engines: tuple[EngineConfig, ...]) -> RatingsConfig:
    k = "Ratings"
    d = c.mapping(k, raw, _RATINGS)
    anchor = c.get(d, k, "Anchor", "str", None)
    names = [e.name for e in engines]
    if anchor is not None and names and anchor not in names:
        hint = difflib.get_close_matches(str(anchor), names, n=1)
        c.bad(f"{k}.Anchor", anchor, "the name of an engine in Engines"
              + (f" (did you mean {hint[0]!r}?)" if hint else ""))
    if "Average" in d and "Anchor" in d:
        c.problem(f"{k}.Average", "use either Anchor (with Elo: its rating) or Average (the pool "
                                  "average's rating), not both")
    if "Elo" in d and "Anchor" not in d:
        c.problem(f"{k}.Elo", "Elo is the anchor's rating: set Anchor too, or use Average: "
                              "<rating> for the pool average")
    elo = c.get(d, k, "Elo" if "Anchor" in d else "Average", "float", 0.0)
    return RatingsConfig(
        anchor=anchor,
        elo=float(elo),
        white_advantage=_fit_or_number(c, d, k, "WhiteAdvantage", lambda v: abs(v) < 1000,
                                       "a fixed advantage in Elo (-1000..1000)"),
        draw_rate=_fit_or_number(c, d, k, "DrawRate", lambda v: 0 <= v < 100,
                                 "a fixed draw rate between equal engines, percent 0..100"),
        simulations=c.get(d, k, "Simulations", "int", 1000, _non_negative,
                          "a number of simulations >= 0 (0 = no error margins)"),
        seed=c.get(d, k, "Seed", "int", 0, _non_negative, "an integer >= 0"),
        confidence=float(c.get(d, k, "Confidence", "float", 95.0, lambda v: 0 < v < 100,
                               "a percentage between 0 and 100")),
    )


def _cutechess_path(value: str, base: Path) -> str:
    """A CutechessPath containing a '/' is relative to the config file; a bare name is looked up later."""
    return str(_resolve_path(base, value)) if os.sep in value else value


def _cluster(c: _Checker, raw: Any) -> ClusterConfig | None:
    if raw is None:
        return None
    d = c.mapping("Cluster", raw, _CLUSTER)
    address = str(c.get(d, "Cluster", "Scheduler", "str", "") or "")
    if address and not address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        c.bad("Cluster.Scheduler", address, "a scheduler address such as tcp://HOST:8786")
    wait = c.get(d, "Cluster", "WaitS", "float", 600.0, lambda v: 0 <= v <= 86400,
                 "seconds from 0 to 86400")
    overdue = c.get(d, "Cluster", "OverdueS", "float", 60.0, lambda v: 1 <= v <= 86400,
                    "seconds from 1 to 86400")
    return ClusterConfig(scheduler=address, wait_s=float(wait if wait is not None else 600.0),
                         overdue_s=float(overdue if overdue is not None else 60.0))


def load_config(path: str | os.PathLike[str]) -> Config:
    """Load and validate a config file; raise ConfigError listing every problem found."""
    path = Path(path)
    try:
        raw, lines, dups = _load_yaml(path)
    except FileNotFoundError:
        raise ConfigError([f"{path}: config file not found"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([f"{path}: cannot read config file: {exc}"]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise ConfigError([f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from None
    c = _Checker(path, lines)
    for dup in dups:
        c.problems.append(f"{path}: duplicate key {dup}: each key may appear once")
    if raw is None:
        c.problems.append(f"{path}: the config file is empty (no YAML content); expected a "
                          "mapping with SwissOptions, TimeControl, Engines, ...")
        raise ConfigError(c.problems)
    if not isinstance(raw, dict):
        c.bad("(top level)", raw, "a mapping with SwissOptions, TimeControl, Engines, ...")
        raise ConfigError(c.problems)
    base = path.resolve().parent
    top = c.mapping("", raw, _TOP)
    swiss = _swiss(c, top.get("SwissOptions"), base)
    tc = TimeControl(base=None)
    if "TimeControl" in top:
        try:
            tc = parse_time_control(top["TimeControl"])
        except ValueError as exc:
            c.bad("TimeControl", top["TimeControl"], str(exc))
    engines = _engines(c, top.get("Engines"), base)
    tiebreaks = c.get(top, "", "Tiebreaks", "list", list(DEFAULT_TIEBREAKS))
    for i, tb in enumerate(tiebreaks):
        if tb not in TIEBREAKS:
            hint = difflib.get_close_matches(str(tb), TIEBREAKS, n=1)
            c.bad(f"Tiebreaks[{i}]", tb, " | ".join(TIEBREAKS) + (f" (did you mean {hint[0]!r}?)" if hint else ""))
    state_dir = swiss.state_path.parent
    pgn_out = _resolve_path(base, c.get(top, "", "PgnOut", "str", str(state_dir / "games.pgn")))
    database = _resolve_path(base, c.get(top, "", "Database", "str", str(swiss.state_path.with_suffix(".sqlite3"))))
    config = Config(
        path=path,
        event=str(c.get(top, "", "Event", "str", "swiss-runner event")),
        site=str(c.get(top, "", "Site", "str", "?")),
        swiss=swiss,
        time_control=tc,
        time_margin_ms=c.get(top, "", "TimeMarginMs", "int", 0, _non_negative, "milliseconds >= 0"),
        concurrency=c.get(top, "", "Concurrency", "int", 1, _positive, "a positive integer"),
        interruption=_interruption(c, top.get("Interruption")),
        snapshot_interval_s=float(c.get(top, "", "SnapshotIntervalS", "float", 1.0,
                                        lambda v: 0.1 <= v <= 3600,
                                        "seconds from 0.1 to 3600") or 1.0),
        backend=c.choice(top, "", "Backend", ("python-chess", "cutechess"), "python-chess"),
        cutechess_path=_cutechess_path(c.get(top, "", "CutechessPath", "str", "cutechess-cli"), base),
        pgn_out=pgn_out,
        database=database,
        openings=_openings(c, top.get("Openings"), base, swiss, top.get("SwissOptions")),
        adjudication=_adjudication(c, top.get("Adjudication"), base),
        engines=engines,
        tiebreaks=tuple(tiebreaks),
        raw=raw,
        ratings=_ratings(c, top.get("Ratings"), engines),
        cluster=_cluster(c, top.get("Cluster")),
    )
    _check_distinct_outputs(c, config)
    if c.problems:
        raise ConfigError(c.problems)
    return config


def _check_distinct_outputs(c: _Checker, config: Config) -> None:
    """StatePath, Database (with its SQLite and lock side files), PgnOut and the book must be
    different files: the snapshot's rename would replace the database, the PGN would be
    appended to it or to the book, and the event's record would be lost."""
    db = config.database
    files: list[tuple[str, str, Path]] = [
        ("SwissOptions.StatePath", "the JSON snapshot", config.swiss.state_path),
        ("Database", "the state database", db),
        ("Database", "the state database's WAL journal", db.with_name(db.name + "-wal")),
        ("Database", "the state database's shared-memory file", db.with_name(db.name + "-shm")),
        ("Database", "the state database's rollback journal", db.with_name(db.name + "-journal")),
        ("Database", "the state database's lock file", db.with_name(db.name + ".lock")),
        ("PgnOut", "the PGN of the games", config.pgn_out),
    ]
    if config.openings is not None:
        files.append(("Openings.File", "the opening book", config.openings.file))
    seen: dict[str, tuple[str, str]] = {}
    for key, role, path in files:
        real = os.path.realpath(path)  # the same file through a symlink is the same file
        if real in seen and seen[real][0] != key:
            other_key, other_role = seen[real]
            default = " (Database defaults to StatePath with the suffix .sqlite3)" if (
                "Database" in (key, other_key) and "Database" not in config.raw) else ""
            c.problem(key, f"{path}: {role} would be the same file as {other_role} "
                      f"({other_key}){default}; StatePath, Database, PgnOut and Openings.File "
                      "must name different files, or one overwrites the other")
        seen.setdefault(real, (key, role))


def advice(config: Config) -> list[str]:
    """Warnings about legal settings the TCEC Swiss page advises against (never errors)."""
    notes: list[str] = []
    players, swiss = len(config.engines), config.swiss
    if swiss.rounds > players - 1:
        notes.append(f"SwissOptions.Rounds: {swiss.rounds} rounds with {players} engines: rematches "
                     "are certain (the earliest rounds are dropped from the encounter history)")
    elif swiss.rounds > max(1, players // 2):
        notes.append(f"SwissOptions.Rounds: {swiss.rounds} rounds with {players} engines is more than "
                     "players/2, which the TCEC Swiss page advises against (consider a round robin)")
    if swiss.games_per_match == 1 and swiss.rounds % 2 == 0:
        notes.append("SwissOptions.Rounds: an odd number of single rounds balances colours "
                     "(TCEC Swiss page); with an even number half the engines end with an extra White")
    if players % 2:
        notes.append(f"Engines: {players} engines (odd): one engine gets a BYE every round, "
                     "scored as a win for each game of the match")
    if swiss.seeding == "groups" and swiss.seed_group_count > 1 and swiss.seed_group_count % 2:
        notes.append(f"SwissOptions.SeedGroupCount: {swiss.seed_group_count}; the TCEC Swiss page "
                     "recommends an even number of groups")
    return notes
