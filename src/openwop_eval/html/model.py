"""What the HTML report shows, as JSON-ready data: the verdict and why, every task and
trial, each trial's calls and its expected-vs-actual trajectory.

Built from the same inputs as the JSON report (the grade and the trials' diagnostics), so it
carries content — outputs, arguments, results, rationales — and is a local artifact.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..core import SuiteGrade, TaskGrade, ToolCall, TrialGrade, TrialRecord
from ..core.alignment import Alignment, align
from ..core.plan import CompiledTask

Diagnostics = dict[tuple[str, int], dict[str, Any]]


def report_data(
    run_id: str,
    agent_id: str,
    grade: SuiteGrade,
    summary: dict[str, Any],
    diagnostics: Diagnostics,
) -> dict[str, Any]:
    plan = grade.plan
    suite = plan.suite
    thresholds = suite.thresholds
    bar = float(plan.pass_score)
    tasks = [_task(plan.by_id[t.task_id], t, diagnostics, bar) for t in grade.tasks]
    return {
        "runId": run_id,
        "agentId": agent_id,
        "suiteId": suite.suite_id,
        "version": suite.version,
        "modes": list(plan.modes),
        "passed": grade.passed,
        "aggregateScore": grade.aggregate_score,
        "gatedAggregateScore": grade.gated_aggregate_score,
        "passScore": float(plan.pass_score),
        "totalCostUsd": grade.total_cost_usd,
        "maxCostUsd": None if thresholds is None else thresholds.max_cost_usd,
        "p95LatencyMs": None if grade.p95_latency_ms is None else float(grade.p95_latency_ms),
        "maxP95LatencyMs": None if thresholds is None else thresholds.max_p95_latency_ms,
        "trials": {"count": plan.count, "passRule": plan.pass_rule, "k": plan.k},
        "passedCount": grade.passed_count,
        "reasons": [str(r) for r in grade.reasons],
        "why": why(grade),
        "shut": shut(grade),
        "regression": summary.get("regression"),
        "tasks": tasks,
    }


def why(grade: SuiteGrade) -> list[str]:
    """The suite's decision in sentences: the gated aggregate against the bar first."""
    plan = grade.plan
    bar = float(plan.pass_score)
    agg, gated = grade.aggregate_score, grade.gated_aggregate_score
    met = "meets" if gated >= bar else "is below"
    lines = [f"Gated aggregate {gated:.4g} {met} the pass score {bar:g}."]
    if gated < agg:
        lines.append(
            f"The answers alone score {agg:.4g}: {agg - gated:.4g} of it came from trials"
            " that took a wrong path, failed closed or were unsafe, and counts 0 in the gate."
        )
    lines += [f"{r}." for r in grade.reasons if r.rule != "gated-aggregate-below-bar"]
    return lines


def shut(grade: SuiteGrade) -> list[str]:
    """The tasks that carried the gate shut, those that lost the most to it first."""
    failing = [t for t in grade.tasks if not t.passed or t.gated_score < t.score]
    failing.sort(key=lambda t: (t.passed, -(t.score - t.gated_score), t.gated_score))
    return [t.task_id for t in failing]


def _task(
    compiled: CompiledTask, task: TaskGrade, diagnostics: Diagnostics, pass_score: float
) -> dict[str, Any]:
    trials = [
        _trial(compiled, t, diagnostics.get((task.task_id, t.index), {}), pass_score)
        for t in task.trials
    ]
    verdicts = {t.passed for t in task.trials}
    errored = any(t.outcome in ("errored", "not-run") for t in task.trials)
    return {
        "id": task.task_id,
        "score": task.score,
        "gatedScore": task.gated_score,
        "passed": task.passed,
        "passAtK": task.pass_at_k,
        "passHatK": task.pass_hat_k,
        "passedTrials": task.passed_trials,
        "flaky": len(verdicts) > 1,
        "errored": errored,
        "reasons": [str(r) for r in task.reasons],
        "findings": [f.as_dict() for f in task.findings],
        "trials": trials,
    }


def _trial(
    compiled: CompiledTask, trial: TrialGrade, extra: dict[str, Any], pass_score: float
) -> dict[str, Any]:
    calls = extra.get("calls") or []
    records = [ToolCall(str(c.get("tool")), c.get("args"), c.get("missed") is True) for c in calls]
    alignment = None
    if compiled.trajectory is not None:
        violations = trial.trajectory.violations if trial.trajectory else ()
        alignment = align(compiled.trajectory, records, violations)
    return {
        "index": trial.index,
        "outcome": trial.outcome,
        "score": trial.score,
        "gatingScore": trial.gating,
        "outputScore": trial.output_score,
        "passed": trial.passed,
        "gate": gate_words(trial, trial.score >= pass_score),
        "reasons": [str(r) for r in trial.reasons],
        "calls": [_call(c, alignment, i) for i, c in enumerate(calls)],
        "trajectory": None if alignment is None else _steps(alignment),
        "verdicts": extra.get("verdicts") or [],
        "judgeError": extra.get("judgeError"),
        "error": extra.get("error"),
        "output": extra.get("output"),
        "costUsd": trial.cost_usd,
        "latencyMs": trial.latency_ms,
        "findings": extra.get("safetyFindings") or [],
    }


def gate_words(trial: TrialGrade, good: bool) -> str:
    """What the gate made of the trial, in words (``good``: its score meets the bar)."""
    if trial.outcome == "not-run":
        return "did not run: it counts as failed, score 0"
    if trial.outcome == "errored":
        return "errored: score 0"
    if trial.outcome == "failed-closed":
        return "a tool call had no fixture: failed closed, score 0"
    answer = trial.output_score if trial.output_score is not None else trial.score
    said = f"answer correct, score {answer:g}" if good else f"answer scored {answer:g}"
    if trial.gating < trial.score:
        wrong = "path wrong" if trial.trajectory and not trial.trajectory.matched else "unsafe"
        return f"{said}; {wrong}: gating score 0"
    if trial.passed:
        return f"{said}; path right: passed"
    return f"{said}: below the pass score"


def _call(call: dict[str, Any], alignment: Alignment | None, i: int) -> dict[str, Any]:
    row = alignment.calls[i] if alignment is not None and i < len(alignment.calls) else None
    return {
        "tool": call.get("tool"),
        "args": call.get("args"),
        "result": call.get("result"),
        "status": call.get("status", "ok"),
        "error": call.get("error"),
        "missed": call.get("missed") is True,
        "forbidden": row.forbidden if row else False,
        "step": row.step if row else None,
    }


def _steps(alignment: Alignment) -> dict[str, Any]:
    return {
        "order": alignment.order,
        "steps": [
            {
                "index": s.index,
                "tool": s.tool,
                "call": s.call,
                "status": s.status,
                "explanation": s.explanation,
            }
            for s in alignment.steps
        ],
    }


def log_diagnostics(records: Iterable[TrialRecord]) -> Diagnostics:
    """What a bare event log tells of each trial: its calls (no outputs, no results)."""
    return {
        (r.task_id, r.index): {
            "calls": [{"tool": c.tool, "args": c.args, "missed": c.missed} for c in r.tool_calls]
        }
        for r in records
    }
