"""Hostile input through the config file and the command line (the review of issue 12's
rule: a clear error naming the file, the key, the bad value and what was expected, a
non-zero exit, nothing recorded altered and never a Python traceback).

Every test here failed on the code before its fix.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from testkit import run_cli as cli
from testkit import write_config

from runner.cli import main
from runner.config import ConfigError, load_config

REPO = Path(__file__).resolve().parent.parent
FAKE_UCI = REPO / "tests" / "fakes" / "fake_uci.py"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
ENV.pop("SWISS_RUNNER_TRACEBACK", None)


def fake(name: str, *extra: str) -> dict:
    return {"Name": name, "Command": sys.executable, "Args": [str(FAKE_UCI), *extra]}


def config(tmp_path: Path, **top: object) -> Path:
    data: dict = {
        "SwissOptions": {"Rounds": 1, "GamesPerMatch": 1, "StatePath": "state/s.json"},
        "TimeControl": "10+0.1",
        "Adjudication": {"MaxMoves": 3},
        "Engines": [fake("P1"), fake("P2")],
    }
    data.update(top)
    return write_config(tmp_path, data)


def line_of(cfg: Path, key: str) -> int:
    """The line of a key ("PgnOut", "EngineLogs.Dir") in a config written by :func:`config`."""
    lines = cfg.read_text().splitlines()
    top, _, sub = key.partition(".")
    line = next(i for i, text in enumerate(lines, 1) if text.startswith(f"{top}:"))
    if sub:
        line = next(i for i, text in enumerate(lines[line:], line + 1)
                    if text.strip().startswith(f"{sub}:"))
    return line


# ------------------------------------------------------------- tracebacks from libraries


@pytest.mark.slow
def test_an_engine_option_python_chess_cannot_parse_prints_no_traceback(tmp_path: Path) -> None:
    """python-chess logs a malformed ``option`` line with LOGGER.exception: without a
    handler of ours its traceback went to stderr (validate --probe and every game of run)."""
    cfg = config(tmp_path, Engines=[fake("P1", "--bad-option"), fake("P2")])
    probe = cli("validate", "--probe", str(cfg))
    assert probe.returncode == 0, probe.stderr
    assert "Traceback" not in probe.stderr + probe.stdout
    assert "warning: chess.engine: Exception parsing option min (ValueError: " in probe.stderr
    run = cli("run", "--quiet", str(cfg))
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr + run.stdout
    assert "Exception parsing option min" in run.stderr


def test_an_engine_printing_garbage_does_not_flood_validate_probe(tmp_path: Path) -> None:
    """``validate --probe`` showed python-chess's warning for every garbage line an engine
    printed (hundreds of kilobytes for one that writes binary data); run already hid them."""
    garbage = tmp_path / "garbage.py"
    garbage.write_text("import sys\nfor _ in range(300):\n"
                       "    sys.stdout.buffer.write(bytes(range(128, 256)) + b'\\n')\n")
    cfg = config(tmp_path, Engines=[{"Name": "G", "Command": sys.executable,
                                     "Args": [str(garbage)], "StartupTimeoutS": 5}, fake("P2")])
    probe = cli("validate", "--probe", str(cfg))
    assert probe.returncode == 1
    assert "FAIL G:" in probe.stdout
    assert "Traceback" not in probe.stderr
    assert len(probe.stderr) < 2000, probe.stderr[:500]


# ------------------------------------------------------------- ratings: options and PGN

TWO_GAMES = ('[White "A"]\n[Black "B"]\n[Result "1-0"]\n\n1. e4 e5 2. Kxe8 1-0\n\n'
             '[White "B"]\n[Black "A"]\n[Result "1/2-1/2"]\n\n1. d4 d5 1/2-1/2\n\n')


@pytest.mark.parametrize(("option", "value", "expected"), [
    ("--simulations", "999999999999", "--simulations: got 999999999999, expected a number of "
                                      "simulations from 0 to 100000"),
    ("--elo", "inf", "--elo: got inf, expected a rating from -10000 to 10000"),
    ("--elo", "nan", "--elo: got nan, expected a rating"),
    ("--white-advantage", "nan", "--white-advantage: got 'nan', expected 'fit' or a finite number"),
    ("--white-advantage", "1e308", "--white-advantage: got 1e+308, expected 'fit' or a fixed "
                                   "advantage in Elo"),
    ("--seed", str(2**64), f"--seed: got {2**64}, expected an integer from 0 to 2**63-1"),
])
def test_ratings_options_have_the_bounds_of_the_config(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       option: str, value: str, expected: str) -> None:
    """``--simulations 999999999999`` asked numpy for 14.6 TiB (a MemoryError traceback);
    ``--elo inf`` and ``--white-advantage nan`` printed a report of nonsense with exit 0."""
    pgn = tmp_path / "games.pgn"
    pgn.write_text(TWO_GAMES)
    assert main(["ratings", "--pgn", str(pgn), option, value]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {pgn}: {expected}" + err[len(f"error: {pgn}: {expected}"):]
    assert "Traceback" not in err


def test_ratings_config_average_is_bounded(tmp_path: Path) -> None:
    cfg = config(tmp_path, Ratings={"Average": 1.0e300})
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert info.value.problems == [f"{cfg}:{line_of(cfg, 'Ratings.Average')}: Ratings.Average: got 1e+300, expected a finite "
                                   "number from -10_000 to 10_000 (Elo)"]


@pytest.mark.slow
def test_ratings_pgn_that_is_no_file_and_unreadable_moves(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A directory or a device was 'PGN file not found'; python-chess printed a line per
    bad move (with the repr of its Game object) instead of one note."""
    assert main(["ratings", "--pgn", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (f"error: {tmp_path}: not a regular file (a directory, device "
                                       "or pipe); expected a PGN file\n")
    assert main(["ratings", "--pgn", "/dev/null"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    pgn = tmp_path / "games.pgn"
    pgn.write_text(TWO_GAMES)
    assert main(["ratings", "--pgn", str(pgn)]) == 0
    out = cli("ratings", "--pgn", str(pgn))
    assert out.returncode == 0 and out.stderr == "", out.stderr
    assert (f"note: {pgn}: 1 game(s) with moves python-chess could not read (illegal or not "
            "SAN): rated by their Result tag") in out.stdout


# ------------------------------------------------------------- outputs this user cannot write


@pytest.fixture
def immutable() -> Iterator[Callable[[Path], None]]:
    """Make directories read-only even for root (chattr +i); skip where that is impossible."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available")
    made: list[Path] = []

    def make(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("cannot make a directory immutable here")
        made.append(folder)

    yield make
    for folder in made:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.parametrize(("key", "value", "role"), [
    ("PgnOut", "ro/games.pgn", "the PGN of the games"),
    ("EpdOut", "ro/final.epd", "the final positions (EPD)"),
    ("EngineLogs", {"Dir": "ro/logs", "Keep": "all"}, "the directory of the engine logs"),
    ("Database", "ro/deeper/event.sqlite3", "the state database"),
])
def test_an_output_in_a_read_only_directory_is_refused_before_the_event(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], immutable: Callable[[Path], None],
        key: str, value: object, role: str) -> None:
    """A PgnOut (EpdOut, engine logs) in a directory the runner cannot write: the whole
    event was played, each game's PGN failing, and run exited 0 with no PGN at all."""
    cfg = config(tmp_path, **{key: value})
    immutable(tmp_path / "ro")
    name = "EngineLogs.Dir" if key == "EngineLogs" else key
    for command in ("validate", "run"):
        assert main([command, str(cfg)]) == 2
        err = capsys.readouterr().err
        assert f"error: {cfg}:{line_of(cfg, name)}: {name}: " in err, err
        assert (f"{role} cannot be written: the directory {tmp_path / 'ro'} is not writable by "
                "this user (or on a read-only file system); expected a place this user can "
                "write to") in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["event.yaml", "ro"]
    assert main(["status", str(cfg)]) == 1  # reading needs no write access


def test_a_recorded_event_whose_pgn_directory_became_read_only_is_not_touched(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        immutable: Callable[[Path], None]) -> None:
    """run refuses at once, naming PgnOut; the database and the PGN keep every byte."""
    cfg = config(tmp_path, PgnOut="out/games.pgn",
                 SwissOptions={"Rounds": 2, "GamesPerMatch": 1, "StatePath": "state/s.json"})
    assert main(["run", "--quiet", str(cfg)]) == 0
    database = tmp_path / "state" / "s.sqlite3"
    before = {p: p.read_bytes() for p in (database, tmp_path / "out" / "games.pgn")}
    immutable(tmp_path / "out")
    capsys.readouterr()
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert f"PgnOut: {tmp_path / 'out' / 'games.pgn'}: the PGN of the games cannot be written" in err
    assert {p: p.read_bytes() for p in before} == before


# ------------------------------------------------------------- reading an event through a config


def played(tmp_path: Path, **top: object) -> Path:
    """A finished event of two fake engines (2 single rounds, 3 moves a game)."""
    cfg = config(tmp_path, SwissOptions={"Rounds": 2, "GamesPerMatch": 1,
                                         "StatePath": "state/s.json"}, **top)
    assert main(["run", "--quiet", str(cfg)]) == 0
    return cfg


def recorded(tmp_path: Path) -> dict[str, bytes]:
    """The record (the database) and its views (the PGN, the JSON snapshot), byte for byte;
    SQLite's -wal/-shm files, which a reader may create, are not part of it."""
    state = tmp_path / "state"
    return {name: (state / name).read_bytes() for name in ("s.sqlite3", "games.pgn", "s.json")}


@pytest.mark.slow
@pytest.mark.parametrize(("change", "listed"), [
    (lambda d: d["Engines"][1].update(Name="P3"), ["Engines: 'P2' was removed",
                                                  "Engines: 'P3' was added"]),
    (lambda d: d["SwissOptions"].update(Rounds=1), ["SwissOptions.Rounds: 2 -> 1"]),
    (lambda d: d["Engines"][0].update(Depth=3), ["Engines.P1.depth: null -> 3"]),
])
def test_status_standings_ratings_refuse_a_config_of_another_event(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Callable[[dict], object],
        listed: list[str]) -> None:
    """status showed 'round 2 of 1' and 'Games: 2 of 1 finished' (exit 0) for a config whose
    Rounds or engines were changed after the event started; run already refused it."""
    cfg = played(tmp_path)
    before = recorded(tmp_path)
    data = yaml.safe_load(cfg.read_text())
    change(data)
    other = write_config(tmp_path, data, "other.yaml")
    capsys.readouterr()
    for command in (["status"], ["status", "--json"], ["standings"], ["ratings"], ["run"]):
        assert main([command[0], str(other), *command[1:]]) == 2, command
        out, err = capsys.readouterr()
        assert f"{other}: this config does not describe the event recorded in " in err, err
        for line in listed:
            assert f"  {line}\n" in err, (command, err)
        assert out == "" or command[0] == "run"
    assert recorded(tmp_path) == before
    data = yaml.safe_load(cfg.read_text())
    data["Concurrency"] = 2  # not part of the event: may change between runs
    write_config(tmp_path, data, "other.yaml")
    for command in ("status", "standings", "ratings"):
        assert main([command, str(other)]) == 0, capsys.readouterr().err
    assert recorded(tmp_path) == before


@pytest.mark.parametrize("damage", ["DROP TABLE games", "UPDATE games SET round='x' WHERE game_id=1"])
def test_ratings_of_a_damaged_state_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              damage: str) -> None:
    """`ratings CONFIG` let sqlite3's and the rows' errors through as a traceback (status and
    standings already reported a damaged state)."""
    import sqlite3

    cfg = played(tmp_path)
    conn = sqlite3.connect(tmp_path / "state" / "s.sqlite3")
    conn.execute(damage)
    conn.commit()
    conn.close()
    before = recorded(tmp_path)
    capsys.readouterr()
    assert main(["ratings", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {tmp_path / 'state' / 's.sqlite3'}: the state database is "
                          "damaged or not this event's ("), err
    assert recorded(tmp_path) == before


# ------------------------------------------------------------- smaller holes in the config


@pytest.mark.parametrize("value", [0, False, "", []])
def test_engine_options_of_the_wrong_type_are_not_taken_for_none(tmp_path: Path, value: object) -> None:
    """``Options: 0`` (false, '', []) passed as "no options": only a mapping, or nothing."""
    cfg = config(tmp_path, Engines=[{**fake("P1"), "Options": value}, fake("P2")])
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert len(info.value.problems) == 1
    assert info.value.problems[0].startswith(f"{cfg}:")
    assert info.value.problems[0].endswith(f": Engines[0].Options: got {value!r}, expected a "
                                           "mapping of engine option names to values")


@pytest.mark.parametrize(("text", "expected"), [
    ("\u0663", "[moves/]time[+increment] with time in seconds or m:ss, or 'inf'"),  # Arabic 3
    ("40/\u0664\u0660", "[moves/]time[+increment]"),
    ("0.0000001", "a time in whole milliseconds (at most 3 decimals)"),
    ("60+0.0001", "an increment in whole milliseconds (at most 3 decimals)"),
])
def test_time_controls_in_other_digits_or_below_a_millisecond(tmp_path: Path, text: str,
                                                                expected: str) -> None:
    """Digits of other scripts were read as a time control ('٣' = 3 s); '0.0000001' was
    accepted and shown (and written to the PGN) as '0', '60+0.0001' as '60+0'."""
    cfg = config(tmp_path, TimeControl=text)
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    [problem] = info.value.problems
    assert problem.startswith(f"{cfg}:{line_of(cfg, 'TimeControl')}: TimeControl: got {text!r}, "
                              f"expected {expected}"), problem


def test_a_control_character_in_the_yaml_is_named_with_its_line(tmp_path: Path) -> None:
    """PyYAML's reader error had no line and a second line of its own ('in "<unicode
    string>", position 8')."""
    cfg = config(tmp_path)
    write_config(tmp_path, cfg.read_text() + "Site: a\x07b\n")
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert info.value.problems == [
        f"{cfg}:{line_of(cfg, 'Site')}: not valid YAML: the control character U+0007; expected "
        "printable text (is this really a config file?)"]


@pytest.mark.parametrize("wait", ["nan", "inf", "-1", "soon"])
def test_worker_wait_must_be_finite_seconds(capsys: pytest.CaptureFixture[str], wait: str) -> None:
    """``worker --wait nan`` never gave up (every comparison with nan is false)."""
    with pytest.raises(SystemExit) as info:
        main(["worker", "tcp://127.0.0.1:1", "--wait", wait])
    assert info.value.code == 2
    assert (f"argument --wait: got {wait!r}, expected seconds >= 0 (0 = never give up)"
            in capsys.readouterr().err)


@pytest.mark.parametrize(("fen", "expected"), [
    ("8/8/8/8/8/8/8/8 w - - 0 1", "expected a legal position (no white king, no black king, empty)"),
    ("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3",
     "expected a position where the game is not over (checkmate)"),
])
def test_play_names_what_is_wrong_with_a_fen(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             fen: str, expected: str) -> None:
    """play printed the repr of python-chess's status flags, and for a finished position
    "opening '': the start position is already over" without naming --fen."""
    assert main(["play", str(config(tmp_path)), "--white", "P1", "--black", "P2", "--fen", fen]) == 2
    assert capsys.readouterr().err == f"error: --fen: got {fen!r}, {expected}\n"


# ------------------------------------------------------------- EnginesFile / engines-json


def test_an_engines_file_that_is_a_pipe_does_not_hang_every_command(tmp_path: Path) -> None:
    """``EnginesFile: /dev/zero`` or a FIFO: read_text waited for ever (or filled memory) in
    every command that loads the config, status and standings included."""
    fifo = tmp_path / "engines.json"
    os.mkfifo(fifo)
    cfg = config(tmp_path, EnginesFile="engines.json")
    data = yaml.safe_load(cfg.read_text())
    del data["Engines"]
    write_config(tmp_path, data)
    for argv in (["validate", str(cfg)], ["status", str(cfg)], ["engines-json", str(fifo)]):
        done = cli(*argv, timeout=30)
        assert done.returncode == 2, (argv, done.stderr)
        assert (f"{fifo}: not a regular file (a directory, device or pipe); expected cutechess's "
                "engines.json") in done.stderr
        assert "Traceback" not in done.stderr


def test_an_engines_file_nested_too_deeply_is_a_clear_error(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """json.loads raised RecursionError (a traceback) on ``[[[[...]]]]``."""
    deep = tmp_path / "engines.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["engines-json", str(deep)]) == 2
    assert capsys.readouterr().err.startswith(
        f"error: {deep}: nested too deeply to be cutechess's engines.json\n")


# ------------------------------------------------------------- settings that silently did nothing


def test_a_tablebase_folder_without_tables_is_refused(tmp_path: Path) -> None:
    """``Paths: [/]`` or a typo'd folder was accepted and tablebase adjudication was silently
    off for the whole event (python-chess finds no table and says nothing)."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "nested" / "6-men").mkdir(parents=True)
    (tmp_path / "nested" / "6-men" / "KQvK.rtbw").write_bytes(b"")
    cfg = config(tmp_path, Adjudication={"Tablebases": {"Paths": ["empty", "nested"]}})
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    assert [p.split(": ", 1)[1] for p in info.value.problems] == [
        f"Adjudication.Tablebases.Paths[0]: got 'empty', expected a directory of Syzygy tables "
        f"(no .rtbw file in {tmp_path / 'empty'})",
        f"Adjudication.Tablebases.Paths[1]: got 'nested', expected a directory of Syzygy tables "
        f"(no .rtbw file in {tmp_path / 'nested'})"]
    cfg = config(tmp_path, Adjudication={"Tablebases": {"Paths": ["nested/6-men"]}})
    assert load_config(cfg).adjudication.tablebases.paths == (tmp_path / "nested" / "6-men",)


def test_a_tiebreak_listed_twice_is_refused(tmp_path: Path) -> None:
    cfg = config(tmp_path, Tiebreaks=["Wins", "SonnebornBerger", "Wins"])
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    [problem] = info.value.problems
    assert problem.endswith(": Tiebreaks[2]: got 'Wins', expected each tiebreak once (also "
                            "Tiebreaks[0])")


@pytest.mark.parametrize("address", ["tcp://", "tcp://host", "tcp://host:99999", "tls://:8786"])
def test_a_scheduler_address_needs_a_host_and_a_port(tmp_path: Path, address: str) -> None:
    """'tcp://' passed validation and failed only when run waited for a scheduler (600 s)."""
    cfg = config(tmp_path, Cluster={"Scheduler": address})
    with pytest.raises(ConfigError) as info:
        load_config(cfg)
    [problem] = info.value.problems
    assert problem.endswith(f": Cluster.Scheduler: got {address!r}, expected a scheduler address "
                            "such as tcp://HOST:8786 (a host and a port from 1 to 65535)")


def test_validate_reports_what_run_would_refuse_in_the_recorded_event(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """validate said OK for a config whose event's database records other engines (run then
    refused it), and for a database that is not an SQLite file."""
    cfg = played(tmp_path)
    data = yaml.safe_load(cfg.read_text())
    data["Engines"][1]["Name"] = "P3"
    other = write_config(tmp_path, data, "other.yaml")
    before = recorded(tmp_path)
    capsys.readouterr()
    assert main(["validate", str(other)]) == 2
    err = capsys.readouterr().err
    assert f"error: {other}: this config does not describe the event recorded in " in err
    assert "  Engines: 'P2' was removed\n  Engines: 'P3' was added\n" in err
    assert main(["validate", str(cfg)]) == 0
    assert recorded(tmp_path) == before
    database = tmp_path / "state" / "s.sqlite3"
    database.write_bytes(b"not a database at all")
    assert main(["validate", str(cfg)]) == 2
    assert f"error: {database}: not an SQLite database" in capsys.readouterr().err
    assert database.read_bytes() == b"not a database at all"


def test_errors_python_cannot_raise_are_one_line_and_a_closed_loop_says_nothing(tmp_path: Path) -> None:
    """An engine transport collected after its event loop closed (a run stopped by a signal)
    printed 'Exception ignored in BaseSubprocessTransport.__del__' and a traceback."""
    script = tmp_path / "unraisable.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(REPO)!r})\n"
        "from runner.cli.common import quiet_unraisable\n"
        "quiet_unraisable()\n"
        "class Transport:\n"
        "    def __del__(self):\n"
        "        raise RuntimeError('Event loop is closed')\n"
        "class Other:\n"
        "    def __del__(self):\n"
        "        raise ValueError('bad\\nthing')\n"
        "Transport(); Other()\n"
        "print('done')\n")
    lost = tmp_path / "lost.txt"  # (the suite's own file would fail this test: provoked here)
    env = {**os.environ, "SWISS_RUNNER_LOST_ERRORS": str(lost)}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30,
                         env=env)
    assert out.returncode == 0 and out.stdout == "done\n"
    assert "Traceback" not in out.stderr and "Event loop is closed" not in out.stderr
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("warning: ")
    assert "ValueError: bad" in out.stderr
    noted = lost.read_text().splitlines()  # what the test suite fails on: this one, once
    assert len(noted) == 1 and noted[0].endswith("Exception ignored in: ValueError: bad\\nthing")
    shown = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30,
                           env={**env, "SWISS_RUNNER_TRACEBACK": "1"})
    assert "Traceback" in shown.stderr and "ValueError" in shown.stderr
