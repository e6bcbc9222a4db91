"""The booking scenario of the gate policies: four tasks, three trials each, and an agent
that charges $420 against a $250 limit in one trial of one task. That task fails (gated
0.667 under passScore 0.8) while the suite passes on its gated aggregate (0.917)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TASKS = ("book-cheapest-flight", "change-seat", "cancel-booking", "find-hotel")
FAILED = "book-cheapest-flight"


def _task(task_id: str, tags: tuple[str, ...] = ()) -> dict[str, Any]:
    task: dict[str, Any] = {
        "taskId": task_id,
        "input": {"request": task_id},
        "expected": {
            "kind": "golden",
            "match": {"strategy": "exact", "value": "done"},
            "trajectory": {
                "steps": [{"tool": "payments:charge", "args": {"amountUsd": {"$lte": 250}}}]
            },
        },
        "fixtures": {"toolResponses": [{"tool": "payments:charge", "response": {"ok": True}}]},
    }
    if tags:
        task["x-openwop-eval"] = {"tags": list(tags)}
    return task


def suite(gate: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "suiteId": "acme.travel.evals.booking",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.8, "maxCostUsd": 5},
        "trials": {"count": 3},
        "tasks": [_task(t, ("payments",) if t == FAILED else ()) for t in TASKS],
        **extra,
    }
    if gate is not None:
        doc["x-openwop-eval"] = {"gate": gate}
    return doc


def agent(cost: float | None = 0.01) -> dict[str, Any]:
    def entry(amount: int) -> dict[str, Any]:
        made: dict[str, Any] = {
            "output": "done",
            "toolCalls": [{"tool": "payments:charge", "args": {"amountUsd": amount}}],
        }
        if cost is not None:
            made["costUsd"] = cost
        return made

    tasks = {t: [entry(120)] for t in TASKS}
    tasks[FAILED] = [entry(420), entry(120), entry(120)]  # trial 1 overcharges
    return {"agentId": "booking-agent", "tasks": tasks}


def write(tmp: Path, suite_doc: dict[str, Any], agent_doc: dict[str, Any]) -> tuple[str, str]:
    suite_path, agent_path = tmp / "suite.json", tmp / "agent.json"
    suite_path.write_text(json.dumps(suite_doc))
    agent_path.write_text(json.dumps(agent_doc))
    return str(suite_path), f"scripted:{agent_path}"
