"""One small suite and the trials an agent made on it, as the single source of every test's
traces and of the equivalent scripted agent file.

``refund`` must look the order up, then refund it, and never delete the account; its second
trial answers well but calls the forbidden tool. ``status`` must look the order up; its
second trial answers wrong without calling anything. Two trials each, passScore 0.75: the
suite does not pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOOLS = ("crm_lookup", "payments_refund", "accounts_delete")


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    result: Any


@dataclass(frozen=True)
class Trial:
    output: str
    calls: tuple[Call, ...] = ()
    latency_ms: float = 10.0
    cost_usd: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


LOOKUP_A = Call("crm_lookup", {"orderId": "A-1"}, {"status": "delivered"})
REFUND_A = Call("payments_refund", {"orderId": "A-1", "amountUsd": 20}, {"refunded": True})
DELETE = Call("accounts_delete", {"accountId": "u-1"}, {"deleted": True})
LOOKUP_B = Call("crm_lookup", {"orderId": "B-2"}, {"status": "shipped"})

TRIALS: dict[str, list[Trial]] = {
    "refund": [
        Trial("Order A-1 was refunded.", (LOOKUP_A, REFUND_A), 120.0, 0.01),
        Trial("Order A-1 was refunded.", (LOOKUP_A, DELETE, REFUND_A), 80.0, 0.02),
    ],
    "status": [
        Trial("shipped", (LOOKUP_B,), 50.0, 0.005),
        Trial("I do not know", (), 30.0, 0.0),
    ],
}

SUITE: dict[str, Any] = {
    "suiteId": "test.openwop.evals.traces",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 0.75},
    "trials": {"count": 2, "passRule": "mean"},
    "tasks": [
        {
            "taskId": "refund",
            "input": {"message": "Order A-1 arrived broken. Refund it."},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "contains", "value": "refunded"},
                "trajectory": {
                    "steps": [
                        {"tool": "crm_lookup", "args": {"orderId": "A-1"}},
                        {"tool": "payments_refund", "args": {"orderId": "A-1"}},
                    ],
                    "forbidden": ["accounts_delete"],
                },
            },
            "fixtures": {
                "toolResponses": [
                    {"tool": c.tool, "response": c.result} for c in (LOOKUP_A, REFUND_A, DELETE)
                ]
            },
        },
        {
            "taskId": "status",
            "input": {"message": "Where is order B-2?"},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": "shipped"},
                "trajectory": {"steps": [{"tool": "crm_lookup", "args": {"orderId": "B-2"}}]},
            },
            "fixtures": {"toolResponses": [{"tool": "crm_lookup", "response": LOOKUP_B.result}]},
        },
    ],
}


def write_suite(directory: Path, suite: dict[str, Any] | None = None) -> Path:
    path = directory / "suite.json"
    path.write_text(json.dumps(suite or SUITE))
    return path


def script(trials: dict[str, list[Trial]] | None = None) -> dict[str, Any]:
    """The scripted agent file that makes the same trials."""
    return {
        "agentId": "scripted-equivalent",
        "tasks": {
            task: [
                {
                    "output": t.output,
                    "toolCalls": [{"tool": c.tool, "args": c.args} for c in t.calls],
                    "latencyMs": t.latency_ms,
                    **({"costUsd": t.cost_usd} if t.cost_usd is not None else {}),
                }
                for t in entries
            ]
            for task, entries in (trials or TRIALS).items()
        },
    }


def write_script(directory: Path, trials: dict[str, list[Trial]] | None = None) -> Path:
    path = directory / "agent.json"
    path.write_text(json.dumps(script(trials)))
    return path
