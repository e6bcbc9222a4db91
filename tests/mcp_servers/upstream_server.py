"""A real MCP server (the official SDK's ``MCPServer``) for one namespace of the refunds
suite: ``python upstream_server.py NAMESPACE`` serves it on stdin and stdout;
:func:`http_app` serves it over Streamable HTTP. It answers as a production server would —
including an error for a customer it does not know — so a recording of it has something to
replay faithfully."""

from __future__ import annotations

import sys
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError


def server(namespace: str) -> MCPServer:
    made = MCPServer(f"acme-{namespace}")
    if namespace == "crm":

        @made.tool(name="lookup-order", description="Look an order up by its id.")
        def lookup_order(orderId: str) -> dict[str, Any]:  # noqa: N803 — the wire's name
            return {"orderId": orderId, "totalUsd": 59.9}

        @made.tool(name="lookup-customer", description="Look a customer up by their id.")
        def lookup_customer(customerId: str) -> dict[str, Any]:  # noqa: N803
            raise ToolError(f"no customer {customerId}")

    elif namespace == "payments":

        @made.tool(name="refund", description="Refund an order, in full or in part.")
        def refund(orderId: str, amountUsd: float) -> dict[str, Any]:  # noqa: N803
            return {"orderId": orderId, "refundedUsd": amountUsd, "status": "refunded"}

    elif namespace == "accounts":

        @made.tool(name="delete", description="Delete a customer's account. Irreversible.")
        def delete(customerId: str) -> dict[str, Any]:  # noqa: N803
            return {"deleted": customerId}

    return made


if __name__ == "__main__":
    server(sys.argv[1]).run("stdio")
