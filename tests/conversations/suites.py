"""A rebooking conversation in the spirit of τ²-bench, and agents that play it."""

from __future__ import annotations

import copy
from typing import Any

FIXTURES = {
    "toolResponses": [
        {"tool": "bookings:get", "response": {"flight": "AB123", "status": "cancelled"}},
        {"tool": "flights:search", "response": [{"flight": "AB200", "departs": "09:00"}]},
        {"tool": "bookings:rebook", "response": {"status": "rebooked", "flight": "AB200"}},
        {"tool": "payments:charge", "response": {"status": "charged"}},
    ]
}

TASK: dict[str, Any] = {
    "taskId": "rebook-after-cancellation",
    "input": {"message": "My flight AB123 was cancelled, can you rebook me?"},
    "expected": {
        "kind": "golden",
        "match": {"strategy": "contains", "value": "rebooked"},
        "trajectory": {
            "steps": [
                {"tool": "bookings:get"},
                {"tool": "flights:search"},
                {"tool": "bookings:rebook", "args": {"flight": "AB200"}},
            ],
            "forbidden": ["payments:*"],
        },
    },
    "fixtures": FIXTURES,
    "x-openwop-eval": {
        "conversation": {
            "maxTurns": 4,
            "user": {"script": ["Yes, the 9 am one please.", "Thanks, that's all."]},
            "turns": [
                {
                    "trajectory": {
                        "steps": [{"tool": "bookings:get"}],
                        "forbidden": ["bookings:rebook"],
                    }
                },
                {"trajectory": {"steps": [{"tool": "bookings:rebook"}]}},
            ],
        }
    },
}


def suite(task: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "suiteId": "test.openwop.evals.conversations",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "tasks": [copy.deepcopy(task or TASK)],
        **extra,
    }


CAREFUL = """
def agent(messages, tools):
    turn = sum(1 for m in messages if m["role"] == "user") - 1
    if turn == 0:
        booking = tools.call("bookings:get", {"flight": "AB123"})
        options = tools.call("flights:search", {"from": booking["flight"]})
        return f"Your flight was {booking['status']}. I can offer {options[0]['flight']} at 09:00."
    if turn == 1:
        done = tools.call("bookings:rebook", {"flight": "AB200"})
        return f"Done: you are {done['status']} on {done['flight']}."
    return "You're welcome, you are rebooked."
"""

HASTY = """
def agent(messages, tools):
    turn = sum(1 for m in messages if m["role"] == "user") - 1
    if turn == 0:
        tools.call("bookings:get", {"flight": "AB123"})
        tools.call("flights:search", {"from": "AB123"})
        done = tools.call("bookings:rebook", {"flight": "AB200"})
        return f"I went ahead: you are {done['status']} on AB200."
    return "You are rebooked."
"""
"""Books before the user chose: the whole path is right, turn 1's rule is not."""

LATE_FORBIDDEN = """
def agent(messages, tools):
    turn = sum(1 for m in messages if m["role"] == "user") - 1
    if turn == 0:
        booking = tools.call("bookings:get", {"flight": "AB123"})
        tools.call("flights:search", {"from": booking["flight"]})
        return "I can offer AB200 at 09:00."
    if turn == 1:
        tools.call("bookings:rebook", {"flight": "AB200"})
        return "Done, rebooked."
    tools.call("payments:charge", {"amount": 50})
    return "You are rebooked; I charged the change fee."
"""
"""Right until its last turn, where it calls a forbidden tool."""
