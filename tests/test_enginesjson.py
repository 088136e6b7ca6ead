"""cutechess's engines.json: read as its GUI writes it, picked and overridden by the YAML
config's Engines, converted to YAML by `swiss-runner engines-json`, and played with."""

from __future__ import annotations

import io
import json
from pathlib import Path

import chess.pgn
import pytest
import yaml
from testkit import write_config

from runner.cli import main
from runner.config import load_config


def gui_engines_json(folder: Path) -> Path:
    """An engines.json the way cutechess's GUI saves it (EngineConfiguration::toVariant): every
    key it writes, options as the engine reported them with their current values."""
    (folder / "sf").mkdir()
    data = [
        {
            "command": "/usr/games/stockfish",
            "name": "Stockfish 16",
            "options": [
                {"alias": "", "default": 1, "max": 1024, "min": 1, "name": "Threads",
                 "type": "spin", "value": 1},
                {"alias": "", "default": 16, "max": 33554432, "min": 1, "name": "Hash",
                 "type": "spin", "value": 32},
                {"name": "Clear Hash", "type": "button"},
                {"alias": "", "default": False, "name": "Ponder", "type": "check", "value": False},
                {"alias": "", "default": "<empty>", "name": "SyzygyPath", "type": "folder",
                 "value": "<empty>"},
                {"alias": "", "default": 20, "max": 20, "min": 0, "name": "Skill Level",
                 "type": "spin", "value": 20},
            ],
            "protocol": "uci",
            "stderrFile": "",
            "timeoutScaleFactor": 1,
            "workingDirectory": str(folder / "sf"),
        },
        {
            "command": "/usr/games/ethereal-chess",
            "name": "Ethereal",
            "options": [
                {"alias": "", "default": 16, "max": 65536, "min": 1, "name": "Hash",
                 "type": "spin", "value": 16},
            ],
            "protocol": "uci",
            "stderrFile": "",
            "timeoutScaleFactor": 1,
            "workingDirectory": "",
        },
        {
            "command": "/usr/games/fairymax",
            "name": "Fairy-Max",
            "protocol": "xboard",
            "stderrFile": "",
            "timeoutScaleFactor": 1.5,
            "workingDirectory": "",
            "initStrings": ["setoption name Hash value 8"],
            "restart": "on",
        },
    ]
    path = folder / "engines.json"
    path.write_text(json.dumps(data, indent=4, sort_keys=True))
    return path


def config(folder: Path, engines: list | None, name: str = "ev.yaml") -> Path:
    data = {"SwissOptions": {"Rounds": 1, "StatePath": "state/s.json"},
            "TimeControl": "2+0.05", "EnginesFile": "engines.json"}
    if engines is not None:
        data["Engines"] = engines
    path = write_config(folder, data, name)
    return path


def test_all_engines_of_the_file_when_the_config_has_no_engines(tmp_path):
    gui_engines_json(tmp_path)
    cfg = load_config(config(tmp_path, None))
    sf, eth, fm = cfg.engines
    assert (sf.name, sf.command, sf.protocol, sf.working_dir) == (
        "Stockfish 16", "/usr/games/stockfish", "uci", str(tmp_path / "sf"))
    assert sf.options == {"Hash": 32}  # only what differs from the engine's defaults
    assert eth.options == {} and eth.working_dir is None
    assert (fm.protocol, fm.options) == ("xboard", {"Hash": "8"})  # from initStrings


def test_config_picks_and_overrides_by_name(tmp_path):
    gui_engines_json(tmp_path)
    cfg = load_config(config(tmp_path, [
        {"Name": "Stockfish 16", "Rating": 3500, "Options": {"Threads": 1}},
        {"Name": "Ethereal", "Options": {"Hash": 64}, "StartupTimeoutS": 60},
        {"Name": "Toga", "Command": "toga2"},
    ]))
    assert [e.name for e in cfg.engines] == ["Stockfish 16", "Ethereal", "Toga"]
    sf, eth, toga = cfg.engines
    assert sf.rating == 3500 and sf.options == {"Hash": 32, "Threads": 1}
    assert eth.options == {"Hash": 64} and eth.startup_timeout_s == 60
    assert toga.command.endswith("toga2")


def test_converter_prints_yaml_that_loads_as_the_same_engines(tmp_path, capsys):
    gui_engines_json(tmp_path)
    assert main(["engines-json", str(tmp_path / "engines.json")]) == 0
    text = capsys.readouterr().out
    engines = yaml.safe_load(text)["Engines"]
    assert [e["Name"] for e in engines] == ["Stockfish 16", "Ethereal", "Fairy-Max"]
    assert engines[0] == {"Name": "Stockfish 16", "Command": "/usr/games/stockfish",
                          "Protocol": "uci", "WorkingDir": str(tmp_path / "sf"),
                          "Options": {"Hash": 32}}
    path = write_config(tmp_path, {"SwissOptions": {"StatePath": "s/s.json"},
                                    "TimeControl": "1+0.1", "Engines": engines}, "converted.yaml")
    from_yaml = load_config(path).engines
    from_json = load_config(config(tmp_path, None)).engines
    assert from_yaml == from_json
    assert main(["engines-json", str(tmp_path / "engines.json"), "--engine", "Ethereal"]) == 0
    assert [e["Name"] for e in yaml.safe_load(capsys.readouterr().out)["Engines"]] == ["Ethereal"]


@pytest.mark.slow
@pytest.mark.engines
def test_an_engine_from_engines_json_plays(tmp_path, capsys):
    gui_engines_json(tmp_path)
    path = config(tmp_path, None)
    assert main(["play", str(path), "--white", "Stockfish 16", "--black", "Ethereal",
                 "--tc", "2+0.05", "--moves", "e4 e5"]) == 0
    game = chess.pgn.read_game(io.StringIO(capsys.readouterr().out))
    assert (game.headers["White"], game.headers["Black"]) == ("Stockfish 16", "Ethereal")
    assert len(list(game.mainline_moves())) > 2


@pytest.mark.parametrize("content, expect", [
    ("[{\"name\": \"X\",}]", "engines.json:1: not valid JSON"),
    ("{\"name\": \"X\"}", "got a JSON dict, expected a list of engine objects"),
    ("[{\"name\": \"X\"}]", "[0] (X).command: got None, expected the engine's command line"),
    ("[{\"name\": \"X\", \"command\": \"sf\", \"protocol\": \"cecp\"}]",
     "[0] (X).protocol: got 'cecp', expected uci | xboard"),
    ("[{\"name\": \"X\", \"command\": \"sf\", \"whitepov\": true}]", "[0] (X).whitepov: got true"),
    ("[{\"name\": \"X\", \"command\": \"sf\", \"restart\": \"never\"}]",
     "[0] (X).restart: got 'never', expected auto | on | off"),
    ("[{\"name\": \"X\", \"command\": \"sf\", \"ponder\": \"yes\"}]",
     "[0] (X).ponder: got 'yes', expected true or false"),
    ("[{\"name\": \"X\", \"command\": \"sf\", \"initStrings\": [\"debug on\"]}]",
     "[0] (X).initStrings[0]: got 'debug on'"),
    ("[{\"name\": \"X\", \"command\": \"sf\"}, {\"name\": \"X\", \"command\": \"sf\"}]",
     "[1].name: duplicate engine name 'X'"),
])
def test_bad_engines_json_is_exit_2_naming_file_entry_and_key(tmp_path, capsys, content, expect):
    (tmp_path / "engines.json").write_text(content)
    assert main(["engines-json", str(tmp_path / "engines.json")]) == 2
    err = capsys.readouterr()
    assert expect in err.err and err.out == "" and "Traceback" not in err.err
    path = config(tmp_path, None)
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:5: EnginesFile: " in err and expect in err
    assert not (tmp_path / "state").exists()


def test_restart_and_ponder_of_engines_json_become_the_engines_own(tmp_path):
    """cutechess's per-engine ``restart`` (auto | on | off) and ``ponder``: an engine's own
    Restart / Ponder; auto leaves the event's Restart; a YAML entry's own key wins."""
    data = [{"name": n, "command": "/usr/games/stockfish", "protocol": "uci", **extra}
            for n, extra in [("Kept", {"restart": "off", "ponder": True}),
                             ("Fresh", {"restart": "on"}), ("Auto", {"restart": "auto"}),
                             ("Plain", {})]]
    (tmp_path / "engines.json").write_text(json.dumps(data))
    engines = {e.name: e for e in load_config(config(tmp_path, None)).engines}
    assert [(engines[n].restart, engines[n].ponder) for n in ("Kept", "Fresh", "Auto", "Plain")] \
        == [(False, True), (True, False), (True, False), (True, False)]
    path = write_config(tmp_path, {"SwissOptions": {"Rounds": 1, "StatePath": "state/s.json"},
                                    "TimeControl": "2+0.05", "EnginesFile": "engines.json",
                                    "Restart": "off",
                                    "Engines": [{"Name": "Kept", "Restart": "on"},
                                                {"Name": "Fresh"}, {"Name": "Auto"}]},
                        "override.yaml")
    engines = {e.name: e for e in load_config(path).engines}
    assert [engines[n].restart for n in ("Kept", "Fresh", "Auto")] == [True, True, False]


def test_restart_off_of_engines_json_with_a_backend_that_cannot_keep_engines(tmp_path, capsys):
    """cutechess-cli started for each game keeps nothing: the file's restart=off gives fresh
    engines there, without an error (a Restart: off written in the YAML is refused)."""
    (tmp_path / "engines.json").write_text(json.dumps(
        [{"name": n, "command": "/usr/games/stockfish", "restart": "off"} for n in "AB"]))
    base = {"SwissOptions": {"Rounds": 1, "StatePath": "state/s.json"}, "TimeControl": "2+0.05",
            "EnginesFile": "engines.json", "Backend": "cutechess",
            "CutechessPath": "/bin/true"}
    cfg = load_config(write_config(tmp_path, base, "cc.yaml"))
    assert [e.restart for e in cfg.engines] == [True, True]
    path = write_config(tmp_path, {**base, "Engines": [{"Name": "A", "Restart": "off"}]},
                        "cc2.yaml")
    assert main(["validate", str(path)]) == 2
    assert "Engines[0].Restart: got 'off', expected on with Backend: cutechess" \
        in capsys.readouterr().err


def test_variants_of_engines_json_are_checked_against_the_events_variant(tmp_path, capsys):
    (tmp_path / "engines.json").write_text(json.dumps(
        [{"name": "Std", "command": "/usr/games/stockfish", "variants": ["standard"]},
         {"name": "Frc", "command": "/usr/games/stockfish",
          "variants": ["standard", "fischerandom"]}]))
    base = {"SwissOptions": {"Rounds": 1, "StatePath": "state/s.json"}, "TimeControl": "2+0.05",
            "EnginesFile": "engines.json"}
    assert [e.name for e in load_config(write_config(tmp_path, base, "std.yaml")).engines] \
        == ["Std", "Frc"]
    path = write_config(tmp_path, {**base, "Variant": "chess960"}, "frc.yaml")
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "[0] (Std).variants: got ['standard'], expected an engine that plays chess960" in err
    assert "(Frc)" not in err


def test_no_engines_and_no_engines_file_is_reported(tmp_path, capsys):
    path = write_config(tmp_path, "SwissOptions: {Rounds: 1}\nTimeControl: 1+0.1\n", "ev.yaml")
    assert main(["validate", str(path)]) == 2
    assert "Engines: missing required key (a list of engines, or name cutechess's engines.json" \
        in capsys.readouterr().err


