"""`swiss-runner status CONFIG [--format text|json]`: progress from the state, read-only."""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys

from runner.cli.common import err as _err
from runner.cli.common import other_event, stored_fingerprint
from runner.cli.status_ops import eta, failed_game_logs, status_lines
from runner.config import Config
from runner.domain.gpus import gpu_status_lines
from runner.domain.interruption import attempt_words
from runner.domain.text import printable
from runner.errors import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_OK
from runner.service.interrupted import interrupted_lines
from runner.service.views.snapshotdoc import build_state, standings_text
from runner.store.database import Store, StoreError, damaged_state


def cli_status(config: Config, args: argparse.Namespace) -> int:
    """`swiss-runner status CONFIG`: progress from the state, read-only."""
    try:
        store = Store.open_readonly(config.database)
        empty = store is None or not store.has_event()
    except StoreError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except sqlite3.Error as exc:
        _err(damaged_state(config.database, exc))
        return EXIT_BAD_INPUT
    if store is None or empty:
        said = (f"{config.path}: no event recorded yet ({config.database} does not exist or is "
                "empty); start it with `swiss-runner run`")
        # --format json: still one JSON document, as the dashboard's api/state answers
        print(json.dumps({"error": said}) if getattr(args, "format", "text") == "json" else said,
              flush=True)
        return EXIT_FAIL
    try:
        changed = other_event(config, stored_fingerprint(store))
        if changed:
            _err(changed)
            return EXIT_BAD_INPUT
        json_out = getattr(args, "format", "text") == "json"
        data = build_state(config, store, standings=json_out)
        if json_out:
            data["eta_s"] = eta(config, store, data)
            data["engine_logs"] = [{"game_id": gid, "reason": reason, "path": str(path)}
                                   for gid, reason, path in failed_game_logs(config, store)]
            print(json.dumps(data, indent=1), flush=True)
            return EXIT_OK
        _print_text(config, store, data)
        sys.stdout.flush()
        return EXIT_OK
    except StoreError as exc:
        _err(str(exc))
        return EXIT_BAD_INPUT
    except (sqlite3.Error, ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        _err(damaged_state(config.database, exc))
        return EXIT_BAD_INPUT
    finally:
        store.close()


def _print_text(config: Config, store: Store, data: dict) -> None:
    """The state document as `status` prints it for a person, every value escaped."""
    cur = data["current_round"]
    print(printable(f"Event: {data['event']}  ({data['database']})"))
    if cur is None:
        print("Round: not paired yet")
    else:
        kind = "extra pair round" if cur["extra"] else f"round {cur['number']} of {data['rounds_total']}"
        print(f"Round: {kind} ({cur['state']})")
    print(f"Games: {data['games_finished']} of {data['games_total']} finished"
          + ("; event complete" if data["complete"] else ""))
    if data["in_progress"]:
        stale = " (as the runner left them: it is not running)" \
            if data["runner_running"] is False else ""
        print("In progress:" + stale)
        for g in data["in_progress"]:
            print(f"  {printable(_live_line(g))}")
    if data.get("interrupted"):
        print("Interrupted: when the event goes on, with the same opening and colours")
        for line in interrupted_lines(data["interrupted"]):
            print(f"  {printable(line)}")
    for line in status_lines(config, store, data):
        print(printable(line))
    if data.get("workers"):
        print("Workers:")
        for w in data["workers"]:
            refused = "; ".join(f"refused {e}: {r}" for e, r in w["refused"].items())
            print(printable(f"  {w['name']}: {w['state'] or '-'}, {w['slots'] or '?'} "
                            f"slot(s), {w['busy']} busy, {w['games']} game(s) played"
                            + (f", {refused}" if refused else "")))
    accepted = [(engine, b) for engine, rows in (data.get("builds") or {}).items()
                for b in rows[1:]]
    if accepted:  # run --accept-build (TCEC rule 8: docs/orchestrator.md)
        print("Engine builds accepted during the event:")
        for engine, b in accepted:
            print(printable(f"  {engine}: build {b['digest']} since {b['recorded']} "
                            f"({b['reason']})"))
    # GPU hook: which devices are busy (docs/gpus.md); then the TD's pause and decisions
    for line in [*gpu_status_lines(data.get("gpus")), *_td_lines(data.get("td") or {})]:
        print(printable(line))
    if data["runner_running"] is not None:
        print("Runner: " + ("running" if data["runner_running"] else "not running"))
    table = standings_text(config, store)
    if table:
        print(table.rstrip("\n"))


def _clock(ms: int | None) -> str:
    if ms is None:
        return "-"
    seconds = ms / 1000
    minutes, sec = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{sec:04.1f}" if hours else f"{minutes}:{sec:04.1f}"


def _live_line(g: dict) -> str:
    """``game 6 (A vs B): ply 34 Nf3, clocks 1:23.4 / 1:20.1, last +0.35/16 1.2s``"""
    text = f"game {g['game_id']} ({g['white']} vs {g['black']})"
    if g.get("worker"):
        text += f" on {g['worker']}"
    if not g.get("ply"):
        return text + ": starting"
    clocks = g["clocks"]
    text += (f": ply {g['ply']} {g['san'][-1]}, clocks {_clock(clocks['white_ms'])} / "
             f"{_clock(clocks['black_ms'])}")
    if g.get("draw_plies"):
        text += f", TCEC draw rule {g['draw_plies']} plies"
    history = attempt_words(g.get("attempt") or 1, g.get("resumed_from_ply") or 0)
    return text + (f", {history}" if history else "")


def _td_lines(td: dict) -> list[str]:
    """The TD's pause, the last decisions and the commands still pending (docs/td.md)."""
    lines = []
    pause = td.get("paused")
    if pause:
        what = ("paused by the TD" if pause["active"] else
                f"pauses by the TD after round {pause['round']}")
        lines.append(f"TD: {what}: {pause['reason']} (since {pause['since']})")
    decided = td.get("decisions") or []
    if decided or td.get("pending"):
        from runner.cli.td import log_lines
        from runner.store.decisions import Command

        shown = decided[-5:] + list(td.get("pending") or ())
        lines.append(f"TD decisions: {len(decided)}" + (
            f" (last {len(decided[-5:])})" if len(decided) > 5 else "")
                     + (f", {len(td['pending'])} pending" if td.get("pending") else ""))
        lines += ["  " + line for line in log_lines([Command(**c) for c in shown])]
    return lines
