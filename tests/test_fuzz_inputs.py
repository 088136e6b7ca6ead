"""Property tests (issue 12): whatever a config file or an opening book holds, `validate`
answers with exit 0, or exit 2 and a message naming the file; never a traceback, a hang or
a write."""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import write_config

from runner.cli import main

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

GOOD = {
    "Event": "Fuzz",
    "SwissOptions": {"GamesPerMatch": 2, "Rounds": 3, "StatePath": "state/s.json"},
    "TimeControl": "10+0.1",
    "Openings": {"File": "book.pgn", "Plies": 4},
    "Adjudication": {"TcecDraw": {"Plies": 10}, "MaxMoves": 100},
    "Engines": [{"Name": "A", "Command": sys.executable, "Rating": 3000},
                {"Name": "B", "Command": sys.executable, "Options": {"Hash": 16}}],
}
BOOK = '[Event "o"]\n\n1. e4 e5 2. Nf3 Nc6 *\n\n[Event "p"]\n\n1. d4 d5 *\n\n'
KEY_PATHS = ["Event", "Site", "TimeControl", "Concurrency", "PgnOut", "Database", "Backend",
             "SnapshotIntervalS", "TimeMarginMs", "Tiebreaks", "SwissOptions",
             "SwissOptions.Rounds", "SwissOptions.GamesPerMatch", "SwissOptions.StatePath",
             "SwissOptions.RandomSeed", "SwissOptions.MaxExtraPairs", "Openings",
             "Openings.File", "Openings.Plies", "Openings.Format", "Adjudication",
             "Adjudication.TcecDraw", "Adjudication.TcecDraw.Plies", "Adjudication.Tablebases",
             "Engines", "Engines.0", "Engines.0.Name", "Engines.0.Command", "Engines.0.Args",
             "Engines.0.Rating", "Engines.0.Options", "Engines.1.Options.Hash",
             "Engines.1.Nodes", "Engines.1.Depth", "Engines.1.MoveTime", "Engines.1.WorkingDir"]

NASTY = st.sampled_from([
    "/", ".", "..", "event.yaml", "book.pgn", "state", "/dev/null", "/dev/zero", "a\x00b",
    "x" * 300, "d/" * 2100, "~nobody/x", "state/s.sqlite3-wal", "\x1b[31m", "two\nlines", "inf",
    "1e400", "40/90:00+30", "-1", "0", "", " ", 10**9, 2**64, -(2**63), float("nan"),
    float("inf"), 1e300, 0.0, -0.5, True, None])
scalars = st.one_of(  # the nasty values come up often: one branch in two
    NASTY, NASTY, NASTY, st.booleans(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=12)


def _set(data: dict, path: str, value: object) -> None:
    target: object = data
    parts = path.split(".")
    for part in parts[:-1]:
        if isinstance(target, list):
            if not part.isdigit() or int(part) >= len(target):
                return
            target = target[int(part)]
        elif isinstance(target, dict):
            target = target.setdefault(part, {})
        if not isinstance(target, (dict, list)):
            return
    last = parts[-1]
    if isinstance(target, list) and last.isdigit() and int(last) < len(target):
        target[int(last)] = value
    elif isinstance(target, dict):
        target[last] = value


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
            for p in sorted(root.rglob("*")) if not p.is_symlink() and (p.is_dir() or p.is_file())}


def _validate(folder: Path, config: Path, names: tuple[str, ...]) -> None:
    """validate exits 0, or 2 naming one of ``names``; no traceback, nothing written."""
    before = _tree(folder)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["validate", str(config)])
    text = err.getvalue()
    assert code in (0, 2), (code, text)
    assert "Traceback" not in text
    if code == 2:
        assert any(name in text for name in names), text
    assert _tree(folder) == before


@pytest.mark.slow
@FUZZ
@given(changes=st.lists(st.tuples(st.sampled_from(KEY_PATHS), values), min_size=1, max_size=4))
def test_config_values_never_crash_the_loader(changes: list[tuple[str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "book.pgn").write_text(BOOK)
        data = yaml.safe_load(yaml.safe_dump(GOOD))
        for path, value in changes:
            _set(data, path, value)
        config = write_config(folder, data)
        _validate(folder, config, (str(config),))


@pytest.mark.slow
@FUZZ
@given(text=st.one_of(st.text(max_size=400), st.binary(max_size=400).map(
    lambda b: b.decode("latin-1"))), where=st.integers(min_value=0, max_value=600))
def test_config_text_never_crashes_the_loader(text: str, where: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "book.pgn").write_text(BOOK)
        good = yaml.safe_dump(GOOD)
        config = folder / "event.yaml"
        config.write_bytes((good[:where] + text + good[where:]).encode("utf-8", "surrogatepass"))
        _validate(folder, config, (str(config),))


pgn_text = st.lists(st.one_of(
    st.sampled_from(['[Event "x"]', '[FEN "8/8/8/8/8/8/8/8 w - - 0 1"]', '[SetUp "1"]', "",
                     "1. e4 e5 2. Nf3 *", "1. e4 e4 *", "{ comment", "(1. d4)", "1-0", "1. O-O *",
                     '[Event "unterminated', "1. e4 $1 e5?? *", "\x00", "\ufeff"]),
    st.text(max_size=30)), max_size=12).map("\n".join)
epd_text = st.lists(st.one_of(
    st.sampled_from(["rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -",
                     "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
                     "8/8/8/8/8/8/8/8 w - -", "k7/8/8/8/8/8/8/7K w - - 99 999999999999",
                     'id "x";', "# comment", ""]),
    st.text(max_size=60)), max_size=8).map("\n".join)


@pytest.mark.slow
@FUZZ
@given(fmt=st.sampled_from(["pgn", "epd", "polyglot"]), text=st.one_of(pgn_text, epd_text),
       raw=st.binary(max_size=200))
def test_book_content_never_crashes_the_readers(fmt: str, text: str, raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        book = folder / f"book.{ {'pgn': 'pgn', 'epd': 'epd', 'polyglot': 'bin'}[fmt] }"
        if fmt == "polyglot":
            book.write_bytes(raw)
        else:
            book.write_bytes(text.encode("utf-8", "surrogatepass") + raw[:20])
        data = yaml.safe_load(yaml.safe_dump(GOOD))
        data["Openings"] = {"File": book.name, "Format": fmt, "Plies": 4}
        config = write_config(folder, data)
        _validate(folder, config, (str(config), str(book), book.name))
