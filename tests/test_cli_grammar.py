"""One command-line grammar (docs/operators.md, "One grammar"): `--format` on every command
that prints data, with `--json` as its alias, one JSON document each; `serve --listen` with
`--host/--port` as aliases; `--end-of-round` and `--now` with one meaning across `td`; and no
control character of a name, tag or config value reaching a terminal from any command."""

from __future__ import annotations

import argparse
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from web_event import generate_event

from runner.cli import build_parser, main
from runner.cli.serve import listen_address, read_admin_tokens
from runner.config import Config
from runner.store import decisions

REPO = Path(__file__).resolve().parent.parent
EVIL = "Evil\x1b[2J\x1b]0;pwned\x07"


@pytest.fixture(scope="module")
def event(tmp_path_factory: pytest.TempPathFactory) -> Config:
    return generate_event(tmp_path_factory.mktemp("grammar"), engines=4, rounds=2,
                          finished_rounds=1, running=1, names=["A", "B", "C", "D"], plies=10)


def event_pgn(config: Config, directory: Path) -> tuple[Path, Path]:
    """The finished games' PGN and the seeds file of ``config``'s event (for `audit`)."""
    conn = sqlite3.connect(f"{config.database.as_uri()}?mode=ro", uri=True)
    try:
        pgns = [row[0] for row in conn.execute(
            "SELECT pgn FROM games WHERE status='finished' ORDER BY game_id")]
        seeds = [row[0] for row in conn.execute("SELECT name FROM players ORDER BY seed")]
    finally:
        conn.close()
    pgn, seeds_file = directory / "event.pgn", directory / "seeds.txt"
    pgn.write_text("\n\n".join(pgns) + "\n", encoding="utf-8")
    seeds_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
    return pgn, seeds_file


def data_commands(config: Config, tmp_path: Path) -> dict[str, list[str]]:
    pgn, seeds = event_pgn(config, tmp_path)
    path = str(config.path)
    return {"status": ["status", path], "standings": ["standings", path],
            "ratings": ["ratings", path, "--simulations", "0"], "td log": ["td", path, "log"],
            "audit": ["audit", str(pgn), "--seeds", str(seeds), "--games-per-match", "2"]}


def test_every_data_command_prints_one_json_document_and_json_is_its_alias(
        event: Config, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, argv in data_commands(event, tmp_path).items():
        documents = []
        for spelling in (["--format", "json"], ["--json"]):
            code = main([*argv, *spelling])
            captured = capsys.readouterr()
            assert code in (0, 1), (name, captured.err)  # audit: 1 when a round differs
            documents.append(json.loads(captured.out))  # the whole output: one document
        first, alias = documents
        for volatile in ("eta_s", "updated"):  # status: measured at each call
            first.pop(volatile, None), alias.pop(volatile, None)
        assert first == alias, name
        assert main([*argv, "--format", "text"]) in (0, 1)
        with pytest.raises(json.JSONDecodeError):
            json.loads(capsys.readouterr().out)


def parse(*argv: str) -> argparse.Namespace:
    return build_parser(argv[0]).parse_args(list(argv))


def test_old_spellings_are_aliases() -> None:
    assert parse("status", "c.yaml", "--json").format == "json"
    assert parse("td", "c.yaml", "log", "--json").format == "json"
    assert parse("audit", "p.pgn", "--seeds", "s", "--json").format == "json"
    assert parse("standings", "c.yaml", "--json").format == "json"
    assert parse("ratings", "c.yaml", "--json").format == "json"
    # one word for the end of the round: --after-round is pause's older spelling
    for flag in ("--end-of-round", "--after-round"):
        assert parse("td", "c.yaml", "pause", flag, "--reason", "r").mode == "after-round"
    assert parse("td", "c.yaml", "restart", "3", "--end-of-round", "--reason", "r").when == \
        "end-of-round"
    # one meaning of --now: the games in progress it touches are acted on at once
    assert parse("td", "c.yaml", "pause", "--now", "--reason", "r").mode == "now"
    assert parse("td", "c.yaml", "withdraw", "A", "--now", "--reason", "r").now is True
    assert parse("td", "c.yaml", "restart", "3", "--now", "--reason", "r").when == "now"
    assert parse("td", "c.yaml", "restart", "3", "--reason", "r").when == "now"
    assert parse("td", "c.yaml", "pause", "--reason", "r").mode == "finish"
    # serve --listen HOST[:PORT], as worker and scheduler; --host/--port its aliases
    assert listen_address(parse("serve", "c.yaml")) == ("127.0.0.1", 8080)
    assert listen_address(parse("serve", "c.yaml", "--listen", "0.0.0.0:0")) == ("0.0.0.0", 0)
    assert listen_address(parse("serve", "c.yaml", "--listen", "[::1]:81")) == ("::1", 81)
    assert listen_address(parse("serve", "c.yaml", "--listen", "localhost")) == \
        ("localhost", 8080)
    assert listen_address(parse("serve", "c.yaml", "--host", "0.0.0.0", "--port", "9")) == \
        ("0.0.0.0", 9)
    assert listen_address(parse("serve", "c.yaml", "--port", "9")) == ("127.0.0.1", 9)
    for bad in (["--listen", "h:1", "--port", "2"], ["--listen", "tcp://h:1"],
                ["--listen", "h:99999"], ["--listen", ":80"]):
        with pytest.raises(ValueError, match="--listen"):
            listen_address(parse("serve", "c.yaml", *bad))


def test_serve_help_says_what_it_serves_and_when_it_acts(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "dashboard" in text and "--listen HOST[:PORT]" in text
    assert "unless --admin-token-file" in text and "read-only" not in text.split("options:")[0]
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "read-only unless started with an admin token" in " ".join(
        capsys.readouterr().out.split())


def test_admin_token_files(tmp_path: Path, event: Config,
                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "admins"
    path.write_text("bare-token-0123456789\n")
    path.chmod(0o600)
    assert read_admin_tokens(str(path)) == {"admin": "bare-token-0123456789"}
    path.write_text("# the TDs of the event\nalice alice-token-0123\n\nbob  bob-token-45678901\n")
    assert read_admin_tokens(str(path)) == {"alice": "alice-token-0123",
                                            "bob": "bob-token-45678901"}
    bad = {"alice a-token-0123456\nbob\n": "line 2: 1 word(s), expected 'NAME TOKEN'",
           "alice a-token-0123456\nbob b-token-0123456 x\n": "line 2: 3 word(s)",
           "alice a-token-0123456\nalice b-token-0123456\n": "line 2: alice is named twice",
           "alice a-token-0123456\nbob a-token-0123456\n": "line 2: bob's token is another",
           "alice short\n": "line 1: alice's token has 5 characters, expected at least 12",
           "al/ice a-token-0123456\n": "line 1: name 'al/ice'",
           "# nothing\n": "the file is empty"}
    for text, needle in bad.items():
        path.write_text(text)
        assert main(["serve", str(event.path), "--admin-token-file", str(path)]) == 2
        err = capsys.readouterr().err
        assert f"--admin-token-file {path}: {needle}" in err, err
        assert "Traceback" not in err


def hostile_event(directory: Path) -> Config:
    """An event whose state names an engine with terminal escapes (written by another
    program: the config refuses such a name), with a TD note and a giver just as bad."""
    config = generate_event(directory, engines=4, rounds=2, finished_rounds=1, running=1,
                            names=["A", "B", "C", "D"], plies=10)
    conn = sqlite3.connect(config.database, isolation_level=None)
    try:
        conn.execute("UPDATE players SET name=? WHERE name='A'", (EVIL,))
        for side in ("white", "black"):
            conn.execute(f"UPDATE games SET {side}=? WHERE {side}='A'", (EVIL,))
        decisions.add_command(conn, "note", {"text": f"see {EVIL}"}, "", f"w{EVIL}")
    finally:
        conn.close()
    return config


def test_a_hostile_engine_name_never_reaches_the_terminal(tmp_path: Path) -> None:
    config = hostile_event(tmp_path / "event")
    commands = data_commands(config, tmp_path)
    pgn = tmp_path / "event.pgn"  # the PGN's tags name it too
    text = pgn.read_text(encoding="utf-8")
    pgn.write_text(text.replace('White "A"', f'White "{EVIL}"').replace(
        'Black "A"', f'Black "{EVIL}"'), encoding="utf-8")
    seeds = tmp_path / "seeds.txt"  # in another order: the report names the pairs that differ
    seeds.write_text("\n".join(reversed(seeds.read_text().split())) + "\n", encoding="utf-8")
    commands["standings markdown"] = [*commands["standings"], "--format", "markdown"]
    commands["td withdraw"] = ["td", str(config.path), "withdraw", EVIL, "--reason", EVIL]
    commands["play"] = ["play", str(config.path), "--white", EVIL, "--black", "B"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for name, argv in commands.items():
        result = subprocess.run([sys.executable, "-m", "runner", *argv], cwd=REPO, env=env,
                                capture_output=True, timeout=120)
        both = result.stdout + result.stderr
        assert b"\x1b" not in both and b"\x07" not in both, (name, both[-2000:])
        if name != "td withdraw":  # recorded: its line names the command, not the engine
            assert b"\\x1b[2J" in both, (name, both[-2000:])  # shown, not interpreted
        assert b"Traceback" not in both, name


def test_status_without_an_event_is_still_one_json_document(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = generate_event(tmp_path / "e", engines=4, rounds=1, finished_rounds=0, running=0,
                            names=["A", "B", "C", "D"])
    config.database.unlink()
    assert main(["status", str(config.path), "--format", "json"]) == 1
    assert "no event recorded yet" in json.loads(capsys.readouterr().out)["error"]
    assert main(["status", str(config.path)]) == 1
    assert capsys.readouterr().out.startswith(f"{config.path}: no event recorded yet")
    for command in ("standings", "ratings"):  # the same for every data command
        assert main([command, str(config.path), "--format", "json"]) == 1
        out = capsys.readouterr()
        assert "no tournament state yet" in json.loads(out.out)["error"] and not out.err
        assert main([command, str(config.path)]) == 1
        out = capsys.readouterr()
        assert not out.out and "no tournament state yet" in out.err


def test_the_escaping_stream_keeps_the_live_bar_and_line_breaks_only() -> None:
    """`run`'s live bar on a terminal (tqdm, as runner.service.views.progress.ProgressBar draws it)
    reaches the terminal as drawn; any other control character is shown escaped."""
    from tqdm import tqdm

    from runner.cli.common import EscapingStream

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    raw = Terminal()
    out = EscapingStream(raw)
    assert out.isatty() and out.getvalue() == ""  # the rest is the terminal's
    bar = tqdm(total=10, initial=1, file=out, dynamic_ncols=True, leave=False, unit="game",
               bar_format="{n_fmt}/{total_fmt} games |{bar}| {postfix}")
    bar.set_postfix_str("ETA 0:01:00 | #1 A-B ply 3", refresh=True)
    with tqdm.external_write_mode(file=out):
        print(f"Finished game 1 ({EVIL} vs B)\r", file=out)
    bar.close()
    text = raw.getvalue()
    assert text.startswith("\r1/10 games |") and "ETA 0:01:00" in text  # drawn, not escaped
    assert "\x1b" not in text and "\x07" not in text
    assert "Finished game 1 (Evil\\x1b[2J\\x1b]0;pwned\\x07 vs B)\\r\n" in text
