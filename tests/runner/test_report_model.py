"""One report model, every rendering: the JSON report is its serialisation, the HTML page's
data carries the JSON report's members with the same values, and the run table and Markdown
say the same whether the report was built with every trial or from the run's outline."""

from __future__ import annotations

import io
import json
from typing import Any

from hypothesis import given, settings
from rich.console import Console

from openwop_eval.core import GradingPlan, SuiteTally, TrialRecord, grade_suite
from openwop_eval.core.versions import REPORT_VERSION
from openwop_eval.reports.html import report_data
from openwop_eval.reports.html.page_data import log_diagnostics
from openwop_eval.reports.model import Report, build_report, report_text
from openwop_eval.reports.terminal import print_run_table
from openwop_eval.reports.text import junit_xml, markdown
from tests.core.test_properties import graded_cases
from tests.helpers import golden, plan, suite_doc, trial

Case = tuple[GradingPlan, list[TrialRecord]]


def reports(case: Case) -> tuple[Report, Report]:
    """The report with every trial, and the one of the run's outline (per task only)."""
    compiled, records = case
    full = grade_suite(compiled, records)
    tally = SuiteTally(compiled, keep_trials=False)
    for record in records:
        tally.add(record)
    summary: dict[str, Any] = {"passed": full.passed}
    logged = log_diagnostics(records)
    diagnostics = {key: {**calls, "output": "answer"} for key, calls in logged.items()}
    return (
        build_report("local/r", "agent", full, summary, diagnostics),
        build_report("local/r", "agent", tally.finish(), summary, {}),
    )


def table(report: Report) -> str:
    buffer = io.StringIO()
    print_run_table(Console(file=buffer, width=200, color_system=None), report)
    return buffer.getvalue()


@settings(max_examples=60, deadline=None)
@given(case=graded_cases())
def test_the_pages_data_carries_the_json_reports_members(case: Case) -> None:
    report, _ = reports(case)
    doc = json.loads(report_text(report))
    assert doc == json.loads(json.dumps(report.as_dict()))  # the file is the serialisation
    data = report_data(report)
    assert {k: data[k] for k in report.graded_dict()} == {k: doc[k] for k in report.graded_dict()}
    assert [t["taskId"] for t in data["tasks"]] == [t["taskId"] for t in doc["tasks"]]
    for page_task, task in zip(data["tasks"], doc["tasks"], strict=True):
        shared = [k for k in task if k != "trials"]
        assert {k: page_task[k] for k in shared} == {k: task[k] for k in shared}
        for page_trial, one in zip(page_task["trials"], task["trials"], strict=True):
            graded = [k for k in one if k not in ("calls", "output")]
            assert {k: page_trial[k] for k in graded} == {k: one[k] for k in graded}
            assert page_trial["output"] == one.get("output")  # a trial not run has none
            for page_call, call in zip(page_trial["calls"], one.get("calls", []), strict=True):
                assert {k: page_call[k] for k in call} == call  # aligned: more, never other


@settings(max_examples=60, deadline=None)
@given(case=graded_cases())
def test_the_table_and_markdown_need_no_trials(case: Case) -> None:
    report, outline = reports(case)
    assert outline.tasks
    assert all(not t.trials for t in outline.tasks)
    assert table(outline) == table(report)
    assert markdown(outline) == markdown(report)
    compiled, _ = case
    listed = junit_xml(report).count("<testcase ") - (not report.passed)
    assert listed == len(compiled.tasks)
    # its output, and its failure's when it shut the gate (else the case is skipped, saying why)
    lines = sum(1 + (not t.passed and report.gate.gates(t.task_id)) for t in report.tasks)
    assert junit_xml(report).count("trial 1: ") == lines


def test_the_report_names_its_version_first() -> None:
    compiled = plan(suite_doc(golden("a"), golden("b")))
    report, _ = reports((compiled, [trial("a", 0, "ok"), trial("b", 0, "no")]))
    assert REPORT_VERSION == report.version == 1
    assert next(iter(report.as_dict().items())) == ("reportVersion", 1)
    assert next(iter(report_data(report).items())) == ("reportVersion", 1)
    assert [t["passed"] for t in report.as_dict()["tasks"]] == [True, False]
