"""``openwop-eval report RUN_ID --html`` writes, from the store, the report ``run --html``
wrote for the same run: the same verdict, the same explanation, the same trials."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.reports.html.pages import by_id, cli, needs_chromium, open_report, run_example

pytestmark = needs_chromium


def explanation(page: Page, path: Path) -> dict[str, Any]:
    open_report(page, path)
    return {
        "state": page.locator("#verdict h1").inner_text(),
        "why": page.locator("ul#why li").all_inner_texts(),
        "conditions": [
            row.locator("td, th").all_inner_texts()
            for row in page.locator("table#conditions tr").all()
        ],
        "shut": page.locator("p#shut").inner_text(),
        "count": page.locator("#count").inner_text(),
        "summaries": page.locator("details.trial > summary").all_inner_texts(),
    }


def test_the_report_command_explains_the_gate_as_the_run_did(page: Page, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    ran, run_html, report = run_example(tmp_path, "support_agent", "--store", store)
    assert ran.exit_code == 1, ran.output
    later = tmp_path / "later.html"
    result = cli("report", report["runId"], "--store", store, "--html", str(later))
    assert result.exit_code == 0, result.output

    first, second = explanation(page, run_html), explanation(page, later)
    assert second == first
    assert first["state"] == "acme.support.evals.refunds@1.0.0: NOT PASSED"
    assert first["why"][0] == "Gated aggregate 0.5556 is below the pass score 0.8."
    assert "refund-delivered-order" in str(first["shut"])

    open_report(page, later, "#task=refund-delivered-order/trial=3")
    trial = by_id(page, "task=refund-delivered-order/trial=3")
    expect(trial).to_have_attribute("open", "")
    expect(trial.locator("tr.s-missing .explanation")).to_have_text(
        "step 1 (crm:lookup-order) was never called"
    )
    expect(trial.locator("ol.timeline li.call .tool")).to_have_text(["payments:refund"])


def test_the_report_command_names_an_unknown_run(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    result = cli("report", "local/nope", "--store", store, "--html", str(tmp_path / "r.html"))
    assert result.exit_code == 2
    assert "no run 'local/nope'" in result.output
    assert not (tmp_path / "r.html").exists()
