"""Config loading and validation: good configs load, each bad one is named precisely."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from testkit import backend, loop_config, run_args, write_config

from runner.cli import main
from runner.cli.run import cli_run
from runner.config import ConfigError, load_config
from runner.domain.timecontrol import Clock, parse_time_control

REPO = Path(__file__).resolve().parent.parent


def base_config(tmp_path: Path) -> dict:
    book = tmp_path / "book.pgn"
    book.write_text('[Event "x"]\n\n1. e4 e5 *\n')
    return {
        "Event": "Test",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 3, "StatePath": "state/s.json"},
        "TimeControl": "10+0.1",
        "Openings": {"File": "book.pgn", "Format": "pgn", "Plies": 8},
        "Engines": [
            {"Name": "A", "Command": "stockfish", "Rating": 3000},
            {"Name": "B", "Command": "stockfish", "Rating": 2900},
            {"Name": "C", "Command": "fairymax", "Protocol": "xboard"},
        ],
    }




def test_good_config_loads_with_defaults(tmp_path: Path) -> None:
    cfg = load_config(write_config(tmp_path, base_config(tmp_path)))
    assert [e.name for e in cfg.engines] == ["A", "B", "C"]
    assert cfg.engines[0].command.endswith("stockfish") and os.path.isabs(cfg.engines[0].command)
    assert cfg.engines[2].protocol == "xboard"
    assert cfg.swiss.games_per_match == 2 and cfg.swiss.rounds == 3
    assert cfg.swiss.state_path == tmp_path / "state" / "s.json"  # relative to the config file
    assert cfg.database == tmp_path / "state" / "s.sqlite3"
    assert cfg.pgn_out == tmp_path / "state" / "games.pgn"
    assert cfg.openings is not None and cfg.openings.order == "random"
    assert cfg.tiebreaks == ("SonnebornBerger", "RMobility", "Wins", "DirectEncounter")
    assert str(cfg.time_control) == "10+0.1"


def _mutate(data: dict, path: str, value: object) -> None:
    """Set data[path] where path is like 'SwissOptions.Rounds' or 'Engines.1.Command'."""
    keys = path.split(".")
    target = data
    for k in keys[:-1]:
        target = target[int(k)] if isinstance(target, list) else target[k]
    last = keys[-1]
    if value is _DELETE:
        if isinstance(target, list):
            del target[int(last)]
        else:
            del target[last]
    elif isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value


_DELETE = object()

# (mutation path, new value, substrings every one of which must be in one error line)
MALFORMED = [
    ("SwissOptions.Rounds", 0, ["SwissOptions.Rounds", "got 0", "integer >= 1"]),
    ("SwissOptions.GamesPerMatch", 3, ["SwissOptions.GamesPerMatch", "got 3", "1 (single rounds) or 2"]),
    ("SwissOptions.Roundz", 5, ["SwissOptions.Roundz", "unknown key", "did you mean 'Rounds'"]),
    ("SwissOptions.Seeding", "elo", ["SwissOptions.Seeding", "'elo'", "groups | random | listed"]),
    ("SwissOptions.DoubleRoundSchedule", "zigzag", ["DoubleRoundSchedule", "'zigzag'", "split | consecutive"]),
    ("SwissOptions.UniquePerMatchOnly", "yes please", ["UniquePerMatchOnly", "'yes please'", "true or false"]),
    ("TimeControl", "45 minutes", ["TimeControl", "'45 minutes'", "[moves/]time[+increment]"]),
    ("TimeControl", "1:75+1", ["TimeControl", "'1:75+1'", "below 60"]),
    ("Engines.1.Name", "A", ["Engines[1].Name", "duplicate engine name 'A'", "Engines[0]"]),
    ("Engines.0.Command", "no-such-engine-xyz", ["Engines[0].Command", "'no-such-engine-xyz'", "not found"]),
    ("Engines.0.Command", "./notexec.sh", ["Engines[0].Command", "'./notexec.sh'", "not executable"]),
    ("Engines.2.Protocol", "winboard", ["Engines[2].Protocol", "'winboard'", "uci | xboard"]),
    ("Engines.1.Nodes", -5, ["Engines[1].Nodes", "-5", "positive integer"]),
    ("Engines.0.Comand", "stockfish", ["Engines[0].Comand", "unknown key", "did you mean 'Command'"]),
    ("Openings.File", "missing.pgn", ["Openings.File", "'missing.pgn'", "readable opening book"]),
    ("Openings.Order", "shuffled", ["Openings.Order", "'shuffled'", "sequential | random"]),
    ("Concurrency", 0, ["Concurrency", "got 0", "positive integer"]),
    ("Backend", "fastchess", ["Backend", "'fastchess'", "python-chess | cutechess"]),
    ("Tiebreaks", ["SonnebornBerger", "Bucholz"], ["Tiebreaks[1]", "'Bucholz'", "did you mean 'Buchholz'"]),
    ("Adjudication", {"TcecDraw": {"ScoreCp": "twenty"}}, ["Adjudication.TcecDraw.ScoreCp", "'twenty'", "centipawns"]),
    ("Adjudication", {"Tablebases": {"Paths": ["/nonexistent/tb"]}}, ["Tablebases.Paths[0]", "/nonexistent/tb", "existing directory"]),
    ("Engines", [{"Name": "Solo", "Command": "stockfish"}], ["Engines", "1 engine(s)", "at least 2 engines"]),
    ("SwissOptions", _DELETE, ["SwissOptions", "missing required key"]),
    ("Engines.0.Options", ["Hash", 16], ["Engines[0].Options", "mapping"]),
]


@pytest.mark.parametrize(("path", "value", "needles"), MALFORMED, ids=[m[0] + "=" + repr(m[1])[:20] for m in MALFORMED])
def test_malformed_config_is_named_precisely(tmp_path: Path, path: str, value: object, needles: list[str],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notexec.sh").write_text("#!/bin/sh\n")
    data = base_config(tmp_path)
    _mutate(data, path, value)
    cfg_path = write_config(tmp_path, data)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    with pytest.raises(ConfigError) as err:
        load_config(cfg_path)
    lines = err.value.problems
    assert any(all(n in line for n in needles) for line in lines), lines
    assert all(line.startswith(str(cfg_path)) for line in lines), lines
    # The CLI says the same, exits 2, and writes nothing.
    assert main(["validate", str(cfg_path)]) == 2
    assert any(all(n in line for n in needles) for line in capsys.readouterr().err.splitlines())
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert not (tmp_path / "state").exists()


def test_every_problem_is_reported_at_once_with_lines(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["SwissOptions"]["Rounds"] = -1
    data["TimeControl"] = "abc"
    data["Engines"][2]["Protocol"] = "uic"
    path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    assert "SwissOptions.Rounds" in text and "TimeControl" in text and "Engines[2].Protocol" in text
    assert len(err.value.problems) == 3
    # each line carries the line number of the key in the file
    line_of_tc = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if text.startswith("TimeControl"))
    assert any(p.startswith(f"{path}:{line_of_tc}: TimeControl") for p in err.value.problems)


# (keys set, the key the problem is reported at, the path it names, what it collides with)
SAME_FILE = [
    ({"Database": "state/s.json"}, "Database", "state/s.json", "the JSON snapshot (SwissOptions.StatePath)"),
    ({"SwissOptions.StatePath": "state/s.sqlite3"}, "Database", "state/s.sqlite3",
     "the JSON snapshot (SwissOptions.StatePath) (Database defaults to StatePath"),
    ({"PgnOut": "state/s.sqlite3"}, "PgnOut", "state/s.sqlite3", "the state database (Database)"),
    ({"PgnOut": "state/s.sqlite3-wal"}, "PgnOut", "state/s.sqlite3-wal", "WAL journal (Database)"),
    ({"PgnOut": "state/s.sqlite3-shm"}, "PgnOut", "state/s.sqlite3-shm", "shared-memory file (Database)"),
    ({"SwissOptions.StatePath": "state/s.sqlite3.lock", "Database": "state/s.sqlite3"}, "Database",
     "state/s.sqlite3.lock", "the JSON snapshot (SwissOptions.StatePath)"),
    ({"PgnOut": "state/s.json"}, "PgnOut", "state/s.json", "the JSON snapshot (SwissOptions.StatePath)"),
    ({"PgnOut": "book.pgn"}, "Openings.File", "book.pgn", "the PGN of the games (PgnOut)"),
    ({"PgnOut": "./state/../state/x/../s.json"}, "PgnOut", "state/s.json", "SwissOptions.StatePath"),
]


@pytest.mark.parametrize(("changes", "key", "shown", "other"), SAME_FILE,
                         ids=[",".join(f"{k}={v}" for k, v in c[0].items()) for c in SAME_FILE])
def test_outputs_that_are_the_same_file_are_refused(tmp_path: Path, changes: dict, key: str,
                                                    shown: str, other: str,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The snapshot's rename would replace the database (or the PGN be appended to it): the
    event's record would be lost, so two outputs naming one file are a config error."""
    data = base_config(tmp_path)
    for path, value in changes.items():
        _mutate(data, path, value)
    cfg_path = write_config(tmp_path, data)
    with pytest.raises(ConfigError) as err:
        load_config(cfg_path)
    (problem,) = err.value.problems
    assert f": {key}: {tmp_path / shown}: " in problem and other in problem, problem
    assert main(["run", str(cfg_path)]) == 2
    assert problem in capsys.readouterr().err
    assert not (tmp_path / "state").exists()  # nothing was created


def test_the_same_file_through_a_symlink_is_refused(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    (tmp_path / "state").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "state")
    data["PgnOut"] = "alias/s.sqlite3"
    with pytest.raises(ConfigError, match=r"PgnOut: .*alias/s\.sqlite3: the PGN of the games would "
                                          r"be the same file as the state database \(Database\)"):
        load_config(write_config(tmp_path, data))
    data["PgnOut"] = "alias/games.pgn"
    assert load_config(write_config(tmp_path, data)).pgn_out == tmp_path / "alias" / "games.pgn"


def test_invalid_yaml_and_duplicate_keys(tmp_path: Path) -> None:
    path = write_config(tmp_path, "Event: x\nSwissOptions: [unclosed\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "not valid YAML" in str(err.value) and str(path) in str(err.value)
    path = write_config(tmp_path, "Event: a\nEvent: b\nSwissOptions: {}\nTimeControl: inf\nEngines: []\n")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert "duplicate key Event (line 2)" in str(err.value)


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yaml")


def test_random_openings_conflict(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["SwissOptions"]["RandomOpenings"] = False
    data["Openings"]["Order"] = "random"
    with pytest.raises(ConfigError, match="RandomOpenings"):
        load_config(write_config(tmp_path, data))
    data["Openings"].pop("Order")
    assert load_config(write_config(tmp_path, data)).openings.order == "sequential"


def test_engine_command_as_relative_path(tmp_path: Path) -> None:
    script = tmp_path / "engines" / "fake.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    data = base_config(tmp_path)
    data["Engines"][0]["Command"] = "engines/fake.sh"
    cfg = load_config(write_config(tmp_path, data))
    assert cfg.engines[0].command == str(script)


@pytest.mark.parametrize(("text", "base", "inc", "moves", "canonical"), [
    ("45:00+4.5", 2700, 4.5, None, "2700+4.5"),
    ("40/90:00+30", 5400, 30, 40, "40/5400+30"),
    ("10+0.1", 10, 0.1, None, "10+0.1"),
    ("0.05", 0.05, 0, None, "0.05"),
    ("1:30:00", 5400, 0, None, "5400"),
    ("inf", None, 0, None, "inf"),
])
def test_time_control_parsing(text: str, base: float | None, inc: float, moves: int | None, canonical: str) -> None:
    tc = parse_time_control(text)
    assert (tc.base, tc.increment, tc.moves) == (base, inc, moves)
    assert str(tc) == canonical
    assert parse_time_control(str(tc)) == tc  # the canonical form reads back identically


@pytest.mark.parametrize("text", ["", "45 min", "-5", "0", "40/", "0/60", "inf+1", "1:60", True, None, [1]])
def test_time_control_rejects(text: object) -> None:
    with pytest.raises(ValueError):
        parse_time_control(text)


def test_clock_periods_increment_and_flag() -> None:
    clock = Clock(parse_time_control("2/10+1"))
    assert clock.moves_to_go == 2
    assert clock.spend(3.0) and clock.remaining == pytest.approx(8.0)
    assert clock.moves_to_go == 1
    assert clock.spend(3.0) and clock.remaining == pytest.approx(16.0)  # new period: +10
    assert not clock.spend(16.5)
    assert Clock(parse_time_control("1+0")).spend(1.05, margin=0.1)


def test_shipped_configs_validate() -> None:
    for name in ("demo.yaml", "tcec-swiss.yaml"):
        cfg = load_config(REPO / "configs" / name)
        assert len(cfg.engines) >= 6
    tcec = load_config(REPO / "configs" / "tcec-swiss.yaml")
    assert tcec.time_control.base == 2700 and tcec.time_control.increment == 4.5
    assert tcec.swiss.rounds == 11 and tcec.swiss.games_per_match == 2
    assert tcec.adjudication.tcec_draw is not None and tcec.adjudication.tablebases.max_pieces == 6


def test_cli_help_and_module_entry_point() -> None:
    out = subprocess.run([sys.executable, "-m", "runner", "--help"], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0
    for command in ("validate", "run", "status", "standings", "play", "audit"):
        assert command in out.stdout


@pytest.mark.engines
def test_validate_probe_real_engines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An engine option's typo: one verdict per engine (FAIL, never also "ok"), with the
    closest of the engine's own options; `run` refuses it with the same hint."""
    data = base_config(tmp_path)
    data["Engines"][0]["Options"] = {"Hash": 16, "Skill Levle": 10, "NoSuchOption": 1}
    path = write_config(tmp_path, data)
    assert main(["validate", "--probe", str(path)]) == 1
    out = capsys.readouterr().out
    verdicts = [line for line in out.splitlines() if line.startswith(("ok ", "FAIL "))]
    assert [line.split(":")[0] for line in verdicts] == ["FAIL A", "ok   B", "ok   C"]
    assert "ok   C: " in out  # fairymax over xboard
    a = verdicts[0]
    assert a.startswith("FAIL A: Engines[0].Options.Skill Levle") and "(Stockfish 15.1, uci" in a
    assert ("Engines[0].Options.Skill Levle: the engine has no option 'Skill Levle'; did you "
            "mean 'Skill Level'?") in a
    assert "Engines[0].Options.NoSuchOption: the engine has no option 'NoSuchOption';" not in a
    assert "Engines[0].Options.NoSuchOption: the engine has no option 'NoSuchOption'" in a
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert ("Engines[0] 'A': Options.Skill Levle: the engine has no option 'Skill Levle'; "
            "did you mean 'Skill Level'?") in err
    assert not (tmp_path / "state").exists()  # refused before anything was written


def test_cutechess_path_relative_to_config(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["CutechessPath"] = "bin/cutechess-cli"
    assert load_config(write_config(tmp_path, data)).cutechess_path == str(tmp_path / "bin" / "cutechess-cli")
    data["CutechessPath"] = "cutechess-cli"
    assert load_config(write_config(tmp_path, data)).cutechess_path == "cutechess-cli"


def test_validate_advises_without_failing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = base_config(tmp_path)  # 3 engines
    data["SwissOptions"].update({"GamesPerMatch": 1, "Rounds": 4, "Seeding": "groups", "SeedGroupCount": 3})
    assert main(["validate", str(write_config(tmp_path, data))]) == 0
    out = capsys.readouterr().out
    assert "rematches are certain" in out and "odd number of single rounds" in out
    assert "BYE every round" in out and "even number of groups" in out
    assert out.rstrip().splitlines()[-1].endswith("time control 10+0.1 (10s + 0.1s)")
    data["Engines"].append({"Name": "D", "Command": "stockfish"})
    data["SwissOptions"].update({"Rounds": 1, "SeedGroupCount": 2})
    assert main(["validate", str(write_config(tmp_path, data))]) == 0
    assert "warning" not in capsys.readouterr().out


def test_output_into_a_closed_pipe_is_not_a_traceback() -> None:
    # `swiss-runner ... | head -1`: the reader has gone before the output is written
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        out = subprocess.run([sys.executable, "-m", "runner", "validate", str(REPO / "configs" / "demo.yaml")],
                             stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=REPO)
    finally:
        os.close(write_end)
    assert "Traceback" not in out.stderr and "BrokenPipeError" not in out.stderr, out.stderr
    assert out.returncode == 0


def test_empty_config_file_is_reported_as_empty(tmp_path: Path) -> None:
    for text in ("", "# only a comment\n", "---\n"):
        path = write_config(tmp_path, text, "empty.yaml")
        with pytest.raises(ConfigError) as err:
            load_config(path)
        assert str(err.value).count("the config file is empty") == 1, text
        assert "got None" not in str(err.value)


def test_interruption_block(tmp_path: Path) -> None:
    config = load_config(REPO / "configs" / "tcec-swiss.yaml")
    assert (config.interruption.mode, config.interruption.compensation_s) == ("resume", 54)
    base = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text())
    base["Interruption"] = {"Mode": "restart", "CompensationS": -1, "DrawMoves": 1.5,
                            "TablebasePieces": 9, "Frobnicate": 1}
    path = write_config(tmp_path, base, "bad.yaml")
    with pytest.raises(ConfigError) as err:
        load_config(path)
    text = str(err.value)
    for needle in ("Interruption.Mode: got 'restart', expected resume | replay",
                   "Interruption.CompensationS: got -1", "Interruption.DrawMoves: got 1.5",
                   "Interruption.TablebasePieces: got 9", "Interruption.Frobnicate"):
        assert needle in text, text


def _tablebase_event(tmp_path: Path, folder: Path, max_pieces: int) -> Path:
    tmp_path.mkdir(exist_ok=True)
    data = base_config(tmp_path)
    data["Adjudication"] = {"Tablebases": {"Paths": [str(folder)], "MaxPieces": max_pieces}}
    return write_config(tmp_path, data)


def test_tablebases_that_do_not_cover_max_pieces_are_warned_about(
        tmp_path: Path, syzygy_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`Tablebases: {MaxPieces: 6}` over 3-4-man tables validated silently, and adjudication
    then covered less than the config said: validate and run name the missing piece counts."""
    path = _tablebase_event(tmp_path, syzygy_dir, 6)
    assert main(["validate", str(path)]) == 0
    warning = (f"warning: {path}: Adjudication.Tablebases.MaxPieces: 6, but there are no "
               f"5-man or 6-man tables in {syzygy_dir}: adjudication covers up to 4 pieces")
    assert warning in capsys.readouterr().out.splitlines()
    assert main(["validate", str(_tablebase_event(tmp_path / "four", syzygy_dir, 4))]) == 0
    assert "Tablebases" not in capsys.readouterr().out  # what it says is what it has
    # only the 3-man tables: 4 and 5 missing
    three = tmp_path / "three"
    three.mkdir()
    for table in syzygy_dir.glob("*.rtbw"):
        if len(table.stem) == 4:
            (three / table.name).symlink_to(table)
    path = _tablebase_event(tmp_path / "t", three, 5)
    assert main(["validate", str(path)]) == 0
    assert ("MaxPieces: 5, but there are no 4-man or 5-man tables in "
            f"{three}: adjudication covers up to 3 pieces") in capsys.readouterr().out
    # and `run` says it at its start (games of scripted fake engines: no wait)
    path = loop_config(tmp_path / "run", players=2, Rounds=1)
    data = yaml.safe_load(path.read_text())
    data["Adjudication"] = {"Tablebases": {"Paths": [str(three)], "MaxPieces": 5}}
    path.write_text(yaml.safe_dump(data))
    assert cli_run(load_config(path), run_args(), play_game=backend()) == 0
    assert f"warning: {path}: Adjudication.Tablebases.MaxPieces: 5" in capsys.readouterr().err
