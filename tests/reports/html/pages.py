"""Helpers for the browser tests of the HTML report: the chromium to drive, the command line
run off the browser's thread, and opening a report as a file."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from playwright.sync_api import Locator, Page, expect

from openwop_eval.cli.main import main

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples/support-refunds"


def _chromium() -> str | None:
    system = Path("/usr/bin/chromium")
    return str(system) if system.is_file() else shutil.which("chromium")


CHROMIUM = _chromium()
NO_CHROMIUM = "no chromium: install Debian's `chromium` (the HTML report tests drive it headless)"
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)


def cli(*argv: str) -> Result:
    """``openwop-eval ARGV`` through click's runner, on a thread of its own: the run calls
    ``asyncio.run``, which cannot start on the thread where Playwright's loop lives."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(CliRunner().invoke, main, list(argv), catch_exceptions=False).result()


def run_example(tmp: Path, agent: str, *extra: str) -> tuple[Result, Path, dict[str, Any]]:
    """The shipped example run with ``agent`` (one trial at a time, so "from the second trial
    on" is trial 2 on): its CLI result, its HTML report and its JSON report."""
    html, report = tmp / "report.html", tmp / "report.json"
    result = cli(
        "run",
        str(EXAMPLE / "suite.yaml"),
        "--agent",
        f"{EXAMPLE / 'agent.py'}:{agent}",
        "--judge",
        f"scripted:{EXAMPLE / 'judge.json'}",
        "--concurrency",
        "1",
        "--quiet",
        "--html",
        str(html),
        "--report",
        str(report),
        *extra,
    )
    return result, html, json.loads(report.read_text())


def open_report(page: Page, path: Path, fragment: str = "") -> None:
    """Open the report from disk and wait until its script has finished."""
    page.goto(path.as_uri() + fragment)
    expect(page.locator("body")).to_have_attribute("data-ready", "true")


def by_id(page: Page, element_id: str) -> Locator:
    """The element with this id (ids like ``task=x/trial=2`` are no CSS identifiers)."""
    return page.locator(f'[id="{element_id}"]')
