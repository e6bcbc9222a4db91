"""Grading a complete list of trial records: the streaming fold of :mod:`.tally` over it,
so there is one implementation of the task and suite decision."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from .aggregate import SuiteGrade
from .grading import TaskGrade, grade_trial
from .plan import CompiledTask, GradingPlan, plan_suite
from .records import TrialRecord
from .suite import Suite
from .tally import SuiteTally, TaskTally


def _fold_all(tally: TaskTally, records: Sequence[TrialRecord]) -> None:
    # Every index is checked before any trial is graded, as grade_task always did.
    seen = TaskTally(tally.plan, tally.task, keep_trials=False)
    for record in records:
        seen.check(record.index)
        seen._mark(record.index)
    plan, task = tally.plan, tally.task
    for record in records:
        tally.fold(grade_trial(plan, task, record))


def grade_task(plan: GradingPlan, task: CompiledTask, records: Sequence[TrialRecord]) -> TaskGrade:
    tally = TaskTally(plan, task, keep_trials=True)
    _fold_all(tally, records)
    return tally.finish()


def grade_suite(plan: GradingPlan, records: Iterable[TrialRecord]) -> SuiteGrade:
    """Grade every task of the plan from its trial records (missing trials did not run)."""
    records = records if isinstance(records, Sequence) else list(records)
    tally = SuiteTally(plan, keep_trials=True)
    try:
        for record in records:
            tally.add(record)
    except Exception:
        _raise_first_fault(plan, records)
        raise
    return tally.finish()


def _raise_first_fault(plan: GradingPlan, records: Sequence[TrialRecord]) -> None:
    """Of several faults, raise the one grade_suite always raised first: an unknown task
    anywhere, then task by task in plan order (each checked whole before it is graded)."""
    grouped: defaultdict[str, list[TrialRecord]] = defaultdict(list)
    tally = SuiteTally(plan)
    for record in records:
        tally.task(record.task_id)
        grouped[record.task_id].append(record)
    for task in plan.tasks:
        _fold_all(tally.task(task.task_id), grouped.get(task.task_id, ()))


def grade(suite: Suite | GradingPlan, records: Iterable[TrialRecord]) -> SuiteGrade:
    """Grade ``records`` against ``suite``; ``summary_dict(result)`` is its EvalSummary."""
    return grade_suite(suite if isinstance(suite, GradingPlan) else plan_suite(suite), records)
