"""YAML tournament configuration: loading, validation with precise messages, typed result.

Keys are PascalCase so a TCEC/Encroissant ``SwissOptions`` block can be pasted in verbatim.
Relative paths in the file (books, state, PGN, tablebases, engine commands containing a
``/``) are resolved against the directory of the config file, so the same command works
from any working directory.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import shutil
import stat
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from runner.config.paths import resolve_path
from runner.config.schema import (
    ALERT_KINDS,
    DEFAULT_TIEBREAKS,
    ENGINE_SEARCH_DIRS,
    TIEBREAKS,
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
from runner.domain.timecontrol import TimeControl, parse_time_control
from runner.domain.variant import POSITIONS, VARIANTS, is_960
from runner.errors import ConfigError

# --------------------------------------------------------------------------- YAML + lines


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that records the line of every key path and rejects duplicate keys.

    Composing is bounded: at most MAX_YAML_NODES nodes written in the file and
    MAX_YAML_DEPTH levels of nesting (aliases are expanded by :func:`_check_node_budget`).
    """

    _depth = 0
    _nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:  # type: ignore[override]
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise YamlLimit(f"nested more than {MAX_YAML_DEPTH} levels deep (line "
                                f"{self.peek_event().start_mark.line + 1})")
            if self._nodes > MAX_YAML_NODES:
                raise YamlLimit(f"more than {MAX_YAML_NODES} values; a config needs a few hundred")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


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


# A config is a few kilobytes; these bounds keep a hostile or mistaken file (a log, a binary,
# an alias bomb: a few hundred bytes naming millions of nodes) from hanging the loader.
MAX_CONFIG_BYTES = 256 * 1024
MAX_YAML_NODES = 10_000  # written or after expanding aliases (a 64-engine config has ~1500)
MAX_YAML_DEPTH = 40


class YamlLimit(Exception):
    """The YAML document is too big, too deep or recursive (message says which)."""


def _check_node_budget(root: yaml.Node) -> None:
    """Count the nodes of the document as a reader would see them (every alias expanded);
    refuse recursive aliases, nesting deeper than MAX_YAML_DEPTH and more than
    MAX_YAML_NODES nodes. Stops at the first excess, so an alias bomb costs microseconds."""
    count = 0
    on_path: set[int] = set()

    def visit(node: yaml.Node, depth: int) -> None:
        nonlocal count
        count += 1
        if count > MAX_YAML_NODES:
            raise YamlLimit(f"more than {MAX_YAML_NODES} values once aliases are expanded "
                            "(an alias bomb?); a config needs a few hundred")
        if depth > MAX_YAML_DEPTH:
            raise YamlLimit(f"nested more than {MAX_YAML_DEPTH} levels deep (line "
                            f"{node.start_mark.line + 1})")
        if isinstance(node, yaml.ScalarNode):
            return
        if id(node) in on_path:
            raise YamlLimit(f"a recursive alias (line {node.start_mark.line + 1}): a value "
                            "that contains itself")
        on_path.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                visit(key_node, depth + 1)
                visit(value_node, depth + 1)
        else:
            for item in node.value:
                visit(item, depth + 1)
        on_path.discard(id(node))

    visit(root, 0)


def _read_config_text(path: Path) -> str:
    """The config's text; OSError/ValueError/YamlLimit explain why it cannot be read."""
    # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused right after
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise YamlLimit("not a regular file (a directory, device or pipe); expected a "
                            "YAML config file")
        os.set_blocking(fd, True)
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise YamlLimit(f"larger than {MAX_CONFIG_BYTES // 1024} KiB; is this really a config "
                        "file?")
    if b"\0" in data:
        line = data[: data.index(b"\0")].count(b"\n") + 1
        raise YamlLimit(f"line {line}: a NUL byte; a config is YAML text (is this a binary "
                        "file?)")
    return data.decode("utf-8")


def _load_yaml(path: Path) -> tuple[Any, dict[str, int], list[str]]:
    text = _read_config_text(path)
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[str, int] = {}
        dups: list[str] = []
        if node is None:
            return None, lines, dups
        _check_node_budget(node)
        _compose_lines(node, "", lines, dups)
        return loader.construct_document(node), lines, dups
    finally:
        loader.dispose()


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
        shown = repr(value[:120]) + "..." if isinstance(value, str) and len(value) > 120 else repr(value)
        if len(shown) > 200:  # a huge list or mapping
            shown = shown[:200] + "..."
        self.problem(key, f"got {shown}, expected {expected}")

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
            "float": isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value),
            "bool": isinstance(value, bool),
            "str": isinstance(value, str) and value.strip() != "" and "\0" not in value,
            "list": isinstance(value, list),
        }[kind]
        if not ok_type or (check is not None and not check(value)):
            what = expected or {"int": "an integer", "float": "a finite number",
                                "bool": "true or false", "str": "a non-empty string",
                                "list": "a list"}[kind]
            if kind == "str" and isinstance(value, str) and "\0" in value:
                what += " without NUL characters"
            self.bad(key, value, what)
            return default
        return value

    def number(self, data: dict[str, Any], prefix: str, name: str, kind: str, default: Any,
               lo: float, hi: float, what: str = "") -> Any:
        """An int or float from ``lo`` to ``hi`` (inclusive); ``what`` names the unit."""
        unit = f" ({what})" if what else ""
        if kind == "int" and lo == 1:
            expected = f"a positive integer{unit}, at most {hi:_}"
        else:
            expected = f"{'an integer' if kind == 'int' else 'a finite number'} from {lo:_} to {hi:_}{unit}"
        return self.get(data, prefix, name, kind, default, lambda v: lo <= v <= hi, expected)

    def name(self, data: dict[str, Any], prefix: str, key: str, default: Any = None) -> Any:
        """A display name (Event, Site, engine Name): one line of printable text."""
        value = self.get(data, prefix, key, "str", default)
        if isinstance(value, str) and value is not default:
            problem = name_problem(value)
            if problem:
                self.bad(f"{prefix}.{key}" if prefix else key, value, problem)
                return default
        return value

    def file_path(self, key: str, value: Any, base: Path) -> Path | None:
        """``value`` resolved against ``base``; None after reporting a path no system takes."""
        problem = path_problem(value)
        if problem:
            self.bad(key, value, problem)
            return None
        return resolve_path(base, value)

    def choice(self, data: dict, prefix: str, name: str, choices: tuple[str, ...], default: str) -> str:
        return self.get(data, prefix, name, "str", default, lambda v: v in choices,
                        " | ".join(choices))


MAX_NAME_CHARS = 200  # Event, Site, engine names: a PGN tag, a table column, a seeds line
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
MAX_PATH_PART_CHARS = 255  # NAME_MAX


def _shown(value: str, limit: int = 120) -> str:
    """``value`` as safe to print in a message: control characters escaped, cut short."""
    text = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii")
                   for ch in value[: limit + 1])
    return text if len(value) <= limit else text[:limit] + "..."


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name written into PGN tags and printed tables, or None."""
    bad = sorted({ch for ch in value if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")})
    if bad:
        shown = ", ".join(repr(ch)[1:-1] for ch in bad[:5])
        return (f"one line of printable text (it contains the control or formatting "
                f"character(s) {shown}: newlines, tabs and escape sequences would break the "
                "PGN, the tables and the terminal)")
    if len(value) > MAX_NAME_CHARS:
        return f"at most {MAX_NAME_CHARS} characters (got {len(value)})"
    return None


def path_problem(value: Any) -> str | None:
    """Why ``value`` cannot be a file name on this system, or None."""
    if not isinstance(value, str):
        return None
    if "\0" in value:
        return "a path without NUL characters"
    if len(value) > MAX_PATH_CHARS:
        return f"a path of at most {MAX_PATH_CHARS} characters (got {len(value)})"
    longest = max((len(part.encode("utf-8", "surrogateescape")) for part in value.split(os.sep)),
                  default=0)
    if longest > MAX_PATH_PART_CHARS:
        return (f"a path whose every part is at most {MAX_PATH_PART_CHARS} bytes (one part "
                f"has {longest})")
    return None


def resolve_command(command: str, base: Path) -> str | None:
    """Absolute path of an engine executable: a path (relative to ``base``) or a PATH name."""
    if os.sep in command:
        p = resolve_path(base, command)
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
    "Engines": False, "Tiebreaks": False, "SnapshotIntervalS": False, "Interruption": False,
    # operator keys, read by runner.config.operations (Engines or EnginesFile is required)
    "Affinity": False, "EngineLogs": False, "StartupTimeoutS": False, "PgnComments": False,
    "PgnExtras": False, "EpdOut": False, "EnginesFile": False, "LivePgn": False,
    "Ponder": False, "Restart": False,
    "Ratings": False, "Cluster": False, "Variant": False, "Alerts": False,
}
_ALERTS = {"Command": False, "Url": False, "TimeoutS": False, "Retries": False,
           "QueueSize": False, "DiskFreeMb": False, "On": False}
_CLUSTER = {"Scheduler": True, "WaitS": False, "OverdueS": False, "RetryRefusedS": False,
            "MaxLostAttempts": False, "Insecure": False}
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
    "StartupTimeoutS": False, "Ponder": False, "Restart": False,
}
_OPENINGS = {"File": False, "Format": False, "Plies": False, "Order": False, "Positions": False}
_ADJ = {"TcecDraw": False, "TcecWin": False, "Tablebases": False, "MaxMoves": False}
_BOOK_SUFFIX = {".pgn": "pgn", ".epd": "epd", ".bin": "polyglot"}


# Upper bounds: a value beyond these is a typo, not an event (Rounds 10**9 would announce
# "game 1 of 4000000000" and play on for ever).
MAX_ENGINES = 1000
MAX_ROUNDS = 1000
MAX_EXTRA_PAIRS = 100
MAX_SEED = 2**63 - 1
MAX_RATING = 10_000
MAX_NODES = 10**12
MAX_DEPTH = 1000
MAX_MOVETIME_MS = 24 * 3600 * 1000
MAX_PLIES = 10_000
MAX_CP = 100_000
MAX_MARGIN_MS = 3_600_000
MAX_CONCURRENCY = 256
# Ratings (the config's block and the `ratings` command's options share them)
MAX_SIMULATIONS = 100_000
MAX_WHITE_ADVANTAGE = 1000  # Elo, exclusive


def _plain_word(value: Any) -> bool:
    """A command-line argument or engine option: one line of text, or a finite number."""
    if isinstance(value, bool):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, int):
        return abs(value) < 10**18
    if isinstance(value, str):
        return all(ch == " " or ch.isprintable() for ch in value) and len(value) <= MAX_PATH_CHARS
    return False


def stat_is_special(path: Path) -> bool:
    """True when ``path`` exists and is not a regular file (a FIFO, device, socket)."""
    try:
        return not stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


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
        name = c.name(data, key, "Name")
        if isinstance(name, str):
            name = name.strip()
            if name in seen:
                c.problem(f"{key}.Name", f"duplicate engine name {name!r} (also Engines[{seen[name]}])")
            seen.setdefault(name, i)
        command_raw = c.get(data, key, "Command", "str")
        command = None
        if isinstance(command_raw, str) and path_problem(command_raw):
            c.bad(f"{key}.Command", command_raw, path_problem(command_raw) or "")
        elif isinstance(command_raw, str):
            command = resolve_command(command_raw, base)
            if command is None:
                where = "relative to the config file" if os.sep in command_raw else (
                    "on PATH or in " + ", ".join(ENGINE_SEARCH_DIRS))
                c.bad(f"{key}.Command", command_raw, f"an executable engine ({where}); not found or not executable")
        args = c.get(data, key, "Args", "list", [])
        if any(not _plain_word(a) for a in args):
            c.bad(f"{key}.Args", args, "a list of strings (finite numbers allowed), each one line "
                  "without control characters")
            args = []
        protocol = c.choice(data, key, "Protocol", ("uci", "xboard"), "uci")
        rating = c.number(data, key, "Rating", "float", None, -MAX_RATING, MAX_RATING, "Elo")
        options = data.get("Options")
        if options is None:
            options = {}
        elif not isinstance(options, dict):  # 0, false, '' and [] too: not "no options"
            c.bad(f"{key}.Options", options, "a mapping of engine option names to values")
            options = {}
        for oname, ovalue in list(options.items()):
            if not _plain_word(oname) or isinstance(oname, bool) or not str(oname).strip():
                c.bad(f"{key}.Options", str(oname), "option names that are one line of "
                      "text (a newline would send the engine a command of its own)")
                options.pop(oname)
            elif (not isinstance(ovalue, (str, int, float, bool)) and ovalue is not None) or (
                    not isinstance(ovalue, bool) and ovalue is not None and not _plain_word(ovalue)):
                c.bad(f"{key}.Options.{oname}", ovalue,
                      "a string (one line, no control characters), a finite number or true/false")
                options.pop(oname)
        nodes = c.number(data, key, "Nodes", "int", None, 1, MAX_NODES, "nodes per move")
        depth = c.number(data, key, "Depth", "int", None, 1, MAX_DEPTH, "plies per move")
        movetime = c.number(data, key, "MoveTime", "int", None, 1, MAX_MOVETIME_MS, "ms per move")
        wd = c.get(data, key, "WorkingDir", "str")
        working_dir = None
        if wd is not None:
            resolved_wd = c.file_path(f"{key}.WorkingDir", wd, base)
            if resolved_wd is not None:
                working_dir = str(resolved_wd)
                if not resolved_wd.is_dir():
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
    elif len(raw) > MAX_ENGINES:
        c.bad("Engines", f"{len(raw)} engines", f"at most {MAX_ENGINES} engines")
    return tuple(engines)


def _swiss(c: _Checker, raw: Any, base: Path) -> SwissOptions:
    d = c.mapping("SwissOptions", raw, _SWISS)
    p = "SwissOptions"
    gpm = c.get(d, p, "GamesPerMatch", "int", 2, lambda v: v in (1, 2),
                "1 (single rounds) or 2 (double rounds, colours reversed)")
    rounds = c.get(d, p, "Rounds", "int", 11, lambda v: 1 <= v <= MAX_ROUNDS,
                   f"an integer >= 1 (at most {MAX_ROUNDS})")
    groups = c.get(d, p, "SeedGroupCount", "int", 1, lambda v: 1 <= v <= MAX_ENGINES,
                   f"an integer >= 1 (at most {MAX_ENGINES})")
    seeding = c.choice(d, p, "Seeding", ("groups", "random", "listed"), "groups")
    seed = c.get(d, p, "RandomSeed", "int", 0, lambda v: 0 <= v <= MAX_SEED,
                 "a non-negative integer (at most 2**63 - 1)")
    schedule = c.choice(d, p, "DoubleRoundSchedule", ("split", "consecutive"), "split")
    unique = c.get(d, p, "UniquePerMatchOnly", "bool", True)
    random_openings = c.get(d, p, "RandomOpenings", "bool", True)
    extra = c.get(d, p, "AllowExtraPairsOnTie", "bool", False)
    max_extra = c.get(d, p, "MaxExtraPairs", "int", 10, lambda v: 1 <= v <= MAX_EXTRA_PAIRS,
                      f"a positive integer (at most {MAX_EXTRA_PAIRS})")
    state = c.get(d, p, "StatePath", "str", "state/swiss_state.json")
    state_path = (_output_path(c, f"{p}.StatePath", state, base)
                  or resolve_path(base, "state/swiss_state.json"))
    return SwissOptions(
        games_per_match=gpm, rounds=rounds, seed_group_count=groups, seeding=seeding,
        random_seed=seed, double_round_schedule=schedule, unique_per_match_only=unique,
        random_openings=random_openings, allow_extra_pairs_on_tie=extra,
        max_extra_pairs=max_extra, state_path=state_path,
    )


def _openings(c: _Checker, raw: Any, base: Path, swiss: SwissOptions, swiss_raw: Any,
              variant: str = "standard") -> OpeningsConfig | None:
    if raw is None:
        if is_960(variant):  # a 960 event without an Openings block: random numbered starts
            order = "random" if swiss.random_openings else "sequential"
            return OpeningsConfig(file=None, format="positions", order=order, variant=variant)
        return None
    d = c.mapping("Openings", raw, _OPENINGS)
    if "Positions" in d:
        return _positions(c, d, swiss, swiss_raw, variant)
    if "File" not in d:
        c.problem("Openings.File", "missing required key (or Positions, for a Chess960 event)")
    file = c.get(d, "Openings", "File", "str")
    fmt = c.choice(d, "Openings", "Format", ("pgn", "epd", "polyglot"), "")
    plies = c.get(d, "Openings", "Plies", "int", 0, lambda v: 0 <= v <= MAX_PLIES,
                  f"a non-negative integer (0 = whole line; at most {MAX_PLIES})")
    order = _order(c, d, swiss, swiss_raw)
    if file is None:
        return None
    resolved = c.file_path("Openings.File", file, base)
    if resolved is None:
        return None
    path = resolved
    if not fmt:
        fmt = _BOOK_SUFFIX.get(path.suffix.lower(), "")
        if not fmt:
            c.bad("Openings.Format", None, f"pgn | epd | polyglot (cannot tell from the name {path.name!r})")
    if not path.is_file() or not os.access(path, os.R_OK) or stat_is_special(path):
        c.bad("Openings.File", file, f"a readable opening book file (looked at {path})")
    elif fmt == "polyglot" and plies == 0:
        c.bad("Openings.Plies", plies, "a positive number of plies for a polyglot book")
    return OpeningsConfig(file=path, format=fmt or "pgn", plies=plies, order=order,
                          variant=variant)


def _order(c: _Checker, d: dict[str, Any], swiss: SwissOptions, swiss_raw: Any) -> str:
    """Openings.Order, which must agree with SwissOptions.RandomOpenings when both are set."""
    order = c.choice(d, "Openings", "Order", ("sequential", "random"), "")
    explicit_random = isinstance(swiss_raw, dict) and "RandomOpenings" in swiss_raw
    if order and explicit_random and (order == "random") != swiss.random_openings:
        c.problem("Openings.Order", f"got {order!r}, but SwissOptions.RandomOpenings is "
                  f"{swiss.random_openings}; they mean the same thing: make them agree or drop one")
    return order or ("random" if swiss.random_openings else "sequential")


def _positions(c: _Checker, d: dict[str, Any], swiss: SwissOptions, swiss_raw: Any,
               variant: str) -> OpeningsConfig | None:
    """``Openings.Positions``: numbered Chess960 starts (a list, or ``random``)."""
    order = _order(c, d, swiss, swiss_raw)
    for other in ("File", "Format", "Plies"):
        if other in d:
            c.problem(f"Openings.{other}", "not with Openings.Positions: the start positions "
                      "come either from Positions or from a File")
    value = d["Positions"]
    if not is_960(variant):
        c.bad("Openings.Positions", value, "no Positions in a standard event: set "
              "Variant: chess960 (or dfrc) to play numbered Chess960 start positions")
        return None
    if value == "random":
        return OpeningsConfig(file=None, format="positions", order=order, variant=variant)
    pair = "[White, Black] pairs of Chess960 numbers (0..959)" if variant == "dfrc" else \
        "Chess960 numbers (0..959)"
    if not isinstance(value, list) or not value:
        c.bad("Openings.Positions", value, f"random, or a non-empty list of {pair}")
        return None
    positions: list[tuple[int, int | None]] = []
    for i, item in enumerate(value):
        numbers = item if variant == "dfrc" and isinstance(item, list) else [item]
        if variant == "dfrc" and len(numbers) != 2 or not all(
                isinstance(n, int) and not isinstance(n, bool) and 0 <= n < POSITIONS
                for n in numbers):
            c.bad(f"Openings.Positions[{i}]", item,
                  "a [White, Black] pair of Chess960 numbers (0..959)" if variant == "dfrc"
                  else "a Chess960 position number (0..959)")
            continue
        positions.append((numbers[0], numbers[1] if variant == "dfrc" else None))
    if len(positions) != len(value):
        return None
    return OpeningsConfig(file=None, format="positions", order=order, variant=variant,
                          positions=tuple(positions))


def _adjudication(c: _Checker, raw: Any, base: Path) -> AdjudicationConfig:
    d = c.mapping("Adjudication", raw, _ADJ)
    p = "Adjudication"
    draw = win = tb = None
    if d.get("TcecDraw") is not None:
        k = f"{p}.TcecDraw"
        dd = c.mapping(k, d["TcecDraw"], {"MaxPawns": False, "MaxPieces": False, "ScoreCp": False, "Plies": False})
        draw = TcecDrawRule(
            max_pawns=c.get(dd, k, "MaxPawns", "int", 8, lambda v: 0 <= v <= 16, "an integer 0..16"),
            max_pieces=c.get(dd, k, "MaxPieces", "int", 8, lambda v: 2 <= v <= 32,
                             "an integer 2..32 (kings count)"),
            score_cp=c.get(dd, k, "ScoreCp", "int", 20, lambda v: 0 <= v <= MAX_CP,
                           f"centipawns from 0 to {MAX_CP}"),
            plies=c.get(dd, k, "Plies", "int", 10, lambda v: 1 <= v <= MAX_PLIES,
                        f"a positive number of plies (at most {MAX_PLIES})"),
        )
    if d.get("TcecWin") is not None:
        k = f"{p}.TcecWin"
        dw = c.mapping(k, d["TcecWin"], {"ScoreCp": False, "Plies": False})
        win = TcecWinRule(
            score_cp=c.get(dw, k, "ScoreCp", "int", 1000, lambda v: 1 <= v <= MAX_CP,
                           f"positive centipawns (at most {MAX_CP})"),
            plies=c.get(dw, k, "Plies", "int", 10, lambda v: 1 <= v <= MAX_PLIES,
                        f"a positive number of plies (at most {MAX_PLIES})"),
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
            tb_path = c.file_path(f"{k}.Paths[{i}]", entry, base)
            if tb_path is None:
                continue
            path = tb_path
            if not path.is_dir():
                c.bad(f"{k}.Paths[{i}]", entry, f"an existing directory of Syzygy tables (looked at {path})")
            else:
                problem = _syzygy_problem(path)
                if problem:  # a typo'd folder silently turned tablebase adjudication off
                    c.bad(f"{k}.Paths[{i}]", entry, f"a directory of Syzygy tables ({problem})")
            resolved.append(path)
        tb = TablebaseConfig(
            paths=tuple(resolved),
            max_pieces=c.get(dt, k, "MaxPieces", "int", 6, lambda v: 3 <= v <= 7, "an integer 3..7"),
            ignore50=c.get(dt, k, "Ignore50", "bool", False),
        )
        if not resolved:
            tb = None  # no tables: tablebase adjudication is off
    max_moves = c.get(d, p, "MaxMoves", "int", 0, lambda v: 0 <= v <= MAX_PLIES,
                      f"a non-negative integer (0 = off; at most {MAX_PLIES})")
    return AdjudicationConfig(tcec_draw=draw, tcec_win=win, tablebases=tb, max_moves=max_moves)


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
                   check: Callable[[Any], bool], expected: str,
                   default: float | None = None) -> float | None:
    """None for 'fit' (the default unless ``default`` is a number)."""
    if name not in d:
        return default
    if d[name] == "fit":
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
    elo = c.number(d, k, "Elo" if "Anchor" in d else "Average", "float", 0.0, -MAX_RATING,
                   MAX_RATING, "Elo")
    return RatingsConfig(
        anchor=anchor,
        elo=float(elo),
        white_advantage=_fit_or_number(c, d, k, "WhiteAdvantage",
                                       lambda v: abs(v) < MAX_WHITE_ADVANTAGE,
                                       "a fixed advantage in Elo (-1000..1000)", default=0.0),
        draw_rate=_fit_or_number(c, d, k, "DrawRate", lambda v: 0 <= v < 100,
                                 "a fixed draw rate between equal engines, percent 0..100"),
        simulations=c.get(d, k, "Simulations", "int", 1000, lambda v: 0 <= v <= MAX_SIMULATIONS,
                          "a number of simulations from 0 to 100000 (0 = no error margins)"),
        seed=c.get(d, k, "Seed", "int", 0, lambda v: 0 <= v <= MAX_SEED,
                   "an integer from 0 to 2**63-1"),
        confidence=float(c.get(d, k, "Confidence", "float", 95.0, lambda v: 0 < v < 100,
                               "a percentage between 0 and 100")),
    )


def _output_path(c: _Checker, key: str, value: Any, base: Path) -> Path | None:
    """A file the runner writes: a usable path that names a file, not a directory."""
    path = c.file_path(key, value, base)
    if path is None:
        return None
    if not path.name or str(value).endswith(os.sep):
        c.bad(key, value, "a file name (this names a directory)")
        return None
    return path


def _cutechess_path(c: _Checker, value: str, base: Path) -> str:
    """A CutechessPath containing a '/' is relative to the config file; a bare name is looked up later."""
    if path_problem(value):
        c.file_path("CutechessPath", value, base)  # reports it
        return "cutechess-cli"
    return str(resolve_path(base, value)) if os.sep in value else value


def _host_and_port(address: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(address)
        return bool(parts.hostname) and parts.port is not None and 0 < parts.port < 65536
    except ValueError:  # 'Port out of range', a bad IPv6 literal
        return False


def _cluster(c: _Checker, raw: Any) -> ClusterConfig | None:
    if raw is None:
        return None
    d = c.mapping("Cluster", raw, _CLUSTER)
    address = str(c.get(d, "Cluster", "Scheduler", "str", "") or "")
    if address and not address.startswith(("tcp://", "tls://", "inproc://", "ucx://")):
        c.bad("Cluster.Scheduler", address, "a scheduler address such as tcp://HOST:8786")
    elif address.startswith(("tcp://", "tls://")) and not _host_and_port(address):
        c.bad("Cluster.Scheduler", address, "a scheduler address such as tcp://HOST:8786 (a "
              "host and a port from 1 to 65535)")
    wait = c.get(d, "Cluster", "WaitS", "float", 600.0, lambda v: 0 <= v <= 86400,
                 "seconds from 0 to 86400")
    overdue = c.get(d, "Cluster", "OverdueS", "float", 60.0, lambda v: 1 <= v <= 86400,
                    "seconds from 1 to 86400")
    retry = c.get(d, "Cluster", "RetryRefusedS", "float", 600.0, lambda v: 1 <= v <= 86400 * 7,
                  "seconds from 1 to 604800")
    lost = c.get(d, "Cluster", "MaxLostAttempts", "int", 3, lambda v: 1 <= v <= 1000,
                 "a number of attempts from 1 to 1000")
    insecure = c.get(d, "Cluster", "Insecure", "bool", False)
    return ClusterConfig(scheduler=address, wait_s=float(wait if wait is not None else 600.0),
                         overdue_s=float(overdue if overdue is not None else 60.0),
                         retry_refused_s=float(retry if retry is not None else 600.0),
                         max_lost_attempts=int(lost if lost is not None else 3),
                         insecure=bool(insecure))


def _alerts(c: _Checker, raw: Any) -> AlertsConfig | None:
    """The Alerts block (docs/alerts.md); None without one."""
    if raw is None:
        return None
    k = "Alerts"
    d = c.mapping(k, raw, _ALERTS)
    if not isinstance(raw, dict):
        return None  # reported: not a mapping
    command: tuple[str, ...] | None = None
    value = d.get("Command")
    if isinstance(value, str) and value.strip() and "\0" not in value:
        import shlex

        try:
            command = tuple(shlex.split(value))
        except ValueError as exc:  # an unclosed quote
            c.bad(f"{k}.Command", value, f"a command line the shell could read ({exc})")
    elif (isinstance(value, list) and value
          and all(isinstance(a, str) and a and "\0" not in a for a in value)):
        command = tuple(value)
    elif value is not None:
        c.bad(f"{k}.Command", value, "a command: a list of strings (the program first) or one "
              "string, split as a shell would")
    if command is not None and not command:
        c.bad(f"{k}.Command", value, "a command with a program")
        command = None
    url = c.get(d, k, "Url", "str", None, _http_url,
                "an http:// or https:// URL with a host, such as https://example.org/hook")
    if command is None and url is None and not any(key in d for key in ("Command", "Url")):
        c.problem(k, "expected Command (run with the JSON on its stdin) or Url (the JSON "
                     "POSTed to it), or both")
    on = d.get("On", "all")
    kinds: tuple[str, ...] = ALERT_KINDS
    if on != "all":
        if not isinstance(on, list) or not on:
            c.bad(f"{k}.On", on, "all, or a list of: " + ", ".join(ALERT_KINDS))
        else:
            for i, kind in enumerate(on):
                if kind not in ALERT_KINDS:
                    hint = difflib.get_close_matches(str(kind), ALERT_KINDS, n=1)
                    c.bad(f"{k}.On[{i}]", kind, " | ".join(ALERT_KINDS)
                          + (f" (did you mean {hint[0]!r}?)" if hint else ""))
            kinds = tuple(kind for kind in ALERT_KINDS if kind in on)
    return AlertsConfig(
        command=command, url=url,
        timeout_s=float(c.number(d, k, "TimeoutS", "float", 10.0, 0.1, 300, "seconds per attempt")),
        retries=int(c.number(d, k, "Retries", "int", 3, 0, 20, "attempts after the first")),
        queue_size=int(c.number(d, k, "QueueSize", "int", 100, 1, 10_000, "alerts")),
        disk_free_mb=int(c.number(d, k, "DiskFreeMb", "int", 1024, 0, 10**9, "MB; 0 = off")),
        on=kinds,
    )


def _http_url(value: str) -> bool:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        return (parts.scheme in ("http", "https") and bool(parts.hostname)
                and (parts.port is None or 0 < parts.port < 65536)
                and not any(ch.isspace() for ch in value))
    except ValueError:  # a bad port or IPv6 literal
        return False


def _code(character: int | str) -> int:
    return character if isinstance(character, int) else ord(character)


def _line_at(path: Path, position: int) -> int:
    """The line of character ``position`` of the (already read, UTF-8) config file."""
    try:
        return _read_config_text(path)[:position].count("\n") + 1
    except (OSError, ValueError, YamlLimit):
        return 1


def load_config(path: str | os.PathLike[str], *, writes: bool = False) -> Config:
    """Load and validate a config file; raise ConfigError listing every problem found.

    ``writes``: the caller will write the outputs (`run`, and `validate` that checks for
    it): they must be writable by this user too. `status`, `standings` and the dashboard
    only read, in a read-only directory as well."""
    path = Path(path)
    shown = _shown(str(path))
    if "\0" in str(path):
        raise ConfigError([f"{shown}: the config file name contains a NUL character"])
    try:
        raw, lines, dups = _load_yaml(path)
    except FileNotFoundError:
        raise ConfigError([f"{path}: config file not found"]) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text (byte {exc.start}); expected a YAML "
                           "config file"]) from None
    except OSError as exc:
        raise ConfigError([f"{shown}: cannot read config file: {exc.strerror or exc}"]) from None
    except YamlLimit as exc:
        raise ConfigError([f"{path}: refused: {exc}"]) from None
    except RecursionError:
        raise ConfigError([f"{path}: refused: nested too deeply to be a config"]) from None
    except yaml.reader.ReaderError as exc:  # a control character: a position, no mark
        raise ConfigError([f"{path}:{_line_at(path, exc.position)}: not valid YAML: the "
                           f"control character U+{_code(exc.character):04X}; expected printable "
                           "text (is this really a config file?)"]
                          ) from None
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
    from runner.config.enginesjson import config_engines
    from runner.config.operations import apply_operations

    top_engines = config_engines(top, base, c.problem)  # Engines, merged with EnginesFile
    written = top.get("Engines") if top.get("EnginesFile") is not None else top_engines
    if top_engines is not None:
        top = {**top, "Engines": top_engines}
    engines = _engines(c, top_engines, base)
    tiebreaks = c.get(top, "", "Tiebreaks", "list", list(DEFAULT_TIEBREAKS))
    for i, tb in enumerate(tiebreaks):
        if tb in tiebreaks[:i]:
            c.bad(f"Tiebreaks[{i}]", tb, f"each tiebreak once (also Tiebreaks[{tiebreaks.index(tb)}])")
        elif tb not in TIEBREAKS:
            hint = difflib.get_close_matches(str(tb), TIEBREAKS, n=1)
            c.bad(f"Tiebreaks[{i}]", tb, " | ".join(TIEBREAKS) + (f" (did you mean {hint[0]!r}?)" if hint else ""))
    state_dir = swiss.state_path.parent
    pgn_out = (_output_path(c, "PgnOut", c.get(top, "", "PgnOut", "str", str(state_dir / "games.pgn")), base)
               or state_dir / "games.pgn")
    default_db = swiss.state_path.with_suffix(".sqlite3")
    database = _output_path(c, "Database", c.get(top, "", "Database", "str", str(default_db)), base) or default_db
    variant = c.choice(top, "", "Variant", VARIANTS, "standard")
    config = Config(
        path=path,
        variant=variant,
        event=str(c.name(top, "", "Event", "swiss-runner event")),
        site=str(c.name(top, "", "Site", "?")),
        swiss=swiss,
        time_control=tc,
        time_margin_ms=c.get(top, "", "TimeMarginMs", "int", 0, lambda v: 0 <= v <= MAX_MARGIN_MS,
                             f"milliseconds from 0 to {MAX_MARGIN_MS}"),
        concurrency=c.get(top, "", "Concurrency", "int", 1, lambda v: 1 <= v <= MAX_CONCURRENCY,
                          f"a positive integer (at most {MAX_CONCURRENCY} games at once)"),
        interruption=_interruption(c, top.get("Interruption")),
        snapshot_interval_s=float(c.get(top, "", "SnapshotIntervalS", "float", 1.0,
                                        lambda v: 0.1 <= v <= 3600,
                                        "seconds from 0.1 to 3600") or 1.0),
        backend=c.choice(top, "", "Backend", ("python-chess", "cutechess"), "python-chess"),
        cutechess_path=_cutechess_path(c, c.get(top, "", "CutechessPath", "str", "cutechess-cli"), base),
        pgn_out=pgn_out,
        database=database,
        openings=_openings(c, top.get("Openings"), base, swiss, top.get("SwissOptions"), variant),
        adjudication=_adjudication(c, top.get("Adjudication"), base),
        engines=engines,
        tiebreaks=tuple(tiebreaks),
        raw=raw,
        ratings=_ratings(c, top.get("Ratings"), engines),
        cluster=_cluster(c, top.get("Cluster")),
        alerts=_alerts(c, top.get("Alerts")),
    )
    config = apply_operations(c, top, config, base, written)
    _check_distinct_outputs(c, config)
    if writes and not c.problems:
        _check_writable_outputs(c, config)
    if c.problems:
        raise ConfigError(c.problems)
    return config


def _output_files(config: Config) -> list[tuple[str, str, Path]]:
    """Every file the runner writes: (config key, what it is, path)."""
    db = config.database
    return [
        ("SwissOptions.StatePath", "the JSON snapshot", config.swiss.state_path),
        ("Database", "the state database", db),
        ("Database", "the state database's WAL journal", db.with_name(db.name + "-wal")),
        ("Database", "the state database's shared-memory file", db.with_name(db.name + "-shm")),
        ("Database", "the state database's rollback journal", db.with_name(db.name + "-journal")),
        ("Database", "the state database's lock file", db.with_name(db.name + ".lock")),
        ("PgnOut", "the PGN of the games", config.pgn_out),
        *([("EpdOut", "the final positions (EPD)", config.epd_out)] if config.epd_out else []),
        *([("LivePgn", "the live PGN", config.live_pgn)] if config.live_pgn else []),
    ]


def _input_files(config: Config) -> list[tuple[str, str, Path]]:
    """Every file or directory the event reads: (config key, what it is, path)."""
    inputs: list[tuple[str, str, Path]] = [("(config file)", "the config file itself", config.path)]
    if config.openings is not None and config.openings.file is not None:
        inputs.append(("Openings.File", "the opening book", config.openings.file))
    base = config.path.resolve().parent
    for i, engine in enumerate(config.engines):
        key = f"Engines[{i}]"
        inputs.append((f"{key}.Command", f"the executable of engine {engine.name!r}",
                       Path(engine.command)))
        if engine.working_dir:
            inputs.append((f"{key}.WorkingDir", f"the working directory of engine {engine.name!r}",
                           Path(engine.working_dir)))
        for j, arg in enumerate(engine.args):  # a script or network file the engine reads
            if path_problem(arg) or not arg.strip():
                continue
            for folder in (Path(engine.working_dir) if engine.working_dir else base, base):
                candidate = resolve_path(folder, arg)
                if os.path.lexists(candidate):
                    inputs.append((f"{key}.Args[{j}]", f"a file engine {engine.name!r} reads",
                                   candidate))
                    break
    tb = config.adjudication.tablebases
    for i, folder in enumerate(tb.paths if tb is not None else ()):
        inputs.append((f"Adjudication.Tablebases.Paths[{i}]", "a tablebase directory", folder))
    if os.sep in config.cutechess_path:
        inputs.append(("CutechessPath", "cutechess-cli", Path(config.cutechess_path)))
    return inputs


_BACKUP_SUFFIX = r"\.\d{8}T\d{6}Z(?:-\d+)?\.bak"  # PgnOut kept aside: <name>.<UTC time>.bak


def _check_distinct_outputs(c: _Checker, config: Config) -> None:
    """StatePath, Database (with its SQLite and lock side files), PgnOut and every input (the
    config file, the book, engine executables and the files they read, tablebases) must be
    different files, and an output must not be a directory or a device: the snapshot's
    rename would replace the database or the config, the PGN would be appended to the book,
    and the event's record or the user's files would be lost. Checked before anything is
    written."""
    files = _output_files(config)
    book = [("Openings.File", "the opening book", config.openings.file)
            ] if config.openings and config.openings.file is not None else []
    seen: dict[str, tuple[str, str]] = {}
    for key, role, path in files + book:
        real = os.path.realpath(path)  # the same file through a symlink is the same file
        if real in seen and seen[real][0] != key:
            other_key, other_role = seen[real]
            default = " (Database defaults to StatePath with the suffix .sqlite3)" if (
                "Database" in (key, other_key) and "Database" not in config.raw) else ""
            c.problem(key, f"{path}: {role} would be the same file as {other_role} "
                      f"({other_key}){default}; StatePath, Database, PgnOut and Openings.File "
                      "must name different files, or one overwrites the other")
        seen.setdefault(real, (key, role))
    reported: set[str] = set()
    outputs = {os.path.realpath(path): (key, role, path) for key, role, path in reversed(files)}
    for in_key, in_role, in_path in _input_files(config):
        if in_key == "Openings.File":
            continue  # the book against the outputs was checked above with its usual wording
        real_in = os.path.realpath(in_path)
        hit = outputs.get(real_in)
        if hit is None:
            pgn = os.path.realpath(config.pgn_out)
            if os.path.dirname(real_in) == os.path.dirname(pgn) and re.fullmatch(
                    re.escape(os.path.basename(pgn)) + _BACKUP_SUFFIX, os.path.basename(real_in)):
                hit = ("PgnOut", "a backup name of the PGN of the games", config.pgn_out)
        if hit is None or hit[0] in reported:
            continue
        key, role, path = hit
        reported.add(key)
        c.problem(key, f"{path}: {role} would be {in_role} ({in_key}); an output must never "
                  "overwrite an input: name a file of its own")
    for key, role, path in files:
        if key in reported:
            continue
        problem = _not_a_file(path)
        if problem:
            reported.add(key)
            c.problem(key, f"{path}: {role} cannot be written there: {problem}")


def _check_writable_outputs(c: _Checker, config: Config) -> None:
    """Every output can be created or written by this user: a PGN, EPD or engine-log
    directory that is read-only would otherwise be found game after game while the event
    plays on without them (and a read-only state directory only once the run has started).
    Side files that do not exist need only their directory."""
    outputs = [(key, role, path, key != "SwissOptions.StatePath")
               for key, role, path in _output_files(config)]
    if config.engine_logs is not None:
        outputs.append(("EngineLogs.Dir", "the directory of the engine logs",
                        config.engine_logs.dir, True))
    reported: set[str] = set()
    for key, role, path, file_too in outputs:
        if key in reported:
            continue
        problem = _unwritable(path, file_too)
        if problem:
            reported.add(key)
            c.problem(key, f"{path}: {role} cannot be written: {problem}; expected a place "
                      "this user can write to")


def _unwritable(path: Path, file_too: bool) -> str | None:
    """Why this process cannot create (or, ``file_too``, write) ``path``, or None."""
    if file_too and os.path.lexists(path) and not os.access(path, os.W_OK):
        return "it is read-only for this user (or on a read-only file system)"
    for parent in path.parents:
        if os.path.isdir(parent):
            if not os.access(parent, os.W_OK | os.X_OK):
                return (f"the directory {parent} is not writable by this user (or on a "
                        "read-only file system)")
            return None
        if os.path.lexists(parent):
            return None  # not a directory: _not_a_file reports it
    return None


def _not_a_file(path: Path) -> str | None:
    """Why ``path`` cannot be a regular file the runner creates and replaces, or None."""
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None:
        if stat.S_ISDIR(info.st_mode):
            return "it is an existing directory; expected a file name in a directory"
        if not stat.S_ISREG(info.st_mode):
            return "it is a device, pipe or socket, not a regular file"
    for parent in path.parents:
        try:
            info = os.stat(parent)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode):
            return f"{parent} is a file, not a directory"
        break
    return None


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
