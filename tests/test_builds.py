"""TCEC rule 8 for the engines' files (runner.play.enginebuild, runner.store.buildrecords): a local
engine binary replaced in the middle of an event (as `apt` replaces it: a new file renamed
over the old one) is refused before its next game with both digests; `run` refuses it
again until `--accept-build ENGINE --reason TEXT` records the new build; the PGN and the JSON
state name the build that played each game. Real Debian engines (a copy of Toga II is the
engine that gets replaced)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import chess.pgn
import pytest
from testkit import swiss_event, wait_until

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO),
       "PATH": os.environ.get("PATH", "") + os.pathsep + "/usr/games"}

pytestmark = pytest.mark.engines


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def event(tmp_path: Path, toga: Path) -> Path:
    for name in ("toga2", "stockfish", "ethereal-chess", "fairy-stockfish"):
        if not shutil.which(name, path=ENV["PATH"]):
            pytest.skip(f"{name} (Debian package) is not installed")
    engines = [
        {"Name": "Toga", "Command": str(toga), "MoveTime": 40},
        {"Name": "Stockfish", "Command": "stockfish", "Nodes": 2000,
         "Options": {"Threads": 1, "Hash": 1}},
        {"Name": "Ethereal", "Command": "ethereal-chess", "Depth": 5,
         "Options": {"Threads": 1, "Hash": 2}},
        {"Name": "Fairy", "Command": "fairy-stockfish", "Nodes": 2000,
         "Options": {"Threads": 1, "Hash": 1}},
    ]
    return swiss_event(tmp_path, engines, event="builds", time_control="60+1", concurrency=1,
                       games_per_match=1, rounds=2, max_moves=30)


def run(config: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "runner", "run", str(config), *extra],
                          cwd=REPO, env=ENV, capture_output=True, text=True, timeout=600)


def toga_running(db: Path) -> bool:
    if not db.exists():
        return False
    try:
        conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT COUNT(*) FROM games WHERE status='running' AND "
                                "'Toga' IN (white, black)").fetchone()[0] > 0
        finally:
            conn.close()
    except sqlite3.OperationalError:
        return False


@pytest.mark.slow
def test_a_local_binary_replaced_during_the_event(tmp_path: Path) -> None:
    toga = tmp_path / "bin" / "toga"
    toga.parent.mkdir()
    shutil.copy2("/usr/games/toga2", toga)
    config = event(tmp_path, toga)
    old_exe = sha(toga)
    runner = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                              env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = tmp_path / "state" / "swiss.sqlite3"
    # Toga's first game is being played: replace its binary
    wait_until(lambda: toga_running(db), "Toga's first game playing", 120, runner, step=0.02)
    new = toga.with_name("toga.dpkg-new")
    new.write_bytes(Path("/usr/games/toga2").read_bytes() + b"\0patched build\0")
    new.chmod(0o755)
    os.replace(new, toga)  # as dpkg installs a file: the running engine keeps the old one
    new_exe = sha(toga)
    out, err = runner.communicate(timeout=300)
    assert runner.returncode == 1, out + err
    assert "engine Toga: its build differs from the event's (TCEC rule 8)" in err, err
    assert f"{toga}: {old_exe} -> {new_exe}" in err, err  # both digests of the executable
    assert "--accept-build Toga" in err and "Traceback" not in err
    conn = sqlite3.connect(db)
    finished = conn.execute("SELECT white, black FROM games WHERE status='finished'").fetchall()
    recorded = conn.execute("SELECT digest, files FROM builds WHERE engine='Toga'").fetchall()
    conn.close()
    assert len(recorded) == 1 and json.loads(recorded[0][1]) == {str(toga): old_exe}
    old_build = recorded[0][0]
    played = [g for g in finished if "Toga" in g]
    assert len(played) == 1  # the game it had started finished; no other was started
    assert 2 <= len(finished) < 4  # round 1 complete; stopped before Toga's second game

    again = run(config)  # the same command: refused before any game, with both digests
    assert again.returncode == 2, again.stdout + again.stderr
    assert old_build in again.stderr and f"{old_exe} -> {new_exe}" in again.stderr
    no_reason = run(config, "--accept-build", "Toga")
    assert no_reason.returncode == 2 and "--reason" in no_reason.stderr
    unknown = run(config, "--accept-build", "Togo", "--reason", "x")
    assert unknown.returncode == 2 and "Togo" in unknown.stderr

    accepted = run(config, "--accept-build", "Toga", "--reason", "crash fix, decision 12")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "Engine Toga: build" in accepted.stdout and "accepted (crash fix, decision 12)" \
        in accepted.stdout
    state = json.loads((tmp_path / "state" / "swiss.json").read_text())
    toga_builds = state["builds"]["Toga"]
    assert [b["reason"] for b in toga_builds] == ["event start", "crash fix, decision 12"]
    assert toga_builds[0]["digest"] == old_build and toga_builds[0]["files"] == {str(toga): old_exe}
    new_build = toga_builds[1]["digest"]
    assert toga_builds[1]["files"] == {str(toga): new_exe} and new_build != old_build
    with open(tmp_path / "state" / "games.pgn", encoding="utf-8") as handle:
        games = []
        while (game := chess.pgn.read_game(handle)) is not None:
            games.append(game)
    assert len(games) == 4
    by_round: dict[str, str] = {}
    for game in games:
        for color in ("White", "Black"):
            assert len(game.headers[f"{color}Build"]) == 64
            if game.headers[color] == "Toga":
                by_round[game.headers["Round"].split(".")[0]] = game.headers[f"{color}Build"]
    assert by_round == {"1": old_build, "2": new_build}
    in_state = {g["white"] if g["white"] == "Toga" else g["black"]: g for r in state["rounds"]
                for p in r["pairs"] for g in p["games"] if "Toga" in (g["white"], g["black"])}
    assert len(in_state) == 1
    builds_played = [g["builds"]["white" if g["white"] == "Toga" else "black"]
                     for r in state["rounds"] for p in r["pairs"] for g in p["games"]
                     if "Toga" in (g["white"], g["black"])]
    assert builds_played == [old_build, new_build]

    again = run(config)  # the accepted build is the event's now: nothing to refuse
    assert again.returncode == 0 and "differs" not in again.stderr
    status = subprocess.run([sys.executable, "-m", "runner", "status", str(config), "--json"],
                            cwd=REPO, env=ENV, capture_output=True, text=True, timeout=120)
    assert status.returncode == 0, status.stderr  # the same event, its accepted build
    assert [b["digest"] for b in json.loads(status.stdout)["builds"]["Toga"]] == [old_build,
                                                                                new_build]
    text = subprocess.run([sys.executable, "-m", "runner", "status", str(config)], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=120).stdout
    assert f"Engine builds accepted during the event:\n  Toga: build {new_build} since " in text
    assert "(crash fix, decision 12)" in text


def test_a_file_is_hashed_once_per_process_until_it_changes(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The event fingerprint and the engine's build read the same binary at start-up: it is
    hashed once (a Stockfish with its network inside is 47 MB), and again once replaced."""
    from runner.config import fingerprint
    from runner.play.enginebuild import build_of, cached_build

    binary = tmp_path / "engine"
    binary.write_bytes(b"first build")
    reads: list[str] = []
    real = fingerprint._file_sha256
    monkeypatch.setattr(fingerprint, "_file_sha256", lambda p: reads.append(str(p)) or real(p))

    class Engine:
        command, args, options, working_dir = str(binary), (), {}, None

    assert fingerprint.file_digest(binary) == sha(binary)
    assert build_of(Engine()).files == {str(binary): sha(binary)}
    assert cached_build(Engine()) is not None
    assert reads == [str(binary)]
    replaced = tmp_path / "new"
    replaced.write_bytes(b"second build")
    os.replace(replaced, binary)  # as apt replaces it: another inode
    assert cached_build(Engine()) is None  # changed: not read on the loop
    assert build_of(Engine()).files == {str(binary): sha(binary)}
    assert len(reads) == 2


def test_a_link_moved_to_another_build_is_seen_without_walking_its_path(tmp_path: Path) -> None:
    """A file's digest is cached by the file itself (device, inode, size, times), not by its
    path: an engine named through a link that is moved to another build (update-alternatives,
    a ``current`` link) is hashed again and its build differs; the same build through two
    names is hashed once."""
    from runner.config import fingerprint
    from runner.play.enginebuild import build_of, cached_build

    old, new = tmp_path / "engine-1", tmp_path / "engine-2"
    old.write_bytes(b"build one")
    new.write_bytes(b"build two")
    link = tmp_path / "engine"
    link.symlink_to(old)

    class Engine:
        command, args, options, working_dir = str(link), (), {}, None

    first = build_of(Engine())
    assert cached_build(Engine()) == first
    assert fingerprint.file_digest(old, cached_only=True) == sha(old)  # one file, two names
    moved = tmp_path / "moved"
    moved.symlink_to(new)
    os.replace(moved, link)
    assert cached_build(Engine()) is None  # another file now: hashed again, off the loop
    assert build_of(Engine()).digest != first.digest
    assert build_of(Engine()).files == {str(link): sha(new)}


def test_an_unchanged_build_is_the_same_build_until_a_file_changes(tmp_path: Path) -> None:
    """The check before every game finds the engine's files as they were: the Build of last
    time (its digest not made again); a file rewritten gives a new Build once hashed."""
    from runner.play.enginebuild import build_of, cached_build

    binary = tmp_path / "engine"
    binary.write_bytes(b"first build")
    net = tmp_path / "net.nnue"
    net.write_bytes(b"weights")

    class Engine:
        command, args, options, working_dir = str(binary), (), {"EvalFile": str(net)}, None

    first = build_of(Engine())
    again = cached_build(Engine())
    assert again is not None and again.digest == first.digest and again.files == first.files
    assert cached_build(Engine()) is again  # nothing changed: last time's build
    replaced = tmp_path / "new"
    replaced.write_bytes(b"other weights")
    os.replace(replaced, net)
    assert cached_build(Engine()) is None  # changed: hashed off the loop (build_of)
    rebuilt = build_of(Engine())
    now = cached_build(Engine())
    assert now is not None and now.digest == rebuilt.digest != first.digest
    assert now.files == {str(binary): sha(binary), str(net): sha(net)}
