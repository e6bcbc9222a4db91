"""A live tool whose server cannot be reached (an MCP upstream whose connection is gone) fails
its trial on infrastructure, whatever the agent made of the tool error; the upstream's tool
tells a lost connection from the server's own error."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS

from openwop_eval import run_suite
from openwop_eval.agents import AsyncTools, InfrastructureError, ToolCallError
from openwop_eval.agents.mcp.upstream import UpstreamTool
from openwop_eval.agents.python import PythonAgent
from openwop_eval.store import Store

SUITE = {
    "suiteId": "acme.evals.upstream",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 0},
    "trials": {"count": 1},
    "tasks": [
        {
            "taskId": "refund",
            "input": "refund A-1",
            "expected": {"kind": "golden", "match": {"strategy": "contains", "value": "sorry"}},
        }
    ],
}


async def forgiving(task: Any, tools: AsyncTools) -> str:
    try:
        await tools.call("payments:refund", {"orderId": "A-1"})
    except ToolCallError:
        return "sorry, the refund service is down"  # the agent copes: not the point
    return "refunded"


def gone(args: dict[str, Any]) -> Any:
    raise InfrastructureError("the MCP upstream 'payments' could not be reached", "payments")


def test_an_unreachable_live_tool_fails_the_trial_on_infrastructure(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(SUITE))
    store = Store(f"sqlite:///{tmp_path}/s.db")
    agent = PythonAgent(forgiving, "forgiving")
    result = run_suite(str(path), agent, live_tools={"payments:refund": gone}, store=store)
    assert result.unreachable() == {"payments": 1}
    assert result.gate.passed is False


class Client:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        raise self.error


class Listed:
    name, description, input_schema = "refund", None, {"type": "object"}


@pytest.mark.parametrize(
    "error",
    [MCPError(CONNECTION_CLOSED, "Connection closed"), anyio.ClosedResourceError(), OSError()],
)
def test_a_lost_connection_is_infrastructure(error: BaseException) -> None:
    tool = UpstreamTool(None, Client(error), Listed(), "payments")  # type: ignore[arg-type]
    with pytest.raises(InfrastructureError) as caught:
        asyncio.run(tool._call({}))
    assert caught.value.endpoint == "MCP upstream payments"


def test_the_servers_own_error_is_not() -> None:
    tool = UpstreamTool(None, Client(MCPError(INVALID_PARAMS, "bad")), Listed(), "payments")  # type: ignore[arg-type]
    with pytest.raises(MCPError):
        asyncio.run(tool._call({}))
