"""Agents that fail in the ways a person must be able to read: a bug deep in the agent, an
exception group around the cause, a model endpoint that is down."""

from __future__ import annotations

from typing import Any

from openwop_eval.agents import AsyncTools, InfrastructureError

MODEL = "http://127.0.0.1:9/v1"
"""The endpoint the unreachable agent names (nothing listens there)."""


def _origin_of(flight: dict[str, Any]) -> str:
    return str(flight["origin"])  # the bug: the key is "from"


async def buggy(task: Any, tools: AsyncTools) -> str:
    return _origin_of({"from": "LHR"})


async def grouped(task: Any, tools: AsyncTools) -> str:
    raise ExceptionGroup("unhandled errors in a TaskGroup", [ConnectionError("Connection closed")])


async def unreachable(task: Any, tools: AsyncTools) -> str:
    """The first trial cannot reach its model; the others answer."""
    if task["trial"] == 0 and tools.context.trial == 0:
        raise InfrastructureError(f"POST {MODEL}/chat/completions: connection refused", MODEL)
    return "refunded"
