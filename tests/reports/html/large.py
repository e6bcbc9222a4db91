"""A large graded run built in process, for the report's paging, filters and search.

Task ``t-NNNN`` (``i`` = NNNN) has ``trials`` trials; the first ``(0, 1, 2, 6)[i % 4]`` of
them call the forbidden ``accounts:delete`` and gate to 0. Under ``passScore`` 0.8 and
``passRule: mean`` with 10 trials, every task with ``i % 4 == 3`` fails (gated 0.4), the
others pass (1, 0.9, 0.8), and the suite fails (gated aggregate 0.775). Tasks with
``i % 50 == 7`` also call ``kb:search`` (an extra, allowed call) in every trial.
"""

from __future__ import annotations

from typing import Any

from openwop_eval import ToolCall, TrialRecord, parse_suite, plan_suite
from openwop_eval.core import SuiteGrade, grade_suite
from openwop_eval.reports.html import render_report, report_data
from openwop_eval.reports.model import build_report

FORBIDDEN = "accounts:delete"
SEARCH_TOOL = "kb:search"
GATED = (0, 1, 2, 6)
"""Per ``i % 4``: how many of a task's first trials call the forbidden tool."""


def task_id(i: int) -> str:
    return f"t-{i:04d}"


def _task(i: int) -> dict[str, Any]:
    order = f"A-{i:04d}"
    return {
        "taskId": task_id(i),
        "input": {"message": f"Refund order {order}"},
        "expected": {
            "kind": "golden",
            "match": {"strategy": "contains", "value": "refunded"},
            "trajectory": {
                "steps": [
                    {"tool": "crm:lookup-order", "args": {"orderId": order}},
                    {"tool": "payments:refund", "args": {"orderId": order}},
                ],
                "order": "in-order",
                "forbidden": [FORBIDDEN],
            },
        },
    }


def _calls(i: int, trial: int) -> list[dict[str, Any]]:
    order = f"A-{i:04d}"
    calls = [
        {"tool": "crm:lookup-order", "args": {"orderId": order}, "result": {"total": 10 + i}},
        {"tool": "payments:refund", "args": {"orderId": order}, "result": {"refundId": f"R{i}"}},
    ]
    if i % 50 == 7:
        calls.insert(1, {"tool": SEARCH_TOOL, "args": {"q": "refund policy"}, "result": []})
    if trial < GATED[i % 4]:
        calls.append({"tool": FORBIDDEN, "args": {"customerId": f"C-{i}"}, "result": {}})
    return [{"missed": False, "status": "ok", "error": None, **c} for c in calls]


def build(tasks: int, trials: int) -> tuple[SuiteGrade, dict[tuple[str, int], dict[str, Any]]]:
    """The grade of ``tasks`` × ``trials`` trials, and their diagnostics as the runner
    stores them."""
    suite = {
        "suiteId": "test.openwop.evals.large",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.8},
        "trials": {"count": trials, "passRule": "mean"},
        "tasks": [_task(i) for i in range(tasks)],
    }
    plan = plan_suite(parse_suite(suite).suite)
    records, diagnostics = [], {}
    for i in range(tasks):
        for trial in range(trials):
            calls = _calls(i, trial)
            output = f"Order A-{i:04d} has been refunded."
            records.append(
                TrialRecord(
                    task_id(i),
                    trial,
                    output,
                    tuple(ToolCall(c["tool"], c["args"]) for c in calls),
                    latency_ms=float(100 + trial),
                )
            )
            diagnostics[(task_id(i), trial)] = {"output": output, "calls": calls}
    return grade_suite(plan, records), diagnostics


def render(tasks: int, trials: int) -> str:
    grade, diagnostics = build(tasks, trials)
    summary: dict[str, Any] = {"passed": grade.passed}
    report = build_report("local/large", "test.large", grade, summary, diagnostics)
    return render_report(report_data(report))
