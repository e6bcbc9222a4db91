"""Python agents that bring their own MCP client (the official SDK's), as an Agents SDK or
Pydantic AI agent object does: they ask their ``tools`` for the trial's servers and make the
task's calls through them — ``{"calls": [[server, tool, args], ...], "answer": ...}``."""

from __future__ import annotations

import asyncio
from typing import Any

from mcp import Client


async def calls_over_mcp(input: Any, tools: Any) -> dict[str, Any]:
    servers = await tools.mcp_servers()
    return await _play(input, {name: servers.server_url(name) for name in servers.names})


def calls_over_mcp_in_a_thread(input: Any, tools: Any) -> dict[str, Any]:
    """A plain function: it runs in a thread of its own, with its own event loop."""
    config = tools.mcp_servers().config()["mcpServers"]
    return asyncio.run(_play(input, {name: entry["url"] for name, entry in config.items()}))


async def _play(task: Any, urls: dict[str, str]) -> dict[str, Any]:
    errors: list[str] = []
    for server, tool, args in task["calls"]:
        async with Client(urls[server]) as client:
            result = await client.call_tool(tool, args)
            if result.is_error:
                errors.append(result.content[0].text)
    return {"answer": task["answer"], "errors": errors}


async def never_asks(input: Any, tools: Any) -> str:
    await tools.call("crm:lookup-order", {"orderId": "A-1001"})
    await tools.call("payments:refund", {"orderId": "A-1001", "amountUsd": 59.9})
    return "refunded"


async def says_its_trial(input: Any, tools: Any) -> str:
    """Calls through its trial's server with its own trial number, twice, yielding between:
    with many trials at once, each call must land on the trial that made it."""
    servers = await tools.mcp_servers()
    async with Client(servers.server_url("crm")) as client:
        for step in range(2):
            await client.call_tool(
                "lookup-order", {"orderId": "A-1001", "trial": tools.context.trial, "step": step}
            )
            await asyncio.sleep(0)
    return "refunded"
