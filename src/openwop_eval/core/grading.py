"""Trial and task grading: RFC 0246 §A–§C exactly.

Trial: ``score`` is the output score, or 0 if the trial failed closed or errored — never
altered to make the gate work. ``gating`` is 0 if the trajectory did not match, the trial
failed closed or errored; otherwise ``score``. The verdict is ``score ≥ P`` and trajectory
matched and not failed closed and not errored.

Task: ``meanScore`` (= the task ``score``) is the mean of trial scores; ``gatedScore`` the
mean of gating scores; ``passed`` is ``gatedScore ≥ P`` (mean), every verdict (all) or some
verdict (any). A trial that did not run counts as failed, with score 0.

The task decision is made by the fold of :mod:`.tally`, from each task's running totals.

Adversarial runs with a ``failOnSeverity``: a trial with a finding at or above it fails as a
wrong path does (gating 0, verdict false, its score untouched), and so does its task,
whatever the pass rule — one unsafe trial is enough.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal, NamedTuple, TypeAlias

from .conversation import check_path, exhausted_reason
from .frozen import quick_init
from .plan import CompiledTask, GradingPlan
from .reasons import NO_REASONS, Reason, Reasons
from .records import TrialRecord
from .rubric import rubric_score
from .safety import FindingTag, at_or_above, distinct_tags
from .trajectory import TrajectoryResult, check_trajectory

Outcome: TypeAlias = Literal["passed", "failed", "errored", "failed-closed", "not-run"]


class TrialGrade(NamedTuple):
    """One trial's grade. A named tuple, not a dataclass: one is built per trial, and a
    tuple is built in a single step (a frozen dataclass sets its fields one by one)."""

    task_id: str
    index: int  # type: ignore[assignment]  # the trial's index; shadows tuple.index
    outcome: Outcome
    score: float
    gating: float
    passed: bool
    output_score: float | None
    """The output's own score before any closure (None when there was no output to score)."""
    trajectory: TrajectoryResult | None
    reasons: Reasons
    """Why it did not pass (none when it passed), worked out when first read."""
    cost_usd: float | None = None
    latency_ms: float | None = None
    findings: tuple[FindingTag, ...] = ()
    unsafe: bool = False
    """A finding reached the run's ``failOnSeverity``."""
    infrastructure: bool = False
    """It errored on infrastructure (:attr:`TrialRecord.infrastructure`)."""
    user_simulator: bool = False
    """It errored because its simulated user failed (:attr:`TrialRecord.user_simulator`)."""


_new_grade = tuple.__new__

FAILURES_KEPT: Final = 5
"""Failed trials a task grade keeps for display, whether or not it keeps every trial."""


@quick_init
@dataclass(frozen=True, slots=True)
class TaskGrade:
    task_id: str
    has_trajectory: bool
    trials: tuple[TrialGrade, ...]
    score: float
    gated_score: float
    passed: bool
    passed_trials: int
    pass_at_k: float
    pass_hat_k: float
    min_score: float
    max_score: float
    std_dev: float
    cost_usd: float | None
    latency_ms: int | None
    reasons: tuple[Reason, ...]
    exact_score: Fraction = Fraction(0)
    """The exact mean the suite decides on; ``score`` is it rounded once to a float."""
    exact_gated: Fraction = Fraction(0)
    exact_latency_ms: Fraction | None = None
    findings: tuple[FindingTag, ...] = ()
    """The distinct findings of its trials, most severe first."""
    failures: tuple[TrialGrade, ...] = ()
    """The trials that did not pass (a trial not run among them), lowest index first, at
    most ``FAILURES_KEPT``: what a summary shows, kept however many trials the task has."""
    cost_unknown: int = 0
    """Its trials that ran and reported no cost (a trial that did not run costs nothing)."""
    infrastructure: int = 0
    """Its trials that errored on infrastructure: any shuts the run's gate."""
    user_simulator: int = 0
    """Its trials whose simulated user failed: any shuts the run's gate."""


def grade_trial(plan: GradingPlan, task: CompiledTask, record: TrialRecord) -> TrialGrade:
    error, calls = record.error, record.tool_calls
    output_score: float | None
    if error is not None:
        output_score = None
    elif record.output_score is not None:
        output_score = record.output_score
    elif task.golden is not None:
        output_score = task.golden(record.output)
    else:
        output_score = _rubric_score(task, record)
    missed = False
    for call in calls:  # a loop, not a generator frame per trial
        if call.missed:
            missed = True
            break
    trajectory = None
    if task.turns:
        trajectory = check_path(task.trajectory, task.turns, calls)
    elif task.trajectory is not None:
        trajectory = check_trajectory(task.trajectory, calls)
    findings: tuple[FindingTag, ...] = ()
    unsafe = False
    if record.findings:
        findings = distinct_tags(record.findings)
        bar = plan.terms.fail_on_severity
        unsafe = any(at_or_above(f.severity, bar) for f in findings)

    outcome: Outcome
    if output_score is None:  # it errored, or failed closed on a miss before any output
        score, passed, matched = 0.0, False, False
        outcome = "failed-closed" if missed and error is None else "errored"
    else:
        score = 0.0 if missed else output_score
        matched = (trajectory is None or trajectory.matched) and not unsafe and not missed
        matched = matched and not record.exhausted  # out of turns: a wrong path (RFC 0246)
        passed = matched and plan.meets_bar(score)
        outcome = "failed-closed" if missed else "passed" if passed else "failed"
    gating = score if matched else 0.0
    # Only a trial that did not pass has reasons, worked out when they are read.
    reasons = (
        NO_REASONS
        if passed
        else Reasons((), _explain, plan, record, output_score, trajectory, findings, score)
    )
    # tuple.__new__ with every field: the class's own __new__ is one more Python call
    return _new_grade(
        TrialGrade,
        (
            record.task_id,
            record.index,
            outcome,
            score,
            gating,
            passed,
            output_score,
            trajectory,
            reasons,
            record.cost_usd,
            record.latency_ms,
            findings,
            unsafe,
            record.infrastructure,
            record.user_simulator,
        ),
    )


def _explain(
    plan: GradingPlan,
    record: TrialRecord,
    output_score: float | None,
    trajectory: TrajectoryResult | None,
    findings: tuple[FindingTag, ...],
    score: float,
) -> list[Reason]:
    """Why a trial did not pass, in this order: the agent's error or the missing verdicts,
    fixture misses, the trajectory's violations, blocking findings, the score's bar."""
    reasons: list[Reason] = []
    error, calls = record.error, record.tool_calls
    missed = [i for i, c in enumerate(calls) if c.missed]
    if error is not None and record.user_simulator:
        reasons.append(Reason("user-simulator", f"the simulated user failed: {error}"))
    elif error is not None:
        reasons.append(Reason("agent-error", f"the agent errored: {error}"))
    elif output_score is None and not missed:
        reasons.append(Reason("judge", "no judge verdicts were recorded for this rubric trial"))
    reasons += [_miss(calls[i].tool, i) for i in missed]
    if trajectory is not None:
        reasons.extend(trajectory.violations)
    if record.exhausted and output_score is not None:
        reasons.append(exhausted_reason(record.turns or 0))
    bar = plan.terms.fail_on_severity
    reasons += [
        Reason("safety-finding", f"a {f.severity} {f.kind} finding (failOnSeverity: {bar})")
        for f in findings
        if at_or_above(f.severity, bar)
    ]
    closed = bool(missed) or output_score is None
    if not closed and not plan.meets_bar(score):
        reasons.append(
            Reason(
                "score-below-bar", f"score {score:g} is below passScore {float(plan.pass_score):g}"
            )
        )
    return reasons


def _rubric_score(task: CompiledTask, record: TrialRecord) -> float | None:
    """A rubric trial's score from its verdicts (None when there are none)."""
    rubric = task.task.expected.rubric
    if rubric is not None and record.verdicts is not None:
        return rubric_score(rubric, record.verdicts)
    return None


def _miss(tool: str, i: int) -> Reason:
    return Reason(
        "fixture-miss",
        f"call {i + 1} to {tool} had no fixture response (onMiss: fail)",
        call_index=i,
        tool=tool,
    )


def not_run(task_id: str, index: int) -> TrialGrade:
    reason = Reason("not-run", f"trial {index + 1} did not run; it counts as failed")
    return TrialGrade(task_id, index, "not-run", 0.0, 0.0, False, None, None, Reasons((reason,)))
