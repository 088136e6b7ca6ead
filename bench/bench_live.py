"""Benchmark how soon a move played reaches the live views: the dashboard's event stream,
``/live.pgn`` and the runner's own live PGN file.

    python bench/bench_live.py [--pairs 2] [--nodes 20000] [--tc 10+0.1] [--poll-ms 5]

A real event is played (Stockfish against Ethereal, ``--pairs`` openings each played twice,
one game at a time, at ``--nodes`` nodes per move, or at the clock ``--tc``) with ``LivePgn``,
while a real ``swiss-runner serve`` on 127.0.0.1 watches it. Three watchers note, for every
engine move, when it is first shown (wall time, ms): one client of the dashboard's
Server-Sent-Events stream (``/events``), one poller of ``/live.pgn`` every ``--poll-ms`` (with
its ETag), and one poller of the live PGN file (its size and time, every ``--poll-ms``). Each
move's latency is that time less the move's ``at_ms`` (the referee's wall-clock stamp, in the
move log). Reported per view: median, p99 and max in ms, the moves seen (a game's last moves
may be shown only once it is finished, which the event stream's live boards never show), the
same without each game's last move (shown with the game's record: after the game's end and
its synced commit), and the runner's CPU per engine ply by thread (/proc; the runner's own
process only).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import chess.pgn
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import bench_vs_peers  # noqa: E402
from web_support import serve  # noqa: E402

Seen = dict[tuple[int, int], float]  # (round.game, ply) -> first wall time shown (ms)
ROUND = re.compile(r"(\d+)\.(\d+)")


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else 0.0


def note(seen: Seen, lock: threading.Lock, key: tuple[int, int], plies: int, at: float) -> None:
    with lock:
        for ply in range(1, plies + 1):
            seen.setdefault((*key, ply), at)  # type: ignore[arg-type]


def pgn_plies(text: str) -> dict[tuple[int, int], int]:
    """(round, game in round) -> plies shown in a live PGN."""
    out = {}
    stream = io.StringIO(text)
    while (game := chess.pgn.read_game(stream)) is not None:
        found = ROUND.fullmatch(game.headers.get("Round", ""))
        if found:
            out[(int(found.group(1)), int(found.group(2)))] = game.end().ply() - game.ply()
    return out


class Watchers:
    """The three watchers of one run, each in its own thread, until :meth:`stop`."""

    def __init__(self, url: str, live_file: Path, poll_s: float):
        self.url, self.file, self.poll_s = urlparse(url), live_file, poll_s
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.seen: dict[str, Seen] = {"sse": {}, "live.pgn": {}, "file": {}}
        self.threads = [threading.Thread(target=f, daemon=True)
                        for f in (self._sse, self._feed, self._file)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=5)

    def _connection(self, timeout: float = 2.0) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=timeout)

    def _sse(self) -> None:
        conn = self._connection(timeout=30.0)  # a keep-alive comes every 15 s at least
        conn.request("GET", self.url.path + "events")
        response = conn.getresponse()
        while not self.stopping.is_set():
            line = response.readline()
            if not line:  # the server stopped (the "seen" count shows an early end)
                break
            if not line.startswith(b"data: "):
                continue
            at = time.time() * 1000
            live = json.loads(line[6:])["live"] or {}
            for game in live.get("games") or ():
                note(self.seen["sse"], self.lock, (game["round"], game["game_in_round"]),
                     len(game.get("moves") or ()), at)
        conn.close()

    def _feed(self) -> None:
        conn, etag = self._connection(), ""
        while not self.stopping.wait(self.poll_s):
            conn.request("GET", self.url.path + "live.pgn", headers={"If-None-Match": etag})
            response = conn.getresponse()
            body = response.read()
            if response.status != 200:
                continue
            at = time.time() * 1000
            etag = response.getheader("etag") or ""
            for key, plies in pgn_plies(body.decode()).items():
                note(self.seen["live.pgn"], self.lock, key, plies, at)

    def _file(self) -> None:
        last = None
        while not self.stopping.wait(self.poll_s):
            with contextlib.suppress(OSError):
                st = self.file.stat()
                if (st.st_ino, st.st_size, st.st_mtime_ns) == last:
                    continue
                text = self.file.read_text()
                at = time.time() * 1000
                last = (st.st_ino, st.st_size, st.st_mtime_ns)
                for key, plies in pgn_plies(text).items():
                    note(self.seen["file"], self.lock, key, plies, at)


def event_config(work: Path, pairs: int, nodes: int, tc: str | None) -> Path:
    book = bench_vs_peers.book_lines(pairs, work)
    limit = {} if tc else {"Nodes": nodes}
    config = work / "event.yaml"
    config.write_text(yaml.safe_dump({
        "Event": "bench", "TimeControl": tc or "inf", "Concurrency": 1,
        "LivePgn": str(work / "live.pgn"),
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": pairs, "Seeding": "listed",
                         "RandomOpenings": False, "StatePath": str(work / "state.json")},
        "Openings": {"File": str(book), "Format": "pgn", "Order": "sequential"},
        "Adjudication": {"MaxMoves": 150},
        "Engines": [{"Name": n, "Command": c, **limit, "Options": {"Hash": 16, "Threads": 1}}
                    for n, c in bench_vs_peers.ENGINES]}))
    return config


def thread_cpu(pid: int, last: dict[str, tuple[str, float]]) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                name = "MAIN" if int(tid) == pid else stat[stat.index("(") + 1:stat.rindex(")")]
                last[tid] = (name, (int(fields[11]) + int(fields[12])) / tick)


def played(database: Path) -> dict[tuple[int, int, int], int]:
    """(round, game in round, ply) -> at_ms of every engine move in the move log."""
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    rows = conn.execute("SELECT g.round, g.game_in_round, m.ply, m.data FROM moves m "
                        "JOIN games g USING (game_id)").fetchall()
    conn.close()
    out = {}
    for rnd, gir, ply, data in rows:
        move = json.loads(data)
        if move.get("comment") != "book":
            out[(rnd, gir, ply)] = move["at_ms"]
    return out


def run(work: Path, args: argparse.Namespace) -> None:
    config = event_config(work, args.pairs, args.nodes, args.tc)
    database = work / "state.sqlite3"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with serve(config, default_nice=True) as served:
        watchers = Watchers(served.url, work / "live.pgn", args.poll_ms / 1000)
        watchers.start()
        proc = subprocess.Popen([sys.executable, "-m", "runner", "run", str(config), "--quiet"],
                                cwd=work, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        cpu: dict[str, tuple[str, float]] = {}
        while proc.poll() is None:
            thread_cpu(proc.pid, cpu)
            time.sleep(0.02)
        time.sleep(1.0)
        watchers.stop()
    moves = played(database)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
          f"{os.getloadavg()[0]:.1f}, {len(moves)} engine moves; runner exit {proc.returncode}")
    last = {}
    for rnd, gir, ply in moves:
        last[(rnd, gir)] = max(ply, last.get((rnd, gir), 0))
    for view, seen in watchers.seen.items():
        lags = [seen[key] - at for key, at in moves.items() if key in seen]
        inner = [seen[key] - at for key, at in moves.items()
                 if key in seen and key[2] != last[key[:2]]]
        print(f"  {view:9s} seen {len(lags):4d}/{len(moves)}: median {pct(lags, 0.5):6.1f} ms, "
              f"p99 {pct(lags, 0.99):6.1f}, max {max(lags, default=0):6.1f}; without each "
              f"game's last move: p99 {pct(inner, 0.99):6.1f}, max {max(inner, default=0):6.1f}")
    total = sum(t for _, t in cpu.values())
    print(f"  runner CPU {total:.2f} s, {1000 * total / max(1, len(moves)):.3f} ms per engine "
          "ply; by thread: " + ", ".join(f"{name} {t:.2f}" for name, t in
                                         sorted(cpu.values(), key=lambda v: -v[1]) if t > 0.005))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--tc", help="a clock instead of nodes, e.g. 10+0.1")
    parser.add_argument("--poll-ms", type=float, default=5.0)
    parser.add_argument("--dir", type=Path, help="keep the event here (else a temporary one)")
    args = parser.parse_args()
    for name in ("stockfish", "ethereal-chess"):
        if shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/games") is None:
            print(f"{name} is not installed (scripts/install.sh installs it)")
            return 2
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        run(args.dir, args)
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        run(Path(tmp), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
