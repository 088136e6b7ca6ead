"""The raw mapping checked against the keys' schema (runner.config.keyschema) with msgspec: every
problem reported, one line each, not only the first msgspec names."""

from __future__ import annotations

import difflib
import re
import types
import typing
from typing import Any

import msgspec
from msgspec import UnsetType

from runner.config.keyschema import ConfigKeys, EngineKeys, Expected
from runner.config.problems import Problems


def _key_path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _unwrap(annotation: Any) -> tuple[Any, Any]:
    """(the type inside ``Annotated``/``X | None``/``X | UnsetType``, its Expected or None)."""
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
    """What the key at ``loc`` expects: its :class:`~runner.config.keyschema.Expected` text, the
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


def _missing(c: Problems, root: Any, data: Any, where: tuple[Any, ...],
             shown: tuple[Any, ...]) -> None:
    """Every required key the mapping at ``where`` lacks (msgspec names the first)."""
    struct, _, _ = _walk(root, where)
    have = _at(data, where)
    for f in msgspec.structs.fields(struct):
        key = _key_path((*shown, f.encode_name))
        if f.required and f.encode_name not in have and key not in c.schema_keys:
            c.schema_keys.add(key)
            c.problem(key, "missing required key")


def _bad_items(c: Problems, root: Any, data: Any, where: tuple[Any, ...],
               shown: tuple[Any, ...] = ()) -> None:
    """Every item of the list at ``where`` its item type refuses (msgspec names the first)."""
    kind, _, _ = _walk(root, (*where, 0))
    for i, value in enumerate(_at(data, where)):
        try:
            msgspec.convert(value, kind, strict=True)
        except msgspec.ValidationError:
            key = _key_path((*shown, *where, i))
            c.schema_keys.add(key)
            c.bad(key, value, _expected(root, (*where, i), value))


MAX_SCHEMA_PASSES = 1000  # one problem per pass; a mapping with more is reported in part


def _validate(c: Problems, kind: Any, data: dict[str, Any], shown: tuple[Any, ...]) -> Any:
    """``data`` (changed: bad values dropped) as a ``kind``, or None; every problem reported
    with its key path after ``shown``. msgspec stops at the first error: each is reported, its
    value dropped and the rest validated again (microseconds a pass)."""
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


def check_schema(c: Problems, top: dict[str, Any]) -> tuple[Any, list[int]]:
    """Validate ``top`` with the schema, reporting every problem: each engine on its own
    first (a bad one is left out), then the rest. Returns the validated keys (None if
    nothing is usable) and the place in the file of each engine kept."""
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
