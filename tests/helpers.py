"""Small builders for suites and trial records, so tests read as specifications."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from openwop_eval import ToolCall, TrialRecord, grade, parse_suite
from openwop_eval.core import GradingPlan, SuiteGrade, plan_suite


def golden(
    task_id: str,
    value: Any = "ok",
    trajectory: dict[str, Any] | None = None,
    strategy: str = "exact",
) -> dict[str, Any]:
    expected: dict[str, Any] = {"kind": "golden", "match": {"strategy": strategy, "value": value}}
    if trajectory is not None:
        expected["trajectory"] = trajectory
    return {"taskId": task_id, "input": {}, "expected": expected}


def rubric(
    task_id: str, weights: list[float], trajectory: dict[str, Any] | None = None
) -> dict[str, Any]:
    expected: dict[str, Any] = {
        "kind": "rubric",
        "rubric": [{"criterion": f"criterion {i}", "weight": w} for i, w in enumerate(weights)],
    }
    if trajectory is not None:
        expected["trajectory"] = trajectory
    return {"taskId": task_id, "input": {}, "expected": expected}


def suite_doc(
    *tasks: dict[str, Any],
    pass_score: float | None = None,
    trials: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "suiteId": "test.openwop.evals.unit",
        "version": "1.0.0",
        "modes": ["golden", "rubric"],
        "tasks": list(tasks),
    }
    if pass_score is not None:
        doc["thresholds"] = {"passScore": pass_score}
    if trials is not None:
        doc["trials"] = trials
    doc.update(extra)
    return doc


def plan(doc: dict[str, Any]) -> GradingPlan:
    return plan_suite(parse_suite(doc).suite)


def calls(*spec: str | tuple[str, dict[str, Any]]) -> tuple[ToolCall, ...]:
    """``calls("a:x", ("b:y", {"id": 1}))`` — a tool name alone has empty arguments."""
    return tuple(ToolCall(s) if isinstance(s, str) else ToolCall(s[0], s[1]) for s in spec)


def trial(
    task_id: str,
    index: int = 0,
    output: Any = "ok",
    tool_calls: tuple[ToolCall, ...] = (),
    **kw: Any,
) -> TrialRecord:
    return TrialRecord(task_id, index, output, tool_calls, **kw)


def graded(doc: dict[str, Any], *records: TrialRecord) -> SuiteGrade:
    return grade(plan(doc), records)


def count_grading(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, int]]:
    """How many times each (task, trial) is graded in this process, from now on (a run's
    commits are kept in this process for it)."""
    from openwop_eval.core import grading, tally
    from openwop_eval.runner import commit_process, trial

    monkeypatch.setenv(commit_process.SETTING, "thread")
    seen: Counter[tuple[str, int]] = Counter()
    real = grading.grade_trial

    def counting(*args: Any) -> Any:
        grade = real(*args)
        seen[grade.task_id, grade.index] += 1
        return grade

    for module in (tally, trial):  # where it is looked up
        monkeypatch.setattr(module, "grade_trial", counting)
    return seen
