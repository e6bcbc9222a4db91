"""A refunds suite whose agent reaches its tools over MCP: look the order up, then refund
it, never delete an account. Each case is one task whose input tells the agent which calls
to make (``sdk_agent.py``), so one agent plays a good path and each way of failing."""

from __future__ import annotations

from typing import Any

LOOKUP = ["crm", "lookup-order", {"orderId": "A-1001"}]
REFUND = ["payments", "refund", {"orderId": "A-1001", "amountUsd": 59.9}]
DELETE = ["accounts", "delete", {"customerId": "C-42"}]
UNANSWERED = ["crm", "lookup-customer", {"customerId": "C-42"}]

CASES: dict[str, list[list[Any]]] = {
    "good": [LOOKUP, REFUND],
    "skipped-step": [REFUND],
    "forbidden": [LOOKUP, DELETE, REFUND],
    "unanswered": [LOOKUP, UNANSWERED, REFUND],
    "used-up": [LOOKUP, LOOKUP, REFUND],  # the second lookup finds the one answer taken
}


def suite(case: str, count: int = 2) -> dict[str, Any]:
    return {
        "suiteId": f"acme.support.evals.mcp-{case}",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "trials": {"count": count},
        "tasks": [
            {
                "taskId": f"refund-{case}",
                "input": {"calls": CASES[case], "answer": "refunded"},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "refunded"},
                    "trajectory": {
                        "steps": [
                            {"tool": "crm:lookup-order", "args": {"orderId": "A-1001"}},
                            {"tool": "payments:refund", "args": {"orderId": "A-1001"}},
                        ],
                        "order": "in-order",
                        "forbidden": ["accounts:delete"],
                    },
                },
                "fixtures": {
                    "toolResponses": [
                        {"tool": "crm:lookup-order", "response": {"totalUsd": 59.9}},
                        {"tool": "payments:refund", "response": {"status": "refunded"}},
                        {"tool": "accounts:delete", "response": {"deleted": True}},
                    ]
                },
            }
        ],
    }
