"""Hypothesis strategies for whole grading cases: random plans and random trial records.

Plans mix golden and rubric tasks, trajectories with argument matchers, every pass rule,
trial counts, k, cost and latency bars, and (sometimes) a ``failOnSeverity``. Records
carry recorded scores (odd decimals and -0.0 included), costs, latencies, findings,
fixture misses, errors; some trials do not run.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.core import GradingPlan, ToolCall, TrialRecord, plan_suite
from openwop_eval.core.plan import RunTerms
from openwop_eval.core.safety import FindingTag
from tests.helpers import golden, rubric, suite_doc

TOOLS = ["crm:lookup", "crm:update", "pay:refund", "mail:send", "kb:search"]
FORBIDDEN = ["accounts:delete", "accounts:*"]
ODD_SCORES = [0.0, -0.0, 1.0, 0.5, 0.1, 0.2, 0.3, 0.6, 0.7, 1 / 3, 2 / 3, 1e-7, 5e-324, 0.999]
scores = st.sampled_from(ODD_SCORES) | st.floats(0, 1, allow_nan=False)
money = st.sampled_from([0.1, 0.2, 0.3, 0.0, 1e-9, 12.5]) | st.floats(0, 50, allow_nan=False)
latency = st.integers(0, 90_000).map(float) | st.floats(0, 1e6, allow_nan=False)
ARG_VALUES = [
    {"id": 1},
    {"id": 1.0},
    {"id": True},
    {"id": "1"},
    {"id": 2, "note": "x"},
    {"amount": 10.5},
    {"amount": 99},
    {"to": "a@example.com"},
    {"to": "nope"},
    {},
]
STEP_ARGS = [
    None,
    {"id": 1},
    {"amount": {"$gte": 10, "$lt": 11}},
    {"to": {"$regex": "^[a-z]+@example\\.com$"}},
    {"id": {"$in": [1, "1"]}},
    {"id": {"$any": True}},
    {"id": {"$schema": {"type": "integer"}}},
]
FINDINGS = [
    FindingTag("forbidden-tool", "high"),
    FindingTag("canary-leak", "critical"),
    FindingTag("odd", "low"),
    FindingTag("odd", "medium"),
]


@st.composite
def trajectories(draw: st.DrawFn) -> dict[str, Any]:
    steps = draw(
        st.lists(st.tuples(st.sampled_from(TOOLS), st.sampled_from(STEP_ARGS)), max_size=3)
    )
    doc: dict[str, Any] = {
        "steps": [{"tool": t} if a is None else {"tool": t, "args": a} for t, a in steps],
        "order": draw(st.sampled_from(["exact", "in-order", "any-order"])),
        "argsMatch": draw(st.sampled_from(["subset", "exact"])),
        "forbidden": draw(st.lists(st.sampled_from(FORBIDDEN), max_size=1)),
    }
    if draw(st.booleans()):
        doc["before"] = [draw(st.lists(st.sampled_from(TOOLS), min_size=2, max_size=2))]
    if draw(st.booleans()):
        doc["maxCalls"] = draw(st.integers(len(steps), 5))
    return doc


@st.composite
def plans(draw: st.DrawFn) -> GradingPlan:
    tasks = []
    for i in range(draw(st.integers(1, 4))):
        trajectory = draw(st.one_of(st.none(), trajectories()))
        if draw(st.booleans()):
            tasks.append(golden(f"t{i}", "answer", trajectory))
        else:
            tasks.append(rubric(f"t{i}", [0.7, 0.3], trajectory))
    count = draw(st.integers(1, 6))
    trials = {
        "count": count,
        "passRule": draw(st.sampled_from(["mean", "all", "any"])),
        "k": draw(st.integers(1, count)),
    }
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["thresholds"] = {"passScore": draw(scores)}
        if draw(st.booleans()):
            extra["thresholds"]["maxCostUsd"] = draw(money)
        if draw(st.booleans()):
            extra["thresholds"]["maxP95LatencyMs"] = draw(st.integers(0, 100_000))
    doc = suite_doc(*tasks, trials=trials, **extra)
    bar = draw(st.sampled_from([None, "low", "high", "critical"]))
    return plan_suite(parse_suite(doc).suite, RunTerms(fail_on_severity=bar))


@st.composite
def a_record(draw: st.DrawFn, task_id: str, index: int) -> TrialRecord:
    made = draw(st.lists(st.sampled_from([*TOOLS, "accounts:delete"]), max_size=5))
    calls = tuple(
        ToolCall(t, draw(st.sampled_from(ARG_VALUES)), missed=draw(st.integers(0, 14)) == 0)
        for t in made
    )
    return TrialRecord(
        task_id,
        index,
        draw(st.sampled_from(["answer", "other", None])),
        calls,
        error="boom" if draw(st.integers(0, 14)) == 0 else None,
        cost_usd=draw(st.none() | money),
        latency_ms=draw(st.none() | latency),
        verdicts=draw(st.none() | st.tuples(scores, scores)),
        output_score=draw(st.none() | st.none() | scores),
        findings=tuple(draw(st.lists(st.sampled_from(FINDINGS), max_size=2))),
    )


@st.composite
def graded_cases(draw: st.DrawFn) -> tuple[GradingPlan, list[TrialRecord]]:
    """A plan and its records in a random order; some trials did not run."""
    compiled = draw(plans())
    out = [
        draw(a_record(task.task_id, i))
        for task in compiled.tasks
        for i in range(compiled.count)
        if draw(st.integers(0, 7))
    ]
    return compiled, draw(st.permutations(out))
