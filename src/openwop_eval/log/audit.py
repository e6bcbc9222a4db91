"""The auditor: recompute a run's verdict from its event log alone, and compare.

Trial scores are the recorded facts of ``eval.scored``; trajectories, misses and errors come
from the ``agent.*`` events; the grading is the core's. Anything the log or a given summary
claims that the recomputation does not bear out is named by its JSON path.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import Suite, SuiteGrade, TrialRecord, grade_suite, json_equal, plan_suite, summary_dict
from ..core import names as n
from ..core.plan import GradingPlan
from .names import EVAL_COMPLETED, v2_type
from .replay import Replay, replay
from .terms import terms_of


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


@dataclass(frozen=True)
class Recomputed:
    """A run graded from its log alone: under the terms its ``eval.started`` states."""

    log: Replay
    plan: GradingPlan
    grade: SuiteGrade
    summary: dict[str, Any]
    problems: list[str]


def recompute(suite: Suite, docs: Iterable[dict[str, Any]]) -> Recomputed:
    """The one reading of a run's verdict: the runner decides with it, ``verify`` audits."""
    log = replay(docs)
    problems = list(log.problems)
    plan = plan_suite(suite, terms_of(log.started, problems))
    grade = grade_suite(plan, log.records)
    return Recomputed(log, plan, grade, summary_dict(grade), problems)


def regrade(recomputed: Recomputed, records: Iterable[TrialRecord]) -> SuiteGrade:
    """The same plan on other records of the same trials (with local diagnostics)."""
    return grade_suite(recomputed.plan, records)


COMPLETED_KEYS = ("aggregateScore", "passed", "taskCount", "passedCount")


def completed_payload(summary: dict[str, Any]) -> dict[str, Any]:
    """``eval.completed``: the summary's values, and the regression delta when there is one."""
    payload = {key: summary[key] for key in COMPLETED_KEYS}
    if "regression" in summary:
        payload[n.REGRESSION_VS_BASELINE] = summary["regression"]["scoreDelta"]
    return payload


def verify_log(
    suite: Suite, docs: Iterable[dict[str, Any]], given: dict[str, Any] | None = None
) -> Verification:
    docs = list(docs)
    done = recompute(suite, docs)
    log, grade, summary, problems = done.log, done.grade, done.summary, done.problems
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
            expected = completed_payload(summary)
            for key in (*COMPLETED_KEYS, n.REGRESSION_VS_BASELINE):
                problems.extend(
                    f"eval.completed {m}"
                    for m in diff(payload.get(key, _MISSING), expected.get(key, _MISSING), key)
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
