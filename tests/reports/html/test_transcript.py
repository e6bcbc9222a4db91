"""The HTML report shows what an ``openai:`` agent exchanged with its model — on the Chat
Completions API and on the Responses API — one entry per message or item, as text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.fakes.openai_server import (
    Reply,
    completion,
    response_calls,
    response_text,
    serve,
    tool_calls,
)
from tests.reports.html.pages import by_id, cli, needs_chromium, open_report

pytestmark = needs_chromium

ANSWER = 'Order 7 is on its way. <img src=x onerror="window.pwned=1">'
SUITE = {
    "suiteId": "test.openwop.evals.transcript",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 0.9},
    "trials": {"count": 1},
    "tasks": [
        {
            "taskId": "where-is-my-order",
            "input": {"message": "Where is order 7?"},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "contains", "value": "on its way"},
                "trajectory": {"steps": [{"tool": "crm:lookup-order"}]},
            },
            "fixtures": {
                "toolResponses": [{"tool": "crm:lookup-order", "response": {"status": "shipped"}}]
            },
        }
    ],
}
REPLIES: dict[str, tuple[Reply, Reply]] = {
    "chat": (tool_calls(("crm__lookup-order", {"orderId": "7"})), completion(ANSWER)),
    "responses": (
        response_calls(("crm__lookup-order", {"orderId": "7"})),
        response_text(ANSWER),
    ),
}


@pytest.fixture(scope="module", params=["chat", "responses"])
def report(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, Path]:
    """The HTML report of a run on each API."""
    api: str = request.param
    tmp = tmp_path_factory.mktemp(api)
    (tmp / "suite.json").write_text(json.dumps(SUITE))
    with serve() as endpoint:
        endpoint.script(*REPLIES[api])
        result = cli(
            "run", str(tmp / "suite.json"),
            "--agent", "openai:agent-model", "--agent-api", api,
            "--agent-base-url", endpoint.url,
            "--store", f"sqlite:///{tmp / 's.db'}",
            "--quiet", "--html", str(tmp / "report.html"),
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    return api, tmp / "report.html"


def test_the_trial_shows_its_transcript_as_text(page: Page, report: tuple[str, Path]) -> None:
    api, path = report
    open_report(page, path, "#task=where-is-my-order/trial=1")
    trial = by_id(page, "task=where-is-my-order/trial=1")
    transcript = trial.locator("details.transcript")
    transcript.locator("summary").click()
    expect(transcript.locator("summary")).to_have_text(f"transcript · {api} API · 4 entries")
    entries = transcript.locator("ol.exchange > li")
    expect(entries).to_have_count(4)
    expect(entries.nth(0)).to_contain_text("Where is order 7?")
    expect(entries.nth(1)).to_contain_text('crm__lookup-order {"orderId": "7"}')
    expect(entries.nth(2).locator("pre")).to_have_text('{"status": "shipped"}')
    expect(entries.nth(2).locator(".who")).to_contain_text("call_0")  # the call it answers
    expect(entries.nth(3).locator("pre")).to_have_text(ANSWER)  # markup shown, not run
    assert page.evaluate("typeof window.pwned") == "undefined"
    expect(trial.locator("img")).to_have_count(0)
