"""One of each (issue #46 item 5): the error printer, the UTC timestamp, the loopback test and
the PGN reader each exist once, and every caller uses that one."""

from __future__ import annotations

import io
import logging
import re
import subprocess
import sys
from datetime import UTC, datetime

import pytest

import runner.cli.serve
import runner.cluster.network
from runner.clock import utc_now, utc_text
from runner.domain.events import parse_utc
from runner.domain.pgn import read_game, read_games
from runner.net import is_loopback

PRINT = ("import sys; from runner.errors import print_error; {before}; "
         "print_error('Evil\\x1b[2J\\nsecond\\x07'); print('went on')")


def _run(before: str, stderr: int | io.BufferedWriter = subprocess.PIPE
         ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", PRINT.format(before=before)],
                          stdout=subprocess.PIPE, stderr=stderr, timeout=60, check=False)


def test_the_error_printer_escapes_control_characters_and_survives_a_broken_stderr() -> None:
    shown = _run("pass")
    assert shown.returncode == 0 and shown.stdout == b"went on\n"
    assert shown.stderr == b"error: Evil\\x1b[2J\nsecond\\x07\n"
    assert _run("sys.stderr.close()").stdout == b"went on\n"  # closed: the line is lost, not the work
    with open("/dev/full", "wb") as full:  # a full disk
        out = _run("pass", stderr=full)
    assert out.returncode == 0 and out.stdout == b"went on\n"


def test_one_timestamp_format_read_back_exactly() -> None:
    text = utc_now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", text), text
    moment = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    assert utc_text(moment) == "2026-01-02T03:04:05.678+00:00"
    assert parse_utc(utc_text(moment)) == moment


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.9.9.9", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("10.0.0.1", False), ("[2001:db8::1]", False),
])
def test_the_dashboard_and_the_cluster_share_one_loopback_rule(host: str, loopback: bool) -> None:
    """The dashboard's copy took ``[::1]`` (the bracketed form the cluster's addresses use)
    for a remote address; there is one rule now, the cluster's."""
    assert runner.cli.serve.is_loopback is is_loopback
    assert runner.cluster.network.is_loopback is is_loopback
    assert is_loopback(host) is loopback


def test_the_pgn_reader_keeps_errors_and_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    text = '[White "A"]\n[Black "B"]\n[Result "1-0"]\n\n1. e4 Ke7?? 2. Qh5 1-0\n\n' \
           '[White "C"]\n[Black "D"]\n[Result "0-1"]\n\n1. d4 0-1\n'
    with caplog.at_level(logging.DEBUG, logger="chess.pgn"):
        games = list(read_games(io.StringIO(text)))
    assert [g.headers["White"] for g in games] == ["A", "C"]
    assert games[0].errors and not games[1].errors
    assert caplog.records == []
    assert read_game(io.StringIO("")) is None
