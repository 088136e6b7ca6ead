"""The fast lane (`pytest -m "not slow"`, README): at least 40% of the tests, and tests of
every package of runner/ among them. Its time is measured, not tested (docs/development.md)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from testkit import REPO

PACKAGES = sorted(p.name for p in (REPO / "runner").iterdir()
                  if p.is_dir() and (p / "__init__.py").exists())


def collected(*marks: str) -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", *marks], cwd=REPO, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    return [line for line in out.stdout.splitlines() if "::" in line]


@pytest.mark.slow
def test_the_fast_lane_holds_forty_percent_of_the_tests_and_every_package() -> None:
    everything = collected()
    fast = collected("-m", "not slow")
    assert len(fast) >= 0.4 * len(everything), (len(fast), len(everything))
    files = {line.split("::", 1)[0] for line in fast}
    texts = {f: (REPO / f).read_text(encoding="utf-8") for f in files}
    for package in PACKAGES:
        pattern = re.compile(rf"\b(from|import) runner\.{package}\b")
        assert any(pattern.search(text) for text in texts.values()), \
            f"no test of runner/{package} in the fast lane"
