"""A suite whose verdict depends on which fixtures answer it, and two scripted agents.

Agent X always calls ``crm:lookup {"id": 1}``; agent Y calls it with id 1, 2, 1 on trials
0, 1, 2. On the suite's own fixtures (answered by tool name) every trial of Y passes. On a
recording of X's run (answered by tool and arguments) Y's trial 1 misses and fails closed, so
each task's gated score is 2/3, under the 0.8 bar: the suite fails. A resume that served the
suite's fixtures instead of the recording would turn that failing run into a passing one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openwop_eval.log import replay

SUITE_ID = "test.openwop.evals.faults"


def suite() -> dict[str, Any]:
    def task(name: str) -> dict[str, Any]:
        return {
            "taskId": name,
            "input": {"task": name},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": "ok"},
                "trajectory": {"steps": [{"tool": "crm:lookup"}]},
            },
            "fixtures": {"toolResponses": [{"tool": "crm:lookup", "response": {"ok": True}}]},
        }

    return {
        "suiteId": SUITE_ID,
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.8},
        "trials": {"count": 3, "passRule": "mean"},
        "tasks": [task("a"), task("b"), task("c")],
    }


def _entry(order_id: int) -> dict[str, Any]:
    return {
        "output": "ok",
        "toolCalls": [{"tool": "crm:lookup", "args": {"id": order_id}}],
        "latencyMs": 5,
        "costUsd": 0.01,
    }


AGENT_X = {"agentId": "test.faults.x", "default": [_entry(1)]}
AGENT_Y = {"agentId": "test.faults.y", "default": [_entry(1), _entry(2), _entry(1)]}


def write_files(folder: Path) -> dict[str, Path]:
    paths = {"suite": folder / "suite.json", "x": folder / "x.json", "y": folder / "y.json"}
    paths["suite"].write_text(json.dumps(suite()))
    paths["x"].write_text(json.dumps(AGENT_X))
    paths["y"].write_text(json.dumps(AGENT_Y))
    return paths


def check_log(
    docs: list[dict[str, Any]], tasks: str | tuple[str, ...] = "abc", trials: int = 3
) -> None:
    """A whole log: contiguous sequences, each trial scored once, one ending (the scenario's
    tasks and trials by default)."""
    assert [d["sequence"] for d in docs] == list(range(len(docs)))
    keys = [
        (d["payload"]["taskId"], d["payload"]["x-openwop-eval"]["trial"])
        for d in docs
        if d["type"] == "eval.scored"
    ]
    assert sorted(keys) == sorted({(t, i) for t in tasks for i in range(trials)})
    types = [d["type"] for d in docs]
    assert types[:2] == ["run.started", "eval.started"]
    assert types[-2:] == ["eval.completed", "run.completed"]
    assert types.count("run.completed") == types.count("eval.completed") == 1
    assert len(replay(docs).records) == len(tasks) * trials
