"""Benchmark the dashboard: response times on a big event, and its cost to a running event.

    python bench/bench_web.py [--requests 200] [--clients 100] [--repeats 2] [--dir DIR]
                              [--viewers 500] [--page-rate 50] [--skip-requests]
                              [--skip-cpu] [--skip-load] [--skip-clock]

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
3. Load (``--viewers``, default 500, and ``--page-rate``, default 50 requests a second):
   the same short event played once without the dashboard and once with ``--viewers`` SSE
   clients on the live feed and pages (overview, standings, /api/live, live.pgn) asked at
   ``--page-rate`` over 4 keep-alive connections, all on loopback: page latencies and
   errors, live messages received, the server's memory (RSS at start and at its peak), the
   runner's CPU per ply and the time charged to the engines per move (p50/p95/max of the
   move log's ``time_ms``, book moves apart): the event's clock unaffected means the same
   charges within noise (2 cores are shared by engines, runner, server and clients here).
4. The clock beside the load: bench/bench_clock.py (sleeping test engines: the time charged
   minus the time the engine really took, per move) played alternately alone and beside a
   dashboard of the generated 42-engine event with ``--viewers`` SSE clients,
   ``--page-rate`` pages a second and a move added to its game in progress every 0.25 s
   (each pushed to every viewer), ``--repeats`` times each. The viewers and the page
   requests stand in for other machines: they run at the lowest priority (nice 19), so what
   competes with the event here is the dashboard itself (at its default ``--nice 10``).
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
import threading
import time
from pathlib import Path
from typing import Any
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
    with serve(config.path, default_nice=True) as served:
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
    import json, os, resource, selectors, signal, socket, sys
    host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.nice(19)  # the viewers stand in for other machines: the CPU goes to the event first
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 64:  # 500 sockets need more than the common 1,024 minus what is open
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 256), hard))
    sel = selectors.DefaultSelector()
    for _ in range(n):
        s = socket.create_connection((host, port))
        s.sendall(b"GET /events HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                  b"Accept: text/event-stream\\r\\n\\r\\n")
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    print("connected", flush=True)
    received = messages = 0
    def report(signum, frame):
        print(json.dumps({"open": len(sel.get_map()), "messages": messages,
                          "bytes": received}), flush=True)
        sys.exit(0)
    signal.signal(signal.SIGTERM, report)
    while True:
        for key, _ in sel.select(timeout=1):
            try:
                data = key.fileobj.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
            received += len(data)
            messages += data.count(b"\\ndata: ") + data.startswith(b"data: ")
""")


def run_event(work: Path, label: str, clients: int, rate: float = 0.0) -> dict[str, Any]:
    """Play the short event (``clients`` SSE clients and ``rate`` page requests a second on
    a dashboard beside it, if any): the runner's CPU, plies, wall time, the charges."""
    directory = work / label
    config = short_event(directory)
    usage = directory / "usage.json"
    load: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:
        served = stack.enter_context(serve(config, default_nice=True)) if clients > 0 else None
        if served is not None:
            helper = subprocess.Popen([sys.executable, "-c", CLIENTS, *map(str, address(served)),
                                       str(clients)], stdout=subprocess.PIPE)
            stack.callback(lambda: load.update(viewers_report(helper)))
            assert helper.stdout is not None
            helper.stdout.readline()
            if rate > 0:
                pages = PageLoad(served, rate, psutil_process(served.proc.pid))
                stack.callback(lambda: load.update(pages.stop()))
                pages.start()
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
    charged = [m["time_ms"] for m in (json.loads(r[0]) for r in
                                      conn.execute("SELECT data FROM moves"))
               if not m.get("book") and m.get("time_ms") is not None]
    reasons = [r[0] for r in conn.execute("SELECT reason FROM games ORDER BY game_id")]
    conn.close()
    if any("time" in (r or "") for r in reasons):
        print(f"  warning: {label}: a game was lost on time ({reasons})")
    return {"cpu": cpu["user"] + cpu["system"], "plies": plies, "wall": wall,
            "serve_cpu": serve_cpu, "charged": charged, **load}


def psutil_process(pid: int) -> Any:
    import psutil

    return psutil.Process(pid)


def viewers_report(helper: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The SSE clients' counts (they print them on SIGTERM)."""
    helper.terminate()
    out, _ = helper.communicate(timeout=30)
    lines = out.decode().strip().splitlines()
    return {"viewers": json.loads(lines[-1])} if lines and lines[-1].startswith("{") else {}


class PageLoad:
    """Pages asked at ``rate`` a second over 4 keep-alive connections (threads), and the
    server's memory sampled meanwhile."""

    PATHS = ("/", "/standings", "/api/live", "/live.pgn", "/rounds")

    def __init__(self, served: Served, rate: float, server: Any):
        self.served = served
        self.rate = rate
        self.server = server
        self.times: list[float] = []
        self.errors: dict[str, int] = {}
        self.rss: list[int] = [server.memory_info().rss]
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._ask, args=(i,), daemon=True)
                        for i in range(4)]
        self.threads.append(threading.Thread(target=self._sample, daemon=True))

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def _ask(self, index: int) -> None:
        with contextlib.suppress(OSError, AttributeError):  # Linux: a thread's own priority
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        interval = 4 / self.rate
        conn = http.client.HTTPConnection(*address(self.served), timeout=10)
        n = 0
        next_at = time.perf_counter() + index * interval / 4
        while not self.done.is_set():
            time.sleep(max(0.0, next_at - time.perf_counter()))
            next_at += interval
            path = self.PATHS[(n + index) % len(self.PATHS)]
            n += 1
            t = time.perf_counter()
            try:
                conn.request("GET", path)
                resp = conn.getresponse()
                resp.read()
                if resp.status != 200:
                    self.errors[str(resp.status)] = self.errors.get(str(resp.status), 0) + 1
                self.times.append((time.perf_counter() - t) * 1000)
            except (OSError, http.client.HTTPException) as exc:
                self.errors[type(exc).__name__] = self.errors.get(type(exc).__name__, 0) + 1
                conn.close()
                conn = http.client.HTTPConnection(*address(self.served), timeout=10)
        conn.close()

    def _sample(self) -> None:
        while not self.done.wait(0.5):
            with contextlib.suppress(Exception):
                self.rss.append(self.server.memory_info().rss)

    def stop(self) -> dict[str, Any]:
        self.done.set()
        for thread in self.threads:
            thread.join(timeout=15)
        return {"pages": self.times, "errors": self.errors, "rss": self.rss}


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


def bench_load(work: Path, viewers: int, rate: float) -> None:
    if not all(shutil.which(e, path=ENV["PATH"])
               for e in ("stockfish", "ethereal-chess", "fairy-stockfish", "glaurung")):
        print("load: skipped (stockfish, ethereal-chess, fairy-stockfish, glaurung needed)")
        return
    quiet = run_event(work, "load-none", 0)
    busy = run_event(work, "load-viewers", viewers, rate)
    for label, r in (("no dashboard", quiet),
                     (f"{viewers} SSE + {rate:g} pages/s", busy)):
        c = r["charged"]
        print(f"{label:<24} {r['plies']} plies in {r['wall']:.0f} s; runner CPU "
              f"{r['cpu'] / r['plies'] * 1000:.2f} ms/ply; charged per move p50 "
              f"{pct(c, .5):.0f} ms p95 {pct(c, .95):.0f} ms max {max(c):.0f} ms")
    pages = busy.get("pages") or [0.0]
    rss = busy.get("rss") or [0]
    print(f"pages under load: n={len(pages)} ({len(pages) / busy['wall']:.0f}/s) p50 "
          f"{pct(pages, .5):.1f} ms p95 {pct(pages, .95):.1f} ms max {max(pages):.0f} ms; "
          f"errors {busy.get('errors') or 'none'}")
    print(f"live feed: {busy.get('viewers')} (open at the end, messages, bytes); "
          f"serve CPU {busy['serve_cpu']:.1f} s; serve RSS {rss[0] / 2**20:.0f} MB at start, "
          f"{max(rss) / 2**20:.0f} MB at its peak")


def bench_clock_beside(work: Path, viewers: int, rate: float, repeats: int) -> None:
    config = generate_event(work / "clock-beside", engines=42, rounds=11)
    clock = [sys.executable, str(REPO / "bench" / "bench_clock.py"), "--tools", "swiss-runner",
             "--restart", "off", "--games", "28", "--concurrency", "4"]
    rows: dict[str, list[str]] = {"alone": [], "beside the loaded dashboard": []}
    for _ in range(repeats):
        for label in rows:
            with contextlib.ExitStack() as stack:
                if label != "alone":
                    served = stack.enter_context(serve(config.path, default_nice=True))
                    helper = subprocess.Popen([sys.executable, "-c", CLIENTS,
                                               *map(str, address(served)), str(viewers)],
                                              stdout=subprocess.PIPE)
                    stack.callback(viewers_report, helper)
                    assert helper.stdout is not None
                    helper.stdout.readline()
                    pages = PageLoad(served, rate, psutil_process(served.proc.pid))
                    stack.callback(pages.stop)
                    pages.start()
                    feeder = MoveFeeder(config.database)
                    stack.callback(feeder.stop)
                    feeder.start()
                out = subprocess.run(clock, cwd=REPO, env=ENV, capture_output=True, text=True,
                                     timeout=900).stdout
            line = next((x for x in out.splitlines() if "charged - taken" in x), "no result")
            rows[label].append(line.split("charged - taken", 1)[-1].strip())
            print(f"  bench_clock {label:<28} charged - taken {rows[label][-1]}", flush=True)


class MoveFeeder:
    """A move added to the event's first game in progress every 0.25 s (a thread)."""

    def __init__(self, database: Path):
        self.database = database
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._feed, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.done.set()
        self.thread.join(timeout=10)

    def _feed(self) -> None:
        import chess
        from web_event import add_moves

        from runner.domain.events import MovePlayed
        from runner.store.database import Store

        store = Store.open(self.database)
        try:
            game = next(g for g in store.games() if g.status == "running")
            logged = store.logged_moves(game.game_id)
            board = chess.Board(logged[-1]["fen"])
            ply = logged[-1]["ply"]
            while not self.done.wait(0.25) and not board.is_game_over():
                move = sorted(board.legal_moves, key=lambda m: m.uci())[0]
                san = board.san(move)
                board.push(move)
                ply += 1
                add_moves(store, [MovePlayed(
                    game_id=game.game_id, ply=ply, uci=move.uci(), san=san, fen=board.fen(),
                    white_clock_ms=5000, black_clock_ms=5000, score_cp=0, depth=5,
                    at_ms=int(time.time() * 1000))])
        finally:
            store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--skip-cpu", action="store_true")
    parser.add_argument("--skip-requests", action="store_true")
    parser.add_argument("--viewers", type=int, default=500)
    parser.add_argument("--page-rate", type=float, default=50.0)
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument("--skip-clock", action="store_true")
    opts = parser.parse_args()
    work = opts.dir or Path(tempfile.mkdtemp(prefix="bench_web_"))
    if not opts.skip_requests:
        bench_requests(work, opts.requests)
    if not opts.skip_cpu:
        bench_cpu(work, opts.clients, opts.repeats)
    if not opts.skip_load:
        bench_load(work, opts.viewers, opts.page_rate)
    if not opts.skip_clock:
        bench_clock_beside(work, opts.viewers, opts.page_rate, opts.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
