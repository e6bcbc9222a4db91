"""A comparison as JSON-ready data and as Markdown for a CI step summary.

Both are content-free: task ids, the sides' labels and numbers, never outputs or reasons
of trials. Optional members are omitted when absent, never ``null``.
"""

from __future__ import annotations

from typing import Any

from ..core.stats import decimal
from .comparison import (
    MIN_TASKS,
    Comparison,
    TaskDelta,
    delta_text,
    regression_reasons,
)
from .sides import Side, TaskSide

COMPARISON_VERSION = 1
"""The version of the shape :func:`comparison_dict` returns."""


def comparison_dict(c: Comparison, *, tolerance: float | None = None) -> dict[str, Any]:
    """Everything the comparison found, with the regression rule applied at ``tolerance``."""
    body: dict[str, Any] = {
        "comparisonVersion": COMPARISON_VERSION,
        "suiteId": c.baseline.suite_id,
        "baseline": _side(c.baseline),
        "candidate": _side(c.candidate),
        "verdict": c.verdict,
        "reasons": list(c.reasons),
        "pairedTasks": len(c.tasks),
        "minTasks": MIN_TASKS,
        "tooFewTasks": c.too_few_tasks,
        "gatedAggregateDelta": _delta(
            c.baseline.gated_aggregate_score, c.candidate.gated_aggregate_score
        ),
        "aggregateDelta": _delta(c.baseline.aggregate_score, c.candidate.aggregate_score),
        "signTest": {
            "newlyFailing": c.sign_test.newly_failing,
            "newlyPassing": c.sign_test.newly_passing,
            "pValue": c.sign_test.p_value,
            "alpha": float(c.sign_test.alpha),
            "significant": c.sign_test.significant,
        },
        "buckets": {
            "newlyFailing": list(c.newly_failing),
            "newlyPassing": list(c.newly_passing),
            "stillFailing": list(c.still_failing),
            "stillPassing": list(c.still_passing),
            "flaky": list(c.flaky),
        },
        "added": list(c.added),
        "removed": list(c.removed),
        "tasks": [_task(t) for t in c.tasks],
        "warnings": list(c.warnings),
        "regression": _regression(c, tolerance),
    }
    if c.gated_delta is not None:
        body["gatedDelta"] = c.gated_delta
        body["scoreDelta"] = c.score_delta
    if c.interval is not None:
        body["interval"] = {
            "lower": c.interval.lower,
            "upper": c.interval.upper,
            "confidence": c.interval.confidence,
            "resamples": c.interval.resamples,
            "seed": c.interval.seed,
        }
    return body


def _delta(before: float, after: float) -> float:
    return float(decimal(after) - decimal(before))


def _side(side: Side) -> dict[str, Any]:
    return {
        "source": side.source,
        "suiteVersion": side.suite_version,
        "aggregateScore": side.aggregate_score,
        "gatedAggregateScore": side.gated_aggregate_score,
        "passed": side.passed,
        "taskCount": len(side.tasks),
        "passedCount": sum(t.passed for t in side.tasks),
    }


def _task_side(task: TaskSide) -> dict[str, Any]:
    return {
        "score": task.score,
        "gatedScore": task.gated_score,
        "passed": task.passed,
        "passRate": task.pass_rate,
        "trials": task.trials,
        "trialsPassed": task.trials_passed,
    }


def _task(t: TaskDelta) -> dict[str, Any]:
    return {
        "taskId": t.task_id,
        "bucket": t.bucket,
        "flaky": t.flaky,
        "baseline": _task_side(t.baseline),
        "candidate": _task_side(t.candidate),
        "gatedDelta": t.gated_delta,
        "scoreDelta": t.score_delta,
        "passRateDelta": t.pass_rate_delta,
    }


def _regression(c: Comparison, tolerance: float | None) -> dict[str, Any]:
    reasons = regression_reasons(c, tolerance)
    body: dict[str, Any] = {"regressed": bool(reasons), "reasons": reasons}
    if tolerance is not None:
        body["tolerance"] = tolerance
    return body


# --- Markdown ---------------------------------------------------------------------------


def comparison_markdown(c: Comparison, *, tolerance: float | None = None) -> str:
    """A step summary: the verdict and its reasons, the regression rule, the aggregates and
    the tasks that changed (unchanged ones are counted, to stay within a summary's size)."""
    base, cand = c.baseline, c.candidate
    lines = [
        f"### Comparison `{base.suite_id}`: **{c.verdict}**",
        "",
        f"Baseline {_code(base.source)} (`{base.suite_version}`) → candidate"
        f" {_code(cand.source)} (`{cand.suite_version}`); {len(c.tasks)} paired tasks."
        " Decisions are on gated scores and verdicts (RFC 0246).",
        "",
        *(f"- {_cell(r)}" for r in c.reasons),
        *(f"- ⚠️ {_cell(w)}" for w in c.warnings),
        "",
        *_regression_lines(c, tolerance),
        "",
        "| | baseline | candidate | Δ |",
        "| --- | --- | --- | --- |",
        _row("gated aggregate", base.gated_aggregate_score, cand.gated_aggregate_score),
        _row("aggregate (ungated, information only)", base.aggregate_score, cand.aggregate_score),
        f"| suite passed | {_yes(base.passed)} | {_yes(cand.passed)} | |",
        "",
        *_evidence_lines(c),
        "",
        *_task_lines(c),
    ]
    return "\n".join(lines) + "\n"


def _regression_lines(c: Comparison, tolerance: float | None) -> list[str]:
    reasons = regression_reasons(c, tolerance)
    if not reasons:
        return ["**Regression:** none."]
    return ["**Regression:**", "", *(f"- ❌ {_cell(r)}" for r in reasons)]


def _evidence_lines(c: Comparison) -> list[str]:
    sign = c.sign_test
    lines = [
        f"- Sign test: {sign.newly_failing} newly failing, {sign.newly_passing} newly passing,"
        f" p = {sign.p_value:.4g} (α = {float(sign.alpha):g}).",
    ]
    interval = delta_text(c)
    if interval is not None:
        lines.append(
            f"- {interval[0].upper()}{interval[1:]}; ungated delta {c.score_delta:+.4g}"
            " (information only)."
        )
    for name, ids in (
        ("Newly failing", c.newly_failing),
        ("Newly passing", c.newly_passing),
        ("Still failing", c.still_failing),
        ("Flaky", c.flaky),
        ("Added (not paired)", c.added),
        ("Removed (not paired)", c.removed),
    ):
        if ids:
            lines.append(f"- {name} ({len(ids)}): {', '.join(f'`{i}`' for i in ids)}")
    return lines


def _task_lines(c: Comparison) -> list[str]:
    changed = [t for t in c.tasks if _changed(t)]
    lines = [
        "| task | gated | Δ gated | pass rate | verdict | Δ score (ungated) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for t in changed:
        b, k = t.baseline, t.candidate
        lines.append(
            f"| `{t.task_id}` | {b.gated_score:.3g} → {k.gated_score:.3g} | {t.gated_delta:+.3g}"
            f" | {b.pass_rate:.3g} → {k.pass_rate:.3g} | {_verdict(b.passed)} →"
            f" {_verdict(k.passed)} | {t.score_delta:+.3g} |"
        )
    unchanged = len(c.tasks) - len(changed)
    if not changed:
        return [f"No paired task changed ({unchanged} unchanged)."]
    if unchanged:
        lines += ["", f"{unchanged} unchanged task{'s' if unchanged != 1 else ''} not shown."]
    return lines


def _changed(t: TaskDelta) -> bool:
    b, k = t.baseline, t.candidate
    same = (b.score, b.gated_score, b.passed, b.pass_rate) == (
        k.score,
        k.gated_score,
        k.passed,
        k.pass_rate,
    )
    return t.flaky or not same


def _row(name: str, before: float, after: float) -> str:
    return f"| {name} | {before:.4g} | {after:.4g} | {_delta(before, after):+.4g} |"


def _yes(value: bool) -> str:
    return "yes" if value else "**no**"


def _verdict(passed: bool) -> str:
    return "passed" if passed else "**failed**"


def _code(text: str) -> str:
    """A side's label (a path or a run id the user gave) as inline code that cannot break out."""
    return "`" + "".join(ch if ch.isprintable() and ch != "`" else "?" for ch in text) + "`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
