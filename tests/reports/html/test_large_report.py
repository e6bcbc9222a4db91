"""A 10,000-trial report (1,000 tasks × 10 trials) stays one page of 50 tasks at a time:
filters, search, paging and deep links to late pages work on it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.reports.html import large
from tests.reports.html.pages import by_id, needs_chromium, open_report

pytestmark = needs_chromium

TASKS, TRIALS = 1000, 10


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("large") / "report.html"
    path.write_text(large.render(TASKS, TRIALS), encoding="utf-8")
    return path


def first_ids(page: Page) -> list[str]:
    ids: list[str] = page.locator("main#tasks section.task").evaluate_all("ns => ns.map(n => n.id)")
    return ids


def test_the_built_run_fails_one_task_in_four() -> None:
    grade, diagnostics = large.build(TASKS, TRIALS)
    assert len(diagnostics) == 10_000
    failed = [t.task_id for t in grade.tasks if not t.passed]
    assert failed == [large.task_id(i) for i in range(3, TASKS, 4)]
    assert float(grade.gated_aggregate_score) == pytest.approx(0.775)
    assert not grade.passed


def test_the_header_names_the_tasks_that_shut_the_gate(page: Page, report: Path) -> None:
    open_report(page, report)
    expect(page.locator("#verdict h1 .state")).to_have_text("NOT PASSED")
    expect(page.locator("ul#why li").first).to_have_text(
        "Gated aggregate 0.775 is below the pass score 0.8."
    )
    shut = page.locator("p#shut")
    expect(shut.locator("a")).to_have_count(20)
    expect(shut.locator("a").first).to_have_text("t-0003")  # failed, lost the most
    expect(shut).to_contain_text("and 730 more")  # the 750 tasks that lost score, less 20
    shut.locator("a").nth(19).click()
    expect(page.locator("#page")).to_have_text("page 2 of 20")
    expect(by_id(page, "task=t-0079")).to_have_class(re.compile(r"\btarget\b"))


def test_failures_search_and_paging(page: Page, report: Path) -> None:
    open_report(page, report)
    count, pager, sections = (
        page.locator("#count"),
        page.locator("#page"),
        "main#tasks section.task",
    )
    expect(count).to_have_text("1000 of 1000 tasks")
    expect(pager).to_have_text("page 1 of 20")
    expect(page.locator(sections)).to_have_count(50)
    expect(page.locator("#prev")).to_be_disabled()

    page.locator("button[data-filter=failures]").click()
    expect(count).to_have_text("250 of 1000 tasks")
    expect(pager).to_have_text("page 1 of 5")
    expect(page.locator(sections)).to_have_count(50)
    assert first_ids(page)[:2] == ["task=t-0003", "task=t-0007"]

    page.locator("#next").click()
    expect(pager).to_have_text("page 2 of 5")
    expect(page.locator(sections)).to_have_count(50)
    assert first_ids(page)[0] == "task=t-0203"  # the 51st failing task
    expect(page.locator("#prev")).to_be_enabled()

    page.locator("input#search").fill(large.SEARCH_TOOL)
    expect(count).to_have_text("10 of 1000 tasks")  # failing tasks that also searched
    expect(pager).to_have_text("page 1 of 1")
    assert first_ids(page) == [f"task=t-{i:04d}" for i in range(7, TASKS, 100)]
    page.locator("button[data-filter=all]").click()
    expect(count).to_have_text("20 of 1000 tasks")
    page.locator("input#search").fill("")
    expect(count).to_have_text("1000 of 1000 tasks")
    expect(page.locator(sections)).to_have_count(50)


def test_a_deep_link_opens_a_task_on_the_last_page(page: Page, report: Path) -> None:
    open_report(page, report, "#task=t-0998/trial=2")
    expect(page.locator("#page")).to_have_text("page 20 of 20")
    expect(page.locator("main#tasks section.task")).to_have_count(50)
    trial = by_id(page, "task=t-0998/trial=2")
    expect(trial).to_have_attribute("open", "")
    expect(trial).to_be_in_viewport()
    expect(trial.locator("summary").first).to_contain_text("path wrong: gating score 0")
    forbidden = trial.locator("ol.timeline li.call.forbidden")
    expect(forbidden.locator(".tool")).to_have_text(large.FORBIDDEN)
    expect(forbidden.locator(".tag")).to_have_text(["forbidden"])


def test_a_deep_link_leaves_a_filter_that_shows_the_task(page: Page, report: Path) -> None:
    open_report(page, report)
    page.locator("button[data-filter=failures]").click()
    expect(page.locator("#count")).to_have_text("250 of 1000 tasks")
    page.evaluate("location.hash = '#task=t-0999/trial=3'")
    expect(page.locator("#page")).to_have_text("page 5 of 5")
    expect(page.locator("#count")).to_have_text("250 of 1000 tasks")
    expect(by_id(page, "task=t-0999/trial=3")).to_have_attribute("open", "")


def test_a_deep_link_to_a_hidden_task_clears_the_filter(page: Page, report: Path) -> None:
    open_report(page, report)
    page.locator("button[data-filter=failures]").click()
    page.locator("input#search").fill(large.SEARCH_TOOL)
    expect(page.locator("#count")).to_have_text("10 of 1000 tasks")
    page.evaluate("location.hash = '#task=t-0996/trial=10'")  # passes, never searched
    expect(page.locator("#count")).to_have_text("1000 of 1000 tasks")
    expect(page.locator("button[data-filter=all]")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("input#search")).to_have_value("")
    expect(page.locator("#page")).to_have_text("page 20 of 20")
    trial = by_id(page, "task=t-0996/trial=10")
    expect(trial).to_have_attribute("open", "")
    expect(trial).to_have_class(re.compile(r"\btarget\b"))
    expect(trial.locator("summary").first).to_have_text(
        "trial 10 — passed: answer correct, score 1; path right: passed"
    )
