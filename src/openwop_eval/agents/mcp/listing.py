"""Which MCP servers a trial has and what each lists.

The naming rule: a tool of the suite named ``crm:lookup-order`` is tool ``lookup-order`` on
server ``crm`` — the part before the first ``:`` is the server, as it would be in production;
a tool named without a ``:`` is on server ``tools``. The combined server (``{mcp_url}``)
lists every tool as ``server.name`` (``crm.lookup-order``). A call of a name no server lists
still goes through the boundary under the tool name the rule gives it, so the attempt is
recorded and graded (a miss fails the trial closed); it is never answered by anyone else.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base import ToolPort
from ..tool_catalog import ToolSpec

PLAIN_SERVER = "tools"
"""The server of the tools named without a ``server:`` prefix."""
COMBINED = ""
"""The combined server's key: every tool, named ``server.name``."""
PERMISSIVE: Mapping[str, Any] = {"type": "object", "additionalProperties": True}
"""The input schema of a tool nothing describes: any object."""


def namespaced(tool: str) -> tuple[str, str]:
    """``(server, name)`` of a suite's tool name, by the naming rule."""
    server, sep, name = tool.partition(":")
    return (server, name) if sep and server and name else (PLAIN_SERVER, tool)


@dataclass(frozen=True, slots=True)
class Listed:
    """One tool as a server lists it."""

    tool: str
    """The suite's name: what the boundary records."""
    name: str
    description: str | None
    schema: Mapping[str, Any]


@dataclass
class TrialTools:
    """One trial's tools as MCP servers: where its calls go (the trial's boundary, on the
    trial's event loop) and what each server lists."""

    port: ToolPort
    loop: asyncio.AbstractEventLoop
    servers: dict[str, dict[str, Listed]]
    pending: set[concurrent.futures.Future[Any]] = field(default_factory=set)
    """Calls handed to the trial's loop and not answered yet (cancelled when it ends)."""

    @classmethod
    def of(
        cls,
        tools: Iterable[str],
        port: ToolPort,
        loop: asyncio.AbstractEventLoop,
        specs: Mapping[str, ToolSpec] | None = None,
    ) -> TrialTools:
        """The servers of ``tools`` (and of the tools ``specs`` describe), each tool's
        description and schema from ``specs`` where it has one."""
        specs = specs or {}
        servers: dict[str, dict[str, Listed]] = {}
        for tool in sorted({*tools, *specs}):
            server, name = namespaced(tool)
            spec = specs.get(tool)
            schema = spec.parameters if spec is not None and spec.parameters else PERMISSIVE
            description = spec.description if spec is not None else None
            servers.setdefault(server, {})[name] = Listed(tool, name, description, schema)
        return cls(port, loop, servers)

    def listing(self, server: str) -> list[Listed]:
        """What ``server`` lists (the combined server: every tool as ``server.name``)."""
        if server != COMBINED:
            return list(self.servers.get(server, {}).values())
        return [
            Listed(item.tool, f"{name}.{item.name}", item.description, item.schema)
            for name, tools in self.servers.items()
            for item in tools.values()
        ]

    def tool(self, server: str, name: str) -> str:
        """The suite's name of tool ``name`` called on ``server``."""
        if server == COMBINED:
            prefix, dot, rest = name.partition(".")
            if not (dot and prefix and rest):
                return name
            server, name = prefix, rest
        listed = self.servers.get(server, {}).get(name)
        if listed is not None:
            return listed.tool
        return name if server == PLAIN_SERVER else f"{server}:{name}"
