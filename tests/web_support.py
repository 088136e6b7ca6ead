"""Helpers of the dashboard tests: a real `serve` subprocess, a real `run` subprocess, and
headless Chromium through Playwright (skipped with the reason outside CI when missing)."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("SWISS_RUNNER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
# screenshots of the browser tests (git-ignored); look at them after a run
ARTIFACTS = Path(os.environ.get("SWISS_RUNNER_ARTIFACTS") or REPO / ".cache" / "web-artifacts")


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}


def need(condition: bool, message: str) -> None:
    """Skip with ``message`` when ``condition`` is false; under CI=true, fail instead."""
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message, allow_module_level=True)


def need_browser() -> None:
    try:
        import playwright.sync_api  # noqa: F401
        have_playwright = True
    except ImportError:
        have_playwright = False
    need(have_playwright, "the playwright package is not installed (scripts/install.sh --test installs "
                          "it with the dev extra)")
    need(os.access(CHROMIUM, os.X_OK), f"no Chromium at {CHROMIUM}: apt-get install chromium "
                                       "(scripts/install.sh does)")


def need_engines(*names: str) -> None:
    for name in names:
        need(shutil.which(name) is not None, f"{name} is not installed (scripts/install.sh "
                                             "installs the Debian engines)")


class Served:
    """A running `swiss-runner serve` subprocess."""

    def __init__(self, proc: subprocess.Popen[bytes], url: str):
        self.proc = proc
        self.url = url


@contextmanager
def serve(config: Path, *extra: str, timeout: float = 30.0,
          default_nice: bool = False) -> Iterator[Served]:
    """`python -m runner serve CONFIG --port 0` on 127.0.0.1; yields once it listens. At the
    tests' own priority (their timings on a busy machine) unless ``extra`` says ``--nice``
    or ``default_nice`` (serve's own default, for the benches)."""
    if "--nice" not in extra and not default_nice:
        extra = (*extra, "--nice", "0")
    proc = subprocess.Popen([sys.executable, "-m", "runner", "serve", str(config), "--port", "0",
                             *extra], cwd=REPO, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                found = re.search(rb"(http://\S+/)", line)
                if found:
                    yield Served(proc, found.group(1).decode())
                    return
            if proc.poll() is not None:
                break
        raise AssertionError(f"serve did not start: {line!r} {proc.stdout.read()!r}")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def start_runner(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "runner", "run", str(config)], cwd=REPO,
                                env=env(), stdout=out, stderr=subprocess.STDOUT)


@contextmanager
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def shot(page: object, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
    return path


