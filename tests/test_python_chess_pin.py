"""The lean UCI path reads python-chess internals: the version is pinned, and a python-chess
whose internals changed is refused at start with a clear error (runner.play.uci)."""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path
from typing import Any

import chess
import chess.engine
import pytest
from testkit import REPO, loop_config

from runner.cli import main
from runner.errors import EXIT_FAIL
from runner.play import uci
from runner.play.uci import TESTED_PYTHON_CHESS, python_chess_problem


def test_the_installed_python_chess_is_the_pinned_tested_one() -> None:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert f"chess=={TESTED_PYTHON_CHESS}" in deps
    assert chess.__version__ == TESTED_PYTHON_CHESS
    assert python_chess_problem() is None


def test_the_check_also_runs_inside_a_running_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A nested `run` (a runner started from a running loop) is checked as well."""
    monkeypatch.setattr(uci, "_CHECKED", None)
    monkeypatch.setattr(chess.engine.Protocol, "pipe_data_received", _lines_lost)

    async def inside() -> str | None:
        return python_chess_problem()

    problem = asyncio.run(inside())
    assert problem is not None and "pipe_data_received" in problem


def _lines_lost(self: Any, fd: int, data: Any) -> None:
    self.buffer[fd].extend(data)  # buffered, but never handed on line by line


def _no_buffer(original: Any) -> Any:
    def init(self: Any) -> None:
        original(self)
        del self.buffer

    return init


@pytest.mark.parametrize(("attribute", "make", "named"), [
    ("pipe_data_received", lambda original: _lines_lost, "pipe_data_received -> _line_received"),
    ("__init__", _no_buffer, "Protocol.buffer[1]"),
])
def test_changed_internals_are_refused_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        attribute: str, make: Any, named: str) -> None:
    monkeypatch.setattr(chess.engine.Protocol, attribute,
                        make(getattr(chess.engine.Protocol, attribute)))
    monkeypatch.setattr(uci, "_CHECKED", None)  # checked once per process: again here
    problem = python_chess_problem()
    assert problem is not None and named in problem
    assert f"python-chess {chess.__version__} is installed" in problem
    assert f"chess=={TESTED_PYTHON_CHESS}" in problem
    config = loop_config(tmp_path / "event", players=2, Rounds=1)
    assert main(["run", str(config)]) == EXIT_FAIL
    err = capsys.readouterr().err
    assert named in err and "Traceback" not in err
    assert not (tmp_path / "event" / "state").exists()  # nothing created
    assert main(["play", str(config), "--white", "P1", "--black", "P2"]) == EXIT_FAIL
    assert named in capsys.readouterr().err
