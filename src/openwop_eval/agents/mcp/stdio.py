"""A trial's MCP server over stdio: ``python -m openwop_eval.agents.mcp.stdio URL``.

With ``--mcp-transport stdio`` the config an ``mcp:`` agent is given names, for each server,
a command (``{"command": PYTHON, "args": ["-m", "openwop_eval.agents.mcp.stdio", URL]}``)
that the agent's MCP client starts, as it starts any stdio server. This is that command: an
MCP server on its stdin and stdout (the official SDK's) that passes ``tools/list`` and
``tools/call`` on to the trial's server at URL (:mod:`.hub`), so a call over stdio reaches
the same tool boundary, is recorded and answered as one over HTTP is, and a protocol error
there (a trial that has ended) is the same error here. It exits when its stdin closes.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError


def bridge(client: Client) -> Server[Any]:
    """A server whose tools are ``client``'s: every list and call passed on as it is."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return await client.list_tools(cursor=params.cursor if params else None)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        result = await client.call_tool(params.name, params.arguments)
        if not isinstance(result, types.CallToolResult):  # the trial's servers never ask back
            raise MCPError(types.INTERNAL_ERROR, "the trial's server asked for input")
        return result

    return Server("openwop-eval", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(url: str) -> None:
    async with Client(url) as client, stdio_server() as (read, write):
        server = bridge(client)
        await server.run(read, write, server.create_initialization_options())


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].startswith("http://127.0.0.1:"):
        print(
            "usage: python -m openwop_eval.agents.mcp.stdio URL (a trial's server)", file=sys.stderr
        )
        return 2
    try:
        anyio.run(serve, argv[0])
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
