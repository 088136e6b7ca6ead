"""The README is a newcomer's path: short, its two commands whole (each installs first), CI
running the same test command, every command of `swiss-runner` in its table with a page, the
time-control warning visible, and every link of README.md and docs/*.md leading somewhere."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from testkit import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
INSTALL = "bash scripts/install.sh && "  # what a game server needs
TEST_INSTALL = "bash scripts/install.sh --test && "  # and what the tests need besides
DEMO = INSTALL + ".venv/bin/swiss-runner run configs/demo.yaml"
TESTS = TEST_INSTALL + ".venv/bin/python -m pytest -q"
FAST = TEST_INSTALL + '.venv/bin/python -m pytest -q -m "not slow"'
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_is_short() -> None:
    assert len(README.splitlines()) <= 160


def test_the_readme_gives_each_command_whole_with_its_install() -> None:
    lines = [line.strip() for line in README.splitlines()]
    for command in (DEMO, TESTS, FAST):
        assert command in lines, command


def test_ci_runs_the_readmes_test_command() -> None:
    """.ci/run installs, then runs the README's test command (the whole suite)."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    install, tests = TESTS.split(" && ")
    assert install in ci
    assert f"\n{tests}\n" in ci
    assert ci.index(install) < ci.index(f"\n{tests}\n")


def test_the_time_control_warning_is_visible() -> None:
    assert "`45:00+4.5`" in README and "45 *seconds*" in README


def test_every_command_is_in_the_readmes_table_with_a_page() -> None:
    out = subprocess.run([sys.executable, "-m", "runner", "--help"], capture_output=True,
                         text=True, check=True, timeout=60, cwd=REPO).stdout
    listed = out.split("positional arguments:", 1)[1].split("options:", 1)[0]
    commands = re.findall(r"^    (\S+)", listed, re.M)
    assert "run" in commands and "serve" in commands
    table = [line for line in README.split("## Commands", 1)[1].splitlines()
             if line.startswith("| `swiss-runner")]
    for command in commands:
        rows = [r for r in table if re.search(rf"[ `,]{re.escape(command)}[ `]", r)]
        assert rows, f"{command} is not in the README's command table"
        assert "](docs/" in rows[0], f"{command}'s row links no page"


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)  # no links in code
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", file.read_text(encoding="utf-8"), re.M)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    assert broken == [], f"{page.name}: links that lead nowhere"


# --------------------------------------------------------------------------- code spans
# What README.md and docs/*.md name in `code` is checked against what exists: a path against
# the repository, a command and its flags against the parsers `--help` prints, an extra
# against pyproject.toml, a config key (and an enum's value) against the config's schema.

SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
PATH = re.compile(r"\.?[\w-]+(?:\.[\w-]+)*(?:/[\w.*-]*)+(?:::\w+)?")
#: first parts of a relative path that name what a run writes or a URL, not the repository
NOT_REPOSITORY = {"state", "games", "round", "api", "points", "NAME", "Dir", ".cache", ".", ".."}
#: words before a colon in a span that are not config keys (a console line, HTTP headers, a
#: Debian package field)
NOT_KEYS = {"Progress", "Authorization", "Content-Type", "Priority"}


def _spans(text: str) -> list[str]:
    return SPAN.findall(FENCE.sub("", text))


def _command_lines(text: str) -> list[str]:
    """The command lines of the shell blocks (``swiss-runner ...`` after an optional venv)."""
    lines = [line.split("#", 1)[0].strip() for block in FENCE.findall(text)
             for line in block.splitlines()]
    return [re.sub(r"^\.venv/bin/", "", part.strip()) for line in lines
            for part in line.split("&&") if re.match(r"(\.venv/bin/)?swiss-runner ",
                                                     part.strip())]


def _parsers() -> dict[str, Any]:
    """Each command's parser and, for `td`, each action's: {"run": parser, "td pause": ...}."""
    from runner.cli import build_parser

    def children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next((dict(a.choices) for a in parser._actions
                     if isinstance(a, argparse._SubParsersAction)), {})

    parsers = {}
    for name, parser in children(build_parser()).items():
        parsers[name] = parser
        for action, sub in children(parser).items():
            parsers[f"{name} {action}"] = sub
    return parsers


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """The flags the parser's `--help` lists."""
    return set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", parser.format_help()))


PARSERS = _parsers()
TD_ACTIONS = {name.split()[1] for name in PARSERS if name.startswith("td ")}
#: every flag of a command, of a script under bench/ and of scripts/install.sh (the docs give
#: their flags too)
ALL_FLAGS = set().union(*map(_flags, PARSERS.values()), {"--help", "--version"}, *(
    re.findall(r"add_argument\(\s*\"(--[a-z][\w-]*)\"", script.read_text(encoding="utf-8"))
    for script in (REPO / "bench").glob("*.py")), re.findall(
        r"^ *(--[a-z][\w-]*)\)", (REPO / "scripts" / "install.sh").read_text(), re.M))


def _command_problem(words: list[str]) -> str | None:
    """Why ``swiss-runner WORDS...`` names a command or a flag that does not exist, or None.
    A `td` action's flags are those of the action named last before them."""
    if not words or words[0] in ("--help", "--version", "...", "COMMAND"):
        return None
    command = words[0]
    if command not in PARSERS:
        return f"no command {command!r}"
    parsers = {command: [p for name, p in PARSERS.items()
                         if name == command or name.startswith(command + " ")]}
    current = command
    for word in words[1:]:
        if command == "td" and word in TD_ACTIONS:
            current = f"td {word}"
            parsers[current] = [PARSERS[current]]
        flag = re.match(r"[\[(|]*(--[a-z][\w-]*)", word)
        if flag and flag[1] not in set().union(*map(_flags, parsers[current]), {"--help"}):
            return f"{current} has no flag {flag[1]}"
    return None


def _schema() -> dict[str, Any]:
    import json

    return json.loads((REPO / "docs" / "config.schema.json").read_text(encoding="utf-8"))


SCHEMA = _schema()


def _blocks(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a property may hold (through $ref, anyOf and array items)."""
    if "$ref" in node:
        return _blocks(SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]])
    found = [node] if "properties" in node else []
    for part in node.get("anyOf", []):
        found += _blocks(part)
    if isinstance(node.get("items"), dict):
        found += _blocks(node["items"])
    return found


def _key(path: str) -> dict[str, Any] | None:
    """The schema of a dotted key path (``Adjudication.Tablebases.MaxPieces``), or None."""
    nodes = [SCHEMA]
    for part in path.split("."):
        nodes = [b["properties"][part] for n in nodes for b in _blocks(n)
                 if part in b.get("properties", {})]
        if not nodes:
            return None
    return nodes[0]


def _all_keys() -> dict[str, list[dict[str, Any]]]:
    keys: dict[str, list[dict[str, Any]]] = {}
    for block in [SCHEMA, *SCHEMA["$defs"].values()]:
        for name, node in block.get("properties", {}).items():
            keys.setdefault(name, []).append(node)
    return keys


KEYS = _all_keys()


def _words_allowed(node: dict[str, Any]) -> set[str] | None:
    """The plain words a key accepts (its enum and consts), None when it takes any text."""
    words = [*node.get("enum", []), *([node["const"]] if "const" in node else [])]
    for part in node.get("anyOf", []):
        more = _words_allowed(part)
        if more is None and part.get("type") in ("string", None):
            return None
        words += more or []
    return {str(w) for w in words if isinstance(w, str)} if (words or node.get("type") in (
        "boolean", "integer", "number", "array", "object", "null")) else None


def _key_problem(span: str) -> str | None:
    """Why a span naming config keys (``A.B``, ``Key: value``) names what the schema lacks."""
    dotted = re.fullmatch(r"([A-Z]\w*(?:\.[A-Z]\w*)+)(?::.*)?", span)
    if dotted and dotted[1].split(".")[0] in SCHEMA["properties"]:
        return None if _key(dotted[1]) else f"no config key {dotted[1]}"
    pair = re.fullmatch(r"([A-Z]\w*): (.+)", span)
    if not pair or pair[1] in NOT_KEYS:
        return None
    if pair[1] not in KEYS:
        return f"no config key {pair[1]}"
    values = [v.strip("\\ ") for v in pair[2].split("|")]
    for node in KEYS[pair[1]]:
        allowed = _words_allowed(node)
        if allowed is None or not all(re.fullmatch(r"[a-z][\w-]*", v) for v in values):
            return None
        if all(v in allowed or v in ("true", "false") for v in values):
            return None
    return f"{pair[1]}: {pair[2]}: not a value the schema allows"


def _path_problem(span: str) -> str | None:
    if not PATH.fullmatch(span) or span.split("/", 1)[0] in NOT_REPOSITORY or \
            span.split("/", 1)[0].isdigit():
        return None
    path, _, test = span.partition("::")
    file = REPO / path
    if not file.exists():
        return f"no {path} in the repository"
    if test and not re.search(rf"^def {test}\(", file.read_text(encoding="utf-8"), re.M):
        return f"no test {test} in {path}"
    return None


def _extras() -> set[str]:
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    return set(data["project"]["optional-dependencies"])


def _install_problems(text: str) -> list[str]:
    """Extras not in pyproject.toml, and installs that read as from a package registry (the
    project is installed from its clone)."""
    problems = [f"no extra {extra!r} in pyproject.toml"
                for group in re.findall(r"(?:swiss-runner|\.)\[([\w, -]+)\]", text)
                for extra in map(str.strip, group.split(",")) if extra not in _extras()]
    problems += [f"a registry install: {m[0]!r} (install from the clone)"
                 for m in re.finditer(r"pip install [^\n`]*swiss-runner[^\n`]*", text)]
    return problems


def _span_problems(text: str) -> list[str]:
    problems = _install_problems(text)
    for span in _spans(text):
        words = span.split() or [""]
        if words[0] in ("swiss-runner", ".venv/bin/swiss-runner"):
            problem = _command_problem(words[1:])
        elif span.startswith("python -m runner "):
            problem = _command_problem(words[3:])
        elif words[0] in PARSERS and len(words) > 1 and (
                words[1].startswith("--") or words[1] in TD_ACTIONS):
            problem = _command_problem(words)
        elif words[0] in TD_ACTIONS and any(w.startswith("--") for w in words[1:]):
            problem = _command_problem(["td", *words])
        elif re.fullmatch(r"--[a-z][\w-]*", span):
            problem = None if span in ALL_FLAGS else f"no command has the flag {span}"
        else:
            problem = _key_problem(span) or _path_problem(span)
        if problem:
            problems.append(f"`{span}`: {problem}")
    for line in _command_lines(text):
        problem = _command_problem(line.split()[1:])
        if problem:
            problems.append(f"{line}: {problem}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_path_command_flag_extra_and_key_in_code_exists(page: Path) -> None:
    """Nothing in a page's code promises what is not there (issue #54, item 8). (The key
    tables generated below docs/config.md's marker are checked against the schema by
    tests/test_config_doc.py: their defaults and examples are values, not commands.)"""
    text = page.read_text(encoding="utf-8").split("<!-- Generated below by", 1)[0]
    assert _span_problems(text) == [], page.name


def test_the_code_span_check_finds_what_is_not_there() -> None:
    """The check itself: each kind of promise that is not kept is found."""
    text = ("Replay `fixtures/tcec/`; run `swiss-runner validate --probes`, `td pause --soon`, "
            "`swiss-runner tournament`; set `Adjudication.Tablebases.MaxPiece` and "
            "`Backend: fastchess`; `pip install 'swiss-runner[cluster]'`; "
            "`pip install -e '.[dask]'`; see `tests/test_td.py::test_no_such_test`.\n"
            "```sh\nswiss-runner td c.yaml gpu off 0 --now\n```\n")
    found = "\n".join(_span_problems(text))
    for expected in ("no fixtures/tcec/ in the repository", "validate has no flag --probes",
                     "td pause has no flag --soon", "no command 'tournament'",
                     "no config key Adjudication.Tablebases.MaxPiece",
                     "Backend: fastchess: not a value", "a registry install",
                     "no extra 'dask'", "no test test_no_such_test",
                     "td gpu has no flag --now"):
        assert expected in found, (expected, found)
    assert _span_problems("`swiss-runner td CONFIG gpu off 0 --reason R`, `Restart: on | off`, "
                          "`validate --probe`, `Alerts.On`, `state/demo/`") == []


def test_the_td_synopses_name_every_action() -> None:
    """docs/td.md's synopsis and docs/commands.md's `td` row omitted `gpu`."""
    synopsis = FENCE.findall((REPO / "docs" / "td.md").read_text(encoding="utf-8"))[0]
    row = next(line for line in (REPO / "docs" / "commands.md").read_text(
        encoding="utf-8").splitlines() if line.startswith("| `swiss-runner td "))
    for action in sorted(TD_ACTIONS):
        assert f"swiss-runner td CONFIG {action}" in synopsis, action
        assert re.search(rf"[ `]{action} ", row), action


def _install_lists() -> dict[str, list[str]]:
    """scripts/install.sh's lists (RUNTIME_APT, RUNTIME_EXTRAS, TEST_APT, TEST_EXTRAS), as
    bash reads them."""
    script = (REPO / "scripts" / "install.sh").read_text(encoding="utf-8")
    names = ("RUNTIME_APT", "RUNTIME_EXTRAS", "TEST_APT", "TEST_EXTRAS")
    lines = "".join(m[0] for m in re.finditer(rf"^(?:{'|'.join(names)})=\"[^\"]*\"\n", script,
                                               re.M))
    out = subprocess.run(["bash", "-c", lines + "".join(f'printf "%s;" "${n}";' for n in names)],
                         capture_output=True, text=True, check=True, timeout=10).stdout
    return {n: re.split(r"[\s,]+", v.strip()) for n, v in zip(names, out.split(";"),
                                                              strict=False)}


def test_two_installs_a_game_server_and_the_tests() -> None:
    """The README's run command installs what a game server needs (no SSH server, browser or
    test tools: issue #54 item 10); its test command installs the rest; the README says what
    each puts on the machine."""
    lists = _install_lists()
    runtime = set(lists["RUNTIME_APT"])
    assert {"stockfish", "fairymax", "phalanx", "python3-venv"} <= runtime
    assert not runtime & {"openssh-server", "chromium", "gnuchess-book", "scid-data"}
    assert {"chromium", "openssh-server"} <= set(lists["TEST_APT"])
    assert lists["RUNTIME_EXTRAS"] == ["web", "cluster"] and lists["TEST_EXTRAS"] == ["dev"]
    script = (REPO / "scripts" / "install.sh").read_text(encoding="utf-8")
    assert '--test) TEST=1' in script and 'APT="$APT $TEST_APT"' in script
    assert '-e ".[$EXTRAS]"' in script and "apt-get install -y -qq --no-install-recommends $APT" \
        in script
    table = README.split("What the install puts on the machine", 1)[1].split("\n\n", 2)[1]
    for package in [*lists["RUNTIME_APT"], *lists["TEST_APT"]]:
        assert package in table, package
    for extra in [*lists["RUNTIME_EXTRAS"], *lists["TEST_EXTRAS"]]:
        assert f"`{extra}` extra" in table, extra
    for command in ("`serve`", "`worker`"):
        assert command in table, command
