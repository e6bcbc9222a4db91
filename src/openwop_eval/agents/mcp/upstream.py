"""Real MCP servers behind the tool boundary: ``--mcp-upstream NAME=URL|NAME=stdio:COMMAND``.

An upstream answers the calls of the tools of namespace NAME as live tools do: a call goes
through the boundary, which records it and passes it on (unless fixtures are in force, which
answer it instead — a replay never goes live). Each upstream tool is a live tool named by the
naming rule (tool ``lookup-order`` of upstream ``crm`` is ``crm:lookup-order``) that carries
the server's own listing of it (:attr:`UpstreamTool.listing`): the trial records it, so the
run's event log lists the tools a replay offers, with no server at all.

A call's result is the server's ``CallToolResult`` as MCP JSON (``{"content": [...],
"structuredContent": ..., "isError": ...}``): recorded whole, so a replay serves the agent the
same result — an error the server answered included, which the agent saw and may have acted
on. The connections live in a thread of their own with its own event loop, opened once
(:meth:`Upstreams.open`) and closed when the process is done with them.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import shlex
import threading
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from ...base.errors import InfrastructureError, told
from ...base.jsontext import dumps
from ..base import AgentSpecError
from .listing import PLAIN_SERVER

T = TypeVar("T")
CONNECT_S = 30.0
"""How long the upstreams may take to connect and list their tools."""
MAX_UPSTREAM_TOOLS = 1000
"""The most tools one upstream may list."""
MAX_LISTING_CHARS = 1024 * 1024
"""The most characters of JSON an upstream's listing may take (it is recorded per trial)."""


class UpstreamError(RuntimeError):
    """An upstream that could not be reached, or that lists what cannot be served."""


@dataclass(frozen=True, slots=True)
class Upstream:
    """``NAME=URL`` (Streamable HTTP) or ``NAME=stdio:COMMAND`` (started in ``cwd``, by
    default the working directory)."""

    name: str
    target: str
    cwd: str | None = None

    @classmethod
    def parse(cls, spec: str) -> Upstream:
        """``--mcp-upstream NAME=…``; a usage error names the option as given."""
        name, sep, target = spec.partition("=")
        return cls.named(name, target if sep else "", where=f"--mcp-upstream {spec!r}")

    @classmethod
    def named(cls, name: str, target: str, cwd: str | None = None, *, where: str) -> Upstream:
        """Namespace ``name`` served by ``target``; what cannot serve it is a usage error
        located by ``where``."""
        name, target = name.strip(), target.strip()
        if not name or not target or ":" in name or "." in name:
            raise AgentSpecError(
                f"{where}: expected NAME=URL or NAME=stdio:COMMAND, NAME a tool namespace"
                " without ':' or '.' (crm=https://crm.example/mcp)"
            )
        if target.startswith("stdio:"):
            if not shlex.split(target.removeprefix("stdio:")):
                raise AgentSpecError(f"{where}: stdio: needs a command")
        elif not target.startswith(("http://", "https://")):
            raise AgentSpecError(f"{where}: the URL must be http:// or https://")
        return cls(name, target, cwd)

    def tool(self, name: str) -> str:
        """The suite's name of the upstream's tool ``name``."""
        return name if self.name == PLAIN_SERVER else f"{self.name}:{name}"

    def client(self) -> Any:
        from mcp import Client, StdioServerParameters

        if self.target.startswith("stdio:"):
            argv = shlex.split(self.target.removeprefix("stdio:"))
            return Client(StdioServerParameters(command=argv[0], args=argv[1:], cwd=self.cwd))
        return Client(self.target)


class UpstreamTool:
    """One tool of an upstream, as a live tool: called with a call's arguments, it returns
    (an awaitable of) the server's result."""

    def __init__(self, owner: Upstreams, client: Any, tool: Any, server: str) -> None:
        self._owner, self._client, self.name = owner, client, tool.name
        self.server = server
        """The upstream's name (``--mcp-upstream NAME=…``): what could not be reached."""
        self.description: str | None = tool.description
        self.parameters: dict[str, Any] = dict(tool.input_schema)
        self.listing: dict[str, Any] = {"inputSchema": self.parameters}
        """What the server lists of it: recorded with every trial it serves."""
        if tool.description is not None:
            self.listing["description"] = tool.description

    def __call__(self, args: dict[str, Any]) -> Awaitable[Any]:
        return self._owner.submit(self._call(args))

    async def _call(self, args: dict[str, Any]) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp_types import CONNECTION_CLOSED

        try:
            result = await self._client.call_tool(self.name, args)
        except MCPError as exc:  # the server's own answer, unless the connection is gone
            if exc.code != CONNECTION_CLOSED:
                raise
            raise self._unreachable(exc) from exc
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise self._unreachable(exc) from exc
        return result.model_dump(by_alias=True, exclude_none=True, mode="json")

    def _unreachable(self, exc: BaseException) -> InfrastructureError:
        return InfrastructureError(
            f"the MCP upstream {self.server!r} could not be reached: {told(exc)}",
            f"MCP upstream {self.server}",
        )


class Upstreams:
    """Open connections to the upstreams (see the module's docstring)."""

    def __init__(self) -> None:
        self.tools: dict[str, UpstreamTool] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def open(cls, upstreams: Sequence[Upstream]) -> Upstreams:
        """Connect to every upstream and list its tools (blocking: call it off any loop)."""
        owner = cls()
        ready = _Ready()
        owner._thread = threading.Thread(
            target=lambda: asyncio.run(owner._main(upstreams, ready)),
            name="openwop-eval-mcp-upstream",
            daemon=True,
        )
        owner._thread.start()
        error = ready.wait(CONNECT_S)
        if error is not None:
            owner.close()
            raise error
        atexit.register(owner.close)
        return owner

    def submit(self, coro: Any) -> Awaitable[Any]:
        """Run ``coro`` on the upstreams' loop; awaitable on the caller's."""
        if self._loop is None or self._loop.is_closed():
            coro.close()
            raise UpstreamError("the MCP upstreams are closed")
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    def close(self) -> None:
        """Disconnect (a stdio server's process ends); idempotent."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stop.set)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(CONNECT_S)
        atexit.unregister(self.close)

    async def _main(self, upstreams: Sequence[Upstream], ready: _Ready) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                for upstream in upstreams:
                    client = await stack.enter_async_context(upstream.client())
                    await self._list(upstream, client)
                ready.set(None)
                await self._stop.wait()
        except Exception as exc:  # the first to fail is the cause a person acts on
            ready.set(UpstreamError(f"an MCP upstream failed: {told(exc)}"))

    async def _list(self, upstream: Upstream, client: Any) -> None:
        tools: list[Any] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if len(tools) > MAX_UPSTREAM_TOOLS:
                raise UpstreamError(f"{upstream.name} lists over {MAX_UPSTREAM_TOOLS} tools")
            if not cursor:
                break
        made = [UpstreamTool(self, client, tool, upstream.name) for tool in tools]
        if len(dumps([m.listing for m in made])) > MAX_LISTING_CHARS:
            raise UpstreamError(f"{upstream.name}'s listing is over {MAX_LISTING_CHARS} characters")
        for tool in made:
            self.tools[upstream.tool(tool.name)] = tool


def with_upstream_tools(
    live: Mapping[str, T] | None, upstreams: Upstreams, *, clash: str
) -> dict[str, T | UpstreamTool]:
    """The live tools with the upstreams' tools; a tool both answer is a usage error
    (``clash`` says where each came from, e.g. "a --tools live tool and an --mcp-upstream's")."""
    both = sorted(set(live or {}) & set(upstreams.tools))
    if both:
        raise AgentSpecError(f"{both[0]} is both {clash}")
    return {**(live or {}), **upstreams.tools}


class _Ready:
    """The thread's word that it is up (None) or why it is not, waited for once."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._error: BaseException | None = None

    def set(self, error: BaseException | None) -> None:
        self._error = error
        self._event.set()

    def wait(self, timeout: float) -> BaseException | None:
        if not self._event.wait(timeout):
            return UpstreamError(f"the MCP upstreams did not connect within {timeout:.0f} s")
        return self._error
