"""The MCP servers of every trial in this process, on one loopback HTTP server.

Theory of operation. :meth:`McpHub.shared` starts, once per process, a Streamable HTTP server
on 127.0.0.1 (a port the system picks) in a thread of its own with its own event loop, so it
outlives any one run's loop and a run's loop never waits on it. A trial registers its tools
(:meth:`McpHub.serving`) under a fresh unguessable token and gets its servers' addresses:
``/t/TOKEN/s/SERVER/mcp`` per server, ``/t/TOKEN/mcp`` for the combined one. The handlers
(the official ``mcp`` SDK's low-level server, stateless, JSON answers) find the trial by the
token in the path and hand each ``tools/call`` to the trial's tool boundary on the trial's own
loop, where it is recorded and answered as any agent's call is. When the trial ends its token
is dropped: a later call, or a call with a token that no trial holds, is a protocol error and
is recorded against nobody.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import re
import secrets
import socket
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import mcp_types as types
import uvicorn
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from ...base.errors import InfrastructureError
from ...base.jsontext import dumps
from ...base.limits import MAX_TOOL_ARGS_CHARS
from ...runtime.loops import run_fast
from ..base import MCP_TRANSPORT, AgentProtocolError, ToolCallError, ToolMissError
from .listing import COMBINED, TrialTools

READY_S = 10.0
"""How long the hub may take to come up."""
MAX_BODY_BYTES = 4 * MAX_TOOL_ARGS_CHARS + 64 * 1024
"""The largest request body: a call's arguments at their limit (up to 4 UTF-8 bytes a
character) and the JSON-RPC around them."""
STDIO_MODULE = "openwop_eval.agents.mcp.stdio"
"""The command of a server over stdio (``python -m …  URL``): see :mod:`.stdio`."""
RESULT_KEYS = frozenset({"content", "structuredContent", "isError", "_meta"})
"""The members of an MCP ``CallToolResult``: a tool answer of only these is served as one."""
ADDRESS = re.compile(r"/t/(?P<token>[^/]+)(?:/s/(?P<server>[^/]+))?/mcp")
"""A trial's server (``/t/TOKEN/s/SERVER/mcp``) or its combined server (``/t/TOKEN/mcp``)."""
MISS = (
    "no recorded answer for this call: fixtures are in force and none matches, so the trial"
    " has failed closed"
)


_ADDRESSED: contextvars.ContextVar[tuple[TrialTools, str] | None] = contextvars.ContextVar(
    "openwop_eval_mcp_addressed", default=None
)
"""The trial and server a request's path names, set for the request's task before the SDK
reads it: the SDK asks for a called tool's input schema by name alone."""


class McpHubError(InfrastructureError):
    """The hub could not be started: the trial's MCP servers are not there, which is the
    infrastructure's failure, not the agent's."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "the MCP server for trials on 127.0.0.1")


@dataclass(frozen=True, slots=True)
class TrialServers:
    """Where one trial's servers are."""

    base: str
    """``http://127.0.0.1:PORT/t/TOKEN``"""
    names: tuple[str, ...]

    @property
    def url(self) -> str:
        """The combined server: every tool as ``server.name``."""
        return f"{self.base}/mcp"

    def server_url(self, name: str) -> str:
        return f"{self.base}/s/{name}/mcp"

    def config(self, transport: str = "http") -> dict[str, Any]:
        """The servers in the ``{"mcpServers": {...}}`` shape Claude Code, Cursor and the
        OpenAI Agents SDK read: each its URL, or (``stdio``) the command that serves it on
        stdin and stdout (:mod:`.stdio`)."""
        return {
            "mcpServers": {name: _entry(self.server_url(name), transport) for name in self.names}
        }


class McpHub:
    """The process's loopback MCP server for trials (see the module's docstring)."""

    _shared: ClassVar[McpHub | None] = None
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, port: int) -> None:
        self.port = port
        self._trials: dict[str, TrialTools] = {}

    @classmethod
    def shared(cls) -> McpHub:
        """The process's hub, started on first use (blocking: call it off the loop)."""
        with cls._guard:
            if cls._shared is None:
                cls._shared = cls._start()
            return cls._shared

    @classmethod
    def _forget(cls) -> None:
        """In a forked child: the parent's hub thread is not there, so a trial starts anew."""
        cls._shared, cls._guard = None, threading.Lock()

    @classmethod
    def running(cls) -> McpHub | None:
        """The process's hub if it is up (no wait): trials after the first skip the thread."""
        return cls._shared

    @classmethod
    def _start(cls) -> McpHub:
        # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on connections of a TCP-protocol
        # listener, and without it each answer waits ~40 ms for the client's delayed ACK.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        hub = cls(sock.getsockname()[1])
        server = uvicorn.Server(
            uvicorn.Config(hub.app(), log_level="warning", access_log=False, lifespan="on")
        )
        thread = threading.Thread(
            target=lambda: run_fast(server.serve(sockets=[sock])),
            name="openwop-eval-mcp",
            daemon=True,
        )
        thread.start()
        for _ in range(int(READY_S / 0.01)):
            if server.started:
                return hub
            if not thread.is_alive():
                break
            thread.join(0.01)
        raise McpHubError("the MCP server for trials did not start on 127.0.0.1")

    def app(self) -> ASGIApp:
        server: Server[Any] = Server(
            "openwop-eval",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=_input_schema,
        )
        # Every call is recorded as the trial's events; the SDK's default span per message
        # (its OpenTelemetry middleware) would only cost each call a sixth of the hub's time.
        server.middleware = []
        inner = server.streamable_http_app(
            streamable_http_path="/mcp",
            stateless_http=True,
            json_response=True,
            max_request_body_size=MAX_BODY_BYTES,
        )
        return self._routing(inner, StreamableHTTPASGIApp(server.session_manager))

    @contextlib.contextmanager
    def serving(self, trial: TrialTools) -> Iterator[TrialServers]:
        """Serve ``trial``'s tools while the block runs."""
        token = secrets.token_urlsafe(24)
        self._trials[token] = trial
        try:
            yield TrialServers(f"http://127.0.0.1:{self.port}/t/{token}", tuple(trial.servers))
        finally:
            del self._trials[token]
            for pending in list(trial.pending):
                pending.cancel()

    # --- the handlers, on the hub's loop -----------------------------------------------

    def _routing(self, inner: ASGIApp, mcp: ASGIApp) -> ASGIApp:
        """The hub's application: a ``POST`` to a trial's address goes to ``mcp`` (the SDK's
        transport) with the token and server as path parameters and the trial they name in
        :data:`_ADDRESSED`; the lifespan goes to ``inner`` (the SDK's app, which runs the
        transport's task group). Two fixed paths need no router of their own."""

        async def route(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            address = ADDRESS.fullmatch(scope["path"])
            if address is None:
                await PlainTextResponse("Not Found", 404)(scope, receive, send)
                return
            if scope["method"] != "POST":  # stateless: no stream to hold, no session to end
                await PlainTextResponse("POST only", 405, {"Allow": "POST"})(scope, receive, send)
                return
            params = {k: v for k, v in address.groupdict().items() if v is not None}
            scope["path_params"] = params
            trial = self._trials.get(params["token"])
            addressed = None if trial is None else (trial, params.get("server", COMBINED))
            token = _ADDRESSED.set(addressed)
            try:
                await mcp(scope, receive, send)
            finally:
                _ADDRESSED.reset(token)

        return route

    def _trial(self, ctx: ServerRequestContext[Any, Any]) -> tuple[TrialTools, str]:
        params = getattr(ctx.request, "path_params", None) or {}
        trial = self._trials.get(params.get("token", ""))
        if trial is None:
            raise MCPError(
                types.INVALID_REQUEST,
                "no trial is served at this address: its trial has ended, or it never began",
            )
        server = params.get("server", COMBINED)
        if server != COMBINED and server not in trial.servers:
            raise MCPError(types.INVALID_REQUEST, f"this trial has no MCP server {server!r}")
        return trial, server

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        trial, server = self._trial(ctx)
        tools = [
            types.Tool(name=item.name, description=item.description, input_schema=item.schema)
            for item in trial.listing(server)
        ]
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        trial, server = self._trial(ctx)
        tool = trial.tool(server, params.name)
        future = asyncio.run_coroutine_threadsafe(
            trial.port.call(tool, params.arguments, MCP_TRANSPORT), trial.loop
        )
        trial.pending.add(future)
        try:
            result = await asyncio.wrap_future(future)
        except ToolMissError:
            return _failed(MISS)
        except (ToolCallError, AgentProtocolError) as exc:
            return _failed(str(exc))
        except asyncio.CancelledError:
            if not future.cancelled():
                raise
            raise MCPError(types.INVALID_REQUEST, "the trial ended before this call") from None
        finally:
            trial.pending.discard(future)
        return _served(result)


os.register_at_fork(after_in_child=McpHub._forget)


def _input_schema(name: str) -> Mapping[str, Any] | None:
    """The input schema of tool ``name`` of the addressed server, which the SDK checks a
    call's ``Mcp-Param-*`` headers against (read here, the check costs no ``tools/list``)."""
    addressed = _ADDRESSED.get()
    if addressed is None:
        return None
    trial, server = addressed
    return next((item.schema for item in trial.listing(server) if item.name == name), None)


def _served(result: Any) -> types.CallToolResult:
    """A tool's answer as an MCP result: a result that is one already (what a recording of a
    real server holds: ``{"content": [...], ...}``) as it is, else the JSON as text, and an
    object also as structured content."""
    mcp_shaped = isinstance(result, dict) and isinstance(result.get("content"), list)
    if mcp_shaped and set(result) <= RESULT_KEYS:
        with contextlib.suppress(ValidationError):
            return types.CallToolResult.model_validate(result)
    text = result if isinstance(result, str) else dumps(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=result if isinstance(result, dict) else None,
    )


def _entry(url: str, transport: str) -> dict[str, Any]:
    if transport == "stdio":
        return {"type": "stdio", "command": sys.executable, "args": ["-m", STDIO_MODULE, url]}
    return {"type": "http", "url": url}


def _failed(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )
