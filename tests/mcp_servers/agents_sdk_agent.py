"""An agent built on the OpenAI Agents SDK, written as its users write one: one
``MCPServerStreamableHttp`` per entry of ``{mcp_config}``, an ``Agent`` with those servers
and a Chat Completions model, ``Runner.run`` on the task's input, the final output printed.

``python agents_sdk_agent.py CONFIG BASE_URL``: CONFIG is the ``{"mcpServers": …}`` file,
BASE_URL the OpenAI-compatible endpoint the model is served from (a scripted one in tests).
The task's input arrives on stdin as JSON and is given to the model as it is."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI


async def main() -> None:
    config, base_url = sys.argv[1], sys.argv[2]
    task = json.loads(sys.stdin.read())
    with open(config) as handle:
        servers = json.load(handle)["mcpServers"]
    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(
        model="support-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-test")
    )
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                MCPServerStreamableHttp(params={"url": entry["url"]}, name=name)
            )
            for name, entry in servers.items()
        ]
        agent = Agent(
            name="support",
            instructions="Handle the customer's refund with the tools you have.",
            mcp_servers=clients,
            model=model,
        )
        result = await Runner.run(agent, input=json.dumps(task))
    print(result.final_output)


asyncio.run(main())
