"""What the run accepts as an agent's reply: one check for a single exchange and for every
turn of a conversation."""

from __future__ import annotations

import math
from typing import Any

from ..agents.base import AgentProtocolError, AgentReply
from ..core import canonical_json


def check_reply(reply: Any) -> int:
    """A reply the run can record: a JSON output, and finite non-negative cost and latency.
    Returns the length of the output's canonical JSON text."""
    if not isinstance(reply, AgentReply):
        raise AgentProtocolError(f"the agent returned {type(reply).__name__}, not a reply")
    try:
        size = len(canonical_json(reply.output))
    except Exception as exc:  # the encoder rejects any non-JSON value
        raise AgentProtocolError(f"the output is not a JSON value: {str(exc)[:200]}") from None
    for name, value in (("costUsd", reply.cost_usd), ("latencyMs", reply.latency_ms)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise AgentProtocolError(f"{name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value) or value < 0:
            raise AgentProtocolError(f"{name} must be a finite number ≥ 0")
    return size
