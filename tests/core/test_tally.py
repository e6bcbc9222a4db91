"""The streaming grader: trials folded one at a time, in any order, grade exactly as the
whole-list grader always did (the frozen copy in ``tests/core/oracle.py``)."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval.core import (
    GradingError,
    GradingPlan,
    SuiteTally,
    TrialRecord,
    grade_suite,
    grade_task,
    grade_trial,
    summary_dict,
)
from openwop_eval.core.grading import FAILURES_KEPT
from openwop_eval.core.reasons import Reasons
from openwop_eval.core.stats import DecimalSum, decimal, decimal_parts
from tests.core import oracle
from tests.core.grading_cases import graded_cases
from tests.helpers import golden, plan, rubric, suite_doc, trial

Case = tuple[GradingPlan, list[TrialRecord]]


def same(a: Any, b: Any, where: str = "grade") -> None:
    """Field by field; floats bit for bit (0.0 is not -0.0), Fractions exactly."""
    if isinstance(a, Reasons) or isinstance(b, Reasons):  # worked out when read: read them
        same(tuple(a), tuple(b), where)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), where
        for f in dataclasses.fields(a):
            if f.name != "plan":
                same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
    elif isinstance(a, tuple):
        assert isinstance(b, tuple), where
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float):
        assert isinstance(b, float), where
        assert a.hex() == b.hex(), f"{where}: {a!r} != {b!r}"
    else:
        assert type(a) is type(b), f"{where}: {a!r} != {b!r}"
        assert a == b, f"{where}: {a!r} != {b!r}"


def without_trials(grade: Any) -> Any:
    tasks = tuple(dataclasses.replace(t, trials=()) for t in grade.tasks)
    return dataclasses.replace(grade, tasks=tasks)


@settings(max_examples=150, deadline=None)
@given(case=graded_cases())
def test_grade_suite_is_what_it_always_was(case: Case) -> None:
    compiled, recs = case
    same(grade_suite(compiled, recs), oracle.grade_suite(compiled, recs))


@settings(max_examples=150, deadline=None)
@given(case=graded_cases(), keep=st.booleans())
def test_trials_added_one_at_a_time_in_any_order_grade_the_same(case: Case, keep: bool) -> None:
    compiled, recs = case
    want = oracle.grade_suite(compiled, recs)
    tally = SuiteTally(compiled, keep_trials=keep)
    for record in recs:
        same(
            tally.add(record), oracle.grade_trial(compiled, compiled.by_id[record.task_id], record)
        )
    got = tally.finish()
    same(got, want if keep else without_trials(want))
    assert summary_dict(got) == summary_dict(want)


@settings(max_examples=75, deadline=None)
@given(case=graded_cases())
def test_grades_computed_elsewhere_fold_the_same(case: Case) -> None:
    compiled, recs = case
    tally = SuiteTally(compiled, keep_trials=True)
    for record in recs:
        tally.add_grade(grade_trial(compiled, compiled.by_id[record.task_id], record))
    same(tally.finish(), oracle.grade_suite(compiled, recs))


@settings(max_examples=75, deadline=None)
@given(case=graded_cases())
def test_grade_task_is_what_it_always_was(case: Case) -> None:
    compiled, recs = case
    for task in compiled.tasks:
        mine = [r for r in recs if r.task_id == task.task_id]
        same(grade_task(compiled, task, mine), oracle.grade_task(compiled, task, mine))


def _raised(call: Any) -> str | None:
    try:
        call()
    except GradingError as exc:
        return str(exc)
    return None


@settings(max_examples=75, deadline=None)
@given(case=graded_cases(), data=st.data())
def test_a_bad_record_is_refused_with_the_same_message(case: Case, data: st.DataObject) -> None:
    compiled, recs = case
    task = data.draw(st.sampled_from([t.task_id for t in compiled.tasks] + ["nowhere"]))
    index = data.draw(st.integers(-2, compiled.count + 1))
    bad = [*recs, TrialRecord(task, index, "answer")]
    bad = data.draw(st.permutations(bad))
    want = _raised(lambda: oracle.grade_suite(compiled, bad))
    assert _raised(lambda: grade_suite(compiled, bad)) == want
    if want is None:
        return
    # One at a time, the bad record is refused when it comes, and nothing of it is folded.
    tally = SuiteTally(compiled)
    refused = [m for r in bad if (m := _raised(lambda r=r: tally.add(r))) is not None]
    assert len(refused) == 1
    assert refused[0] in {
        f"trial record for unknown task {task!r}",
        f"task {task!r}: trial index {index} is outside 0..{compiled.count - 1}",
        f"task {task!r}: trial {index} recorded twice",
    }


def test_a_trial_added_twice_is_refused_and_the_first_stands() -> None:
    compiled = plan(suite_doc(golden("a"), trials={"count": 2}))
    tally = SuiteTally(compiled)
    tally.add(trial("a", 0))
    with pytest.raises(GradingError, match=r"^task 'a': trial 0 recorded twice$"):
        tally.add(trial("a", 0, output="wrong"))
    with pytest.raises(GradingError, match="recorded twice"):
        tally.add_grade(grade_trial(compiled, compiled.tasks[0], trial("a", 0)))
    with pytest.raises(GradingError, match=r"^task 'a': trial index 2 is outside 0\.\.1$"):
        tally.add(trial("a", 2))
    with pytest.raises(GradingError, match=r"^trial record for unknown task 'b'$"):
        tally.add(trial("b", 0))
    task = tally.finish().tasks[0]
    assert (task.score, task.passed_trials, task.trials) == (0.5, 1, ())


def test_finish_can_be_read_midway_and_the_missing_trials_count_as_not_run() -> None:
    compiled = plan(suite_doc(rubric("a", [1.0]), trials={"count": 3, "passRule": "any"}))
    tally = SuiteTally(compiled, keep_trials=True)
    tally.add(trial("a", 2, verdicts=(0.5,)))
    midway = tally.finish().tasks[0]
    assert [t.outcome for t in midway.trials] == ["not-run", "not-run", "failed"]
    assert midway.min_score == 0.0
    assert midway.max_score == 0.5
    tally.add(trial("a", 0, verdicts=(1.0,)))
    task = tally.finish().tasks[0]
    assert [t.outcome for t in task.trials] == ["passed", "not-run", "failed"]
    assert task.exact_score == Fraction(1, 2)
    assert task.passed


def test_a_zero_of_the_lowest_index_is_the_minimum_as_min_always_took_it() -> None:
    compiled = plan(suite_doc(rubric("a", [1.0]), trials={"count": 3}))
    recs = [
        trial("a", 2, output_score=0.0),
        trial("a", 1, output_score=-0.0),
        trial("a", 0, output_score=0.5),
    ]
    tally = SuiteTally(compiled)
    for r in recs:
        tally.add(r)
    assert math.copysign(1, tally.finish().tasks[0].min_score) == -1
    same(grade_suite(compiled, recs), oracle.grade_suite(compiled, recs))


def test_many_distinct_scores_stay_exact() -> None:
    count = 200
    compiled = plan(suite_doc(rubric("a", [1.0]), trials={"count": count}))
    recs = [trial("a", i, output_score=(i * 7919 % 1000) / 1000) for i in range(count)]
    same(grade_suite(compiled, recs), oracle.grade_suite(compiled, recs))


@given(value=st.floats(allow_nan=False, allow_infinity=False))
def test_decimal_parts_are_the_decimal_the_float_was_written_as(value: float) -> None:
    p, e = decimal_parts(value)
    assert e >= 0
    assert Fraction(p, 10**e) == decimal(value)


@given(values=st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32)))
def test_a_decimal_sum_is_the_exact_sum(values: list[float]) -> None:
    total = DecimalSum()
    for v in values:
        total.add(v)
    exact = sum((decimal(v) for v in values), Fraction(0))
    assert total.over() == exact
    assert total.over(3) == exact / 3
    assert total.ratio_float(7) == float(exact / 7)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_value_is_refused_as_decimal_refuses_it(value: float) -> None:
    with pytest.raises(ValueError, match="Invalid literal for Fraction") as theirs:
        decimal(value)
    with pytest.raises(ValueError, match="Invalid literal for Fraction") as mine:
        decimal_parts(value)
    assert str(mine.value) == str(theirs.value)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), count=st.integers(1, 40), keep=st.booleans())
def test_a_task_keeps_its_lowest_failed_trials_however_they_arrive(
    data: st.DataObject, count: int, keep: bool
) -> None:
    outputs = data.draw(st.lists(st.sampled_from(["ok", "no", None]), min_size=count))
    ran = [(i, out) for i, out in enumerate(outputs[:count]) if out is not None]  # None: not run
    compiled = plan(suite_doc(golden("t"), trials={"count": count}))
    tally = SuiteTally(compiled, keep_trials=keep)
    for i, out in data.draw(st.permutations(ran)):
        tally.add(trial("t", i, out))
    task = tally.finish().tasks[0]
    failed = [i for i in range(count) if outputs[i] != "ok"]
    assert [t.index for t in task.failures] == failed[:FAILURES_KEPT]
    for t in task.failures:
        code = "not-run" if outputs[t.index] is None else "score-below-bar"
        assert not t.passed
        assert t.reasons[0].rule == code
    assert count - task.passed_trials == len(failed)
