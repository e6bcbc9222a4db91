"""The page says the same gate as the exit code and the closing line: on the booking scenario
(one task of four failed, the gated aggregate above the bar), a qualified pass without a
policy and a named policy shutting it with ``--require-all-tasks``."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page

from tests.gate.booking import FAILED, agent, suite, write
from tests.reports.html.pages import cli, needs_chromium, open_report

pytestmark = needs_chromium


def verdict(page: Page, tmp: Path, *extra: str) -> tuple[int, str, list[str], str]:
    """The run's exit code, and the page's heading, why lines and header class."""
    suite_path, agent_spec = write(tmp, suite(), agent())
    html = tmp / "report.html"
    store = f"sqlite:///{tmp / 's.db'}"
    ran = cli("run", suite_path, "--agent", agent_spec, "--quiet", "--store", store,
              "--html", str(html), *extra)  # fmt: skip
    open_report(page, html)
    header = page.locator("#verdict")
    return (
        ran.exit_code,
        page.locator("#verdict h1").inner_text(),
        page.locator("ul#why li").all_inner_texts(),
        header.get_attribute("class") or "",
    )


def test_a_failed_task_no_policy_requires_is_a_qualified_pass(page: Page, tmp_path: Path) -> None:
    code, heading, why, css = verdict(page, tmp_path)
    assert code == 0
    assert heading.endswith(f": PASSED — 1 task failed: {FAILED}")
    assert f"PASSED — 1 task failed: {FAILED}: no gate policy requires every task." in why
    assert "pass" in css.split()


def test_require_all_tasks_shuts_the_page_and_names_the_policy(page: Page, tmp_path: Path) -> None:
    code, heading, why, css = verdict(page, tmp_path, "--require-all-tasks")
    assert code == 1
    assert heading.endswith(": NOT PASSED")
    assert any(line.startswith("requireAllTasks") and FAILED in line for line in why), why
    assert "fail" in css.split()
    page.screenshot(path=str(tmp_path / "gate.png"))
