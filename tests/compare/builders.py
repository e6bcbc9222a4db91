"""Handcrafted EvalSummary dicts and sides, so comparison tests read as specifications."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from openwop_eval.compare import Side, read_side

SUITE_ID = "test.openwop.evals.compare"


def task(
    task_id: str,
    score: float = 1.0,
    passed: bool | None = None,
    gated: float | None = None,
    trials: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """A task summary; ``passed`` defaults to the gated score meeting 1, ``trials`` is
    ``(count, passed)``."""
    doc: dict[str, Any] = {
        "taskId": task_id,
        "score": score,
        "passed": (score if gated is None else gated) >= 1 if passed is None else passed,
    }
    if gated is not None:
        doc["gatedScore"] = gated
    if trials is not None:
        count, ok = trials
        doc["trials"] = {
            "count": count,
            "k": 1,
            "meanScore": score,
            "passAtK": ok / count,
            "passHatK": ok / count,
            "trialStats": {"passed": ok, "minScore": 0, "maxScore": 1, "stdDev": 0},
        }
    return doc


def summary(
    *tasks: dict[str, Any], suite_id: str = SUITE_ID, version: str = "1.0.0"
) -> dict[str, Any]:
    """A summary of ``tasks`` whose aggregates are the means, as grading computes them."""
    scores = [Fraction(repr(t["score"])) for t in tasks]
    gated = [Fraction(repr(t.get("gatedScore", t["score"]))) for t in tasks]
    gated_aggregate = float(sum(gated) / len(gated)) if tasks else 0.0
    doc: dict[str, Any] = {
        "suiteId": suite_id,
        "suiteVersion": version,
        "aggregateScore": float(sum(scores) / len(scores)) if tasks else 0.0,
        "passed": gated_aggregate >= 1,
        "taskCount": len(tasks),
        "passedCount": sum(t["passed"] for t in tasks),
        "tasks": list(tasks),
    }
    if any("gatedScore" in t for t in tasks):
        doc["gatedAggregateScore"] = gated_aggregate
    return doc


def verdicts(*passed: bool, prefix: str = "t") -> dict[str, Any]:
    """A summary of tasks ``t0``, ``t1``, … that scored 1 where they passed, else 0."""
    return summary(*(task(f"{prefix}{i}", float(p)) for i, p in enumerate(passed)))


def side(doc: dict[str, Any], source: str = "side") -> Side:
    return read_side(doc, source)
