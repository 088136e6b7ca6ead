"""docs/config.md cannot drift from the config's schema: its key tables are what
scripts/gen_config_doc.py makes from `swiss-runner schema`, every key the schema has is in
it, and every key's documented example is a valid value of that key."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from testkit import REPO

DOC = REPO / "docs" / "config.md"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_config_doc",
                                                  REPO / "scripts" / "gen_config_doc.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "runner", "schema"], capture_output=True,
                         text=True, check=True, timeout=120, cwd=REPO)
    return json.loads(out.stdout)


def schema_keys(schema: dict[str, Any]) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """Every key path of the schema (``Engines[i].Name``) with its property and the path of
    blocks to it, found by walking the schema itself (not the generator's walk)."""
    found: dict[str, tuple[dict[str, Any], list[str]]] = {}

    def walk(block: dict[str, Any], prefix: str, trail: list[str]) -> None:
        for name, prop in block["properties"].items():
            path = prefix + name
            found[path] = (prop, trail + [name])
            for shape in prop.get("anyOf", [prop]):
                ref = shape.get("$ref") or shape.get("items", {}).get("$ref")
                if ref:
                    many = shape.get("type") == "array"
                    walk(schema["$defs"][ref.rsplit("/", 1)[1]],
                         f"{path}[i]." if many else f"{path}.", trail + [name])

    walk(schema, "", [])
    return found


def test_the_doc_is_what_the_generator_makes_of_the_schema(schema: dict[str, Any]) -> None:
    gen = _generator()
    current = DOC.read_text(encoding="utf-8")
    assert gen.MARKER in current
    assert gen.document(schema, current) == current, \
        "docs/config.md is stale: python scripts/gen_config_doc.py"


def test_the_generator_notices_a_changed_description(schema: dict[str, Any]) -> None:
    gen = _generator()
    changed = copy.deepcopy(schema)
    changed["$defs"]["SwissOptionsKeys"]["properties"]["Rounds"]["description"] = "changed"
    current = DOC.read_text(encoding="utf-8")
    assert gen.document(changed, current) != current
    assert "| changed |" in gen.render(changed)


def test_every_key_of_the_schema_is_documented_with_its_facts(schema: dict[str, Any]) -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in text.splitlines()
            if line.startswith("| ") and "`" in line.split("|")[1]}
    keys = schema_keys(schema)
    assert len(keys) > 100
    for path, (prop, _trail) in keys.items():
        row = next((r for k, r in rows.items() if f"`{path}`" in k), None)
        assert row is not None, f"{path} is not in docs/config.md"
        assert prop.get("description") and prop["description"].replace("|", "\\|") in row, path
        assert prop.get("examples"), f"{path} has no example in the schema"


def test_every_documented_example_is_a_valid_value(schema: dict[str, Any]) -> None:
    """Each key's example, put into a minimal valid config at its place, passes the schema."""
    base = {"SwissOptions": {"Rounds": 3}, "TimeControl": "10+0.1",
            "Engines": [{"Name": "A", "Command": "stockfish"},
                        {"Name": "B", "Command": "stockfish"}]}
    validator = jsonschema.Draft202012Validator(schema)
    assert list(validator.iter_errors(base)) == []
    required = {"Cluster": {"Scheduler": "tls://10.0.0.1:8786"}, "EngineLogs": {"Dir": "logs"},
                "Alerts": {"Url": "https://example.org/hook"}}
    for path, (prop, trail) in schema_keys(schema).items():
        data = copy.deepcopy(base)
        node: Any = data
        for name in trail[:-1]:
            node = node[0] if isinstance(node, list) else node
            node = node.setdefault(name, copy.deepcopy(required.get(name, {})))
        node = node[0] if isinstance(node, list) else node
        node[trail[-1]] = prop["examples"][0]
        errors = [e.message for e in validator.iter_errors(data)]
        assert errors == [], (path, prop["examples"][0], errors)
