"""Issue 12: nothing a user can type or break loses the event.

One section per class of failure; every test fails on the code before the issue was fixed.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from pathlib import Path

import pytest
import yaml
from testkit import backend, loop_config, run_args, write_config

from runner.cli import main
from runner.config import ConfigError, load_config

REPO = Path(__file__).resolve().parent.parent
DET = REPO / "tests" / "fakes" / "det_engine.py"


def engine(name: str, *extra: str) -> dict:
    return {"Name": name, "Command": sys.executable, "Args": [str(DET), "random", name, "0", *extra]}


def base(tmp_path: Path, **top: object) -> dict:
    book = tmp_path / "book.pgn"
    if not book.exists():
        book.write_text('[Event "o"]\n\n1. e4 e5 *\n\n[Event "p"]\n\n1. d4 d5 *\n\n')
    data: dict = {
        "Event": "Hardening",
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 1, "Seeding": "listed",
                         "StatePath": "state/s.json"},
        "TimeControl": "60+1",
        "Openings": {"File": "book.pgn", "Order": "sequential"},
        "Engines": [engine("P1"), engine("P2")],
    }
    data.update(top)
    return data




def with_value(data: dict, key: str, value: object) -> dict:
    """``data`` with ``key`` ("SwissOptions.Rounds", "Engines.0.Name") set to ``value``."""
    target = data
    parts = key.split(".")
    for part in parts[:-1]:
        target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
    target[parts[-1]] = value
    return data


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file under ``root`` with its bytes (None for directories): "nothing written"."""
    return {str(p.relative_to(root)): (None if p.is_dir() or not p.is_file() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


def refused(tmp_path: Path, cfg: Path, capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    """validate and run both exit 2 naming the config and every needle; nothing written."""
    before = tree(tmp_path)
    for command in ("validate", "run"):
        assert main([command, str(cfg)]) == 2
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert str(cfg) in err, err
        for needle in needles:
            assert needle in err, (needle, err)
    assert tree(tmp_path) == before
    return err


# --------------------------------------------------------------------------- 1. outputs


@pytest.mark.parametrize(("key", "value", "needle"), [
    ("PgnOut", "event.yaml", "the config file itself"),
    ("SwissOptions.StatePath", "event.yaml", "the config file itself"),
    ("Database", "event.yaml", "the config file itself"),
    ("PgnOut", "state/", "a file name"),
    ("SwissOptions.StatePath", "engine.py", "engine 'P1'"),
    ("PgnOut", "state", "existing directory"),
    ("PgnOut", ".", "existing directory"),
    ("PgnOut", "/", "a file name"),
    ("SwissOptions.StatePath", "/", "a file name"),
    ("Database", "/dev/null", "device"),
    ("PgnOut", "book.pgn.20250101T000000Z.bak", "the config file"),
])
def test_an_output_never_overwrites_an_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             key: str, value: str, needle: str) -> None:
    (tmp_path / "state").mkdir()
    script = tmp_path / "engine.py"
    script.write_text(DET.read_text())
    data = base(tmp_path)
    data["Engines"][0]["Args"][0] = "engine.py"  # relative to the config file
    if value.endswith(".bak"):  # the config sits where PgnOut's backup would go
        data["PgnOut"] = "games.pgn"
        cfg = write_config(tmp_path, data, "games.pgn.20250101T000000Z.bak")
        needle = "a backup name of the PGN"
    else:
        if key == "SwissOptions.StatePath":
            data["SwissOptions"]["StatePath"] = value
            data["Database"] = "state/db.sqlite3"
            data["PgnOut"] = "state/g.pgn"
        else:
            data[key] = value
        cfg = write_config(tmp_path, data)
    refused(tmp_path, cfg, capsys, needle, key)


def test_the_database_companions_are_outputs_too(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    data = base(tmp_path, Database="event")
    # event-wal is not an input here, but event.yaml.lock of "Database: event.yaml" would be:
    cfg = write_config(tmp_path, data, "event-wal")
    refused(tmp_path, cfg, capsys, "WAL journal", "the config file itself")


# --------------------------------------------------------------------------- 2. names


@pytest.mark.parametrize("bad", ["two\nlines", "tab\there", "bell\a", "esc\x1b[31mred", "nul\x00",
                                 "del\x7f", "line\u2028sep", "rtl\u202eoverride", "x" * 201])
@pytest.mark.parametrize("where", ["Event", "Site", "Engines.0.Name"])
def test_names_with_control_characters_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   bad: str, where: str) -> None:
    data = base(tmp_path)
    if where == "Engines.0.Name":
        data["Engines"][0]["Name"] = bad
    else:
        data[where] = bad
    err = refused(tmp_path, write_config(tmp_path, data), capsys,
                  where.replace(".0.", "[0]."),
                  "at most 200" if len(bad) > 200 else "NUL" if "\x00" in bad else "printable")
    assert "\x1b" not in err and "\n" not in err.replace("\n", "", err.count("\n"))


# --------------------------------------------------------------------------- 3. the loader


ALIAS_BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.mark.parametrize(("text", "needle"), [
    (ALIAS_BOMB, "alias bomb"),
    ("Engines: &e [*e]\n", "recursive alias"),
    ("SwissOptions: &s {Rounds: 1, Again: *s}\n", "recursive alias"),
    ("x: " + "[" * 5000 + "]" * 5000 + "\n", "nested"),
    ("Event: a\x00b\n", "NUL byte"),
    ("# " + "x" * 300_000 + "\n", "larger than"),
])
def test_hostile_yaml_is_refused_quickly(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         text: str, needle: str) -> None:
    cfg = write_config(tmp_path, text)
    started = time.monotonic()
    with pytest.raises(ConfigError, match=needle):
        load_config(cfg)
    assert time.monotonic() - started < 1.0
    refused(tmp_path, cfg, capsys, needle)


def test_a_config_that_is_not_a_regular_file_is_not_read(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "event.yaml"
    os.mkfifo(fifo)  # reading it would block for ever
    assert main(["validate", str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert main(["validate", "/dev/zero"]) == 2
    assert main(["validate", str(tmp_path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("key", "value", "needle"), [
    ("PgnOut", "a\x00b.pgn", "NUL"),
    ("Database", "x" * 300 + ".sqlite3", "at most 255 bytes"),
    ("SwissOptions.StatePath", "/".join(["d"] * 2100), "at most 4096"),
    ("Openings.File", "\x00", "NUL"),
    ("Engines.0.Command", "./a\x00b", "NUL"),
    ("Engines.0.WorkingDir", "y" * 256, "at most 255 bytes"),
    ("CutechessPath", "bin/\x00", "NUL"),
    ("Adjudication.Tablebases.Paths", ["z" * 256], "at most 255 bytes"),
    ("Engines.0.Args", ["ok", "bad\x00"], "control characters"),
    ("Engines.0.Options", {"Hash\nquit": 1}, "one line"),
    ("Engines.0.Options", {"Hash": "1\ngo infinite"}, "one line"),
    ("Engines.0.Options", {"Hash": float("nan")}, "finite number"),
])
def test_unusable_paths_and_words_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   key: str, value: object, needle: str) -> None:
    refused(tmp_path, write_config(tmp_path, with_value(base(tmp_path), key, value)), capsys, needle)


def test_a_config_file_name_with_nul_or_too_long_is_a_clear_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "a\x00b.yaml")]) == 2
    assert main(["validate", str(tmp_path / ("n" * 300 + ".yaml"))]) == 2
    err = capsys.readouterr().err
    assert "NUL" in err and "File name too long" in err and "Traceback" not in err


ABSURD = [
    ("SwissOptions.Rounds", 10**9, "at most 1000"),
    ("SwissOptions.GamesPerMatch", 10**30, "1 (single rounds) or 2"),
    ("SwissOptions.MaxExtraPairs", 10**6, "at most 100"),
    ("SwissOptions.SeedGroupCount", 10**6, "at most 1000"),
    ("SwissOptions.RandomSeed", 2**64, "2**63 - 1"),
    ("TimeControl", "1.0e+400", "finite"),
    ("TimeControl", float("inf"), "finite"),
    ("TimeControl", float("nan"), "finite"),
    ("TimeControl", "9" * 400, "at most"),
    ("TimeControl", "40/1000000000", "at most 604800"),
    ("TimeControl", "60+99999", "increment of at most"),
    ("TimeControl", "100000/60", "at most 1000 moves"),
    ("Engines.0.Rating", float("nan"), "finite number"),
    ("Engines.0.Rating", float("inf"), "finite number"),
    ("Engines.0.Rating", 1e300, "-10_000 to 10_000"),
    ("Engines.0.Nodes", 10**20, "at most 1_000_000_000_000"),
    ("Engines.0.Depth", 10**6, "at most 1_000"),
    ("Engines.0.MoveTime", 10**12, "ms per move"),
    ("Concurrency", 10**9, "at most 256"),
    ("TimeMarginMs", 10**15, "0 to 3600000"),
    ("SnapshotIntervalS", float("nan"), "0.1 to 3600"),
    ("Openings.Plies", 10**9, "at most 10000"),
    ("Adjudication.MaxMoves", 10**9, "at most 10000"),
    ("Adjudication.TcecWin.ScoreCp", 10**9, "at most 100000"),
    ("Adjudication.TcecDraw.MaxPieces", 1000, "2..32"),
]


@pytest.mark.parametrize(("key", "value", "needle"), ABSURD, ids=[f"{k}={str(v)[:12]}" for k, v, _ in ABSURD])
def test_every_number_has_a_sane_bound(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       key: str, value: object, needle: str) -> None:
    text = yaml.safe_dump(with_value(base(tmp_path), key, value), sort_keys=False)
    if value == "1.0e+400":  # a YAML float that overflows to inf
        text = text.replace("'1.0e+400'", "1.0e+400")
    refused(tmp_path, write_config(tmp_path, text), capsys, key.split(".")[-1], needle)


QUOTED = ['Deep "Blue"', "back\\slash", 'both \\" mixed']


def test_quotes_and_backslashes_in_names_are_escaped_in_pgn_tags(tmp_path: Path) -> None:
    import io

    import chess.pgn

    from runner.cli.audit import read_pgn_games
    from runner.domain.pgn import unescape_tag, write_game

    text = write_game({"Event": QUOTED[2], "Site": "a\nb", "Round": "1.1", "White": QUOTED[0],
                       "Black": QUOTED[1], "Result": "1-0"}, None, ["e2e4"], ["book"], "White mates")
    assert '[White "Deep \\"Blue\\""]' in text and '[Black "back\\\\slash"]' in text
    assert '[Site "a b"]' in text  # a line break cannot end the tag
    game = chess.pgn.read_game(io.StringIO(text))
    assert game is not None and not game.errors
    assert [unescape_tag(game.headers[k]) for k in ("White", "Black", "Event")] == \
        [QUOTED[0], QUOTED[1], QUOTED[2]]
    pgn = tmp_path / "g.pgn"
    pgn.write_text(text)
    (parsed,) = read_pgn_games(pgn)
    assert (parsed.white, parsed.black) == (QUOTED[0], QUOTED[1])


def test_a_game_whose_san_is_known_is_written_as_python_chess_writes_it_replayed() -> None:
    """The referee hands the PGN writer each move's SAN (no replay); the text is the one
    python-chess's exporter writes for the replayed game, byte for byte: tags (a tab made a
    space, quotes escaped), move numbers (``1...`` for a start with Black to move), comments
    (``}`` dropped), the reason on the last comment and the lines wrapped at 80 columns."""
    import random

    import chess

    from runner.domain.pgn import write_game

    rng = random.Random(52)
    comments = ["", "book", "+0.35/16 5.1s", "-M12/30 0.01s", "}x}", "}", "  spaced  ", "a" * 90]
    starts = [None, "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
              "4k3/8/8/8/8/8/4P3/4K3 b - - 0 57"]
    for _ in range(300):
        start = rng.choice(starts)
        board = chess.Board(start) if start else chess.Board()
        moves, sans = [], []
        for _ in range(rng.randrange(1, 120)):
            legal = list(board.legal_moves)
            if not legal:
                break
            move = rng.choice(legal)
            sans.append(board.san(move))
            moves.append(move.uci())
            board.push(move)
        said = [rng.choice(comments) for _ in moves]
        tags = {"Event": rng.choice(["E", "a long event name " * 6, 'q"uote\\']), "Site": "s\tt",
                "Round": "1.2", "White": "A", "Black": "B", "Result": "1/2-1/2", "Zeta": "z",
                "Alpha": "a"}
        reason = rng.choice([None, "", "Draw by adjudication: TCEC draw rule"])
        known = write_game(tags, start, moves, said, reason, sans=sans)
        assert known == write_game(tags, start, moves, said, reason)
        assert max(len(line) for line in known.split("\n") if not line.startswith("[")) <= 80 \
            or any(len(c) > 70 for c in said)


def _results(names: list[str]):
    from runner.domain.models import EventResults, PlayedGame, RoundResult

    games = (PlayedGame(1, 1, names[0], names[1], "1-0", "G0.0"),
             PlayedGame(1, 2, names[1], names[0], "1/2-1/2", "G9.5"))
    return EventResults(seeds=tuple(names), games_per_match=2,
                        rounds=(RoundResult(1, games),))


def test_standings_never_print_raw_escapes_and_markdown_is_escaped() -> None:
    from runner.domain.standings import compute_standings
    from runner.render.standings_report import render_standings

    names = ["Evil\x1b[2J\x1b]0;pwned\x07", "Pipe|<b>bold</b>&amp;\nnext"]
    results = _results(names)
    rows = compute_standings(results, ("SonnebornBerger",))
    for fmt in ("text", "markdown"):
        out = render_standings(rows, results, fmt)
        assert "\x1b" not in out and "\x07" not in out and "&amp;\nnext" not in out
        assert "\\x1b[2J" in out  # shown, not interpreted
    md = render_standings(rows, results, "markdown")
    assert "Pipe\\|&lt;b&gt;bold&lt;/b&gt;&amp;amp;\\nnext" in md
    for block in md.split("\n\n"):  # every row of a table keeps the header's column count
        if block.startswith("|"):
            pipes = {len(re.findall(r"(?<!\\)\|", line)) for line in block.splitlines()}
            assert len(pipes) == 1, block


# --------------------------------------------------------------------------- 8. bounded reads


@pytest.mark.parametrize("pgn", ["/dev/zero", "/dev/urandom", "dir", "fifo", "zeros.pgn", "junk.pgn"])
def test_audit_refuses_endless_and_non_pgn_input(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 pgn: str) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("A\nB\n")
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    with open(tmp_path / "zeros.pgn", "wb") as handle:  # one endless line
        handle.truncate(50 << 20)
    (tmp_path / "junk.pgn").write_text("no tags here\n" * 200_000)
    path = pgn if pgn.startswith("/") else str(tmp_path / pgn)
    started = time.monotonic()
    assert main(["audit", path, "--seeds", str(seeds)]) == 2
    err = capsys.readouterr().err
    assert path in err and "Traceback" not in err
    assert time.monotonic() - started < 10
    assert main(["audit", str(tmp_path / "junk.pgn"), "--seeds", "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err


# --------------------------------------------------------------------------- 9. umask


@pytest.mark.parametrize(("umask", "mode"), [(0o077, 0o600), (0o027, 0o640), (0o002, 0o664)])
def test_the_json_snapshot_follows_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    from runner.store.database import atomic_write

    old = os.umask(umask)
    try:
        atomic_write(tmp_path / "s.json", "{}\n")
        (tmp_path / "p.pgn").write_text("")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "s.json").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "p.pgn").stat().st_mode) == mode  # as open() does


# --------------------------------------------------------------------------- 10. EPD books


def test_epd_books_with_fen_counters_are_accepted(tmp_path: Path) -> None:
    from runner.books.openings import load_book
    from runner.config.typed import OpeningsConfig

    after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -"
    book = tmp_path / "book.epd"
    book.write_text(f"{after_e4} 0 1\n{after_e4} 3 7; id \"counted\";\n{after_e4} 0 1 c0 \"x\";\n"
                    f"{after_e4} id \"plain\";\n")
    lines = load_book(OpeningsConfig(file=book, format="epd"))
    assert [o.fen.split()[-2:] for o in lines] == [["0", "1"], ["3", "7"], ["0", "1"], ["0", "1"]]
    assert lines[1].name == "counted" and lines[3].name == "plain"
    book.write_text(f"{after_e4} 0 x\n")
    with pytest.raises(Exception, match="book.epd:1: invalid EPD"):
        load_book(OpeningsConfig(file=book, format="epd"))


# --------------------------------------------------------------------------- 4. engines

FAKE_UCI = REPO / "tests" / "fakes" / "fake_uci.py"


def _no_state(tmp_path: Path) -> None:
    assert not (tmp_path / "state").exists()  # nothing was created


@pytest.mark.slow
@pytest.mark.parametrize(("broken", "needles"), [
    ({"Command": "/bin/true", "Args": []}, ["'P1'", "/bin/true", "died"]),
    ({"Command": "./noshebang.sh", "Args": []}, ["'P1'", "noshebang.sh", "first line like '#!"]),
    ({"Command": "./badinterp.sh", "Args": []}, ["'P1'", "/no/such/interpreter", "does not exist"]),
    ({"Args": [str(FAKE_UCI), "--crash-at-start"]}, ["'P1'", "--crash-at-start", "died"]),
    ({"Args": ["-c", "import sys; print('licence expired', file=sys.stderr)"]},
     ["'P1'", "it printed: licence expired"]),
    ({"Args": [str(FAKE_UCI)], "Options": {"Hash": 999999}}, ["'P1'", "Hash", "999999"]),
    ({"Args": [str(FAKE_UCI)], "Options": {"NoSuchOption": 1}}, ["'P1'", "NoSuchOption"]),
    ({"Args": [str(FAKE_UCI), "--handshake-delay", "60"]}, ["'P1'", "no uci handshake"]),
])
def test_run_refuses_an_engine_that_cannot_play_before_any_game(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        broken: dict, needles: list[str]) -> None:
    from runner.service import setup

    monkeypatch.setattr(setup, "PREFLIGHT_TIMEOUT_S", 3.0)
    (tmp_path / "noshebang.sh").write_text("echo not an engine\n")
    (tmp_path / "badinterp.sh").write_text("#!/no/such/interpreter\n")
    for script in ("noshebang.sh", "badinterp.sh"):
        (tmp_path / script).chmod(0o755)
    data = base(tmp_path)
    data["Engines"][0].update(broken)
    cfg = write_config(tmp_path, data)
    started = time.monotonic()
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert time.monotonic() - started < 20
    assert "Traceback" not in err and "no game was played" in err
    for needle in needles:
        assert needle in err, (needle, err)
    assert "'P2'" not in err  # the good engine is not blamed
    _no_state(tmp_path)


@pytest.mark.slow
def test_validate_probe_is_clean_and_refuses_a_bad_timeout(tmp_path: Path) -> None:
    import subprocess

    data = base(tmp_path)
    data["Engines"] += [{"Name": "Crash", "Command": sys.executable,
                         "Args": [str(FAKE_UCI), "--crash-at-start"]},
                        {"Name": "True", "Command": "/bin/true", "Protocol": "xboard"}]
    cfg = write_config(tmp_path, data)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "runner", "validate", "--probe", str(cfg)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1
    assert "FAIL Crash" in out.stdout and "FAIL True" in out.stdout and "ok   P1" in out.stdout
    assert "Loop" not in out.stderr and "Exception ignored" not in out.stderr, out.stderr
    for bad in ("0", "-1", "nan"):
        out = subprocess.run([sys.executable, "-m", "runner", "validate", "--probe", "--timeout",
                              bad, str(cfg)], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 2 and "--timeout" in out.stderr, out.stderr


@pytest.mark.slow
def test_a_complete_event_is_not_probed_and_names_with_quotes_survive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The preflight passes real engines, a finished event needs none, and the event's own
    PGN with quoted names reads back in python-chess and `audit`."""
    script = tmp_path / "engine.py"
    script.write_text(DET.read_text())
    data = base(tmp_path)
    for e, name in zip(data["Engines"], QUOTED[:2], strict=True):
        e["Name"] = name
        e["Args"][0] = "engine.py"
        e["WorkingDir"] = "."  # relative to the config file
    cfg = write_config(tmp_path, data)
    assert main(["run", str(cfg)]) == 0
    script.write_text("import sys\nsys.exit(3)\n")  # the engine breaks after the event
    capsys.readouterr()
    assert main(["run", str(cfg)]) == 0  # complete: nothing to play, nothing to probe
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(QUOTED[:2]) + "\n")
    assert main(["audit", str(tmp_path / "state" / "games.pgn"), "--seeds", str(seeds)]) == 0


# --------------------------------------------------------------------------- 5. damaged state


def finished_event(tmp_path: Path, **swiss: object):
    from runner.cli.run import cli_run
    from runner.config import load_config as load

    config = load(loop_config(tmp_path, players=4, **swiss))
    assert cli_run(config, run_args(), play_game=backend()) == 0
    return config


def _sql(db: Path, statement: str, *params: object) -> None:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        conn.execute(statement, params)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize("damage", [
    "UPDATE games SET result='1-1' WHERE game_id=3",
    "UPDATE games SET white='Nobody' WHERE game_id=3",
    "DELETE FROM players WHERE seed=2",
    "UPDATE meta SET value='{not json' WHERE key='fingerprint'",
    "UPDATE rounds SET pairs='[[1' WHERE number=1",
    "UPDATE meta SET value='x' WHERE key='games_per_match'",
    "DROP TABLE rounds",
])
def test_damaged_rows_are_exit_2_for_status_standings_and_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str) -> None:
    config = finished_event(tmp_path, Rounds=2)
    _sql(config.database, damage)
    pgn_before = config.pgn_out.read_bytes()
    for command in (["status"], ["status", "--json"], ["standings"], ["standings", "--format", "markdown"],
                    ["run"]):
        code = main([command[0], str(config.path), *command[1:]])
        err = capsys.readouterr().err
        assert "Traceback" not in err
        if command[0] == "run" or code != 0:
            assert code == 2, (command, code, err)
            assert str(config.database) in err, err
    assert config.pgn_out.read_bytes() == pgn_before


def test_a_flipped_byte_inside_a_record_is_reported_with_the_game_number(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = finished_event(tmp_path, Rounds=1)
    _sql(config.database, "UPDATE games SET pgn=replace(pgn, 'Loop', 'Lo' || char(0) || 'p') WHERE game_id=2")
    config.pgn_out.unlink()  # the PGN must be rebuilt from the records
    assert main(["run", str(config.path)]) == 2
    err = capsys.readouterr().err
    assert "game 2 (round 1.2)" in err and "checksum" in err
    assert not config.pgn_out.exists()  # no PGN with a NUL byte written


def test_a_pgn_edited_in_place_with_the_same_size_is_rebuilt(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    config = finished_event(tmp_path, Rounds=1)
    original = config.pgn_out.read_bytes()
    edited = original.replace(b'[Result "1-0"]', b'[Result "0-1"]', 1)
    assert edited != original and len(edited) == len(original)
    config.pgn_out.write_bytes(edited)
    assert main(["run", str(config.path)]) == 0
    assert config.pgn_out.read_bytes() == original
    assert "Rebuilt" in capsys.readouterr().out
    assert list(tmp_path.glob("state/games.pgn.*.bak"))  # the edited file was kept aside


@pytest.mark.parametrize("slow", ["its read", "its write"])
def test_games_that_end_during_a_pgn_rebuild_are_appended_after_it_not_rebuilt_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        slow: str) -> None:
    """A rebuild of PgnOut (here: the file deleted during the event) reads every recorded
    game; games that end while it runs are appended once it is done, each once (not one
    more rebuild per game, which fast games kept going to the end of the event). Slow
    before its read, the games that end meanwhile are in the file it writes: not appended
    again; slow after its read, they are not: appended."""
    from runner.cli.run import cli_run
    from runner.config import load_config as load
    from runner.store import database
    from runner.store.database import Store

    path = loop_config(tmp_path, players=8, Rounds=3)
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "Concurrency": 4}, sort_keys=False))
    config = load(path)
    pgn = config.pgn_out
    owner, name = (Store, "sync_pgn") if slow == "its read" else (database, "rebuild_pgn")
    real = getattr(owner, name)

    def slowed(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - as the real one
        time.sleep(0.3)  # a big event's rebuild: the other games go on meanwhile
        return real(*args, **kwargs)

    def meddle(spec) -> None:  # noqa: ANN001 - a GameSpec
        if spec.game_id == 5:
            pgn.unlink()

    monkeypatch.setattr(owner, name, slowed)
    assert cli_run(config, run_args(), play_game=backend(delay=0.02, hook=meddle)) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    store = Store.open(config.database)
    try:
        assert store.counts().get("finished") == 24
        assert store.pgn_matches(pgn)  # every game once, in finish order
    finally:
        store.close()
    assert out.count(f"Rebuilt {pgn}") == 1, [x for x in out.splitlines() if "Rebuilt" in x]


@pytest.mark.parametrize("how", ["zero", "schemaless", "deleted", "no event", "emptied"])
def test_a_lost_database_next_to_the_events_outputs_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    import sqlite3

    config = finished_event(tmp_path, Rounds=1)
    for side in ("-wal", "-shm"):
        config.database.with_name(config.database.name + side).unlink(missing_ok=True)
    config.database.unlink()
    if how == "zero":
        config.database.write_bytes(b"")
    elif how == "schemaless":
        sqlite3.connect(config.database).execute("PRAGMA journal_mode=WAL").fetchone()
    elif how == "no event":  # a swiss-runner database holding no event (issue 28)
        from runner.store.database import Store

        Store.open(config.database).close()
    elif how == "emptied":  # an SQLite file of two pages and no table: the header cannot tell
        conn = sqlite3.connect(config.database)
        conn.executescript("CREATE TABLE t (x); DROP TABLE t;")
        conn.close()
    before = tree(tmp_path)
    assert main(["run", str(config.path)]) == 2
    err = capsys.readouterr().err
    assert str(config.database) in err and "backup" in err, err
    assert tree(tmp_path) == before
    if how != "deleted":  # without the snapshot, the PGN alone tells
        config.swiss.state_path.unlink()
        assert main(["run", str(config.path)]) == 2
        assert "holds games of the event" in capsys.readouterr().err


@pytest.mark.parametrize("victim", ["database", "wal"])
def test_the_database_disappearing_during_a_run_stops_it(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         victim: str) -> None:
    from runner.cli.run import cli_run
    from runner.config import load_config as load

    config = load(loop_config(tmp_path, players=4, Rounds=2))
    path = config.database if victim == "database" else \
        config.database.with_name(config.database.name + "-wal")

    def delete(spec) -> None:  # noqa: ANN001 - a GameSpec
        if spec.game_id == 3:
            path.unlink()

    assert cli_run(config, run_args(), play_game=backend(hook=delete)) == 1
    err = capsys.readouterr().err
    assert f"{path} was deleted" in err and "games are safe" not in err, err
    saved = list(tmp_path.glob("state/*.recovered"))
    assert len(saved) == 1 and str(saved[0]) in err
    import sqlite3

    conn = sqlite3.connect(saved[0])
    assert conn.execute("SELECT COUNT(*) FROM games WHERE status='finished'").fetchone()[0] >= 2
    conn.close()


# --------------------------------------------------------------------------- 6. one runner


def test_a_deleted_lock_file_does_not_let_a_second_runner_in(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from runner.cli.run import cli_run
    from runner.config import load_config as load
    from runner.service.lock import lock_path, runner_alive

    config = load(loop_config(tmp_path, players=4, Rounds=1))
    seen: dict[str, object] = {}

    def second(spec) -> None:  # noqa: ANN001 - a GameSpec
        if spec.game_id == 2:
            lock_path(config.database).unlink()
            seen["alive"] = runner_alive(config.database)
            seen["run"] = main(["run", str(config.path)])
            seen["status"] = main(["status", str(config.path)])

    assert cli_run(config, run_args(), play_game=backend(hook=second)) == 0
    out, err = capsys.readouterr()
    assert seen == {"alive": True, "run": 2, "status": 0}, (seen, err)
    assert "recorded in the database; its lock file" in err and "Runner: running" in out
    from testkit import event_games

    games = event_games(config.database)
    assert all(g[6] == "finished" for g in games) and len(games) == 4


def test_a_lock_file_replaced_before_it_is_locked_is_not_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Between opening the lock file and locking it, another program replaced it: the run
    locks the file now at the path, or a runner taking that one would run beside it."""
    from runner.service import lock

    database = tmp_path / "state" / "s.sqlite3"
    real = lock._flock_exclusive
    calls = []

    def replaced_first(fd: int) -> bool:
        calls.append(fd)
        if len(calls) == 1:
            path = lock.lock_path(database)
            path.unlink()
            path.write_text("")
        return real(fd)

    monkeypatch.setattr(lock, "_flock_exclusive", replaced_first)
    with lock.event_lock(database) as held:
        assert len(calls) == 2  # the replaced file was dropped and the new one locked
        assert lock._held(lock.lock_path(database)) is True  # the file at the path is locked
        assert lock.lock_path(database).read_text() == str(os.getpid())
        assert held.claimed is False
    assert lock.lock_path(database).exists()  # not created by this run: left as it was
    lock.lock_path(database).unlink()
    monkeypatch.setattr(lock, "_flock_exclusive", real)
    with lock.event_lock(database):
        assert lock.lock_path(database).exists()
    assert not lock.lock_path(database).exists()  # created, never claimed: a refused run


# --------------------------------------------------------------------------- 7. read-only


def test_status_and_standings_work_in_a_read_only_directory(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import shutil
    import subprocess

    if shutil.which("chattr") is None:
        pytest.skip("chattr is not available")
    config = finished_event(tmp_path, Rounds=1)
    state = config.database.parent
    for side in ("-wal", "-shm"):
        assert not config.database.with_name(config.database.name + side).exists()
    if subprocess.run(["chattr", "+i", str(state)], capture_output=True).returncode:
        pytest.skip("cannot make a directory immutable here")
    try:
        capsys.readouterr()
        assert main(["status", str(config.path)]) == 0
        assert main(["standings", str(config.path)]) == 0
        out, err = capsys.readouterr()
        assert "Games: 4 of 4 finished" in out and "Crosstable" in out and err == ""
        assert sorted(p.name for p in state.iterdir()) == sorted(
            ["games.pgn", "swiss.json", "swiss.sqlite3", "swiss.sqlite3.lock"])
    finally:
        subprocess.run(["chattr", "-i", str(state)], check=True)


@pytest.mark.parametrize("how", ["deleted", "moved", "replaced", "appended to"])
def test_a_pgn_file_deleted_moved_or_changed_during_a_run_is_rebuilt(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str) -> None:
    """PgnOut is a view of the database: a file deleted, moved away, replaced or written to
    by someone else while the event runs is rebuilt with every recorded game (appending to
    it would leave a file without the earlier ones); text that is not ours is kept aside."""
    from runner.cli.run import cli_run
    from runner.config import load_config as load
    from runner.store.database import Store

    config = load(loop_config(tmp_path, players=4, Rounds=2))
    pgn = config.pgn_out
    foreign = '[Event "someone else\'s"]\n\n1. e4 *\n\n'

    def meddle(spec) -> None:  # noqa: ANN001 - a GameSpec
        if spec.game_id != 3:
            return
        assert pgn.exists()  # games 1 and 2 are in it
        if how == "deleted":
            pgn.unlink()
        elif how == "moved":
            pgn.rename(tmp_path / "elsewhere.pgn")
        elif how == "replaced":
            (tmp_path / "new.pgn").write_text(foreign)
            os.replace(tmp_path / "new.pgn", pgn)
        else:
            with open(pgn, "a", encoding="utf-8") as out:
                out.write(foreign)

    assert cli_run(config, run_args(), play_game=backend(hook=meddle)) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    store = Store.open(config.database)
    try:
        rounds = [line for line in pgn.read_text().splitlines() if line.startswith("[Round")]
        assert store.pgn_matches(pgn), rounds
        assert store.counts().get("finished") == 8
    finally:
        store.close()
    assert f"Rebuilt {pgn}" in out, out
    if how in ("replaced", "appended to"):  # the text that was not ours, kept aside
        kept = [p for p in pgn.parent.iterdir() if p != pgn and "someone else" in
                p.read_text(errors="replace")]
        assert kept, sorted(pgn.parent.iterdir())
