"""The README is a newcomer's path: short, its two commands whole (each installs first), CI
running the same test command, every command of `swiss-runner` in its table with a page, the
time-control warning visible, and every link of README.md and docs/*.md leading somewhere."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
INSTALL = "bash scripts/install.sh && "
DEMO = INSTALL + ".venv/bin/swiss-runner run configs/demo.yaml"
TESTS = INSTALL + ".venv/bin/python -m pytest -q"
FAST = INSTALL + '.venv/bin/python -m pytest -q -m "not slow"'
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
