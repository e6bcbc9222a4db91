"""A trial's MCP servers for an agent that runs in this process: a Python callable asks its
``tools`` for them (``await tools.mcp_servers()``, or ``tools.mcp_servers()`` in a plain
function) and hands their URLs or config to its own MCP client — an Agents SDK, Pydantic AI
or LangGraph agent evaluated with its MCP code unchanged. They are opened on the first ask
(no hub for an agent that never asks) and closed when the trial ends."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..tool_catalog import ToolSpec
from .listing import TrialTools

if TYPE_CHECKING:
    from ..base import ToolPort, TrialContext
    from .hub import TrialServers


def described(
    listing: Mapping[str, Mapping[str, Any]], specs: Mapping[str, ToolSpec]
) -> dict[str, ToolSpec]:
    """What the servers list of each tool: ``specs`` (a catalog's, live tools' own words)
    over a real server's ``listing`` (recorded, or an upstream's)."""
    listed = {
        tool: ToolSpec(entry.get("description"), entry.get("inputSchema"))
        for tool, entry in listing.items()
    }
    return {**listed, **specs}


class TrialMcp:
    """One trial's servers, opened on first ask (see the module's docstring)."""

    def __init__(
        self, context: TrialContext, port: ToolPort, loop: asyncio.AbstractEventLoop
    ) -> None:
        self._context, self._port, self._loop = context, port, loop
        self._stack = contextlib.ExitStack()
        self._servers: TrialServers | None = None
        self._lock = threading.Lock()
        self._closed = False

    def open(self) -> TrialServers:
        """The trial's servers, started if need be (blocking the first time a process asks:
        call it off the event loop, or see :meth:`opened`)."""
        from .hub import McpHub  # the MCP SDK, on first use

        with self._lock:
            if self._closed:
                raise RuntimeError("the trial has ended: its MCP servers are gone")
            if self._servers is None:
                tools = TrialTools.of(
                    (*self._context.tool_names, *self._context.task_tools),
                    self._port,
                    self._loop,
                    described(self._context.tool_listing, {}),
                )
                self._servers = self._stack.enter_context(McpHub.shared().serving(tools))
            return self._servers

    async def opened(self) -> TrialServers:
        """:meth:`open` from the trial's loop, without blocking it."""
        from .hub import McpHub

        if self._servers is not None or McpHub.running() is not None:
            return self.open()  # the hub is up: registering is a dict entry
        return await asyncio.to_thread(self.open)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._stack.close()
