"""An agent that gets its tools over MCP with the official Python SDK's client, as a shipped
agent would: ``python sdk_agent.py CONFIG`` (the servers of ``{mcp_config}``, each by URL or
by the command that serves it on stdio) or ``python sdk_agent.py --combined`` (the one
server of ``OPENWOP_MCP_URL``).

It reads the task's input on stdin: ``{"calls": [[server, tool, args], ...], "answer": ...}``
(with ``--combined`` the tool is called as ``server.tool`` on the combined server), makes
the calls in order, lists each server's tools first, and prints the answer, what each call
answered and what the servers listed. A call that answers with an error is noted and the
agent goes on, as a model would."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client, StdioServerParameters


def target(entry: dict[str, Any]) -> Any:
    if "url" in entry:
        return entry["url"]
    return StdioServerParameters(command=entry["command"], args=entry["args"])


async def main() -> None:
    task = json.loads(sys.stdin.read())
    combined = sys.argv[1] == "--combined"
    targets: dict[str, Any] = {}
    if combined:
        targets[""] = os.environ["OPENWOP_MCP_URL"]
    else:
        with open(sys.argv[1]) as handle:
            servers = json.load(handle)["mcpServers"]
        targets = {name: target(entry) for name, entry in servers.items()}
    errors: list[str] = []
    answers: list[Any] = []
    listings: dict[str, Any] = {}
    for server, tool, args in task["calls"]:
        name = f"{server}.{tool}" if combined else tool
        async with Client(targets["" if combined else server]) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            listings[server] = {n: [t.description, t.input_schema] for n, t in listed.items()}
            if name not in listed:
                errors.append(f"{name} not listed")
            result: Any = await client.call_tool(name, args)
            answers.append([result.is_error, [c.text for c in result.content]])
            if result.is_error:
                errors.append(result.content[0].text)
    done = {"answer": task["answer"], "errors": errors, "answers": answers, "listed": listings}
    print(json.dumps(done))


asyncio.run(main())
