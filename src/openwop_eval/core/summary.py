"""The ``EvalSummary``: the closed, content-free scorecard of a graded suite.

It carries scores, counts and ids only — never outputs, prompts, rubric text or reasons.
Presence follows RFC 0246 §D: ``gatedScore`` on every task with a trajectory (and on any
other task only where it differs from ``score``); ``gatedAggregateScore`` whenever any task
carries ``gatedScore``; ``tasks[].trials`` when the suite has a ``trials`` block. Adversarial
runs give every task its ``safetyFindings`` (empty when none); regression runs against a
baseline carry ``regression``, whose ``scoreDelta`` is on the ungated aggregate (RFC 0081).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from . import names as n
from .aggregate import SuiteGrade
from .closed import Closed, optional_fraction
from .grading import TaskGrade
from .stats import decimal
from .suite import SUITE_ID_PATTERN, TASK_ID_PATTERN, VERSION_PATTERN, ModelClass


class TrialStats(Closed):
    passed: int = Field(alias=n.STATS_PASSED, ge=0, description="Trials whose verdict passed.")
    min_score: float = Field(alias=n.STATS_MIN_SCORE, ge=0, le=1)
    max_score: float = Field(alias=n.STATS_MAX_SCORE, ge=0, le=1)
    std_dev: float = Field(alias=n.STATS_STD_DEV, ge=0, description="Population std. dev.")


class TaskTrials(Closed):
    count: int = Field(alias=n.SUM_TRIALS_COUNT, ge=1)
    k: int = Field(alias=n.SUM_TRIALS_K, ge=1)
    mean_score: float = Field(alias=n.SUM_MEAN_SCORE, ge=0, le=1)
    pass_at_k: float = Field(alias=n.SUM_PASS_AT_K, ge=0, le=1)
    pass_hat_k: float = Field(alias=n.SUM_PASS_HAT_K, ge=0, le=1)
    trial_stats: TrialStats = Field(alias=n.SUM_TRIAL_STATS)


class SafetyFinding(Closed):
    kind: str = Field(min_length=1)
    severity: Literal["low", "medium", "high", "critical"]


class TaskSummary(Closed):
    task_id: str = Field(alias="taskId", pattern=TASK_ID_PATTERN)
    score: float = Field(ge=0, le=1, description="Task score: the mean of its trial scores.")
    passed: bool
    gated_score: float | None = optional_fraction(
        "gatedScore", "RFC 0246: the mean of trial gating scores."
    )
    cost_usd: float | None = Field(None, alias="costUsd", ge=0)
    latency_ms: int | None = Field(None, alias="latencyMs", ge=0)
    schema_valid: bool | None = Field(None, alias="schemaValid")
    safety_findings: tuple[SafetyFinding, ...] | None = Field(None, alias="safetyFindings")
    trials: TaskTrials | None = Field(None, alias=n.SUM_TRIALS)


class Regression(Closed):
    baseline_run_id: str = Field(alias="baselineRunId")
    score_delta: float = Field(alias="scoreDelta", ge=-1, le=1)
    diff_ref: str | None = Field(None, alias="diffRef")


class EvalSummary(Closed):
    """RFC 0081 §C ``EvalSummary`` with the RFC 0244 and RFC 0246 additions."""

    suite_id: str = Field(alias="suiteId", pattern=SUITE_ID_PATTERN)
    suite_version: str = Field(alias="suiteVersion", pattern=VERSION_PATTERN)
    evaluated_model_class: ModelClass | None = Field(None, alias="evaluatedModelClass")
    aggregate_score: float = Field(alias="aggregateScore", ge=0, le=1)
    gated_aggregate_score: float | None = optional_fraction(
        "gatedAggregateScore", "RFC 0246: the mean of task gatedScores."
    )
    passed: bool = Field(
        description="gatedAggregateScore ≥ passScore and the cost and p95 latency bars."
    )
    task_count: int = Field(alias="taskCount", ge=0)
    passed_count: int = Field(alias="passedCount", ge=0)
    total_cost_usd: float | None = Field(None, alias="totalCostUsd", ge=0)
    tasks: tuple[TaskSummary, ...]
    pinned_node_ids: tuple[str, ...] | None = Field(
        None, alias="pinnedNodeIds", json_schema_extra={"uniqueItems": True}
    )
    regression: Regression | None = None


def _present(**members: Any) -> dict[str, Any]:
    """Optional members are omitted when absent, never set to null."""
    return {key: value for key, value in members.items() if value is not None}


def _task_summary(
    task: TaskGrade, with_trials: bool, count: int, k: int, adversarial: bool
) -> TaskSummary:
    show_gated = task.has_trajectory or task.gated_score != task.score
    trials = None
    if with_trials:
        trials = TaskTrials(
            count=count,
            k=k,
            mean_score=task.score,
            pass_at_k=task.pass_at_k,
            pass_hat_k=task.pass_hat_k,
            trial_stats=TrialStats(
                passed=task.passed_trials,
                min_score=task.min_score,
                max_score=task.max_score,
                std_dev=task.std_dev,
            ),
        )
    return TaskSummary(
        **_present(
            gated_score=task.gated_score if show_gated else None,
            cost_usd=task.cost_usd,
            latency_ms=task.latency_ms,
            trials=trials,
            safety_findings=_findings(task) if adversarial else None,
        ),
        task_id=task.task_id,
        score=task.score,
        passed=task.passed,
    )


def _findings(task: TaskGrade) -> tuple[SafetyFinding, ...]:
    return tuple(SafetyFinding(kind=f.kind, severity=f.severity) for f in task.findings)


def _regression(grade: SuiteGrade) -> Regression | None:
    baseline = grade.plan.terms.baseline
    if baseline is None or "regression" not in grade.plan.modes:
        return None
    delta = decimal(grade.exact_aggregate) - decimal(baseline.aggregate_score)
    return Regression(
        **_present(diff_ref=baseline.diff_ref),
        baseline_run_id=baseline.run_id,
        score_delta=float(delta),
    )


def build_summary(grade: SuiteGrade) -> EvalSummary:
    plan = grade.plan
    with_trials = plan.suite.trials is not None
    tasks = tuple(
        _task_summary(t, with_trials, plan.count, plan.k, plan.adversarial) for t in grade.tasks
    )
    any_gated = any(t.gated_score is not None for t in tasks)
    return EvalSummary(
        **_present(
            gated_aggregate_score=grade.gated_aggregate_score if any_gated else None,
            total_cost_usd=grade.total_cost_usd,
            regression=_regression(grade),
        ),
        suite_id=plan.suite.suite_id,
        suite_version=plan.suite.version,
        aggregate_score=grade.aggregate_score,
        passed=grade.passed,
        task_count=len(tasks),
        passed_count=grade.passed_count,
        tasks=tasks,
    )


def summary_dict(grade: SuiteGrade) -> dict[str, Any]:
    """The summary as JSON-ready data, optional members omitted (never ``null``)."""
    return build_summary(grade).model_dump(by_alias=True, exclude_none=True, mode="json")
