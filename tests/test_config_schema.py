"""The config's JSON Schema (`swiss-runner schema`) against an independent validator (the
`jsonschema` package): the shipped configs pass it, bad ones fail it on the key `validate`
names; docs/config.schema.json is the command's output (docs/config.md's key tables:
tests/test_config_doc.py)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from testkit import write_config

from runner.cli import main
from runner.config import ConfigError, load_config

REPO = Path(__file__).resolve().parent.parent
SHIPPED = sorted((REPO / "configs").glob("*.yaml"))


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", "import sys; from runner.cli import main; "
                          "sys.exit(main(['schema']))"], capture_output=True, text=True,
                         check=True, timeout=60)
    data = json.loads(out.stdout)
    jsonschema.Draft202012Validator.check_schema(data)
    return data


def test_the_schema_is_draft_2020_12_and_published(schema: dict[str, Any]) -> None:
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert json.loads((REPO / "docs" / "config.schema.json").read_text()) == schema, \
        "docs/config.schema.json is stale: swiss-runner schema > docs/config.schema.json"
    swiss = schema["$defs"]["SwissOptionsKeys"]
    assert swiss["additionalProperties"] is False
    rounds = swiss["properties"]["Rounds"]
    assert (rounds["type"], rounds["minimum"], rounds["maximum"], rounds["default"]) == (
        "integer", 1, 1000, 11)
    assert rounds["description"]
    assert sorted(swiss["properties"]["Seeding"]["enum"]) == ["groups", "listed", "random"]
    assert set(schema["required"]) == {"SwissOptions", "TimeControl"}
    assert schema["$defs"]["ClusterKeys"]["required"] == ["Scheduler"]


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_config_passes_the_schema_and_names_it(schema: dict[str, Any],
                                                             path: Path) -> None:
    text = path.read_text()
    assert text.startswith("# yaml-language-server: $schema=../docs/config.schema.json\n")
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(yaml.safe_load(text)))
    assert errors == []
    load_config(path)  # and validate agrees


def _keys_of(error: jsonschema.ValidationError) -> list[str]:
    """The key paths (validate's spelling) a jsonschema error is about: its own and, for an
    anyOf (a block or null), those of the alternatives' errors."""
    keys = [_key_of(error)]
    for sub in error.context or ():
        keys += _keys_of(sub)
    return keys


def _key_of(error: jsonschema.ValidationError) -> str:
    """The key path (validate's spelling) a jsonschema error is about."""
    parts = list(error.absolute_path)
    if error.validator == "additionalProperties":
        parts.append(re.search(r"'([^']+)' was unexpected", error.message)[1])
    elif error.validator == "required":
        parts.append(re.match(r"'([^']+)' is a required property", error.message)[1])
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _base(tmp_path: Path) -> dict[str, Any]:
    return {
        "SwissOptions": {"Rounds": 3, "StatePath": "state/s.json"},
        "TimeControl": "10+0.1",
        "Engines": [{"Name": "A", "Command": "stockfish", "Rating": 3000},
                    {"Name": "B", "Command": "stockfish"},
                    {"Name": "C", "Command": "fairymax", "Protocol": "xboard"}],
    }


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    for k in keys[:-1]:
        data = data[int(k)] if isinstance(data, list) else data.setdefault(k, {})
    last: Any = int(keys[-1]) if isinstance(data, list) else keys[-1]
    if value is _DELETE:
        del data[last]
    else:
        data[last] = value


_DELETE = object()
# (mutation, value, the key both validate and the schema name)
BAD = [
    ("SwissOptions.Rounds", 0, "SwissOptions.Rounds"),
    ("SwissOptions.Rounds", 1001, "SwissOptions.Rounds"),
    ("SwissOptions.GamesPerMatch", 3, "SwissOptions.GamesPerMatch"),
    ("SwissOptions.GamesPerMatch", True, "SwissOptions.GamesPerMatch"),
    ("SwissOptions.Roundz", 5, "SwissOptions.Roundz"),
    ("SwissOptions.Seeding", "elo", "SwissOptions.Seeding"),
    ("SwissOptions.UniquePerMatchOnly", "yes please", "SwissOptions.UniquePerMatchOnly"),
    ("SwissOptions", _DELETE, "SwissOptions"),
    ("TimeControl", _DELETE, "TimeControl"),
    ("Concurrency", 0, "Concurrency"),
    ("Concurrency", 1.5, "Concurrency"),
    ("Backend", "fastchess", "Backend"),
    ("Event", "", "Event"),
    ("Variant", "atomic", "Variant"),
    ("SnapshotIntervalS", 0.01, "SnapshotIntervalS"),
    ("Tiebreaks", ["SonnebornBerger", "Bucholz"], "Tiebreaks[1]"),
    ("PgnExtras", ["ECO", "Eco"], "PgnExtras[1]"),
    ("PgnComments", "long", "PgnComments"),
    ("Engines.2.Protocol", "winboard", "Engines[2].Protocol"),
    ("Engines.1.Nodes", -5, "Engines[1].Nodes"),
    ("Engines.1.Rating", 20000, "Engines[1].Rating"),
    ("Engines.0.Comand", "stockfish", "Engines[0].Comand"),
    ("Engines.1.Ponder", "yes", "Engines[1].Ponder"),
    ("Engines.0.Options", ["Hash", 16], "Engines[0].Options"),
    ("Engines.0.Restart", "sometimes", "Engines[0].Restart"),
    ("Adjudication", {"TcecDraw": {"ScoreCp": "twenty"}}, "Adjudication.TcecDraw.ScoreCp"),
    ("Adjudication", {"Tablebases": {"MaxPieces": 8}}, "Adjudication.Tablebases.MaxPieces"),
    ("Interruption", {"Mode": "later"}, "Interruption.Mode"),
    ("Ratings", {"Confidence": 100}, "Ratings.Confidence"),
    ("Ratings", {"WhiteAdvantage": 5000}, "Ratings.WhiteAdvantage"),
    ("Ratings", {"DrawRate": "often"}, "Ratings.DrawRate"),
    ("Cluster", {"WaitS": 5}, "Cluster.Scheduler"),
    ("Cluster", {"Scheduler": "tcp://127.0.0.1:8786", "Insecure": "yes"}, "Cluster.Insecure"),
    ("Cluster", {"Scheduler": "tcp://127.0.0.1:8786", "MaxLostAttempts": 0},
     "Cluster.MaxLostAttempts"),
    ("EngineLogs", {"Dir": "logs", "Keep": "some"}, "EngineLogs.Keep"),
    ("Affinity", "sometimes", "Affinity"),
    ("Restart", "sometimes", "Restart"),
    ("Alerts", {"Retries": 2}, "Alerts"),
    ("Alerts", {"Url": "ftp://example.org/x"}, "Alerts.Url"),
    ("Alerts", {"Url": "https://example.org/x", "Retries": 50}, "Alerts.Retries"),
    ("Alerts", {"Url": "https://example.org/x", "TimeoutS": 0}, "Alerts.TimeoutS"),
    ("Alerts", {"Url": "https://example.org/x", "QueueSize": 0}, "Alerts.QueueSize"),
    ("Alerts", {"Url": "https://example.org/x", "On": ["round_ended", "lunch"]}, "Alerts.On[1]"),
    ("Alerts", {"Command": [], "Url": "https://example.org/x"}, "Alerts.Command"),
]


@pytest.mark.parametrize(("path", "value", "key"), BAD,
                         ids=[f"{b[0]}={b[1]!r}"[:40] for b in BAD])
def test_bad_configs_fail_the_schema_on_the_key_validate_names(
        schema: dict[str, Any], tmp_path: Path, path: str, value: Any, key: str) -> None:
    data = _base(tmp_path)
    _set(data, path, value if value is _DELETE else copy.deepcopy(value))
    cfg = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert any(f": {key}: " in p for p in err.value.problems), err.value.problems
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(data))
    assert key in [k for e in errors for k in _keys_of(e)], [(_key_of(e), e.message)
                                                             for e in errors]


def test_alerts_and_insecure_reach_the_config(tmp_path: Path) -> None:
    data = _base(tmp_path)
    data["Cluster"] = {"Scheduler": "tcp://10.0.0.2:8786", "Insecure": True}
    data["Alerts"] = {"Command": "notify-send 'swiss runner'", "On": ["event_failed"],
                      "DiskFreeMb": 0}
    config = load_config(write_config(tmp_path, data))
    assert config.cluster is not None and config.cluster.insecure is True
    assert config.alerts is not None
    assert config.alerts.command == ("notify-send", "swiss runner")
    assert (config.alerts.url, config.alerts.on, config.alerts.disk_free_mb) == (
        None, ("event_failed",), 0)
    assert (config.alerts.timeout_s, config.alerts.retries, config.alerts.queue_size) == (
        10.0, 3, 100)
    del data["Alerts"], data["Cluster"]
    config = load_config(write_config(tmp_path, data))
    assert config.alerts is None and config.cluster is None


def test_schema_command_exits_0_without_a_config(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "swiss-runner config"


def test_the_command_line_parser_does_not_import_the_schema_library() -> None:
    """`--help` and the typed config need no msgspec: only loading a config (and `schema`)
    imports it."""
    code = ("import sys; import runner.cli, runner.config, runner.config.typed, "
            "runner.config.fingerprint; runner.cli.build_parser(); "
            "print('msgspec' in sys.modules, 'runner.config.keyschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.split() == ["False", "False"]


# (changes, every key validate must name at once): msgspec stops at the first error, so the
# loader validates again after each; none may hide another
TOGETHER = [
    ({"Cluster": {"Scheduler": ["x"]}, "SwissOptions.UniquePerMatchOnly": 1},
     ["Cluster.Scheduler", "SwissOptions.UniquePerMatchOnly"]),
    ({"Engines.0": {"Plies": 3000, "Name": 10**20}},
     ["Engines[0].Plies", "Engines[0].Name", "Engines[0].Command"]),
    ({"SwissOptions": _DELETE, "Concurrency": 0, "Engines.2.Protocol": "uic"},
     ["SwissOptions", "Concurrency", "Engines[2].Protocol"]),
    ({"Tiebreaks": ["Bucholz", "Wins", "Wins"], "Alerts": {"Retries": 50}},
     ["Tiebreaks[0]", "Tiebreaks[2]", "Alerts.Retries", "Alerts"]),
    ({"Engines.0": None, "Engines.1": 5, "PgnExtras": ["ECO", "Eco", "X"]},
     ["Engines[0].Name", "Engines[0].Command", "Engines[1]", "PgnExtras[1]", "PgnExtras[2]"]),
]


@pytest.mark.parametrize(("changes", "keys"), TOGETHER, ids=[",".join(t[1]) for t in TOGETHER])
def test_every_problem_at_once_whatever_msgspec_reports_first(
        tmp_path: Path, changes: dict[str, Any], keys: list[str]) -> None:
    data = _base(tmp_path)
    for path, value in changes.items():
        _set(data, path, value)
    with pytest.raises(ConfigError) as err:
        load_config(write_config(tmp_path, data))
    named = [p.split(": ")[1] for p in err.value.problems]
    assert sorted(named) == sorted(keys), err.value.problems


def test_many_bad_engines_are_all_named(tmp_path: Path) -> None:
    data = _base(tmp_path)
    data["Engines"] = [{"Name": f"E{i}", "Command": "stockfish", "Protocol": "uic", "Nodes": 0}
                       for i in range(300)]
    with pytest.raises(ConfigError) as err:
        load_config(write_config(tmp_path, data))
    assert len(err.value.problems) == 600
    assert any(p.endswith("Engines[299].Protocol: got 'uic', expected uci | xboard")
               for p in err.value.problems)


def test_the_config_doc_shows_the_schema_line_the_shipped_configs_start_with() -> None:
    line = "# yaml-language-server: $schema=../docs/config.schema.json"
    assert f"```yaml\n{line}\n```" in (REPO / "docs" / "config.md").read_text()
    assert (REPO / "configs" / line.rsplit("=", 1)[1]).resolve() == (
        REPO / "docs" / "config.schema.json")


def _choices(node: dict[str, Any]) -> list[str]:
    """The words a key's type allows (its enums and consts, in lists too)."""
    words = [*node.get("enum", []), *([node["const"]] if "const" in node else [])]
    for part in [*node.get("anyOf", []), *([node["items"]] if isinstance(
            node.get("items"), dict) else [])]:
        words += _choices(part)
    return [w for w in words if isinstance(w, str)]


def test_a_description_that_lists_the_choices_lists_them_all(schema: dict[str, Any]) -> None:
    """`Alerts.On`'s description listed 10 of the 13 kinds its type allows: a description
    naming some of its key's choices names every one (and so does docs/alerts.md's table)."""
    short = []
    for block in [schema, *schema["$defs"].values()]:
        for name, node in block.get("properties", {}).items():
            choices = set(_choices(node)) - {"none"}
            said = {w for w in choices if re.search(rf"\b{re.escape(w)}\b",
                                                    node.get("description", ""))}
            if len(choices) > 2 and len(said) > len(choices) // 2 and said != choices:
                short.append(f"{name}: {sorted(choices - said)} not in its description")
    assert short == []
    from runner.config import ALERT_KINDS

    table = (REPO / "docs" / "alerts.md").read_text().split("| kind | when |", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \|", table.split("\n\n", 1)[0], re.M)
    assert sorted(rows) == sorted(ALERT_KINDS)
