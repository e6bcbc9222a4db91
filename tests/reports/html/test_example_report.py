"""The HTML report of the shipped example, in a browser: the flawed agent is gated and the page
says why, down to the trial and the step it skipped; the careful agent passes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.reports.html.pages import by_id, needs_chromium, open_report, run_example

pytestmark = needs_chromium

REFUND = "refund-delivered-order"
FOREIGN = "refuse-refund-foreign-order"
CLOSE = "close-account-request"
SKIPPED = "step 1 (crm:lookup-order) was never called"


@pytest.fixture(scope="module")
def flawed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("flawed")
    result, html, _ = run_example(tmp, "support_agent", "--store", f"sqlite:///{tmp / 's.db'}")
    assert result.exit_code == 1, result.output
    return html


def task_ids(page: Page) -> list[str]:
    ids: list[str] = page.locator("main#tasks section.task").evaluate_all("ns => ns.map(n => n.id)")
    return ids


def test_the_header_says_not_passed_and_explains_the_gate(
    page: Page, flawed: Path, tmp_path: Path
) -> None:
    open_report(page, flawed)
    page.screenshot(path=tmp_path / "top.png")
    assert (tmp_path / "top.png").stat().st_size > 0
    verdict = page.locator("#verdict")
    expect(verdict.locator("h1")).to_have_text("acme.support.evals.refunds@1.0.0: NOT PASSED")
    expect(verdict).to_have_class(re.compile(r"\bfail\b"))
    why = page.locator("ul#why li")
    expect(why.first).to_have_text("Gated aggregate 0.5556 is below the pass score 0.8.")
    expect(why.nth(1)).to_contain_text("The answers alone score 1: 0.4444 of it came from trials")
    gated = page.locator("table#conditions tr", has_text="gated aggregate score")
    expect(gated.locator("td")).to_have_text(["gated aggregate score", "0.5556", "≥ 0.8", "✗"])
    expect(page.locator("p#shut")).to_contain_text("Tasks that kept the gate shut")
    expect(page.locator("p#shut a")).to_have_text([REFUND, FOREIGN])
    expect(page.locator("#count")).to_have_text("3 of 3 tasks")
    assert task_ids(page) == [f"task={REFUND}", f"task={FOREIGN}", f"task={CLOSE}"]


def test_a_shut_link_highlights_its_task(page: Page, flawed: Path) -> None:
    open_report(page, flawed)
    page.locator("p#shut a", has_text=FOREIGN).click()
    expect(page).to_have_url(re.compile(f"#task={FOREIGN}$"))
    expect(by_id(page, f"task={FOREIGN}")).to_have_class(re.compile(r"\btarget\b"))
    expect(page.locator(".target")).to_have_count(1)


@pytest.mark.parametrize("trial", [2, 3])
@pytest.mark.parametrize("how", ["navigate", "click"])
def test_a_trial_deep_link_opens_the_trial_that_skipped_the_lookup(
    page: Page, flawed: Path, trial: int, how: str
) -> None:
    link = f"#task={REFUND}/trial={trial}"
    if how == "navigate":
        open_report(page, flawed, link)
    else:
        open_report(page, flawed)
        by_id(page, f"task={REFUND}").locator(".side-by-side a", has_text=f"#{trial}").click()
        expect(page).to_have_url(re.compile(f"{re.escape(link)}$"))
    opened = by_id(page, f"task={REFUND}/trial={trial}")
    expect(opened).to_have_attribute("open", "")
    expect(opened).to_have_class(re.compile(r"\btarget\b"))
    expect(page.locator("details.trial[open]")).to_have_count(1)
    summary = opened.locator("summary").first
    expect(summary).to_have_text(
        f"trial {trial} — failed: answer correct, score 1; path wrong: gating score 0"
    )
    expect(opened.locator("p.gate")).to_have_text("score 1 · gating score 0")
    steps = opened.locator("table.steps:not(.verdicts) tr")
    expect(steps).to_have_count(2)
    expect(steps.first).to_have_class("s-missing")
    expect(steps.first.locator(".explanation")).to_have_text(SKIPPED)
    expect(steps.nth(1)).to_have_class("s-matched")
    expect(steps.nth(1).locator(".status")).to_have_text("matched by call 1")
    expect(opened.locator("ul.reasons li").first).to_have_text(SKIPPED)


def test_a_malformed_fragment_leaves_the_page_working(browser: Browser, flawed: Path) -> None:
    context = browser.new_context()
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(flawed.as_uri() + "#task=%E0%A4%A")  # the page's script ran by its load
        assert errors == []
        assert page.evaluate("document.body.dataset.ready") == "true"
        expect(page.locator("#count")).to_have_text("3 of 3 tasks")
    finally:
        context.close()


def test_the_first_trial_took_the_right_path(page: Page, flawed: Path) -> None:
    open_report(page, flawed, f"#task={REFUND}/trial=1")
    opened = by_id(page, f"task={REFUND}/trial=1")
    expect(opened.locator("summary").first).to_have_text(
        "trial 1 — passed: answer correct, score 1; path right: passed"
    )
    expect(opened.locator("table.steps tr.s-matched")).to_have_count(2)
    expect(opened.locator("ol.timeline li.call .tool")).to_have_text(
        ["crm:lookup-order", "payments:refund"]
    )


def test_a_tool_call_opens_to_its_arguments_and_result(
    page: Page, flawed: Path, tmp_path: Path
) -> None:
    open_report(page, flawed, f"#task={REFUND}/trial=2")
    opened = by_id(page, f"task={REFUND}/trial=2")
    calls = opened.locator("ol.timeline li.call")
    expect(calls).to_have_count(1)
    call = calls.first
    expect(call.locator(".tool")).to_have_text("payments:refund")
    expect(call.locator(".tag")).to_have_text(["step 2"])
    args = call.locator("pre.args")
    expect(args).to_be_hidden()
    call.locator("summary").click()
    expect(args).to_be_visible()
    assert json.loads(args.inner_text()) == {"orderId": "A-1001", "amountUsd": 59.9}
    assert json.loads(call.locator("pre.result").inner_text()) == {
        "refundId": "R-9",
        "status": "refunded",
    }
    output = opened.locator("pre.output")
    expect(output).to_have_text(json.dumps("Your order A-1001 has been refunded ($59.90)."))
    opened.screenshot(path=tmp_path / "trial.png")
    assert (tmp_path / "trial.png").stat().st_size > 0


def test_the_failures_and_passes_filters(page: Page, flawed: Path) -> None:
    open_report(page, flawed)
    count = page.locator("#count")
    page.locator("button[data-filter=failures]").click()
    expect(count).to_have_text("2 of 3 tasks")
    expect(page.locator("button[data-filter=failures]")).to_have_attribute("aria-pressed", "true")
    expect(by_id(page, f"task={CLOSE}")).to_have_count(0)
    assert task_ids(page) == [f"task={REFUND}", f"task={FOREIGN}"]
    page.locator("button[data-filter=passes]").click()
    expect(count).to_have_text("1 of 3 tasks")
    assert task_ids(page) == [f"task={CLOSE}"]
    page.locator("button[data-filter=flaky]").click()
    expect(count).to_have_text("2 of 3 tasks")  # the gated tasks passed trial 1 only
    page.locator("button[data-filter=errors]").click()
    expect(count).to_have_text("0 of 3 tasks")
    expect(page.locator("main#tasks .empty")).to_have_text("No task matches.")
    page.locator("button[data-filter=all]").click()
    expect(count).to_have_text("3 of 3 tasks")


def test_the_search_box_finds_tools_and_task_ids(page: Page, flawed: Path) -> None:
    open_report(page, flawed)
    count, search = page.locator("#count"), page.locator("input#search")
    search.fill("payments:refund")
    expect(count).to_have_text("1 of 3 tasks")
    assert task_ids(page) == [f"task={REFUND}"]
    search.fill("CLOSE-ACCOUNT")
    expect(count).to_have_text("1 of 3 tasks")
    expect(page.locator("main#tasks section.task")).to_have_id(f"task={CLOSE}")
    search.fill("crm:lookup-order")
    expect(count).to_have_text("2 of 3 tasks")
    page.locator("button[data-filter=passes]").click()
    expect(count).to_have_text("0 of 3 tasks")
    search.fill("")
    expect(count).to_have_text("1 of 3 tasks")


def test_the_careful_agent_passes(page: Page, tmp_path: Path) -> None:
    result, html, report = run_example(
        tmp_path, "careful_support_agent", "--store", f"sqlite:///{tmp_path / 's.db'}"
    )
    assert result.exit_code == 0, result.output
    assert report["passed"] is True
    open_report(page, html)
    verdict = page.locator("#verdict")
    expect(verdict.locator("h1 .state")).to_have_text("PASSED")
    expect(verdict).to_have_class(re.compile(r"\bpass\b"))
    expect(page.locator("ul#why li")).to_have_text(["Gated aggregate 1 meets the pass score 0.8."])
    expect(page.locator("p#shut")).to_have_count(0)
    page.locator("button[data-filter=failures]").click()
    expect(page.locator("#count")).to_have_text("0 of 3 tasks")
