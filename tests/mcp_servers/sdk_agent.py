"""An agent that gets its tools over MCP with the official Python SDK's client, as a shipped
agent would: ``python sdk_agent.py CONFIG`` (the servers of ``{mcp_config}``) or
``python sdk_agent.py --combined`` (the one server of ``OPENWOP_MCP_URL``).

It reads the task's input on stdin: ``{"calls": [[server, tool, args], ...], "answer": ...}``
(with ``--combined`` the tool is called as ``server.tool`` on the combined server), makes
the calls in order, lists each server's tools first, and prints the answer. A call that
answers with an error is noted and the agent goes on, as a model would."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client


async def main() -> None:
    task = json.loads(sys.stdin.read())
    combined = sys.argv[1] == "--combined"
    urls: dict[str, str] = {}
    if combined:
        urls[""] = os.environ["OPENWOP_MCP_URL"]
    else:
        with open(sys.argv[1]) as handle:
            servers = json.load(handle)["mcpServers"]
        urls = {name: entry["url"] for name, entry in servers.items()}
    errors: list[str] = []
    for server, tool, args in task["calls"]:
        url = urls[""] if combined else urls[server]
        name = f"{server}.{tool}" if combined else tool
        async with Client(url) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            if name not in listed:
                errors.append(f"{name} not listed")
            result: Any = await client.call_tool(name, args)
            if result.is_error:
                errors.append(result.content[0].text)
    print(json.dumps({"answer": task["answer"], "errors": errors}))


asyncio.run(main())
