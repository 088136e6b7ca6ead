"""Benchmark the live PGN feed: 100 pollers asking for /live.pgn every second.

    python bench/bench_livepgn.py [--pollers 100] [--seconds 20] [--move-s 0.5] [--dir DIR]
    python bench/bench_livepgn.py --runner [--pollers 100]

A generated 42-engine, 11-round event (10 rounds played; round 11 with 8 games in progress,
tests/web_event.py) is served by a real `swiss-runner serve` subprocess. ``--pollers``
threads each keep one connection and ask for /live.pgn every second with the ETag they hold
(``If-None-Match``), as Lichess Broadcast and TCEC-style viewers poll, while a writer logs a
move to one of the games every ``--move-s`` seconds (through the Store API, as the runner's move log does).

Reported: the answers (200 with the new text / 304), their latency (p50/p95/p99), the CPU
the `serve` process used (psutil: all its threads) as a share of one core, and how many
distinct texts the pollers saw against the moves written. The pollers never reach the
runner: it only commits to the database, which `serve` reads read-only.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import chess
import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

import bench_web  # noqa: E402
from web_event import add_moves, generate_event  # noqa: E402
from web_support import serve  # noqa: E402

from runner.domain.events import MovePlayed  # noqa: E402
from runner.store.database import Store  # noqa: E402


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))] if values else 0.0


def writer(database: Path, stop: threading.Event, written: list[int], every: float) -> None:
    store = Store.open(database)
    rng = random.Random(1)
    try:
        running = [r[0] for r in store.conn.execute(
            "SELECT game_id FROM games WHERE status='running'")]
        while every > 0 and not stop.wait(every):
            game_id = rng.choice(running)
            last = store.logged_moves(game_id)[-1]
            board = chess.Board(last["fen"])
            legal = sorted(board.legal_moves, key=lambda m: m.uci())
            if not legal:
                continue
            move = legal[0]
            san = board.san(move)
            board.push(move)
            add_moves(store, [MovePlayed(
                game_id=game_id, ply=last["ply"] + 1, uci=move.uci(), san=san, fen=board.fen(),
                white_clock_ms=30_000, black_clock_ms=30_000, score_cp=10, depth=12,
                at_ms=int(time.time() * 1000))])
            written.append(game_id)
    finally:
        store.close()


def poller(host: str, port: int, seconds: float, out: dict[str, list], lock: threading.Lock,
           start: float, index: int) -> None:
    """One relay site polling live.pgn once a second, from its own loopback address (the
    dashboard caps what one client address may hold)."""
    source = (f"127.1.{index // 250}.{index % 250 + 1}", 0)
    conn = http.client.HTTPConnection(host, port, timeout=10, source_address=source)
    etag = None
    latencies: list[float] = []
    codes: list[int] = []
    tags: set[str] = set()
    time.sleep(random.random())  # spread over the second
    while time.monotonic() - start < seconds:
        t0 = time.perf_counter()
        conn.request("GET", "/live.pgn", headers={"If-None-Match": etag} if etag else {})
        resp = conn.getresponse()
        resp.read()
        if codes or etag is not None:  # not the connection's first request (its TCP set-up)
            latencies.append(time.perf_counter() - t0)
        else:
            out.setdefault("first", []).append(time.perf_counter() - t0)
        codes.append(resp.status)
        etag = resp.getheader("etag") or etag
        tags.add(etag or "")
        time.sleep(max(0.0, 1.0 - (time.perf_counter() - t0)))
    conn.close()
    with lock:
        out["latency"] += latencies
        out["codes"] += codes
        out["etags"].append(tags)


POLLERS = textwrap.dedent("""
    import http.client, sys, threading, time
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    def poll(i):  # each from its own address (the dashboard caps one address's share)
        source = (f"127.1.{i // 250}.{i % 250 + 1}", 0)
        conn = http.client.HTTPConnection(host, port, timeout=10, source_address=source)
        etag = None
        while True:
            t0 = time.monotonic()
            conn.request("GET", "/live.pgn", headers={"If-None-Match": etag} if etag else {})
            resp = conn.getresponse()
            resp.read()
            etag = resp.getheader("etag") or etag
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    for i in range(n):
        threading.Thread(target=poll, args=(i,), daemon=True).start()
    print("polling", flush=True)
    while True:
        time.sleep(60)
""")


def runner_cpu(work: Path, label: str, pollers: int, live_file: bool) -> dict[str, float]:
    """Play the short event once; the runner's CPU seconds and the plies played."""
    directory = work / label
    config = bench_web.short_event(directory)
    if live_file:
        config.write_text(config.read_text() + "LivePgn: state/live.pgn\n")
    usage = directory / "usage.json"
    with contextlib.ExitStack() as stack:
        if pollers:
            served = stack.enter_context(serve(config))
            host, port = bench_web.address(served)
            helper = subprocess.Popen([sys.executable, "-c", POLLERS, host, str(port),
                                       str(pollers)], stdout=subprocess.PIPE)
            stack.callback(helper.wait)
            stack.callback(helper.kill)
            assert helper.stdout is not None
            helper.stdout.readline()
        proc = subprocess.run([sys.executable, "-c", bench_web.RUN_WRAPPER, str(usage),
                               str(config)], cwd=REPO, env=bench_web.ENV, capture_output=True)
    if proc.returncode != 0:
        raise SystemExit(f"run failed: {proc.stdout.decode()[-2000:]} {proc.stderr.decode()[-2000:]}")
    cpu = json.loads(usage.read_text())
    conn = sqlite3.connect(directory / "state" / "swiss.sqlite3")
    plies = conn.execute("SELECT COUNT(*) FROM moves").fetchone()[0]
    conn.close()
    return {"cpu": cpu["user"] + cpu["system"], "plies": plies}


def bench_runner(work: Path, pollers: int) -> None:
    for label, n, live in (("alone", 0, False), (f"{pollers} pollers", pollers, False),
                           ("LivePgn file", 0, True)):
        r = runner_cpu(work, label.replace(" ", "-"), n, live)
        print(f"runner, {label:<12}: {r['plies']} plies, CPU {r['cpu']:.2f} s = "
              f"{r['cpu'] / r['plies'] * 1000:.2f} ms/ply (load {os.getloadavg()[0]:.1f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pollers", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--move-s", type=float, default=0.5,
                        help="a move logged every this many seconds (0: none)")
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--runner", action="store_true",
                        help="the runner's CPU per ply alone, with pollers, with LivePgn")
    args = parser.parse_args()
    work = args.dir or Path(tempfile.mkdtemp(prefix="bench-livepgn-"))
    if args.runner:
        try:
            bench_runner(work, args.pollers)
        finally:
            if args.dir is None:
                shutil.rmtree(work, ignore_errors=True)
        return 0
    try:
        config = generate_event(work / "event", engines=42, rounds=11, running=8, plies=60)
        with serve(config.path) as served:
            url = urlparse(served.url)
            assert url.hostname is not None and url.port is not None
            proc = psutil.Process(served.proc.pid)
            for path in ("/api/state", "/live.pgn"):  # the dashboard's first build, not timed
                t0 = time.perf_counter()
                conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
                conn.request("GET", path)
                conn.getresponse().read()
                conn.close()
                print(f"warm-up {path}: {(time.perf_counter() - t0) * 1000:.0f} ms")
            out: dict[str, list] = {"latency": [], "codes": [], "etags": []}
            lock = threading.Lock()
            stop = threading.Event()
            written: list[int] = []
            w = threading.Thread(target=writer, args=(config.database, stop, written,
                                                      args.move_s))
            cpu0, wall0 = proc.cpu_times(), time.monotonic()
            w.start()
            start = time.monotonic()
            threads = [threading.Thread(target=poller, args=(url.hostname, url.port,
                                                             args.seconds, out, lock, start,
                                                             i))
                       for i in range(args.pollers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            stop.set()
            w.join()
            cpu1, wall1 = proc.cpu_times(), time.monotonic()
        cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
        codes = out["codes"]
        lat = out["latency"]
        distinct = max((len(t) for t in out["etags"]), default=0)
        print(f"load: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
        print(f"{args.pollers} pollers x {args.seconds:.0f} s: {len(codes)} requests, "
              f"{codes.count(200)} x 200, {codes.count(304)} x 304, "
              f"{len(codes) - codes.count(200) - codes.count(304)} other")
        print(f"latency: p50 {pct(lat, 0.5) * 1000:.1f} ms, p95 {pct(lat, 0.95) * 1000:.1f} ms, "
              f"p99 {pct(lat, 0.99) * 1000:.1f} ms")
        first = out.get("first", [])
        print(f"first request of each connection (connect included): p50 "
              f"{pct(first, 0.5) * 1000:.1f} ms, max {max(first, default=0) * 1000:.1f} ms")
        print(f"serve CPU: {cpu:.2f} s in {wall1 - wall0:.1f} s = "
              f"{100 * cpu / (wall1 - wall0):.1f}% of one core")
        print(f"moves written: {len(written)}; most texts one poller saw: {distinct}")
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
