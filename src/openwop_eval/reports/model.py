"""A finished run's report as one typed, versioned model, built once per report.

:func:`build_report` makes it from what a run decided — its id, its agent, its grade, its
summary and what the store kept of its trials (their outputs, calls, judge verdicts,
errors) — and every output reads it: the JSON report is its serialisation
(:meth:`Report.as_dict`, ``reportVersion`` :data:`REPORT_VERSION`), and the HTML page,
Markdown, JUnit XML and the terminal's run table are renderings of it.

Built from a run's outline (a grade without its trials), a report lists no trials; each
task still keeps its first few failed ones, which is all a table or Markdown shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import CompiledTask, Reason, SuiteGrade, TaskGrade, TrialGrade
from ..core.frozen import quick_init
from ..core.gate import open_gate
from ..core.grading import Outcome
from ..core.safety import FindingTag
from ..core.trajectory import TrajectoryResult, TrajectorySpec
from ..core.versions import REPORT_VERSION
from ..runner.result import RunResult
from .conversation import ConversationReport, conversation_report

__all__ = [
    "REPORT_VERSION",
    "GateReport",
    "Report",
    "TaskReport",
    "TrialReport",
    "build_report",
    "report_text",
    "result_report",
]

Diagnostics = Mapping[tuple[str, int], Mapping[str, Any]]
"""Per (task, trial), what the store kept of it: JSON values, content."""

_NO_DETAIL: Mapping[str, Any] = {}


@quick_init
@dataclass(frozen=True, slots=True)
class TrialReport:
    """One trial as the report shows it: its grade, and ``detail``, what the store kept of
    it (output, calls with their results, judge verdicts, error, findings: content)."""

    index: int
    outcome: Outcome
    score: float
    gating_score: float
    output_score: float | None
    passed: bool
    trajectory: TrajectoryResult | None
    reasons: Sequence[Reason]
    """Why it did not pass, worked out when first read (none when it passed)."""
    cost_usd: float | None
    latency_ms: float | None
    detail: Mapping[str, Any]
    user_simulator: bool = False
    """It errored because its simulated user failed: not the agent's failure."""
    conversation: ConversationReport | None = None
    """A conversation trial, turn by turn (None: not a conversation)."""

    @property
    def trajectory_matched(self) -> bool | None:
        return None if self.trajectory is None else self.trajectory.matched

    @property
    def first_failure(self) -> str | None:
        """The first failed constraint of a trial that did not pass."""
        return str(self.reasons[0]) if self.reasons and not self.passed else None

    def as_dict(self) -> dict[str, Any]:
        """The trial in the JSON report: its grade, then what the store kept of it."""
        graded = self.graded_dict()
        graded.update((k, v) for k, v in self.detail.items() if k != "latencyMs")
        if self.conversation is not None:  # the messages kept, turn by turn with the calls
            graded["conversation"] = self.conversation.as_dict()
        return graded

    def graded_dict(self) -> dict[str, Any]:
        """The trial's grade: the JSON report's members for it, without its content."""
        return {
            "trial": self.index,
            "outcome": self.outcome,
            "score": self.score,
            "gatingScore": self.gating_score,
            "outputScore": self.output_score,
            "passed": self.passed,
            "trajectoryMatched": self.trajectory_matched,
            "reasons": [r.as_dict() for r in self.reasons],
            "costUsd": self.cost_usd,
            "latencyMs": self.latency_ms,
        }


@dataclass(frozen=True, slots=True)
class TaskReport:
    task_id: str
    score: float
    gated_score: float
    passed: bool
    pass_at_k: float
    pass_hat_k: float
    passed_trials: int
    reasons: tuple[Reason, ...]
    findings: tuple[FindingTag, ...]
    trials: tuple[TrialReport, ...]
    """Every trial, in index order; none when the report was built from an outline."""
    failures: tuple[TrialReport, ...]
    """The first few trials that did not pass (``FAILURES_KEPT``), lowest index first."""
    expected: TrajectorySpec | None
    """The path the task expects, compiled (None: the task sets none)."""
    user_simulator: int = 0
    """Its trials that errored because their simulated user failed, not the agent."""

    @property
    def flaky(self) -> bool:
        """Some of its trials passed and some did not."""
        return len({t.passed for t in self.trials}) > 1

    @property
    def errored(self) -> bool:
        return any(t.outcome in ("errored", "not-run") for t in self.trials)

    def as_dict(self) -> dict[str, Any]:
        """The task in the JSON report, its trials with it."""
        return {**self.graded_dict(), "trials": [t.as_dict() for t in self.trials]}

    def graded_dict(self) -> dict[str, Any]:
        """The JSON report's members for the task, without its trials (and the count of
        trials whose simulated user failed, when there are any)."""
        graded: dict[str, Any] = {
            "taskId": self.task_id,
            "score": self.score,
            "gatedScore": self.gated_score,
            "passed": self.passed,
            "safetyFindings": [f.as_dict() for f in self.findings],
            "reasons": [r.as_dict() for r in self.reasons],
        }
        if self.user_simulator:
            graded["userSimulatorErrors"] = self.user_simulator
        return graded


@dataclass(frozen=True)
class TrialsRule:
    count: int
    pass_rule: str
    k: int | None


@dataclass(frozen=True)
class Quarantine:
    """A task the run's gate policy passed over (``expired``: no longer: it gated again)."""

    task_id: str
    until: str
    reason: str
    expired: bool = False


@dataclass(frozen=True)
class GateReport:
    """The gate: the RFC's ``passed`` and the run's gate policy, which can only add to it."""

    passed: bool
    rfc_passed: bool
    policy_reasons: tuple[Reason, ...]
    failed_tasks: tuple[str, ...]
    quarantine: tuple[Quarantine, ...] = ()

    @property
    def quarantined(self) -> frozenset[str]:
        return frozenset(q.task_id for q in self.quarantine if not q.expired)

    def gates(self, task_id: str) -> bool:
        """Whether the task's failure shut the gate: the gate is shut and the task counts."""
        return not self.passed and task_id not in self.quarantined

    def as_dict(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "rfcPassed": self.rfc_passed,
            "policyReasons": [r.as_dict() for r in self.policy_reasons],
            "failedTasks": list(self.failed_tasks),
            "quarantine": [
                {"taskId": q.task_id, "until": q.until, "reason": q.reason, "expired": q.expired}
                for q in self.quarantine
            ],
        }


@dataclass(frozen=True)
class Report:
    """A finished run's report. ``summary`` is its ``EvalSummary``, as the run wrote it;
    ``passed`` is the gate's (the RFC's ``passed`` and the gate policy), ``reasons`` the
    RFC's then the policy's."""

    run_id: str
    agent_id: str
    suite_id: str
    suite_version: str
    modes: tuple[str, ...]
    passed: bool
    reasons: tuple[Reason, ...]
    aggregate_score: float
    gated_aggregate_score: float
    pass_score: float
    passed_count: int
    total_cost_usd: float | None
    max_cost_usd: float | None
    p95_latency_ms: float | None
    max_p95_latency_ms: int | None
    trials: TrialsRule
    summary: Mapping[str, Any]
    tasks: tuple[TaskReport, ...]
    gate: GateReport
    version: int = REPORT_VERSION

    @property
    def title(self) -> str:
        return f"{self.suite_id}@{self.suite_version}"

    def as_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            **self.graded_dict(),
            "summary": self.summary,
            "tasks": [t.as_dict() for t in self.tasks],
        }

    def graded_dict(self) -> dict[str, Any]:
        """The JSON report's members for the run, without its summary and tasks."""
        return {
            "reportVersion": self.version,
            "runId": self.run_id,
            "suite": {"suiteId": self.suite_id, "version": self.suite_version},
            "agentId": self.agent_id,
            "passed": self.passed,
            "reasons": [r.as_dict() for r in self.reasons],
            "gate": self.gate.as_dict(),
        }


def report_text(report: Report) -> str:
    """The JSON report's file: what ``--report`` writes."""
    return json.dumps(report.as_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


def build_report(
    run_id: str,
    agent_id: str,
    grade: SuiteGrade,
    summary: Mapping[str, Any],
    diagnostics: Diagnostics,
) -> Report:
    plan = grade.plan
    suite, thresholds = plan.suite, plan.suite.thresholds
    gate = _gate(grade)
    return Report(
        run_id=run_id,
        agent_id=agent_id,
        suite_id=suite.suite_id,
        suite_version=suite.version,
        modes=tuple(plan.modes),
        passed=gate.passed,
        reasons=(*grade.reasons, *gate.policy_reasons),
        aggregate_score=grade.aggregate_score,
        gated_aggregate_score=grade.gated_aggregate_score,
        pass_score=float(plan.pass_score),
        passed_count=grade.passed_count,
        total_cost_usd=grade.total_cost_usd,
        max_cost_usd=None if thresholds is None else thresholds.max_cost_usd,
        p95_latency_ms=None if grade.p95_latency_ms is None else float(grade.p95_latency_ms),
        max_p95_latency_ms=None if thresholds is None else thresholds.max_p95_latency_ms,
        trials=TrialsRule(plan.count, plan.pass_rule, plan.k),
        summary=summary,
        tasks=tuple(_task(t, plan.by_id[t.task_id], diagnostics) for t in grade.tasks),
        gate=gate,
    )


def _gate(grade: SuiteGrade) -> GateReport:
    verdict = open_gate(grade)
    policy = grade.plan.terms.policy_of(grade.plan.suite)
    held, expired = set(verdict.quarantined), set(verdict.expired)
    quarantine = tuple(
        Quarantine(q.task_id, q.until, q.reason, q.task_id in expired)
        for q in policy.quarantine
        if q.task_id in held | expired
    )
    return GateReport(
        verdict.passed, verdict.rfc_passed, verdict.reasons, verdict.failed_tasks, quarantine
    )


def result_report(result: RunResult, *, trials: bool) -> Report:
    """The report of a run's result: with every trial (``trials``: its grades and what the
    store kept of them, read back once) or from its outline, per task."""
    if trials:
        return build_report(
            result.run_id, result.agent_id, result.grade, result.summary, result.diagnostics
        )
    return build_report(result.run_id, result.agent_id, result.outline, result.summary, {})


def _task(task: TaskGrade, compiled: CompiledTask, diagnostics: Diagnostics) -> TaskReport:
    task_id = task.task_id
    played = compiled.task.conversation
    most = None if played is None else played.max_turns
    trials = tuple(
        _trial(t, diagnostics.get((task_id, t.index), _NO_DETAIL), most) for t in task.trials
    )
    by_index = {t.index: t for t in trials} if task.failures else {}
    failures = tuple(
        by_index.get(f.index) or _trial(f, diagnostics.get((task_id, f.index), _NO_DETAIL), most)
        for f in task.failures
    )
    return TaskReport(
        task_id=task_id,
        score=task.score,
        gated_score=task.gated_score,
        passed=task.passed,
        pass_at_k=task.pass_at_k,
        pass_hat_k=task.pass_hat_k,
        passed_trials=task.passed_trials,
        reasons=tuple(task.reasons),
        findings=task.findings,
        trials=trials,
        failures=failures,
        expected=compiled.trajectory,
        user_simulator=task.user_simulator,
    )


def _trial(trial: TrialGrade, detail: Mapping[str, Any], max_turns: int | None) -> TrialReport:
    conversation = None
    if max_turns is not None and detail:  # its reasons are worked out only for a conversation
        conversation = conversation_report(detail, trial.reasons, max_turns)
    return TrialReport(
        trial.index,
        trial.outcome,
        trial.score,
        trial.gating,
        trial.output_score,
        trial.passed,
        trial.trajectory,
        trial.reasons,
        trial.cost_usd,
        trial.latency_ms,
        detail,
        trial.user_simulator,
        conversation,
    )
