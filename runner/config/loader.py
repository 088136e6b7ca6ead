"""YAML tournament configuration: loading, validation with precise messages, typed result.

Keys are PascalCase so a TCEC/Encroissant ``SwissOptions`` block can be pasted in verbatim.
The keys, their types, bounds, enums and defaults are the models of runner.config.keys,
validated by pydantic; each of its errors becomes one line naming the file, the line of the
key, the key path, the bad value and what was expected. The plain checks that follow cover
what a schema cannot know: engines on PATH, files that exist, outputs distinct from inputs,
the time-control syntax, cross-key rules. Relative paths in the file (books, state, PGN,
tablebases, engine commands containing a ``/``) are resolved against the directory of the
config file, so the same command works from any working directory.
"""

from __future__ import annotations

import difflib
import os
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

if typing.TYPE_CHECKING:
    from pydantic import BaseModel


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


def _unwrap(annotation: Any) -> Any:
    """The type inside ``Annotated``/``X | None``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation


def _walk(root: type[BaseModel], loc: tuple[Any, ...]) -> tuple[Any, Any, bool]:
    """Follow ``loc`` from ``root``: (the model reached, or None; the FieldInfo of its last
    key, or None; whether ``loc`` ends at an item of that key's list)."""
    model: Any = root
    info = None
    item = False
    for part in loc:
        if isinstance(part, int):
            item = True
            continue
        if model is None or part not in model.model_fields:
            return None, None, False
        info, item = model.model_fields[part], False
        inner = _unwrap(info.annotation)
        if typing.get_origin(inner) is list:
            inner = _unwrap(typing.get_args(inner)[0])
        model = inner if isinstance(inner, type) and hasattr(inner, "model_fields") else None
    return model, info, item


_BY_TYPE = {"int": "an integer", "float": "a finite number", "finite": "a finite number",
            "bool": "true or false", "string": "a non-empty string", "list": "a list",
            "model": "a mapping of keys", "dict": "a mapping of keys"}


def _expected(root: type[BaseModel], loc: tuple[Any, ...], error: dict[str, Any]) -> str:
    """What the key at ``loc`` expects: its :class:`~runner.config.keys.Expected` text, the
    choices of a Literal, or what its type takes."""
    from runner.config.keys import Expected

    kind = error["type"]
    if kind.startswith(("model", "dict")):
        return "a mapping of keys"
    _, info, item = _walk(root, loc)
    text = next((t for k, t in _BY_TYPE.items() if kind.startswith(k)), "a valid value")
    if info is not None:
        inner = _unwrap(info.annotation)
        in_list = typing.get_origin(inner) is list and item
        if in_list:
            inner = _unwrap(typing.get_args(inner)[0])
        literal = typing.get_origin(inner) is typing.Literal
        marks = [m for m in info.metadata if isinstance(m, Expected) and m.items == in_list]
        if marks:
            hint = difflib.get_close_matches(str(error["input"]), marks[0].hints, n=1)
            return marks[0].text + (f" (did you mean {hint[0]!r}?)" if hint else "")
        if literal and kind == "literal_error":
            text = " | ".join(str(a) for a in typing.get_args(inner))
        if inner is str or literal and isinstance(typing.get_args(inner)[0], str):
            kind = "string"
    if kind.startswith("string") and isinstance(error["input"], str) and "\0" in error["input"]:
        text += " without NUL characters"
    return text


_GONE = object()


def _prune(data: Any, loc: tuple[Any, ...]) -> None:
    """Remove what ``loc`` names from ``data`` (list items become _GONE)."""
    try:
        for part in loc[:-1]:
            data = data[part]
        if isinstance(data, list):
            data[loc[-1]] = _GONE
        elif isinstance(data, dict):
            data.pop(loc[-1], None)
    except (KeyError, IndexError, TypeError):
        pass  # already gone with the mapping around it


def _compact(data: Any, index: list[int] | None = None) -> Any:
    if isinstance(data, dict):
        return {k: _compact(v, index if k == "Engines" else None) for k, v in data.items()}
    if isinstance(data, list):
        if index is not None:
            index[:] = [i for i, v in enumerate(data) if v is not _GONE]
        return [_compact(v) for v in data if v is not _GONE]
    return data


def _copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _copy(v) for k, v in data.items()}
    return [_copy(v) for v in data] if isinstance(data, list) else data


def check_schema(c: _Checker, top: dict[str, Any]) -> tuple[Any, list[int]]:
    """Validate ``top`` with the schema: every problem reported; returns the validated keys
    of what is left once the bad values are dropped (None if nothing usable) and the
    original index of each engine kept."""
    from pydantic import ValidationError

    from runner.config.keys import ConfigKeys

    data, index = top, list(range(len(top["Engines"]))) if isinstance(
        top.get("Engines"), list) else []
    for _ in range(3):
        try:
            return ConfigKeys.model_validate(data), index
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        data = _copy(data)
        for error in errors:
            loc = tuple(error["loc"])
            if loc and loc[0] == "Engines" and len(loc) > 1 and isinstance(loc[1], int):
                loc = ("Engines", index[loc[1]], *loc[2:])
            key = _key_path(loc)
            if key not in c.schema_keys:
                c.schema_keys.add(key)
                if error["type"] == "extra_forbidden":
                    model, _, _ = _walk(ConfigKeys, loc[:-1])
                    c.unknown(key, str(loc[-1]), list(getattr(model, "model_fields", {})))
                elif error["type"] == "missing":
                    c.problem(key, "missing required key")
                else:
                    c.bad(key, error["input"], _expected(ConfigKeys, loc, error))
            where = tuple(error["loc"])
            if error["type"] == "missing":
                where = where[:-1] if len(where) > 1 else where
            if where == ("SwissOptions",):
                data["SwissOptions"] = None
            elif where == ("TimeControl",):
                data["TimeControl"] = "inf"
            else:
                _prune(data, where)
        kept: list[int] = []
        data = _compact(data, kept)
        index = [index[i] for i in kept] if isinstance(data.get("Engines"), list) else []
    return None, index


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
