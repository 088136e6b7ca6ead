"""YAML tournament configuration: loading, validation with precise messages, typed result.

Keys are PascalCase so a TCEC/Encroissant ``SwissOptions`` block can be pasted in verbatim.
The keys, their types, bounds, enums and defaults are the models of runner.config.keys,
validated by msgspec; each of its errors becomes one line naming the file, the line of the
key, the key path, the bad value and what was expected. The plain checks that follow cover
what a schema cannot know: engines on PATH, files that exist, outputs distinct from inputs,
the time-control syntax, cross-key rules. Relative paths in the file (books, state, PGN,
tablebases, engine commands containing a ``/``) are resolved against the directory of the
config file, so the same command works from any working directory.
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import types
import typing
from pathlib import Path
from typing import Any

import yaml

from runner.config.limits import MAX_ENGINES
from runner.config.paths import resolve_path
from runner.config.schema import ENGINE_SEARCH_DIRS, Config
from runner.config.yamlfile import YamlLimit, code_of, line_at, load_yaml
from runner.errors import ConfigError


class _Checker:
    """Collects problems; each names file, key path (and line), bad value and expectation."""

    def __init__(self, path: Path, lines: dict[str, int]):
        self.path = path
        self.lines = lines
        self.problems: list[str] = []
        self.schema_keys: set[str] = set()  # key paths the schema already reported

    def problem(self, key: str, message: str) -> None:
        line = self.lines.get(key)
        where = f"{self.path}:{line}" if line else str(self.path)
        self.problems.append(f"{where}: {key}: {message}")

    def bad(self, key: str, value: Any, expected: str) -> None:
        shown = repr(value[:120]) + "..." if isinstance(value, str) and len(value) > 120 else repr(value)
        if len(shown) > 200:  # a huge list or mapping
            shown = shown[:200] + "..."
        self.problem(key, f"got {shown}, expected {expected}")

    def unknown(self, key: str, name: str, names: list[str]) -> None:
        """``name`` is not one of ``names``: say so, with the closest as "did you mean"."""
        hint = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
        if not hint:
            lowered = {n.lower(): n for n in names}
            hint = [lowered[name.lower()]] if name.lower() in lowered else []
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        self.problem(key, f"unknown key{suggestion} (allowed: {', '.join(names)})")

    def reported(self, key: str) -> bool:
        """Whether the schema reported ``key`` or a key inside it (no second message)."""
        return any(k == key or k.startswith((key + ".", key + "[")) for k in self.schema_keys)


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


# --------------------------------------------------------------------------- the schema


def _key_path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _unwrap(annotation: Any) -> tuple[Any, Any]:
    """(the type inside ``Annotated``/``X | None``/``X | UnsetType``, its Expected or None)."""
    from msgspec import UnsetType

    from runner.config.keys import Expected

    mark = None
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *metas = typing.get_args(annotation)
            for meta in metas:
                found = (getattr(meta, "extra", None) or {}).get("expected")
                mark = found if isinstance(found, Expected) else mark
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a not in (type(None), UnsetType)]
            if len(args) != 1:
                return annotation, mark
            annotation = args[0]
        else:
            return annotation, mark


def _fields(struct: Any) -> dict[str, Any]:
    import msgspec

    try:
        return {f.encode_name: f.type for f in msgspec.structs.fields(struct)}
    except TypeError:  # not a Struct
        return {}


def _walk(root: Any, loc: tuple[Any, ...]) -> tuple[Any, Any, bool]:
    """Follow ``loc`` from ``root``: (the type reached, unwrapped; the Expected of its last
    key, or None; whether ``loc`` ends at an item of that key's list)."""
    current: Any = root
    mark = None
    item = False
    for part in loc:
        if isinstance(part, int):
            if typing.get_origin(current) is list:
                current, _ = _unwrap(typing.get_args(current)[0])
            item = True
            continue
        fields = _fields(current)
        if part not in fields:
            return None, None, False
        current, mark = _unwrap(fields[part])
        item = False
    return current, mark, item


_BY_TYPE = {int: "an integer", float: "a finite number", bool: "true or false",
            str: "a non-empty string", list: "a list", dict: "a mapping of keys"}


def _expected(root: Any, loc: tuple[Any, ...], value: Any) -> str:
    """What the key at ``loc`` expects: its :class:`~runner.config.keys.Expected` text, the
    choices of a Literal, or what its type takes."""
    kind, mark, item = _walk(root, loc)
    if _fields(kind):
        return "a mapping of keys"
    if mark is not None and mark.items == item:
        hint = difflib.get_close_matches(str(value), mark.hints, n=1)
        return mark.text + (f" (did you mean {hint[0]!r}?)" if hint else "")
    literal = typing.get_origin(kind) is typing.Literal
    if literal:
        text = " | ".join(str(a) for a in typing.get_args(kind))
    else:
        text = _BY_TYPE.get(typing.get_origin(kind) or kind, "a valid value")
    stringy = kind is str or literal and isinstance(typing.get_args(kind)[0], str)
    if stringy and isinstance(value, str) and "\0" in value:
        text += " without NUL characters"
    return text


_ERROR = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.S)
_FIELD = re.compile(r"^Object (?P<kind>contains unknown|missing required) field `(?P<name>.*)`$",
                    re.S)


def _loc(path: str) -> tuple[Any, ...]:
    return tuple(int(i) if i else k for k, i in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path))


def _at(data: Any, loc: tuple[Any, ...]) -> Any:
    for part in loc:
        data = data[part]
    return data


def _prune(data: Any, loc: tuple[Any, ...]) -> bool:
    """Drop the key ``loc`` names from ``data`` (a list item: the whole list, whose every bad
    item was reported); False if there was nothing to drop."""
    while loc and isinstance(loc[-1], int):
        loc = loc[:-1]
    try:
        parent = _at(data, loc[:-1])
    except (KeyError, IndexError, TypeError):
        return False
    if not loc or not isinstance(parent, dict) or loc[-1] not in parent:
        return False
    del parent[loc[-1]]
    return True


def _plain(data: Any, engines: bool = False) -> Any:
    """A copy with every mapping key a string and an engine written without keys ({})."""
    if isinstance(data, dict):
        return {str(k): _plain(v, str(k) == "Engines") for k, v in data.items()}
    if isinstance(data, list):
        return [{} if engines and v is None else _plain(v) for v in data]
    return data


def _missing(c: _Checker, root: Any, data: Any, where: tuple[Any, ...],
             shown: tuple[Any, ...]) -> None:
    """Every required key the mapping at ``where`` lacks (msgspec names the first)."""
    import msgspec

    struct, _, _ = _walk(root, where)
    have = _at(data, where)
    for f in msgspec.structs.fields(struct):
        key = _key_path((*shown, f.encode_name))
        if f.required and f.encode_name not in have and key not in c.schema_keys:
            c.schema_keys.add(key)
            c.problem(key, "missing required key")


def _bad_items(c: _Checker, root: Any, data: Any, where: tuple[Any, ...],
               shown: tuple[Any, ...] = ()) -> None:
    """Every item of the list at ``where`` its item type refuses (msgspec names the first)."""
    import msgspec

    kind, _, _ = _walk(root, (*where, 0))
    for i, value in enumerate(_at(data, where)):
        try:
            msgspec.convert(value, kind, strict=True)
        except msgspec.ValidationError:
            key = _key_path((*shown, *where, i))
            c.schema_keys.add(key)
            c.bad(key, value, _expected(root, (*where, i), value))


MAX_SCHEMA_PASSES = 1000  # one problem per pass; a mapping with more is reported in part


def _validate(c: _Checker, kind: Any, data: dict[str, Any], shown: tuple[Any, ...]) -> Any:
    """``data`` (changed: bad values dropped) as a ``kind``, or None; every problem reported
    with its key path after ``shown``. msgspec stops at the first error: each is reported, its
    value dropped and the rest validated again (microseconds a pass)."""
    import msgspec

    for _ in range(MAX_SCHEMA_PASSES):
        try:
            return msgspec.convert(data, kind, strict=True)
        except msgspec.ValidationError as exc:
            match = _ERROR.match(str(exc))
        assert match is not None  # the pattern matches any text
        where = _loc(match["path"] or "")
        field = _FIELD.match(match["what"])
        loc = (*where, field["name"]) if field else where
        key = _key_path((*shown, *loc))
        if not loc:
            return None  # not a problem of a key: stop rather than loop
        if field and field["kind"] == "missing required":
            _missing(c, kind, data, where, (*shown, *where))
            if not where and not shown and not {"SwissOptions", "TimeControl"} <= set(data):
                data.setdefault("SwissOptions", None)  # stand-ins for the config's own
                data.setdefault("TimeControl", "inf")  # (reported; not checked further)
                continue
            if not where:
                return None  # this mapping lacks a key it cannot do without
            loc = where  # drop the mapping that lacks it
        elif key in c.schema_keys:
            pass  # reported in an earlier pass: only dropped now
        elif field:
            c.schema_keys.add(key)
            c.unknown(key, field["name"], list(_fields(_walk(kind, where)[0])))
        elif isinstance(loc[-1], int):
            _bad_items(c, kind, data, loc[:-1], shown)
        else:
            c.schema_keys.add(key)
            value = _at(data, loc)
            c.bad(key, value, _expected(kind, loc, value))
        if not _prune(data, loc):
            return None  # nothing left to drop: stop rather than loop
    return None


def check_schema(c: _Checker, top: dict[str, Any]) -> tuple[Any, list[int]]:
    """Validate ``top`` with the schema, reporting every problem: each engine on its own
    first (a bad one is left out), then the rest. Returns the validated keys (None if
    nothing is usable) and the place in the file of each engine kept."""
    from runner.config.keys import ConfigKeys, EngineKeys

    data = _plain(top)
    index: list[int] = []
    if isinstance(data.get("Engines"), list):
        kept = []
        for i, item in enumerate(data["Engines"]):
            if not isinstance(item, dict):
                c.schema_keys.add(f"Engines[{i}]")
                c.bad(f"Engines[{i}]", item, "a mapping of keys")
            elif _validate(c, EngineKeys, item, ("Engines", i)) is not None:
                kept.append(item)
                index.append(i)
        data["Engines"] = kept
    return _validate(c, ConfigKeys, data, ()), index


# --------------------------------------------------------------------------- loading


def load_config(path: str | os.PathLike[str], *, writes: bool = False) -> Config:
    """Load and validate a config file; raise ConfigError listing every problem found.

    ``writes``: the caller will write the outputs (`run`, and `validate` that checks for
    it): they must be writable by this user too. `status`, `standings` and the dashboard
    only read, in a read-only directory as well."""
    from runner.config.values import shown as _shown

    path = Path(path)
    shown = _shown(str(path))
    if "\0" in str(path):
        raise ConfigError([f"{shown}: the config file name contains a NUL character"])
    try:
        raw, lines, dups = load_yaml(path)
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
        raise ConfigError([f"{path}:{line_at(path, exc.position)}: not valid YAML: the "
                           f"control character U+{code_of(exc.character):04X}; expected printable "
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
    from runner.config.build import build_config
    from runner.config.enginesjson import config_engines

    base = path.resolve().parent
    top = {str(k): v for k, v in raw.items()}
    top_engines = config_engines(top, base, c.problem)  # Engines, merged with EnginesFile
    written = top.get("Engines") if top.get("EnginesFile") is not None else top_engines
    if top_engines is not None:
        top = {**top, "Engines": top_engines}
    keys, index = check_schema(c, top)
    if isinstance(top_engines, list) and len(top_engines) < 2:
        c.bad("Engines", f"{len(top_engines)} engine(s)", "at least 2 engines")
    elif isinstance(top_engines, list) and len(top_engines) > MAX_ENGINES:
        c.bad("Engines", f"{len(top_engines)} engines", f"at most {MAX_ENGINES} engines")
    if keys is None:
        raise ConfigError(c.problems)
    config = build_config(c, path, raw, top, keys, index, written, writes)
    if c.problems:
        raise ConfigError(c.problems)
    return config


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
