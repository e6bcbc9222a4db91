"""The two RFC 0246 conformance suites ("Conformance"), as gate fixtures with their verdicts.

Each trial produces the golden output (score 1) and ``passScore`` is 0.6, as in the RFC:

* ``suite-gated``: two tasks, one trial each (no ``trials`` block). Task 1 takes the
  expected path; task 2 answers the same but reaches the refund without the lookup. The
  aggregate stays 1, the gated aggregate is 0.5, and the suite must not pass.
* ``mean-gated``: one task, ``passRule: "mean"``, two trials, both calling a forbidden tool.
  Both trials keep score 1 and fail; the task's mean stays 1, its gated score is 0, and it
  must not pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from openwop_eval import SuiteGrade, ToolCall, TrialRecord, grade, parse_suite, summary_dict

ANSWER = "refund issued for A1"
LOOKUP = ToolCall("crm:lookup_order", {"order_id": "A1"})
REFUND = ToolCall("payments:refund", {"order_id": "A1", "amount": 10})
DELETE = ToolCall("accounts:delete", {"customer_id": "C1"})


def _task(task_id: str) -> dict[str, Any]:
    return {
        "taskId": task_id,
        "input": {"orderId": "A1"},
        "expected": {
            "kind": "golden",
            "match": {"strategy": "exact", "value": ANSWER},
            "trajectory": {
                "steps": [
                    {"tool": "crm:lookup_order", "args": {"order_id": "A1"}},
                    {"tool": "payments:refund", "args": {"order_id": "A1"}},
                ],
                "forbidden": ["accounts:delete"],
            },
        },
    }


def _suite(name: str, tasks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "suiteId": f"bench.openwop.evals.{name}",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.6},
        "tasks": tasks,
        **extra,
    }


SUITE_GATED = _suite("gate", [_task("task-1"), _task("task-2")])
SUITE_GATED_RECORDS = (
    TrialRecord("task-1", 0, ANSWER, (LOOKUP, REFUND)),
    TrialRecord("task-2", 0, ANSWER, (REFUND,)),
)

MEAN_GATED = _suite("gate-mean", [_task("task-1")], trials={"count": 2, "passRule": "mean"})
MEAN_GATED_RECORDS = (
    TrialRecord("task-1", 0, ANSWER, (LOOKUP, REFUND, DELETE)),
    TrialRecord("task-1", 1, ANSWER, (LOOKUP, DELETE, REFUND)),
)


@dataclass(frozen=True)
class GateResult:
    name: str
    failures: tuple[str, ...]
    summary: dict[str, Any]


def _expect(failures: list[str], what: str, got: object, want: object) -> None:
    if got != want:
        failures.append(f"{what}: expected {want!r}, got {got!r}")


def _suite_gated(summary: dict[str, Any], result: SuiteGrade, failures: list[str]) -> None:
    t1, t2 = summary["tasks"]
    _expect(failures, "aggregateScore", summary["aggregateScore"], 1.0)
    _expect(failures, "task-1 gatedScore", t1.get("gatedScore"), t1["score"])
    _expect(failures, "task-2 gatedScore", t2.get("gatedScore"), 0.0)
    _expect(failures, "gatedAggregateScore", summary.get("gatedAggregateScore"), 0.5)
    _expect(failures, "suite passed", summary["passed"], False)
    _expect(failures, "task passed", [t1["passed"], t2["passed"]], [True, False])
    # The wrong path keeps its output score (RFC 0246 §C) and still fails.
    wrong = result.tasks[1].trials[0]
    _expect(failures, "task-2 trial score/passed", (wrong.score, wrong.passed), (1.0, False))


def _mean_gated(summary: dict[str, Any], result: SuiteGrade, failures: list[str]) -> None:
    (task,) = summary["tasks"]
    trials = result.tasks[0].trials
    _expect(failures, "trial scores", [t.score for t in trials], [1.0, 1.0])
    _expect(failures, "trial passed", [t.passed for t in trials], [False, False])
    _expect(failures, "trials.meanScore", task.get("trials", {}).get("meanScore"), 1.0)
    _expect(failures, "gatedScore", task.get("gatedScore"), 0.0)
    _expect(failures, "task passed", task["passed"], False)
    _expect(failures, "gatedAggregateScore present", "gatedAggregateScore" in summary, True)
    _expect(failures, "suite passed", summary["passed"], False)


Check = Callable[[dict[str, Any], SuiteGrade, list[str]], None]
GATES: tuple[tuple[str, dict[str, Any], tuple[TrialRecord, ...], Check], ...] = (
    ("0246.suite-gated", SUITE_GATED, SUITE_GATED_RECORDS, _suite_gated),
    ("0246.mean-gated", MEAN_GATED, MEAN_GATED_RECORDS, _mean_gated),
)


def run_gates() -> list[GateResult]:
    results = []
    for name, doc, records, check in GATES:
        result = grade(parse_suite(doc).suite, records)
        summary = summary_dict(result)
        failures: list[str] = []
        check(summary, result, failures)
        results.append(GateResult(name, tuple(failures), summary))
    return results
