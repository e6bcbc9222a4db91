"""What the HTML report shows, as JSON-ready data: a rendering of the report model.

The page's data is the JSON report's members (``reportVersion``, ``runId``, ``suite``,
``taskId``, ``trial``, reasons as objects, each trial's recorded content) without the
summary, and beside them what only a page shows: the verdict in sentences (``why``), the
tasks that kept the gate shut or lost score to it (``shut``), the figures of the header,
and per trial what the gate made of it (``gate``) and its calls aligned with the expected
trajectory. It carries content — outputs, arguments, results, rationales — and is a local
artifact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...core import JSON, ToolCall, TrialRecord
from ...core.alignment import Alignment, align
from ..conversation import ConversationReport, ending
from ..model import Report, TaskReport, TrialReport
from ..text import quarantine_lines, verdict_text

Diagnostics = dict[tuple[str, int], dict[str, Any]]


def report_data(report: Report) -> dict[str, Any]:
    data = report.graded_dict()  # the summary's figures are the grade's, below
    rule = report.trials
    data.update(
        {
            "modes": list(report.modes),
            "aggregateScore": report.aggregate_score,
            "gatedAggregateScore": report.gated_aggregate_score,
            "passScore": report.pass_score,
            "totalCostUsd": report.total_cost_usd,
            "maxCostUsd": report.max_cost_usd,
            "p95LatencyMs": report.p95_latency_ms,
            "maxP95LatencyMs": report.max_p95_latency_ms,
            "trials": {"count": rule.count, "passRule": rule.pass_rule, "k": rule.k},
            "passedCount": report.passed_count,
            "verdict": verdict_text(report),
            "why": why(report),
            "shut": shut(report),
            "regression": report.summary.get("regression"),
            "tasks": [_task(t, report.pass_score) for t in report.tasks],
        }
    )
    return data


def why(report: Report) -> list[str]:
    """The suite's decision in sentences: the gated aggregate against the bar first."""
    bar = report.pass_score
    agg, gated = report.aggregate_score, report.gated_aggregate_score
    met = "meets" if gated >= bar else "is below"
    lines = [f"Gated aggregate {gated:.4g} {met} the pass score {bar:g}."]
    if gated < agg:
        lines.append(
            f"The answers alone score {agg:.4g}: {agg - gated:.4g} of it came from trials"
            " that took a wrong path, failed closed or were unsafe, and counts 0 in the gate."
        )
    lines += [f"{r}." for r in report.reasons if r.rule != "gated-aggregate-below-bar"]
    lines += [f"{note[0].upper()}{note[1:]}." for note in quarantine_lines(report)]
    if report.passed and report.gate.failed_tasks:
        lines.append(f"{verdict_text(report)}: no gate policy requires every task.")
    return lines


def shut(report: Report) -> list[str]:
    """The tasks the header names, those that lost the most to the gate first: when the gate
    is shut, those that carried it shut (did not pass, or lost score to it); when it is open,
    only those that lost score to it — a task that did not pass on its answers alone lost
    nothing to the gate."""
    if report.passed:
        failing = [t for t in report.tasks if t.gated_score < t.score]
    else:
        failing = [t for t in report.tasks if not t.passed or t.gated_score < t.score]
    failing.sort(key=lambda t: (t.passed, -(t.score - t.gated_score), t.gated_score))
    return [t.task_id for t in failing]


def _task(task: TaskReport, pass_score: float) -> dict[str, Any]:
    data = task.graded_dict()
    data.update(
        {
            "passAtK": task.pass_at_k,
            "passHatK": task.pass_hat_k,
            "passedTrials": task.passed_trials,
            "flaky": task.flaky,
            "errored": task.errored,
            "agentErrored": any(
                t.outcome in ("errored", "not-run") and not t.user_simulator for t in task.trials
            ),
            "userSimulatorErrors": task.user_simulator,
            "trials": [_trial(task, t, pass_score) for t in task.trials],
        }
    )
    return data


def _trial(task: TaskReport, trial: TrialReport, pass_score: float) -> dict[str, Any]:
    detail = trial.detail
    calls = detail.get("calls") or []
    records = [ToolCall(str(c.get("tool")), c.get("args"), c.get("missed") is True) for c in calls]
    alignment = None
    violations = trial.trajectory.violations if trial.trajectory else ()
    if task.expected is not None:
        alignment = align(task.expected, records, violations)
    # a turn's rule may forbid a call the whole path allows
    forbidden = {v.call_index for v in violations if v.rule == "forbidden"}
    data = trial.graded_dict()
    data.update(
        {
            "gate": gate_words(trial, trial.score >= pass_score),
            "calls": [_call(c, alignment, i, i in forbidden) for i, c in enumerate(calls)],
            "trajectory": None if alignment is None else _steps(alignment),
            "verdicts": detail.get("verdicts") or [],
            "judgeError": detail.get("judgeError"),
            "error": detail.get("error"),
            "errorKind": detail.get("errorKind"),
            "traceback": detail.get("traceback"),
            "stderr": detail.get("stderr"),
            "output": detail.get("output"),
            "safetyFindings": detail.get("safetyFindings") or [],
            "transcript": detail.get("transcript"),
        }
    )
    if trial.user_simulator:  # members only some trials have: a large page stays lean
        data["userSimulator"] = True
    if trial.conversation is not None:
        data["conversation"] = _conversation(trial.conversation, detail.get("errorKind"))
    return data


def _conversation(conversation: ConversationReport, error_kind: object) -> dict[str, Any]:
    """A conversation trial turn by turn (its calls by index into the trial's), and how it
    ended in a sentence."""
    return {**conversation.as_dict(), "ending": ending(conversation, error_kind)}


def gate_words(trial: TrialReport, good: bool) -> str:
    """What the gate made of the trial, in words (``good``: its score meets the bar)."""
    if trial.outcome == "not-run":
        return "did not run: it counts as failed, score 0"
    if trial.outcome == "errored" and trial.user_simulator:
        return "the simulated user failed, not the agent: score 0"
    if trial.outcome == "errored":
        return "errored: score 0"
    if trial.outcome == "failed-closed":
        return "a tool call had no fixture: failed closed, score 0"
    answer = trial.output_score if trial.output_score is not None else trial.score
    said = f"answer correct, score {answer:g}" if good else f"answer scored {answer:g}"
    if trial.gating_score < trial.score:
        return f"{said}; {_wrong(trial)}: gating score 0"
    if trial.passed:
        return f"{said}; path right: passed"
    return f"{said}: below the pass score"


def _wrong(trial: TrialReport) -> str:
    """Why the gate zeroed a trial whose answer scored."""
    if trial.trajectory and not trial.trajectory.matched:
        return "path wrong"
    if any(r.rule == "turns-exhausted" for r in trial.reasons):
        return "ran out of turns"
    return "unsafe"


def _call(
    call: dict[str, Any], alignment: Alignment | None, i: int, forbidden: bool
) -> dict[str, Any]:
    row = alignment.calls[i] if alignment is not None and i < len(alignment.calls) else None
    return {
        "tool": call.get("tool"),
        "args": call.get("args"),
        "result": call.get("result"),
        "status": call.get("status", "ok"),
        "error": call.get("error"),
        "missed": call.get("missed") is True,
        "forbidden": forbidden or (row.forbidden if row else False),
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


def log_diagnostics(
    records: Iterable[TrialRecord],
    conversations: Mapping[tuple[str, int], list[dict[str, JSON]]] | None = None,
) -> Diagnostics:
    """What a bare event log tells of each trial: its calls (no outputs, no results) and, of
    a conversation, its messages (``conversations``) and the turn of each call."""
    said = conversations or {}
    out: Diagnostics = {}
    for r in records:
        key = (r.task_id, r.index)
        talked = r.turns is not None
        calls = [
            {
                "tool": c.tool,
                "args": c.args,
                "missed": c.missed,
                **({"turn": c.turn} if talked else {}),
            }
            for c in r.tool_calls
        ]
        out[key] = {"calls": calls}
        if talked:
            out[key]["conversation"] = list(said.get(key, []))
    return out
