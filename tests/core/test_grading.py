"""Trial and task grading: misses, errors, trials that did not run, pass rules, thresholds."""

from __future__ import annotations

import pytest

from openwop_eval import GradingError, ToolCall, TrialRecord, grade, summary_dict
from tests.helpers import calls, golden, graded, plan, rubric, suite_doc, trial


def test_a_fixture_miss_fails_the_trial_closed_with_score_zero() -> None:
    result = graded(suite_doc(golden("a")), trial("a", tool_calls=(ToolCall("crm:x", {}, True),)))
    graded_trial = result.tasks[0].trials[0]
    assert graded_trial.outcome == "failed-closed"
    assert (graded_trial.score, graded_trial.gating, graded_trial.passed) == (0.0, 0.0, False)
    assert graded_trial.output_score == 1.0
    assert graded_trial.reasons[0].rule == "fixture-miss"
    assert result.passed is False


def test_an_agent_error_scores_zero_and_fails() -> None:
    result = graded(suite_doc(golden("a")), trial("a", error="timed out after 30 s"))
    graded_trial = result.tasks[0].trials[0]
    assert graded_trial.outcome == "errored"
    assert (graded_trial.score, graded_trial.gating, graded_trial.passed) == (0.0, 0.0, False)
    assert graded_trial.reasons[0].message == "the agent errored: timed out after 30 s"


def test_a_rubric_trial_without_verdicts_errors() -> None:
    result = graded(suite_doc(rubric("a", [1.0])), trial("a"))
    assert result.tasks[0].trials[0].outcome == "errored"
    assert result.tasks[0].trials[0].reasons[0].rule == "judge"


def test_trials_that_did_not_run_count_as_failed() -> None:
    doc = suite_doc(golden("a"), trials={"count": 3, "passRule": "any"})
    result = graded(doc, trial("a", 1))
    task = result.tasks[0]
    assert [t.outcome for t in task.trials] == ["not-run", "passed", "not-run"]
    assert task.score == pytest.approx(1 / 3)
    assert task.passed is True  # any: one verdict passed
    assert task.pass_at_k == 1.0
    assert task.pass_hat_k == 0.0


def test_a_task_with_no_records_fails() -> None:
    result = graded(suite_doc(golden("a"), golden("b")), trial("a"))
    assert [t.passed for t in result.tasks] == [True, False]
    assert summary_dict(result)["taskCount"] == 2


@pytest.mark.parametrize(
    ("rule", "verdicts", "passed"),
    [
        ("mean", [True, True, False], True),  # gated mean 2/3 ≥ 0.6
        ("mean", [True, False, False], False),
        ("all", [True, True, False], False),
        ("all", [True, True, True], True),
        ("any", [False, False, True], True),
        ("any", [False, False, False], False),
    ],
)
def test_pass_rules(rule: str, verdicts: list[bool], passed: bool) -> None:
    doc = suite_doc(golden("a"), pass_score=0.6, trials={"count": 3, "passRule": rule})
    records = [trial("a", i, "ok" if ok else "wrong") for i, ok in enumerate(verdicts)]
    assert graded(doc, *records).tasks[0].passed is passed


def test_mean_rule_compares_exactly() -> None:
    """Three trials of 0.6 meet a 0.6 bar, though their float sum is 1.7999999999999998."""
    doc = suite_doc(rubric("a", [0.6, 0.4]), pass_score=0.6, trials={"count": 3})
    result = graded(doc, *(trial("a", i, verdicts=(1.0, 0.0)) for i in range(3)))
    assert result.tasks[0].passed is True
    assert result.passed is True


def test_four_of_five_trials_meet_a_point_eight_bar_at_task_and_suite() -> None:
    doc = suite_doc(golden("a"), pass_score=0.8, trials={"count": 5, "passRule": "mean"})
    records = [trial("a", i, "ok" if i < 4 else "no") for i in range(5)]
    result = graded(doc, *records)
    assert result.tasks[0].passed is True
    assert result.passed is True


def test_no_pass_score_means_a_bar_of_one() -> None:
    result = graded(suite_doc(rubric("a", [0.9, 0.1])), trial("a", verdicts=(1.0, 0.0)))
    assert result.tasks[0].trials[0].passed is False
    assert result.passed is False


def test_cost_over_budget_fails_the_suite() -> None:
    doc = suite_doc(golden("a"), golden("b"), thresholds={"passScore": 0.5, "maxCostUsd": 0.3})
    result = graded(doc, trial("a", cost_usd=0.1), trial("b", cost_usd=0.2))
    assert result.passed is True  # 0.1 + 0.2 == 0.3 exactly is within budget
    result = graded(doc, trial("a", cost_usd=0.1), trial("b", cost_usd=0.25))
    assert result.passed is False
    assert [r.rule for r in result.reasons] == ["cost-over-budget"]
    assert summary_dict(result)["totalCostUsd"] == 0.35


def test_p95_latency_bar() -> None:
    doc = suite_doc(golden("a"), golden("b"), thresholds={"passScore": 1, "maxP95LatencyMs": 100})
    assert graded(doc, trial("a", latency_ms=50), trial("b", latency_ms=100)).passed
    slow = graded(doc, trial("a", latency_ms=50), trial("b", latency_ms=101))
    assert [r.rule for r in slow.reasons] == ["latency-over-bar"]


def test_unknown_latency_fails_a_latency_bar_closed() -> None:
    doc = suite_doc(golden("a"), thresholds={"passScore": 1, "maxP95LatencyMs": 100})
    assert [r.rule for r in graded(doc, trial("a")).reasons] == ["latency-unknown"]


def test_task_cost_sums_and_latency_averages_over_trials() -> None:
    doc = suite_doc(golden("a"), trials={"count": 2})
    task = graded(
        doc, trial("a", 0, cost_usd=0.1, latency_ms=10), trial("a", 1, cost_usd=0.2, latency_ms=15)
    ).tasks[0]
    assert task.cost_usd == pytest.approx(0.3)
    assert task.latency_ms == 13  # 12.5 rounds half up


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([trial("zzz")], "unknown task 'zzz'"),
        ([trial("a", 1)], "outside 0..0"),
        ([trial("a"), trial("a")], "recorded twice"),
    ],
)
def test_records_that_do_not_fit_the_suite_are_refused(
    records: list[TrialRecord], message: str
) -> None:
    compiled = plan(suite_doc(golden("a")))
    with pytest.raises(GradingError, match=message):
        grade(compiled, records)


def test_failure_reasons_come_in_a_useful_order() -> None:
    doc = suite_doc(
        golden("a", trajectory={"steps": [{"tool": "crm:lookup"}], "forbidden": ["pay:*"]})
    )
    result = graded(doc, trial("a", output="nope", tool_calls=calls("pay:refund")))
    assert [r.rule for r in result.tasks[0].trials[0].reasons] == [
        "forbidden",
        "missing-step",
        "score-below-bar",
    ]
