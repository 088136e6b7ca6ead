"""Benchmark the dashboard: response times on a big event, and its cost to a running event.

    python bench/bench_web.py [--requests 200] [--clients 100] [--repeats 2] [--dir DIR]

1. A generated 42-engine, 11-round event (10 rounds played, round 11 with two games in
   progress; tests/web_event.py fills it through the Store API) is served by a real
   `swiss-runner serve` subprocess; the overview page and /api/state are fetched
   ``--requests`` times each over one keep-alive connection: p50/p95 (goal < 100 ms), and the
   time to build the view from the database (on every game start/end) and to refresh only
   the games in progress (on every move).
2. A real short event (Stockfish, Ethereal, Fairy-Stockfish, Glaurung, 50k nodes a move,
   2 double rounds: 8 games) is played by
   `swiss-runner run` in its own process, alternately without the dashboard and with `serve`
   and ``--clients`` SSE clients connected: the runner's own CPU time (getrusage of its
   process: all its threads, not the engines) per ply. Goal: the same within noise.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from urllib.parse import urlparse

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from web_event import generate_event  # noqa: E402
from web_support import Served, serve  # noqa: E402

from runner.web import model  # noqa: E402
from runner.web.app import make_env  # noqa: E402

ENV = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1",
       "PATH": os.environ.get("PATH", "") + os.pathsep + "/usr/games"}


def address(served: Served) -> tuple[str, int]:
    url = urlparse(served.url)
    assert url.hostname is not None and url.port is not None
    return url.hostname, url.port


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def bench_requests(work: Path, n: int) -> None:
    t0 = time.perf_counter()
    config = generate_event(work / "big", engines=42, rounds=11)
    print(f"generated: 42 engines, 11 rounds, {10 * 42} games recorded, 2 in progress "
          f"({time.perf_counter() - t0:.0f} s; {config.database})")
    full = [model.build_view(config).built_ms for _ in range(10)]
    view = model.build_view(config)
    live = [model.refresh_live(config, view).built_ms for _ in range(30)]
    print(f"view from the database (game start/end): p50 {pct(full, .5):6.1f} ms  "
          f"p95 {pct(full, .95):6.1f} ms")
    print(f"games in progress only (each move):      p50 {pct(live, .5):6.1f} ms  "
          f"p95 {pct(live, .95):6.1f} ms")
    # the first request after a change renders the page (later ones reuse it until the next)
    env = make_env()
    for template in ("overview.html", "standings.html", "chart.html", "games.html"):
        times = []
        for _ in range(20):
            t = time.perf_counter()
            env.get_template(template).render(view=view, state=view.state, live=view.live,
                                              config=config, fragment=False,
                                              page=template.removesuffix(".html"))
            times.append((time.perf_counter() - t) * 1000)
        print(f"first render after a change, {template:<15} p50 {pct(times, .5):6.1f} ms  "
              f"p95 {pct(times, .95):6.1f} ms")
    times = []
    for _ in range(20):
        t = time.perf_counter()
        json.dumps(view.state, separators=(",", ":"))
        times.append((time.perf_counter() - t) * 1000)
    print(f"first /api/state after a change (JSON)    p50 {pct(times, .5):6.1f} ms  "
          f"p95 {pct(times, .95):6.1f} ms")
    with serve(config.path) as served:
        conn = http.client.HTTPConnection(*address(served), timeout=10)
        for url in ("/", "/api/state", "/standings"):  # warm up (templates compiled)
            conn.request("GET", url)
            conn.getresponse().read()
        for url in ("/", "/api/state", "/standings", "/chart", "/games"):
            times, size = [], 0
            for _ in range(n):
                t = time.perf_counter()
                conn.request("GET", url)
                resp = conn.getresponse()
                body = resp.read()
                times.append((time.perf_counter() - t) * 1000)
                assert resp.status == 200, (url, resp.status)
                size = len(body)
            goal = "  (goal < 100 ms)" if url in ("/", "/api/state") else ""
            # (the view does not change meanwhile: these are served from the rendered page)
            print(f"GET {url:<12} p50 {pct(times, .5):6.1f} ms  p95 {pct(times, .95):6.1f} ms  "
                  f"max {max(times):6.1f} ms  {size / 1000:6.0f} kB  n={n}{goal}")
        conn.close()


# --------------------------------------------------------------------------- runner CPU


RUN_WRAPPER = textwrap.dedent("""
    import atexit, json, resource, runpy, sys
    out = sys.argv[1]
    def report():
        r = resource.getrusage(resource.RUSAGE_SELF)
        with open(out, "w") as f:
            json.dump({"user": r.ru_utime, "system": r.ru_stime}, f)
    atexit.register(report)
    sys.argv = ["runner", "run", sys.argv[2], "--quiet"]
    runpy.run_module("runner", run_name="__main__")
""")


def short_event(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "event.yaml"
    path.write_text(yaml.safe_dump({
        "Event": "cpu", "TimeControl": "60+1", "Concurrency": 1,
        "SwissOptions": {"GamesPerMatch": 2, "Rounds": 2, "Seeding": "listed",
                         "StatePath": "state/swiss.json"},
        "Adjudication": {"MaxMoves": 100},
        "Engines": [
            {"Name": "Stockfish", "Command": "stockfish", "Nodes": 50000,
             "Options": {"Hash": 16, "Threads": 1}},
            {"Name": "Ethereal", "Command": "ethereal-chess", "Nodes": 50000,
             "Options": {"Hash": 16}},
            {"Name": "Fairy-Stockfish", "Command": "fairy-stockfish", "Nodes": 50000,
             "Options": {"Hash": 16, "Threads": 1}},
            {"Name": "Glaurung", "Command": "glaurung", "Nodes": 50000,
             "Options": {"Hash": 16, "Threads": 1}},
        ],
    }, sort_keys=False))
    return path


CLIENTS = textwrap.dedent("""
    import socket, sys, time, selectors
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sel = selectors.DefaultSelector()
    for _ in range(n):
        s = socket.create_connection((host, port))
        s.sendall(b"GET /events HTTP/1.1\\r\\nHost: x\\r\\nAccept: text/event-stream\\r\\n\\r\\n")
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    print("connected", flush=True)
    received = 0
    while True:
        for key, _ in sel.select(timeout=1):
            data = key.fileobj.recv(65536)
            if not data:
                sel.unregister(key.fileobj)
            received += len(data)
""")


def run_event(work: Path, label: str, clients: int) -> dict[str, float]:
    directory = work / label
    config = short_event(directory)
    usage = directory / "usage.json"
    with contextlib.ExitStack() as stack:
        served = stack.enter_context(serve(config)) if clients > 0 else None
        if served is not None:
            helper = subprocess.Popen([sys.executable, "-c", CLIENTS, *map(str, address(served)),
                                       str(clients)], stdout=subprocess.PIPE)
            stack.callback(helper.wait)
            stack.callback(helper.kill)
            assert helper.stdout is not None
            helper.stdout.readline()
        t0 = time.perf_counter()
        serve_cpu0 = _cpu(served.proc.pid) if served else 0.0
        proc = subprocess.run([sys.executable, "-c", RUN_WRAPPER, str(usage), str(config)],
                              cwd=REPO, env=ENV, capture_output=True)
        wall = time.perf_counter() - t0
        serve_cpu = (_cpu(served.proc.pid) - serve_cpu0) if served else 0.0
    if proc.returncode != 0:
        raise SystemExit(f"run failed: {proc.stdout.decode()[-2000:]} {proc.stderr.decode()[-2000:]}")
    cpu = json.loads(usage.read_text())
    db = directory / "state" / "swiss.sqlite3"
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
    plies = conn.execute("SELECT COUNT(*) FROM moves").fetchone()[0]
    reasons = [r[0] for r in conn.execute("SELECT reason FROM games ORDER BY game_id")]
    conn.close()
    if any("time" in (r or "") for r in reasons):
        print(f"  warning: {label}: a game was lost on time ({reasons})")
    return {"cpu": cpu["user"] + cpu["system"], "plies": plies, "wall": wall,
            "serve_cpu": serve_cpu}


def _cpu(pid: int) -> float:
    import psutil

    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def bench_cpu(work: Path, clients: int, repeats: int) -> None:
    if not all(shutil.which(e, path=ENV["PATH"])
               for e in ("stockfish", "ethereal-chess", "fairy-stockfish", "glaurung")):
        print("runner CPU: skipped (stockfish, ethereal-chess, fairy-stockfish, glaurung needed)")
        return
    rows: dict[str, list[dict[str, float]]] = {"no dashboard": [], f"serve + {clients} SSE": []}
    for i in range(repeats):
        for label, n in ((f"serve + {clients} SSE", clients), ("no dashboard", 0)):
            r = run_event(work, f"cpu-{i}-{'sse' if n > 0 else 'none'}", n)
            rows[label].append(r)
            print(f"  {label:<16} run {i + 1}: {r['plies']} plies, runner CPU {r['cpu']:.2f} s "
                  f"= {r['cpu'] / r['plies'] * 1000:.2f} ms/ply, wall {r['wall']:.0f} s"
                  + (f", serve CPU {r['serve_cpu']:.2f} s" if n > 0 else ""))
    for label, runs in rows.items():
        per_ply = [r["cpu"] / r["plies"] * 1000 for r in runs]
        print(f"runner CPU per ply, {label:<16} mean {statistics.mean(per_ply):.2f} ms "
              f"(runs: {', '.join(f'{v:.2f}' for v in per_ply)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--skip-requests", action="store_true")
    opts = parser.parse_args()
    work = opts.dir or Path(tempfile.mkdtemp(prefix="bench_web_"))
    if not opts.skip_requests:
        bench_requests(work, opts.requests)
    if not opts.skip_cpu:
        bench_cpu(work, opts.clients, opts.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
