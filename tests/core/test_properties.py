"""Property-based tests of the grading algebra (RFC 0246 and the pass@k combinatorics)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval.core import GradingPlan, ToolCall, TrialRecord, grade_suite
from openwop_eval.core.stats import decimal, exact_mean, pass_at_k, pass_hat_k
from tests.helpers import plan, rubric, suite_doc

TOOLS = ["crm:lookup", "crm:update", "pay:refund", "mail:send"]
FORBIDDEN = "accounts:delete"

scores = st.floats(min_value=0, max_value=1, allow_nan=False)


@given(value=scores, n=st.integers(1, 12))
def test_mean_of_identical_scores_is_that_score_and_meets_an_equal_bar(
    value: float, n: int
) -> None:
    assert exact_mean([value] * n) == decimal(value)
    compiled = plan(suite_doc(rubric("t", [1.0]), pass_score=value, trials={"count": n}))
    result = grade_suite(compiled, [TrialRecord("t", i, "x", verdicts=(value,)) for i in range(n)])
    task = result.tasks[0]
    assert task.score == value
    assert task.gated_score == value
    assert task.passed
    assert result.passed


@given(n=st.integers(1, 30), data=st.data())
def test_pass_hat_k_never_exceeds_pass_at_k(n: int, data: st.DataObject) -> None:
    c = data.draw(st.integers(0, n))
    k = data.draw(st.integers(1, n))
    assert 0 <= pass_hat_k(n, c, k) <= pass_at_k(n, c, k) <= 1


@given(n=st.integers(1, 30), data=st.data())
def test_pass_at_k_never_decreases_as_c_grows(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(1, n))
    values = [pass_at_k(n, c, k) for c in range(n + 1)]
    assert values == sorted(values)
    assert values[0] == 0
    assert values[-1] == 1


# --- random suites and trials --------------------------------------------------------


@st.composite
def trajectories(draw: st.DrawFn) -> dict[str, Any]:
    steps = draw(st.lists(st.sampled_from(TOOLS), max_size=3))
    return {
        "steps": [{"tool": t} for t in steps],
        "order": draw(st.sampled_from(["exact", "in-order", "any-order"])),
        "forbidden": [FORBIDDEN],
    }


@st.composite
def plans(draw: st.DrawFn) -> GradingPlan:
    n_tasks = draw(st.integers(1, 3))
    tasks = [
        rubric(f"t{i}", [0.5, 0.5], draw(st.one_of(st.none(), trajectories())))
        for i in range(n_tasks)
    ]
    trials = {
        "count": draw(st.integers(1, 4)),
        "passRule": draw(st.sampled_from(["mean", "all", "any"])),
    }
    return plan(suite_doc(*tasks, pass_score=draw(scores), trials=trials))


@st.composite
def records(draw: st.DrawFn, compiled: GradingPlan) -> list[TrialRecord]:
    out = []
    for task in compiled.tasks:
        for i in range(compiled.count):
            if draw(st.integers(0, 9)) == 0:
                continue  # this trial did not run
            made = draw(st.lists(st.sampled_from([*TOOLS, FORBIDDEN]), max_size=5))
            out.append(
                TrialRecord(
                    task.task_id,
                    i,
                    "answer",
                    tuple(ToolCall(t, {}, missed=draw(st.integers(0, 19)) == 0) for t in made),
                    error="boom" if draw(st.integers(0, 19)) == 0 else None,
                    verdicts=(draw(st.sampled_from([0.0, 0.5, 1.0])), draw(scores)),
                )
            )
    return out


@st.composite
def graded_cases(draw: st.DrawFn) -> tuple[GradingPlan, list[TrialRecord]]:
    compiled = draw(plans())
    return compiled, draw(records(compiled))


@settings(max_examples=300)
@given(case=graded_cases())
def test_gated_score_never_exceeds_score(case: tuple[GradingPlan, list[TrialRecord]]) -> None:
    result = grade_suite(*case)
    for task in result.tasks:
        assert task.gated_score <= task.score
        for t in task.trials:
            assert 0 <= t.gating <= t.score <= 1
    assert result.gated_aggregate_score <= result.aggregate_score


@settings(max_examples=300)
@given(case=graded_cases())
def test_a_trajectory_failed_trial_never_passes_a_task_under_all(
    case: tuple[GradingPlan, list[TrialRecord]],
) -> None:
    compiled, recs = case
    result = grade_suite(replace(compiled, pass_rule="all"), recs)
    for task in result.tasks:
        if any(t.trajectory is not None and not t.trajectory.matched for t in task.trials):
            assert not task.passed


@settings(max_examples=300)
@given(case=graded_cases())
def test_suite_pass_implies_gated_aggregate_meets_the_bar(
    case: tuple[GradingPlan, list[TrialRecord]],
) -> None:
    compiled, recs = case
    result = grade_suite(compiled, recs)
    if result.passed:
        assert exact_mean([t.gated_score for t in result.tasks]) >= compiled.pass_score
    for task in result.tasks:
        if task.passed and compiled.pass_rule == "mean":
            assert exact_mean([t.gating for t in task.trials]) >= compiled.pass_score


@settings(max_examples=300)
@given(case=graded_cases(), data=st.data())
def test_adding_a_forbidden_call_never_turns_a_fail_into_a_pass(
    case: tuple[GradingPlan, list[TrialRecord]], data: st.DataObject
) -> None:
    compiled, recs = case
    if not recs:
        return
    target = data.draw(st.integers(0, len(recs) - 1))
    at = data.draw(st.integers(0, len(recs[target].tool_calls)))
    calls = list(recs[target].tool_calls)
    calls.insert(at, ToolCall(FORBIDDEN, {}))
    worse = [*recs[:target], replace(recs[target], tool_calls=tuple(calls)), *recs[target + 1 :]]
    for rule in ("mean", "all", "any"):
        ruled = replace(compiled, pass_rule=rule)
        before, after = grade_suite(ruled, recs), grade_suite(ruled, worse)
        for b, a in zip(before.tasks, after.tasks, strict=True):
            assert a.passed <= b.passed
            assert a.score == b.score  # §C: the measurement does not move
        assert after.passed <= before.passed
        assert after.aggregate_score == before.aggregate_score
