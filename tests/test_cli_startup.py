"""What a command costs around its work (issue #42: `validate` no slower than before the
schema library; bench/bench_config.py measures it): only the running subcommand's own
arguments are built, numbered Chess960 starts are counted without their boards, and the
process (never an in-process call) freezes its heap before exiting."""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_chess960 import config_text

from runner.books.openings import check_book, event_matches, load_book
from runner.books.positions960 import position_numbers
from runner.cli import build_parser, main
from runner.config import load_config

REPO = Path(__file__).resolve().parent.parent


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, check=False)


def _commands(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommands ``parser`` has built a parser for."""
    return [name for action in parser._actions
            if isinstance(action, argparse._SubParsersAction) for name in action.choices]


def test_a_command_builds_only_its_own_arguments_and_help_shows_every_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _python("import sys; from runner.cli import build_parser; "
                  "args = build_parser('validate').parse_args(['validate', 'x.yaml']); "
                  "print(args.config, 'runner.cli.td' in sys.modules, "
                  "'runner.cli.ratings' in sys.modules)")
    assert out.stdout.split() == ["x.yaml", "False", "False"], out.stderr
    assert _commands(build_parser("run")) == ["run"]  # the others' arguments cost 2-3 ms
    every = _commands(build_parser(None))
    assert len(every) > 10 and "run" in every and _commands(build_parser("valdiate")) == every
    for command in (None, "td"):
        args = build_parser(command).parse_args(["td", "c.yaml", "pause", "--reason", "r"])
        assert (args.action, args.mode, args.reason) == ("pause", "finish", "r")
    assert build_parser("ratings").parse_args(["ratings", "c.yaml", "--elo", "5"]).elo == 5
    with pytest.raises(SystemExit) as exit_:
        main(["td", "--help"])
    assert exit_.value.code == 0
    assert "withdraw" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    listing = capsys.readouterr().out
    assert "td" in listing and "ratings" in listing
    with pytest.raises(SystemExit) as exit_:
        main(["valdiate", "x.yaml"])
    assert exit_.value.code == 2
    assert "invalid choice: 'valdiate'" in capsys.readouterr().err


def test_numbered_starts_are_counted_as_run_counts_its_book(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    few = config_text(tmp_path / "few", "chess960", {"Positions": [518, 0, 959]},
                      SwissOptions={"Rounds": 2, "UniquePerMatchOnly": False,
                                    "StatePath": "state/s.json"})
    config = load_config(few)
    assert config.openings is not None and event_matches(config) == 4
    assert len(position_numbers(config.openings)) == len(load_book(config.openings)) == 3
    assert main(["validate", str(few)]) == 2
    assert ("Openings.Positions: 3 openings for up to 4 matches, but UniquePerMatchOnly is "
            "false") in capsys.readouterr().err
    for variant in ("chess960", "dfrc"):
        many = load_config(config_text(tmp_path / variant, variant, {"Positions": "random"}))
        assert many.openings is not None
        numbers = position_numbers(many.openings, 7)
        assert len(numbers) == len(load_book(many.openings, 7)) == 960
        assert check_book(many.openings, 7, matches=4, unique_per_match_only=False) == []


def test_only_the_process_entry_freezes_its_heap_before_exit(
        capsys: pytest.CaptureFixture[str]) -> None:
    frozen = gc.get_freeze_count()
    assert main(["schema"]) == 0
    assert '"title": "swiss-runner config"' in capsys.readouterr().out
    assert gc.get_freeze_count() == frozen  # an in-process call (tests, embedding) frees as ever
    out = _python("import gc, sys; from runner.cli import main; sys.argv = ['swiss-runner', "
                  "'schema']; code = main(); "
                  "print(code, gc.get_freeze_count() > 0, file=sys.stderr)")
    assert out.stderr.split() == ["0", "True"] and '"$defs"' in out.stdout
    demo = REPO / "configs" / "demo.yaml"
    run = subprocess.run([sys.executable, "-m", "runner", "validate", str(demo)], cwd="/",
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert f"{demo}: OK: 7 engines" in run.stdout


@pytest.mark.slow
@pytest.mark.engines
def test_the_start_up_bench_measures_every_row_in_turn() -> None:
    """bench/bench_startup.py in small: every row measured, for this checkout and a base
    (here the same one); the numbers are the bench's, not asserted."""
    run = subprocess.run([sys.executable, str(REPO / "bench" / "bench_startup.py"),
                          "--repeat", "1", "--base", str(REPO)],
                         capture_output=True, text=True, timeout=300, check=False,
                         env={**os.environ, "PATH": f"{os.environ.get('PATH', '')}:/usr/games"})
    assert run.returncode == 0, run.stderr[-2000:]
    rows = {cells[0]: cells[1:] for line in run.stdout.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip("| \n").split("|")]]}
    for row in ("python -c pass", "imports of run", "run, event complete", "run, 1 opening",
                "run, 4 openings", "per game", "once per run"):
        this, base, diff = rows[row]
        assert float(this) > 0 and float(base) > 0, row
        assert diff.startswith(("+", "-")), row
