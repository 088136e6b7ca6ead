"""cutechess's ``engines.json``: read the engines its GUI (and ``cutechess-cli -engine conf=``)
keeps, pick and override them from the YAML config's ``Engines``, print them as YAML.

The file is a JSON list of objects, as cutechess's ``EngineConfiguration::toVariant`` writes
them: ``name``, ``command`` (the whole command line, program and arguments), ``workingDirectory``,
``protocol`` (``uci`` / ``xboard``), ``initStrings``, ``options`` (a list of
``{"type", "name", "value", "default", ...}``), and ``stderrFile``, ``timeoutScaleFactor``,
``restart``, ``ponder``, ``whitepov``, ``validateClaims``, ``debug``, ``variants``; ``restart``
and ``ponder`` become the engine's own ``Restart`` and ``Ponder``.

What becomes of each key is documented in docs/operators.md; this module turns an entry into
the YAML config's engine form (``Name``, ``Command``, ``Args``, ``Protocol``, ``WorkingDir``,
``Options``), which the loader then validates like any engine written in YAML.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

# keys cutechess writes that change nothing here (swiss-runner logs engine I/O with EngineLogs
# and has its own StartupTimeoutS)
IGNORED_KEYS = ("stderrFile", "timeoutScaleFactor", "validateClaims", "debug")
#: cutechess's restart modes; ``auto`` (its default, not written) leaves the event's Restart
RESTART_MODES = ("auto", "on", "off")
_SETOPTION = "setoption name "


class EnginesFileError(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def _resolve(base: Path, value: str) -> str:
    path = Path(os.path.expanduser(value))
    return os.path.normpath(path if path.is_absolute() else base / path)


def _option_value(option: dict[str, Any]) -> Any:
    value = option.get("value")
    if option.get("type") == "check" and isinstance(value, str):
        return value.lower() == "true"
    return value


def _init_options(where: str, lines: Any, problems: list[str]) -> dict[str, Any]:
    """``initStrings`` that are ``setoption name N value V`` become options; others are refused."""
    options: dict[str, Any] = {}
    if not isinstance(lines, list):
        problems.append(f"{where}.initStrings: got {lines!r}, expected a list of strings")
        return options
    for i, line in enumerate(lines):
        text = str(line).strip()
        if text.startswith(_SETOPTION) and " value " in text:
            name, value = text[len(_SETOPTION):].split(" value ", 1)
            options[name.strip()] = value.strip()
        elif text:
            problems.append(f"{where}.initStrings[{i}]: got {text!r}, expected only "
                            "'setoption name N value V' lines (swiss-runner sends options, "
                            "not raw init strings)")
    return options


def _entry(where: str, item: Any, base: Path, problems: list[str],
           variant: str = "standard") -> dict[str, Any] | None:
    if not isinstance(item, dict):
        problems.append(f"{where}: got {item!r}, expected an engine object with name and command")
        return None
    name, command = item.get("name"), item.get("command")
    if not isinstance(name, str) or not name.strip():
        problems.append(f"{where}.name: got {name!r}, expected a non-empty string")
        return None
    where = f"{where} ({name})"
    if not isinstance(command, str) or not command.strip():
        problems.append(f"{where}.command: got {command!r}, expected the engine's command line")
        return None
    try:
        words = shlex.split(command)
    except ValueError as exc:
        problems.append(f"{where}.command: got {command!r}, expected a command line ({exc})")
        return None
    engine: dict[str, Any] = {"Name": name.strip()}
    wd = item.get("workingDirectory") or ""
    if not isinstance(wd, str):
        problems.append(f"{where}.workingDirectory: got {wd!r}, expected a directory path")
        wd = ""
    program = words[0]
    if os.sep in program and not os.path.isabs(program):  # relative to the engine's directory
        program = _resolve(Path(_resolve(base, wd)) if wd else base, program)
    engine["Command"] = program
    if words[1:]:
        engine["Args"] = words[1:]
    protocol = item.get("protocol", "uci")
    if protocol not in ("uci", "xboard"):
        problems.append(f"{where}.protocol: got {protocol!r}, expected uci | xboard")
    engine["Protocol"] = protocol
    if wd:
        engine["WorkingDir"] = _resolve(base, wd)
    if item.get("whitepov"):
        problems.append(f"{where}.whitepov: got true, which swiss-runner does not support "
                        "(scores are read from the mover's view, as UCI engines send them)")
    if "ponder" in item:
        if not isinstance(item["ponder"], bool):
            problems.append(f"{where}.ponder: got {item['ponder']!r}, expected true or false")
        elif item["ponder"]:
            engine["Ponder"] = True
    if "restart" in item:
        mode = item["restart"]
        if not isinstance(mode, str) or mode not in RESTART_MODES:
            problems.append(f"{where}.restart: got {mode!r}, expected auto | on | off")
        elif mode != "auto":
            engine["Restart"] = mode
    variants = item.get("variants")
    wanted = "standard" if variant == "standard" else "fischerandom"  # cutechess's name of 960
    if variants and wanted not in variants:
        what = "standard chess" if wanted == "standard" else f"{variant} (cutechess: fischerandom)"
        problems.append(f"{where}.variants: got {variants!r}, expected an engine that plays {what}")
    options: dict[str, Any] = {}
    raw_options = item.get("options", [])
    if not isinstance(raw_options, list):
        problems.append(f"{where}.options: got {raw_options!r}, expected a list of option objects")
        raw_options = []
    for i, option in enumerate(raw_options):
        if not isinstance(option, dict) or not isinstance(option.get("name"), str):
            problems.append(f"{where}.options[{i}]: got {option!r}, expected an object with a name")
            continue
        if option.get("type") == "button" or option.get("value") is None:
            continue
        value = _option_value(option)
        if "default" in option and value == _option_value({**option, "value": option["default"]}):
            continue  # the engine's own default: nothing to set
        options[option["name"]] = value
    if "initStrings" in item:
        options.update(_init_options(where, item["initStrings"], problems))
    if options:
        engine["Options"] = options
    return engine


# cutechess writes a few hundred bytes per engine: this is thousands of engines
MAX_ENGINES_JSON_BYTES = 4 * 1024 * 1024


def _read_text(path: Path) -> str:
    """The file's text: a regular file of at most MAX_ENGINES_JSON_BYTES, UTF-8. /dev/zero
    or a FIFO named as the engines file hung every command that loads the config."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not wait for a writer
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise EnginesFileError([f"{path}: not a regular file (a directory, device or pipe); "
                                    "expected cutechess's engines.json"])
        os.set_blocking(fd, True)
        data = handle.read(MAX_ENGINES_JSON_BYTES + 1)
    if len(data) > MAX_ENGINES_JSON_BYTES:
        raise EnginesFileError([f"{path}: larger than {MAX_ENGINES_JSON_BYTES // 1024 // 1024} MiB; "
                                "expected cutechess's engines.json"])
    return data.decode("utf-8")


def read_engines_json(path: Path, variant: str = "standard") -> list[dict[str, Any]]:
    """The engines of a cutechess engines.json, in the YAML config's form (file order)."""
    try:
        text = _read_text(path)
    except FileNotFoundError:
        raise EnginesFileError([f"{path}: engines file not found"]) from None
    except UnicodeDecodeError as exc:
        raise EnginesFileError([f"{path}: not UTF-8 text (byte {exc.start}); expected "
                                "cutechess's engines.json"]) from None
    except OSError as exc:
        raise EnginesFileError([f"{path}: cannot read the engines file: "
                                f"{exc.strerror or exc}"]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EnginesFileError([f"{path}:{exc.lineno}: not valid JSON: {exc.msg} "
                                f"(column {exc.colno})"]) from None
    except RecursionError:
        raise EnginesFileError([f"{path}: nested too deeply to be cutechess's engines.json"]) from None
    if not isinstance(data, list):
        raise EnginesFileError([f"{path}: got a JSON {type(data).__name__}, expected a list of "
                                "engine objects as cutechess writes engines.json"])
    problems: list[str] = []
    engines: list[dict[str, Any]] = []
    seen: set[str] = set()
    base = path.resolve().parent
    for i, item in enumerate(data):
        engine = _entry(f"{path}: [{i}]", item, base, problems, variant)
        if engine is None:
            continue
        if engine["Name"] in seen:
            problems.append(f"{path}: [{i}].name: duplicate engine name {engine['Name']!r}")
        seen.add(engine["Name"])
        engines.append(engine)
    if problems:
        raise EnginesFileError(problems)
    return engines


def merge_engines(from_file: list[dict[str, Any]], from_config: Any) -> Any:
    """The config's engine list with engines.json entries filled in by Name.

    No ``Engines`` in the config: every engine of the file. Otherwise each config entry whose
    Name is in the file starts from the file's entry; its own keys override (``Options`` are
    merged; a new ``Command`` drops the file's ``Args``). Other entries stay as written.
    """
    if from_config is None:
        return [dict(e) for e in from_file]
    if not isinstance(from_config, list):
        return from_config  # the loader reports it
    by_name = {e["Name"]: e for e in from_file}
    merged: list[Any] = []
    for item in from_config:
        name = item.get("Name") if isinstance(item, dict) else None
        base = by_name.get(name.strip()) if isinstance(name, str) else None
        if base is None:
            merged.append(item)
            continue
        engine = dict(base)
        if "Command" in item and "Args" not in item:
            engine.pop("Args", None)
        for key, value in item.items():
            if key == "Options" and isinstance(value, dict):
                engine["Options"] = {**engine.get("Options", {}), **value}
            else:
                engine[key] = value
        merged.append(engine)
    return merged


def config_engines(top: dict[str, Any], base: Path,
                   problem: Callable[[str, str], None]) -> Any:
    """The raw ``Engines`` list the loader validates: the YAML's, merged with ``EnginesFile``."""
    file_key = top.get("EnginesFile")
    if file_key is None:
        if "Engines" not in top:
            problem("Engines", "missing required key (a list of engines, or name cutechess's "
                    "engines.json with EnginesFile)")
        return top.get("Engines")
    if not isinstance(file_key, str) or not file_key.strip() or "\0" in file_key:
        problem("EnginesFile", f"got {file_key!r}, expected the path of a cutechess engines.json")
        return top.get("Engines")
    try:
        variant = top.get("Variant")
        from_file = read_engines_json(Path(_resolve(base, file_key)),
                                      variant if variant in ("chess960", "dfrc") else "standard")
    except EnginesFileError as exc:
        for text in exc.problems:
            problem("EnginesFile", text)
        return top.get("Engines")
    return merge_engines(from_file, top.get("Engines"))


def engines_yaml(engines: list[dict[str, Any]]) -> str:
    """The ``Engines:`` block of a config, for pasting (the ``engines-json`` command)."""
    return yaml.safe_dump({"Engines": engines}, sort_keys=False, allow_unicode=True,
                          default_flow_style=False)


__all__ = ["EnginesFileError", "config_engines", "engines_yaml", "merge_engines",
           "read_engines_json"]
