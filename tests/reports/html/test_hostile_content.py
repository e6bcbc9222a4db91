"""A run's content is text on the page, never markup: an agent whose output, tool arguments,
error and judge rationale are HTML and script cannot run code in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.reports.html.pages import by_id, cli, needs_chromium, open_report

pytestmark = needs_chromium

HOSTILE = '</script><script>window.pwned=1</script><img src=x onerror="window.pwned=2">'

AGENT = f"""
HOSTILE = {HOSTILE!r}


async def agent(request, tools):
    if request["kind"] == "error":
        raise RuntimeError(HOSTILE)
    result = await tools.call("crm:note", {{"text": HOSTILE, HOSTILE: [HOSTILE]}})
    assert result["echo"] == HOSTILE
    return HOSTILE
"""


def task(task_id: str, kind: str) -> dict[str, object]:
    expected: dict[str, object] = {
        "kind": "golden",
        "match": {"strategy": "contains", "value": "pwned"},
        "trajectory": {"steps": [{"tool": "crm:note"}], "forbidden": ["accounts:delete"]},
    }
    if kind == "judge":
        expected = {"kind": "rubric", "rubric": [{"criterion": HOSTILE, "weight": 1}]}
    return {
        "taskId": task_id,
        "input": {"kind": kind, "message": HOSTILE},
        "expected": expected,
        "fixtures": {"toolResponses": [{"tool": "crm:note", "response": {"echo": HOSTILE}}]},
    }


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hostile")
    suite = {
        "suiteId": "test.openwop.evals.hostile",
        "version": "1.0.0",
        "modes": ["golden", "rubric"],
        "thresholds": {"passScore": 0.9},
        "trials": {"count": 1},
        "tasks": [
            task("hostile-output", "output"),
            task("hostile-error", "error"),
            task("hostile-judge", "judge"),
        ],
    }
    judge = {"tasks": {"hostile-judge": [{"met": [0.5], "rationales": [HOSTILE]}]}}
    (tmp / "suite.json").write_text(json.dumps(suite))
    (tmp / "agent.py").write_text(AGENT)
    (tmp / "judge.json").write_text(json.dumps(judge))
    html = tmp / "report.html"
    result = cli(
        "run",
        str(tmp / "suite.json"),
        "--agent",
        f"{tmp / 'agent.py'}:agent",
        "--judge",
        f"scripted:{tmp / 'judge.json'}",
        "--store",
        f"sqlite:///{tmp / 's.db'}",
        "--agent-id",
        HOSTILE,
        "--quiet",
        "--html",
        str(html),
    )
    assert result.exit_code == 1, result.output  # the errored task fails the gate
    return html


def test_the_file_embeds_no_markup_from_the_run(hostile: Path) -> None:
    text = hostile.read_text(encoding="utf-8")
    assert "window.pwned" in text  # the content is there, as escaped data
    assert "<script>window.pwned" not in text
    assert "<img" not in text
    assert text.count("</script>") == 2  # the data block and the page script close, no more


def test_no_script_runs_and_every_value_is_shown_as_text(page: Page, hostile: Path) -> None:
    open_report(page, hostile)
    for trial in page.locator("details.trial").all():
        trial.locator("summary").first.click()
        expect(trial).to_have_attribute("open", "")
    calls = page.locator("ol.timeline li.call")
    expect(calls).to_have_count(2)
    for call in calls.all():
        call.locator("summary").click()
        expect(call.locator("pre.args")).to_be_visible()

    assert page.evaluate("typeof window.pwned") == "undefined"
    expect(page.locator("#verdict .meta code").nth(1)).to_have_text(HOSTILE)  # the agent id
    expect(page.locator("main#tasks img")).to_have_count(0)
    assert page.evaluate("document.images.length") == 0
    assert page.evaluate("document.scripts.length") == 2

    output = by_id(page, "task=hostile-output/trial=1")
    expect(output.locator("pre.output")).to_have_text(json.dumps(HOSTILE))
    args = json.loads(output.locator("pre.args").inner_text())
    assert args == {"text": HOSTILE, HOSTILE: [HOSTILE]}
    assert json.loads(output.locator("pre.result").inner_text()) == {"echo": HOSTILE}

    errored = by_id(page, "task=hostile-error/trial=1")
    expect(errored.locator("pre.error-text")).to_contain_text(HOSTILE)
    expect(errored.locator("pre.output")).to_have_text("null")

    judged = by_id(page, "task=hostile-judge/trial=1")
    verdict = judged.locator("table.verdicts tr")
    expect(verdict.locator(".tool")).to_have_text(HOSTILE)
    expect(verdict.locator(".explanation")).to_have_text(HOSTILE)
    expect(judged.locator("pre.output")).to_have_text(json.dumps(HOSTILE))


def test_a_hostile_search_is_text_too(page: Page, hostile: Path) -> None:
    open_report(page, hostile)
    page.locator("input#search").fill("</pre><b>no such text</b>")
    expect(page.locator("#count")).to_have_text("0 of 3 tasks")
    page.locator("input#search").fill("<img src=x onerror")
    expect(page.locator("#count")).to_have_text("3 of 3 tasks")
    page.locator("button[data-filter=errors]").click()
    expect(page.locator("#count")).to_have_text("1 of 3 tasks")
    assert page.evaluate("typeof window.pwned") == "undefined"


def test_a_search_with_quotes_finds_the_outputs(page: Page, hostile: Path) -> None:
    open_report(page, hostile)
    search, count = page.locator("input#search"), page.locator("#count")
    search.fill("no such text")
    expect(count).to_have_text("0 of 3 tasks")
    search.fill('onerror="window.pwned=2"')  # in each output, or in the error
    expect(count).to_have_text("3 of 3 tasks")
