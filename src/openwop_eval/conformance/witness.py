"""The RFC 0246 conformance witness: pure checks of a run's ``eval.scored`` payloads and summary.

Each leg returns its assertions with what was observed, so a failing host learns exactly which
promise it broke. The legs also fail a host that "fixes" the gate by zeroing the reported
score, which RFC 0246 §C forbids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from .. import schemas
from ..core.canonical import json_equal
from ..core.stats import exact_mean

MEAN_GATED = "openwop.requirement.0246.mean-gated"
SUITE_GATED = "openwop.requirement.0246.suite-gated"
GATED_FIELDS_SHAPE = "openwop.requirement.0246.gated-fields-shape"
MEAN_FIXTURE = "conformance-eval-trajectory-gate-mean"
SUITE_FIXTURE = "conformance-eval-trajectory-gate"


@dataclass(frozen=True, slots=True)
class Assertion:
    name: str
    passed: bool
    expected: Any
    observed: Any

    def __str__(self) -> str:
        mark = "ok" if self.passed else "FAILED"
        return f"[{mark}] {self.name}: expected {self.expected!r}, observed {self.observed!r}"


class _Leg:
    def __init__(self) -> None:
        self.assertions: list[Assertion] = []

    def equal(self, name: str, observed: Any, expected: Any) -> None:
        self.assertions.append(Assertion(name, json_equal(observed, expected), expected, observed))

    def holds(self, name: str, condition: bool, expected: Any, observed: Any) -> None:
        self.assertions.append(Assertion(name, condition, expected, observed))


_ABSENT = "<absent>"


def _mean(values: Sequence[Any]) -> float | None:
    """The exact mean of numbers, rounded once; None if any value is not a number."""
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != len(values) or not numbers:
        return None
    return float(exact_mean(numbers))


def _task(summary: Mapping[str, Any], index: int) -> Mapping[str, Any]:
    tasks = summary.get("tasks") or []
    return tasks[index] if len(tasks) > index and isinstance(tasks[index], Mapping) else {}


def mean_gated(scored: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> list[Assertion]:
    """One task, ``passRule: "mean"``, two trials with the golden output and a forbidden call."""
    leg = _Leg()
    leg.equal("two eval.scored events (one per trial)", len(scored), 2)
    for i, event in enumerate(scored[:2]):
        leg.equal(f"eval.scored[{i}].score is the output score", event.get("score", _ABSENT), 1)
        leg.equal(f"eval.scored[{i}].passed (trial verdict)", event.get("passed", _ABSENT), False)
    task = _task(summary, 0)
    trials = task.get("trials") or {}
    leg.equal("task trials.meanScore is unchanged", trials.get("meanScore", _ABSENT), 1)
    leg.equal("task score is unchanged", task.get("score", _ABSENT), 1)
    leg.equal("task gatedScore", task.get("gatedScore", _ABSENT), 0)
    leg.equal("task passed", task.get("passed", _ABSENT), False)
    leg.holds(
        "summary carries gatedAggregateScore",
        "gatedAggregateScore" in summary,
        "present",
        summary.get("gatedAggregateScore", _ABSENT),
    )
    leg.equal("aggregateScore is unchanged", summary.get("aggregateScore", _ABSENT), 1)
    leg.equal("suite passed", summary.get("passed", _ABSENT), False)
    return leg.assertions


def suite_gated(scored: Sequence[Mapping[str, Any]], summary: Mapping[str, Any]) -> list[Assertion]:
    """Two tasks at count 1: one matches its trajectory, one takes the wrong path."""
    leg = _Leg()
    leg.equal("two eval.scored events (one per task)", len(scored), 2)
    for i, event in enumerate(scored[:2]):
        leg.equal(f"eval.scored[{i}].score is the output score", event.get("score", _ABSENT), 1)
    first, second = _task(summary, 0), _task(summary, 1)
    aggregate = summary.get("aggregateScore", _ABSENT)
    mean_score = _mean([first.get("score"), second.get("score")])
    leg.equal(
        "aggregateScore is the mean of task scores",
        aggregate,
        "two numeric task scores" if mean_score is None else mean_score,
    )
    leg.equal("aggregateScore is unchanged", aggregate, 1)
    leg.equal(
        "matched task gatedScore equals its score",
        first.get("gatedScore", _ABSENT),
        first.get("score", _ABSENT),
    )
    leg.equal("wrong-path task gatedScore", second.get("gatedScore", _ABSENT), 0)
    mean_gated = _mean([first.get("gatedScore"), second.get("gatedScore")])
    leg.equal(
        "gatedAggregateScore is the mean of the gating scores",
        summary.get("gatedAggregateScore", _ABSENT),
        "two numeric task gatedScores" if mean_gated is None else mean_gated,
    )
    leg.equal("gatedAggregateScore", summary.get("gatedAggregateScore", _ABSENT), 0.5)
    leg.equal("suite passed", summary.get("passed", _ABSENT), False)
    return leg.assertions


def gated_fields_shape(summary: Mapping[str, Any]) -> list[Assertion]:
    """Server-free: the two fields validate in 0–1 and a value outside the range fails."""
    leg = _Leg()
    validator = jsonschema.Draft202012Validator(schemas.load(schemas.SUMMARY_SCHEMA))
    errors = [e.message for e in validator.iter_errors(dict(summary))]
    leg.holds("summary validates against eval-summary.schema.json", not errors, [], errors)
    for bad in (1.5, -0.1):
        probe = {**summary, "gatedAggregateScore": bad}
        leg.holds(
            f"gatedAggregateScore {bad} is rejected",
            not validator.is_valid(probe),
            "invalid",
            "valid",
        )
        tasks = [dict(t) for t in summary.get("tasks", [])]
        if tasks:
            tasks[0]["gatedScore"] = bad
            leg.holds(
                f"gatedScore {bad} is rejected",
                not validator.is_valid({**summary, "tasks": tasks}),
                "invalid",
                "valid",
            )
    return leg.assertions
