"""One call from a suite and its trial records to the graded result."""

from __future__ import annotations

from collections.abc import Iterable

from .core import GradingPlan, Suite, SuiteGrade, TrialRecord, grade_suite, plan_suite


def grade(suite: Suite | GradingPlan, records: Iterable[TrialRecord]) -> SuiteGrade:
    """Grade ``records`` against ``suite``; ``summary_dict(result)`` is its EvalSummary."""
    plan = suite if isinstance(suite, GradingPlan) else plan_suite(suite)
    return grade_suite(plan, records)
