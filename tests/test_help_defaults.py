"""Every `--help` states the defaults the parser (or, for options that override the config,
the config's own default) really uses; the console standings print RMob as TCEC does."""

from __future__ import annotations

import re
from fractions import Fraction as F

import pytest
from test_standings import E1, TCEC

from runner.cli import build_parser
from runner.config.typed import RatingsConfig
from runner.domain.standings import compute_standings
from runner.render.standings_report import distinguishing_places, fmt_places, render_standings

# the positional arguments (and required options) each command needs to parse
COMMANDS = {
    "validate": ["c.yaml"], "run": ["c.yaml"], "status": ["c.yaml"], "standings": ["c.yaml"],
    "play": ["c.yaml", "--white", "A", "--black", "B"], "ratings": ["c.yaml"],
    "worker": ["tcp://127.0.0.1:8786"], "audit": ["e.pgn", "--seeds", "s.txt"],
    "engines-json": ["engines.json"], "schema": [], "serve": ["c.yaml"], "scheduler": [],
}
# options whose parser default is None because they override the config: what they say
# they fall back to, against what the code falls back to
_CONFIG_DEFAULTS = {
    ("ratings", "elo"): RatingsConfig().elo,
    ("ratings", "white_advantage"): RatingsConfig().white_advantage,
    ("ratings", "draw_rate"): RatingsConfig().draw_rate,
    ("ratings", "simulations"): RatingsConfig().simulations,
    ("ratings", "seed"): RatingsConfig().seed,
    ("ratings", "confidence"): RatingsConfig().confidence,
    ("validate", "timeout"): 10.0,  # runner.play.engines.probe_engines(default=10.0)
}


def _options(help_text: str) -> dict[str, str]:
    """--option -> its help text, wrapped lines joined."""
    entries: dict[str, str] = {}
    current = None
    for line in help_text.splitlines():
        m = re.match(r"^  (?:-\w, )?(--[\w-]+)(.*)$", line)
        if m:
            current = m[1]
            entries[current] = m[2]
        elif current and line.startswith("    "):
            entries[current] += " " + line.strip()
        else:
            current = None
    return {k: " ".join(v.split()) for k, v in entries.items()}


def _same(stated: str, value: object) -> bool:
    if value is None:
        return stated == "fit"
    try:
        return float(stated) == float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return stated == str(value)


def _check_command(command: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args([command, "--help"])
    options = _options(capsys.readouterr().out)
    defaults = vars(parser.parse_args([command, *COMMANDS[command]]))
    wrong = []
    for option, text in options.items():
        dest = option[2:].replace("-", "_")
        if dest in ("help", "version") or dest not in defaults or option in COMMANDS[command]:
            continue
        value = defaults[dest]
        said = re.search(r"default:? ([^;,)\s]+)", text)
        if (command, dest) in _CONFIG_DEFAULTS:
            fallback = re.search(r"else ([^;,)\s]+)", text)
            if fallback is None or not _same(fallback[1], _CONFIG_DEFAULTS[command, dest]):
                wrong.append(f"{command} {option}: {text!r} (falls back to "
                             f"{_CONFIG_DEFAULTS[command, dest]!r})")
        elif value not in (None, False, []) and (said is None or not _same(said[1], value)):
            wrong.append(f"{command} {option}: {text!r} (the default is {value!r})")
    return wrong


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_states_the_real_defaults(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _check_command(command, capsys) == []


def test_ratings_help_says_the_white_advantage_is_0_as_ordo(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ratings", "--help"])
    text = _options(capsys.readouterr().out)["--white-advantage"]
    assert "fit (default)" not in text and "else 0, as Ordo" in text
    assert RatingsConfig().white_advantage == 0


def test_rmob_is_shown_to_the_precision_that_tells_engines_apart() -> None:
    near = F(11, 2) + F(1, 2**30)
    assert distinguishing_places([F(6), F(11, 2), F(4)]) == 1
    assert [fmt_places(v, 1) for v in (F(6), F(11, 2), F("2.49975586"))] == ["6", "5.5", "2.5"]
    places = distinguishing_places([F(6), near, F(11, 2)])
    assert places == 9 and fmt_places(near, places) != fmt_places(F(11, 2), places)
    assert fmt_places(F("2.0078125"), 1) == "2.0"  # not a whole number: never shown as one
    assert fmt_places(None, 3) == ""
    rows = compute_standings(E1, TCEC)
    lines = render_standings(rows, E1, "text").splitlines()
    header = lines[2].split()
    column = header.index("RMob")
    shown = {r.name: line.split()[column] for r in rows for line in lines[4:10]
             if line.split()[2] == r.name}
    assert shown["A"] == "2.4" and shown["C"] == "1.7" and shown["D"] == "2.0"
    assert shown["F"] == "1.9"
    assert not any(re.search(r"\d\.\d{5,}", v) for v in shown.values()), shown
