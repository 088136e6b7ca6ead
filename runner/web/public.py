"""What the dashboard's public side shows: its documents, PGNs and messages without what is
private to the machine or to the TD's team.

Absolute paths (the database, the state and log directories, the engines' binaries) become
their last component; the state document's workers lose their network ``address``; the
TD's decisions and notes say ``TD`` (from the command line: ``user@host`` there) or
``TD (web)`` (an admin token's holder: ``web:NAME`` there) instead of who; the PGN tag
``EngineLog`` names the log file alone. The admin side (a valid admin token) and the
command line (`status`, `td`) keep everything.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath
from typing import Any

from runner.web.model import View

# an absolute path: a "/" at the start or after a space, a quote, "(", "[", "=" or ",", so
# not inside a word, a number ("1/2-1/2"), a FEN, a URL ("https://") or markup ("</b>")
_PATH = re.compile(r"(?:^|(?<=[\s\"'(\[=,]))/[^\s\"'<>:;,()\[\]]+")
_LOG_TAG = re.compile(r'^\[EngineLog "([^"\n]*)"\]$', re.MULTILINE)
_DETAILS_TAG = re.compile(r'^\[TerminationDetails "((?:[^"\\\n]|\\.)*)"\]$', re.MULTILINE)
_COMMENT = re.compile(r"\{[^}]*\}")
PRIVATE_KEYS = frozenset({"address"})  # a worker's network address
# names as they were given (an engine's may hold a "/"): never cut
NAME_KEYS = frozenset({"event", "site", "white", "black", "white_id", "black_id", "engine",
                       "name", "seeds", "first", "second", "bye", "pairs", "played_by",
                       "worker"})


def text(value: str) -> str:
    """``value`` with every absolute path cut to its last component."""
    if "/" not in value:
        return value
    return _PATH.sub(lambda m: PurePath(m.group(0)).name or "/", value)


def who(value: str) -> str:
    """Who gave a TD command, as the public sees it."""
    return "TD (web)" if value.startswith("web:") else "TD"


def document(value: Any) -> Any:
    """A copy of a JSON document (state, live, standings) fit for the public."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if key in PRIVATE_KEYS:
                continue
            if key in NAME_KEYS and _names(item):
                out[key] = item
                continue
            if key == "who" and isinstance(item, str):
                out[key] = who(item)
            elif key == "files" and isinstance(item, dict):
                out[key] = {text(str(k)): v for k, v in item.items()}
            else:
                out[key] = document(item)
        return out
    if isinstance(value, list):
        return [document(item) for item in value]
    if isinstance(value, str):
        return text(value)
    return value


def _names(value: Any) -> bool:
    """A name, or lists of names (nothing else to look into)."""
    if isinstance(value, list):
        return all(_names(item) for item in value)
    return value is None or isinstance(value, str)


def pgn(value: str) -> str:
    """A PGN whose ``EngineLog`` tags name the log file alone, and whose comments and
    ``TerminationDetails`` (an engine's failure may name its binary) hold no path."""
    if "/" not in value:
        return value
    value = _LOG_TAG.sub(lambda m: f'[EngineLog "{PurePath(m.group(1)).name}"]', value)
    value = _DETAILS_TAG.sub(lambda m: f'[TerminationDetails "{text(m.group(1))}"]', value)
    return _COMMENT.sub(lambda m: text(m.group(0)), value)


def game(detail: dict[str, Any]) -> dict[str, Any]:
    """A game's page (model.game_detail) fit for the public."""
    out = dict(detail)
    if isinstance(out.get("pgn"), str):
        out["pgn"] = pgn(out["pgn"])
    out["headers"] = [(k, PurePath(v).name if k == "EngineLog" else text(v))
                      for k, v in out.get("headers") or ()]
    out["plies"] = [dict(ply, comment=text(ply["comment"]))
                    if "/" in (ply.get("comment") or "") else ply
                    for ply in out.get("plies") or ()]
    for key in ("reason", "termination"):
        if isinstance(out.get(key), str):
            out[key] = text(out[key])
    return out


def view(built: View, *, live_only: bool = False) -> View:
    """A View fit for the public. ``live_only``: it was refreshed from a public View
    (model.refresh_live), so only its games in progress are new."""
    state = built.state
    if state is not None:
        if live_only:
            state = dict(state, in_progress=document(state["in_progress"]))
        else:
            state = document(state)
    out = View(state=state, error=None if built.error is None else text(built.error),
               standings=built.standings, ratings=built.ratings, chart=built.chart,
               live=document(built.live))
    out = _keep_digest(out, built)
    out.built_ms = built.built_ms
    return out


def _keep_digest(out: View, built: View) -> View:
    out.digest = built.digest
    out.live["digest"] = built.digest
    out.live_json = json.dumps(out.live, separators=(",", ":"))
    return out


__all__ = ["document", "game", "pgn", "text", "view", "who"]
