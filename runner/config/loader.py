"""YAML tournament configuration: loading, validation with precise messages, typed result.

Keys are PascalCase so a TCEC/Encroissant ``SwissOptions`` block can be pasted in verbatim.
The keys, their types, bounds, enums and defaults are the models of runner.config.keyschema,
validated by msgspec; each of its errors becomes one line naming the file, the line of the
key, the key path, the bad value and what was expected. The plain checks that follow cover
what a schema cannot know: engines on PATH, files that exist, outputs distinct from inputs,
the time-control syntax, cross-key rules. Relative paths in the file (books, state, PGN,
tablebases, engine commands containing a ``/``) are resolved against the directory of the
config file, so the same command works from any working directory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from runner.config.enginesjson import config_engines
from runner.config.gpus import DetectGpus
from runner.config.limits import MAX_ENGINES
from runner.config.paths import resolve_command
from runner.config.problems import Problems
from runner.config.typed import Config
from runner.config.values import shown as _shown
from runner.config.yamlfile import YamlLimit, code_of, line_at, load_yaml
from runner.errors import ConfigError

__all__ = ["advice", "load_config", "resolve_command", "tablebase_gap"]


# --------------------------------------------------------------------------- loading


def load_config(path: str | os.PathLike[str], *, writes: bool = False,
                detect_gpus: DetectGpus | None = None) -> Config:
    """Load and validate a config file; raise ConfigError listing every problem found.

    ``detect_gpus``: this machine's GPUs for ``Gpus: auto`` (runner.play.gpudetect.detect,
    handed in by the command line; without it ``auto`` is reported: the config runs no
    process).

    ``writes``: the caller will write the outputs (`run`, and `validate` that checks for
    it): they must be writable by this user too. `status`, `standings` and the dashboard
    only read, in a read-only directory as well."""
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
    c = Problems(path, lines)
    for dup in dups:
        c.problems.append(f"{path}: duplicate key {dup}: each key may appear once")
    if raw is None:
        c.problems.append(f"{path}: the config file is empty (no YAML content); expected a "
                          "mapping with SwissOptions, TimeControl, Engines, ...")
        raise ConfigError(c.problems)
    if not isinstance(raw, dict):
        c.bad("(top level)", raw, "a mapping with SwissOptions, TimeControl, Engines, ...")
        raise ConfigError(c.problems)
    # start-up: the schema library loads only when a config is read (not for --help, the typed config)
    from runner.config.build import build_config
    from runner.config.keycheck import check_schema

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
    config = build_config(c, path, raw, top, keys, index, written, writes, detect_gpus)
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


_SYZYGY_WDL = re.compile(r"([KQRBNP]+)v([KQRBNP]+)\.rtbw", re.I)


def tablebase_gap(config: Config) -> str | None:
    """Which piece counts up to ``Adjudication.Tablebases.MaxPieces`` have no Syzygy WDL table
    in its Paths (adjudication then covers fewer men than the config says), or None."""
    tb = config.adjudication.tablebases
    if tb is None:
        return None
    present: set[int] = set()
    for folder in tb.paths:
        try:
            names = os.listdir(folder)
        except OSError:
            continue  # the loader reported a folder it cannot list
        present.update(len(m[1]) + len(m[2]) for m in map(_SYZYGY_WDL.fullmatch, names) if m)
    missing = [n for n in range(3, tb.max_pieces + 1) if n not in present]
    if not missing:
        return None
    covered = min(missing) - 1
    names = [f"{n}-man" for n in missing]
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    folders = ", ".join(str(p) for p in tb.paths)
    reach = (f"adjudication covers up to {covered} pieces" if covered >= 3 else
             "no position is adjudicated by tablebase")
    return (f"Adjudication.Tablebases.MaxPieces: {tb.max_pieces}, but there are no {listed} "
            f"tables in {folders}: {reach}")
