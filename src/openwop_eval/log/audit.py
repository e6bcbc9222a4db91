"""The auditor: recompute a run's verdict from its event log alone, and compare.

Trial scores are the recorded facts of ``eval.scored``; trajectories, misses and errors come
from the ``agent.*`` events; the grading is the core's. Anything the log or a given summary
claims that the recomputation does not bear out is named by its JSON path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import Suite, SuiteGrade, grade_suite, json_equal, plan_suite, summary_dict
from .names import EVAL_COMPLETED, v2_type
from .replay import replay


@dataclass(frozen=True)
class Mismatch:
    path: str
    given: Any
    recomputed: Any

    def __str__(self) -> str:
        return f"{self.path}: given {_show(self.given)}, recomputed {_show(self.recomputed)}"


_MISSING = "<absent>"


def _show(value: Any) -> str:
    return value if value == _MISSING else repr(value)


@dataclass
class Verification:
    summary: dict[str, Any]
    grade: SuiteGrade
    mismatches: list[Mismatch] = field(default_factory=list)
    """Where the given summary disagrees with the recomputation."""
    log_problems: list[str] = field(default_factory=list)
    """Where the log contradicts itself (an ``eval.scored`` verdict, ``eval.completed``)."""

    @property
    def agrees(self) -> bool:
        return not self.mismatches


def verify_log(
    suite: Suite, docs: Iterable[dict[str, Any]], given: dict[str, Any] | None = None
) -> Verification:
    docs = list(docs)
    log = replay(docs)
    grade = grade_suite(plan_suite(suite), log.records)
    summary = summary_dict(grade)
    problems = list(log.problems)
    for task in grade.tasks:
        for trial in task.trials:
            stated = log.recorded_passed.get((task.task_id, trial.index))
            if stated is not None and stated != trial.passed:
                problems.append(
                    f"eval.scored for task {task.task_id!r} trial {trial.index} says passed="
                    f"{str(stated).lower()}, but the recomputed verdict is "
                    f"{str(trial.passed).lower()}"
                )
    for doc in docs:
        if v2_type(str(doc.get("type"))) == EVAL_COMPLETED:
            payload = doc.get("payload") or {}
            for key in ("aggregateScore", "passed", "taskCount", "passedCount"):
                problems.extend(
                    f"eval.completed {m}"
                    for m in diff(payload.get(key, _MISSING), summary[key], key)
                )
    mismatches = diff(given, summary) if given is not None else []
    return Verification(summary, grade, mismatches, problems)


def diff(given: Any, recomputed: Any, path: str = "$") -> list[Mismatch]:
    """Every path where two JSON values differ (numbers by exact value, booleans strictly)."""
    if isinstance(given, dict) and isinstance(recomputed, dict):
        out = []
        for key in list(dict.fromkeys([*given, *recomputed])):
            out.extend(
                diff(given.get(key, _MISSING), recomputed.get(key, _MISSING), f"{path}.{key}")
            )
        return out
    if isinstance(given, list) and isinstance(recomputed, list):
        out = []
        for i in range(max(len(given), len(recomputed))):
            a = given[i] if i < len(given) else _MISSING
            b = recomputed[i] if i < len(recomputed) else _MISSING
            out.extend(diff(a, b, f"{path}[{i}]"))
        return out
    return [] if json_equal(given, recomputed) else [Mismatch(path, given, recomputed)]
