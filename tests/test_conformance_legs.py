"""The RFC 0246 conformance legs, judged on our own grading of the shipped fixtures.

The scripted agent's calls are all served by the fixtures here, so each scripted entry maps
straight to a trial record; the runner drives the same files end to end.
"""

from __future__ import annotations

import copy
import json
from importlib import resources
from typing import Any

import pytest

from openwop_eval import TrialRecord, grade, parse_suite, summary_dict
from openwop_eval.conformance import witness
from openwop_eval.core import SuiteGrade, ToolCall

FIXTURES = resources.files("openwop_eval.conformance") / "fixtures"


def run_fixture(name: str) -> tuple[list[dict[str, Any]], dict[str, Any], SuiteGrade]:
    suite = parse_suite(json.loads((FIXTURES / f"{name}.suite.json").read_text())).suite
    agent = json.loads((FIXTURES / "conformance-mock-agent.json").read_text())
    count = suite.trials_or_default.count
    records = []
    for task in suite.tasks:
        script = agent["tasks"][task.task_id]
        for i in range(count):
            entry = script[i % len(script)]
            made = tuple(ToolCall(c["tool"], c["args"]) for c in entry["toolCalls"])
            records.append(TrialRecord(task.task_id, i, entry["output"], made))
    result = grade(suite, records)
    scored = [
        {"taskId": t.task_id, "score": t.score, "passed": t.passed}
        for task in result.tasks
        for t in task.trials
    ]
    return scored, summary_dict(result), result


def failed(assertions: list[witness.Assertion]) -> list[str]:
    return [a.name for a in assertions if not a.passed]


def test_mean_gated_leg_passes() -> None:
    scored, summary, _ = run_fixture(witness.MEAN_FIXTURE)
    assertions = witness.mean_gated(scored, summary)
    assert failed(assertions) == []
    names = {a.name for a in assertions}
    assert {"task gatedScore", "task passed", "summary carries gatedAggregateScore"} <= names


def test_suite_gated_leg_passes() -> None:
    scored, summary, result = run_fixture(witness.SUITE_FIXTURE)
    assert failed(witness.suite_gated(scored, summary)) == []
    assert [t.passed for t in result.tasks[0].trials + result.tasks[1].trials] == [True, False]
    assert summary["passedCount"] == 1


@pytest.mark.parametrize("name", [witness.MEAN_FIXTURE, witness.SUITE_FIXTURE])
def test_gated_fields_shape_leg_passes(name: str) -> None:
    _, summary, _ = run_fixture(name)
    assertions = witness.gated_fields_shape(summary)
    assert failed(assertions) == []
    assert "gatedScore 1.5 is rejected" in {a.name for a in assertions}


def zero_scores(scored: list[dict[str, Any]], summary: dict[str, Any]) -> tuple[Any, Any]:
    """A host that "fixes" the gate by zeroing the score of every trajectory-failed trial."""
    scored = [dict(e, score=0.0) if not e["passed"] else e for e in scored]
    summary = copy.deepcopy(summary)
    for task in summary["tasks"]:
        if task.get("gatedScore") == 0:
            task["score"] = 0.0
            if "trials" in task:
                task["trials"]["meanScore"] = 0.0
    scores = [t["score"] for t in summary["tasks"]]
    summary["aggregateScore"] = sum(scores) / len(scores)
    return scored, summary


def test_zeroing_the_score_fails_the_mean_gated_leg() -> None:
    scored, summary, _ = run_fixture(witness.MEAN_FIXTURE)
    broken = failed(witness.mean_gated(*zero_scores(scored, summary)))
    assert "eval.scored[0].score is the output score" in broken
    assert "task trials.meanScore is unchanged" in broken
    assert "aggregateScore is unchanged" in broken


def test_zeroing_the_score_fails_the_suite_gated_leg() -> None:
    scored, summary, _ = run_fixture(witness.SUITE_FIXTURE)
    broken = failed(witness.suite_gated(*zero_scores(scored, summary)))
    assert "eval.scored[1].score is the output score" in broken
    assert "aggregateScore is unchanged" in broken


def test_an_ungated_mean_rule_fails_the_mean_gated_leg() -> None:
    """An RFC 0244-only host decides the mean rule on meanScore."""
    scored, summary, _ = run_fixture(witness.MEAN_FIXTURE)
    summary["tasks"][0]["passed"] = True
    summary["tasks"][0]["gatedScore"] = 1.0
    assert "task gatedScore" in failed(witness.mean_gated(scored, summary))


def test_an_ungated_suite_aggregate_fails_the_suite_gated_leg() -> None:
    scored, summary, _ = run_fixture(witness.SUITE_FIXTURE)
    summary["passed"] = True
    del summary["gatedAggregateScore"]
    broken = failed(witness.suite_gated(scored, summary))
    assert "suite passed" in broken
    assert "gatedAggregateScore" in broken


def test_a_missing_gated_score_on_the_matched_task_fails() -> None:
    scored, summary, _ = run_fixture(witness.SUITE_FIXTURE)
    del summary["tasks"][0]["gatedScore"]
    assert failed(witness.suite_gated(scored, summary)) == [
        "matched task gatedScore equals its score",
        "gatedAggregateScore is the mean of the gating scores",
    ]


def test_an_out_of_range_gated_aggregate_fails_the_shape_leg() -> None:
    _, summary, _ = run_fixture(witness.SUITE_FIXTURE)
    summary["gatedAggregateScore"] = 1.5
    assert failed(witness.gated_fields_shape(summary)) == [
        "summary validates against eval-summary.schema.json"
    ]
