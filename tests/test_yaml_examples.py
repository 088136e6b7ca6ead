"""Every YAML example the project shows is loaded from its text and validated: each fenced
```yaml block of README.md and docs/*.md, and every configs/*.yaml file.

How a block is validated (the rule, so a new page's blocks need no new code):
- read by the project's YAML loader (runner.config.yamlfile: YAML 1.2 booleans, so the
  documented key `Alerts.On` is the string "On", not true);
- a complete config (configs/*.yaml, a block with SwissOptions, TimeControl and Engines) is
  loaded by `load_config` as `swiss-runner validate` loads it; the shipped configs in place;
- a fragment (a block that is only part of a config) is merged into a minimal base config
  AS TEXT: the base's top-level keys that the fragment does not set, then the fragment's
  lines (a bare list: engines after the base's two). The result passes the published JSON Schema
  (`swiss-runner schema`) and, when the fragment names no file, engine or host that only the
  page's reader has (FRAGMENTS_NAMING_FILES), `load_config` too;
- a block of another program's configuration (OTHER_FORMATS, e.g. Dask's) is read as YAML
  and must be a mapping under that program's top-level key.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from testkit import REPO, write_config

from runner.config import ConfigError, load_config, resolve_command
from runner.config.yamlfile import load_yaml

FENCE = re.compile(r"^```ya?ml[^\n]*\n(.*?)^```", re.S | re.M)
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CONFIGS = sorted((REPO / "configs").glob("*.yaml"))
OTHER_FORMATS = {"distributed": "Dask's own configuration (docs/cluster.md)"}
# top-level keys whose documented values name things only the reader's machine has (a book
# beside their config, /srv/syzygy, an engines.json, ssh): schema-validated only
FRAGMENTS_NAMING_FILES = {"Openings", "EnginesFile", "Adjudication", "CutechessPath",
                          "Backend", "Affinity", "Ponder", "Cluster"}
BASE = {  # the minimal base config a fragment is merged into, one text per top-level key
    "SwissOptions": "SwissOptions: {Rounds: 3, GamesPerMatch: 2}",
    "TimeControl": 'TimeControl: "10+0.1"',
    "Engines": "Engines:\n  - {Name: Stockfish, Command: stockfish}\n"
               "  - {Name: Ethereal, Command: ethereal-chess}",
}


def _blocks() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            line = text[:match.start()].count("\n") + 2
            found.append((f"{page.relative_to(REPO)}:{line}", match.group(1)))
    return found


BLOCKS = _blocks()


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "runner", "schema"], capture_output=True,
                         text=True, check=True, timeout=120, cwd=REPO)
    return json.loads(out.stdout)


def _read(tmp_path: Path, text: str) -> Any:
    """``text`` as the project's loader reads a config file."""
    data, _lines, dups = load_yaml(write_config(tmp_path / "read", text))
    assert dups == []
    return data


def merged_text(fragment: str, data: Any) -> str:
    """The fragment with the base's other top-level keys before it, as config text."""
    if isinstance(data, list):  # more engines: after the base's
        fragment = BASE["Engines"] + "\n" + textwrap.indent(textwrap.dedent(fragment), "  ")
        data = {"Engines": data}
    base = [text for name, text in BASE.items() if name not in data]
    return "\n".join(base) + "\n" + fragment


def _names_the_readers_things(config: dict[str, Any]) -> bool:
    """Whether the config names a file, host or engine only the page's reader has."""
    engines = config.get("Engines") or []
    return bool(set(config) & FRAGMENTS_NAMING_FILES) or any(
        resolve_command(str(e.get("Command", "")), REPO) is None for e in engines)


def _schema_problems(schema: dict[str, Any], data: Any) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]


def test_the_pages_have_yaml_examples() -> None:
    assert len(BLOCKS) >= 15
    assert any(where.startswith("README.md") for where, _ in BLOCKS)
    assert any(where.startswith("docs/alerts.md") for where, _ in BLOCKS)


@pytest.mark.parametrize(("where", "text"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_every_yaml_block_of_the_docs_is_valid(tmp_path: Path, schema: dict[str, Any],
                                               where: str, text: str) -> None:
    data = _read(tmp_path, text)
    if data is None:  # only comments, such as the editor's schema line
        assert all(not line.strip() or line.lstrip().startswith("#")
                   for line in text.splitlines())
        return
    if isinstance(data, dict) and set(data) & set(OTHER_FORMATS):
        assert len(data) == 1 and isinstance(next(iter(data.values())), dict), where
        return
    config = merged_text(text, data)
    merged = _read(tmp_path, config)
    assert _schema_problems(schema, merged) == [], where
    if _names_the_readers_things(merged):
        return
    load_config(write_config(tmp_path, config))  # raises ConfigError naming what is wrong


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_shipped_config_is_valid(tmp_path: Path, schema: dict[str, Any],
                                       path: Path) -> None:
    data = _read(tmp_path, path.read_text(encoding="utf-8"))
    assert _schema_problems(schema, data) == []
    load_config(path)


def test_the_alerts_block_of_the_docs_loads_from_its_text(tmp_path: Path) -> None:
    """docs/alerts.md writes `On: [...]`: YAML 1.1 read `On` as true (`Alerts.True: unknown
    key`); the config's loader reads it as the key it is."""
    text = next(t for w, t in BLOCKS if w.startswith("docs/alerts.md") and "On: [" in t)
    config = load_config(write_config(tmp_path, merged_text(text, _read(tmp_path, text))))
    assert config.alerts is not None
    assert sorted(config.alerts.on) == sorted(["event_failed", "event_stopped", "engine_crashed",
                                               "worker_lost", "disk_low", "td_decision"])


@pytest.mark.parametrize("word", ["Yes", "No", "Off", "On", "y", "n", "yes", "off"])
def test_yaml_1_1_boolean_words_are_strings_where_a_string_is_meant(tmp_path: Path,
                                                                   word: str) -> None:
    config = load_config(write_config(tmp_path, merged_text(
        f"Event: {word}\nSite: {word}\nEngines:\n  - {{Name: {word}, Command: stockfish}}\n"
        "  - {Name: Ethereal, Command: ethereal-chess}\n", {"Engines": []})))
    assert (config.event, config.site) == (word, word)
    assert config.engines[0].name == word


@pytest.mark.parametrize(("written", "value"), [("true", True), ("False", False),
                                                ("TRUE", True), ("false", False)])
def test_true_and_false_are_still_booleans(tmp_path: Path, written: str, value: bool) -> None:
    config = load_config(write_config(tmp_path, merged_text(
        f"SwissOptions: {{Rounds: 3, AllowExtraPairsOnTie: {written}}}\n", {"SwissOptions": 0})))
    assert config.swiss.allow_extra_pairs_on_tie is value


def test_a_yaml_1_1_word_where_a_boolean_is_meant_is_refused_with_its_line(
        tmp_path: Path) -> None:
    path = write_config(tmp_path, merged_text(
        "SwissOptions:\n  Rounds: 3\n  AllowExtraPairsOnTie: yes\n", {"SwissOptions": 0}))
    with pytest.raises(ConfigError) as err:
        load_config(path)
    problem = "\n".join(err.value.problems)
    assert "SwissOptions.AllowExtraPairsOnTie" in problem and "'yes'" in problem
    line = path.read_text().splitlines().index("  AllowExtraPairsOnTie: yes") + 1
    assert f":{line}:" in problem, problem
