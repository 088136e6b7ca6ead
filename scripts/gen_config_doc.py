"""Write the key tables of docs/config.md from the config's JSON Schema (`swiss-runner schema`).

Everything above the marker line in docs/config.md is written by hand; everything below it
is this script's output, one table per block: key, type, default, bounds, meaning, example.
tests/test_config_doc.py fails when the file differs from what this script makes.

    python scripts/gen_config_doc.py          # rewrite docs/config.md
    python scripts/gen_config_doc.py --check  # exit 1 when docs/config.md is stale
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "config.md"
MARKER = "<!-- Generated below by scripts/gen_config_doc.py from `swiss-runner schema`: do not edit. -->"
NO_DEFAULT = "—"


def schema_of_command() -> dict[str, Any]:
    """The JSON Schema that `swiss-runner schema` prints, run with this interpreter."""
    out = subprocess.run([sys.executable, "-m", "runner", "schema"], capture_output=True,
                         text=True, check=True, timeout=120, cwd=REPO)
    return json.loads(out.stdout)


class _Dumper(yaml.SafeDumper):
    """Quotes as the config loader reads: only true/false are booleans (on, off are words)."""


_BOOL = "tag:yaml.org,2002:bool"
_Dumper.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != _BOOL]
    for first, resolvers in yaml.SafeDumper.yaml_implicit_resolvers.items()}
_Dumper.add_implicit_resolver(_BOOL, re.compile(r"^(?:[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$"),
                              list("tTfF"))


def as_yaml(value: Any) -> str:
    """``value`` as one line of YAML flow style (what a config would say)."""
    text = yaml.dump(value, Dumper=_Dumper, default_flow_style=True, width=10**6,
                     sort_keys=False, allow_unicode=True).strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(value: Any) -> str:
    return f"`{_cell(as_yaml(value))}`"


def _branches(prop: dict[str, Any]) -> list[dict[str, Any]]:
    """The shapes a key's value may take, null left out (null means "absent")."""
    shapes = prop.get("anyOf", [prop])
    return [s for s in shapes if s.get("type") != "null"]


def _ref(shape: dict[str, Any]) -> str | None:
    ref = shape.get("$ref") or shape.get("items", {}).get("$ref")
    return ref.rsplit("/", 1)[1] if ref else None


def type_text(prop: dict[str, Any]) -> str:
    """What a key's value is, in words: ``integer``, ``pgn | epd``, ``list of string``..."""
    parts = []
    for shape in _branches(prop):
        if "$ref" in shape:
            parts.append("block")
        elif "enum" in shape:
            parts.append(" | ".join(as_yaml(v) for v in shape["enum"]))
        elif "const" in shape:
            parts.append(as_yaml(shape["const"]))
        elif shape.get("type") == "array":
            inner = shape.get("items", {})
            parts.append("list of blocks" if "$ref" in inner else
                         f"list of ({type_text(inner)})" if "anyOf" in inner
                         else f"list of {type_text(inner)}")
        elif shape.get("type") == "object":
            values = shape.get("additionalProperties", {})
            parts.append(f"mapping of name to {type_text(values)}")
        elif isinstance(shape.get("type"), list):
            parts.append(" or ".join(shape["type"]))
        elif "type" in shape:
            parts.append(shape["type"])
        else:
            parts.append("any")
    return " or ".join(parts)


def bounds_text(prop: dict[str, Any]) -> str:
    """The key's numeric bounds and list lengths (``1 ≤ x ≤ 1000``), from every shape."""
    found = []
    for shape in _branches(prop):
        low = ("≤", shape["minimum"]) if "minimum" in shape else (
            ("<", shape["exclusiveMinimum"]) if "exclusiveMinimum" in shape else None)
        high = ("≤", shape["maximum"]) if "maximum" in shape else (
            ("<", shape["exclusiveMaximum"]) if "exclusiveMaximum" in shape else None)
        if low or high:
            text = "x"
            if low:
                text = f"{_number(low[1])} {low[0]} {text}"
            if high:
                text = f"{text} {high[0]} {_number(high[1])}"
            found.append(text)
        if "minItems" in shape or "maxItems" in shape:
            items = f"{shape.get('minItems', 0)}..{shape.get('maxItems', '')} items"
            found.append(items.replace(".. items", "+ items"))
        inner = shape.get("items")
        if isinstance(inner, dict) and "$ref" not in inner:
            nested = bounds_text(inner)
            if nested:
                found.append(f"each {nested}")
        if shape.get("uniqueItems"):
            found.append("no repeats")
    return "; ".join(found)


def _number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}" if isinstance(value, int) and abs(value) >= 10_000 else str(value)


def _default(name: str, prop: dict[str, Any], required: list[str]) -> str:
    if name in required:
        return "(required)"
    if "default" not in prop:
        return NO_DEFAULT
    if prop["default"] is None:
        return "none"
    return _code(prop["default"])


def _rows(defs: dict[str, Any], block: dict[str, Any], prefix: str,
          tables: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    rows = []
    required = block.get("required", [])
    for name, prop in block["properties"].items():
        path = f"{prefix}{name}"
        sub = next((_ref(s) for s in _branches(prop) if _ref(s)), None)
        many = any(s.get("type") == "array" for s in _branches(prop))
        if sub:
            inner = f"{path}[i]." if many else f"{path}."
            tables.append((path, inner, defs[sub]))
        key = f"[`{path}`](#{path.lower().replace('.', '')})" if sub else f"`{path}`"
        example = _code(prop["examples"][0]) if prop.get("examples") else ""
        rows.append(f"| {key} | {_cell(type_text(prop))} | {_default(name, prop, required)} | "
                    f"{_cell(bounds_text(prop))} | {_cell(prop.get('description', ''))} | "
                    f"{example} |")
    return rows


def render(schema: dict[str, Any]) -> str:
    """The generated part of docs/config.md (after the marker line), from ``schema``."""
    defs = schema["$defs"]
    out = [MARKER, "", "## Top level", ""]
    header = ["| key | type | default | bounds | meaning | example |",
              "| --- | --- | --- | --- | --- | --- |"]
    tables: list[tuple[str, str, dict[str, Any]]] = []
    out += header + _rows(defs, schema, "", tables)
    if "anyOf" in schema:
        out += ["", "One of these is required: " + ", ".join(
            f"`{s['required'][0]}`" for s in schema["anyOf"]) + "."]
    while tables:
        title, prefix, block = tables.pop(0)
        out += ["", f"## {title}", ""]
        if block.get("description"):
            out += [block["description"], ""]
        out += header + _rows(defs, block, prefix, tables)
        if "anyOf" in block:
            out += ["", "At least one of these: " + ", ".join(
                f"`{s['required'][0]}`" for s in block["anyOf"]) + "."]
    return "\n".join(out) + "\n"


def document(schema: dict[str, Any], current: str) -> str:
    """``current`` (docs/config.md) with everything after the marker made from ``schema``."""
    head, found, _ = current.partition(MARKER)
    if not found:
        raise SystemExit(f"{DOC}: no marker line {MARKER!r}")
    return head + render(schema)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    current = DOC.read_text(encoding="utf-8")
    wanted = document(schema_of_command(), current)
    if args.check:
        if wanted != current:
            print(f"{DOC.relative_to(REPO)} is stale: python scripts/gen_config_doc.py",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
