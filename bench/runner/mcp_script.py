"""The agent of ``mcp_bench.py``: five tool calls over MCP with the official Python SDK's
client, one session held open, a think time before each call.

    python bench/runner/mcp_script.py CONFIG [--think-ms 50]   # as mcp:COMMAND, {mcp_config}
    python bench/runner/mcp_script.py --bare [--think-ms 50]   # the same process, no server

It reads the task's input (``{"orderId": …}``) on stdin, opens one ``mcp.Client`` on the
``crm`` server of CONFIG (the ``{"mcpServers": …}`` file the eval writes), and for each of
:data:`TOOLS` waits ``--think-ms`` / 5 (a stand-in for the model) and calls it; then it prints
:data:`ANSWER`. A call that answers with an error ends it with exit status 1. ``--bare`` is
the same process without the eval: it imports the same SDK, reads the same input and waits
the same think time, but has no server to call, so it makes no call.

:func:`play` is also the in-process agent of ``mcp_bench.py`` (``mcp_trials.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from mcp import Client

SERVER = "crm"
TOOLS = ("lookup-order", "get-customer", "check-eligibility", "refund", "send-receipt")
"""The calls of one trial, in order, all on :data:`SERVER` (``crm:lookup-order`` …)."""
ANSWER = "refunded"


async def play(target: Any, order: str, think_s: float) -> None:
    """One session on ``target`` (a URL, or a transport), the five calls in it, each after
    ``think_s`` / 5 of think time."""
    step = think_s / len(TOOLS)
    async with Client(target) as client:
        for tool in TOOLS:
            await asyncio.sleep(step)
            result = await client.call_tool(tool, {"orderId": order})
            if result.is_error:
                text = getattr(result.content[0], "text", "") if result.content else ""
                raise RuntimeError(f"{tool} answered with an error: {text}")


async def think_only(think_s: float) -> None:
    """``--bare``: the think time of the five steps, without the calls."""
    for _ in TOOLS:
        await asyncio.sleep(think_s / len(TOOLS))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", nargs="?", help="the {mcp_config} file")
    parser.add_argument("--bare", action="store_true", help="no eval: make no call")
    parser.add_argument("--think-ms", type=float, default=50.0, help="per trial, in 5 steps")
    args = parser.parse_args(argv)
    if args.bare == bool(args.config):
        parser.error("give CONFIG, or --bare")
    task = json.loads(sys.stdin.read())
    think_s = args.think_ms / 1000
    if args.bare:
        asyncio.run(think_only(think_s))
    else:
        with open(args.config, encoding="utf-8") as handle:
            url = json.load(handle)["mcpServers"][SERVER]["url"]
        try:
            asyncio.run(play(url, task["orderId"], think_s))
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 1
    print(ANSWER)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
