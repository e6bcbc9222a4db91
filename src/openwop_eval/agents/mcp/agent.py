"""``mcp:COMMAND``: an agent that gets its tools over MCP, run as it ships.

One process per trial. Before it starts, the trial's MCP servers are up (:mod:`.hub`), one
per tool namespace of the trial (:mod:`.listing`), and the command learns where they are:

- ``{mcp_config}`` in COMMAND, and ``OPENWOP_MCP_CONFIG``: the path of a JSON file
  ``{"mcpServers": {"crm": {"type": "http", "url": …}}}``, the shape Claude Code, Cursor and
  the OpenAI Agents SDK read;
- ``{mcp_url}``, and ``OPENWOP_MCP_URL``: one combined server with every tool.

With the ``stdio`` transport each entry is instead the command that serves that server on
stdin and stdout (``{"type": "stdio", "command": …, "args": […]}``, :mod:`.stdio`).

The task's input goes to the command on stdin, as JSON; what it writes to stdout is its
output (JSON when the whole of it parses, else the text, without its trailing newline). A
command that exits with a non-zero status fails the trial with that status and the tail of
its stderr.

A conversation task (:meth:`McpAgent.converse`) runs the command once per agent turn, with
the conversation so far on stdin — a JSON array of ``{"role": "user" | "assistant",
"content": TEXT}`` ending with the user message the turn answers, as a Python agent gets it —
and keeps the trial's servers (the same addresses, the same config file) for every turn: they
end with the conversation. Each call through them is attributed to the turn it is made in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...base.limits import MAX_OUTPUT_CHARS
from ..base import AgentReply, AgentSpecError, Conversation, ToolPort, TrialContext
from ..command import kept_stderr, spawned
from ..tool_catalog import ToolCatalog, ToolSpec, live_declarations
from .listing import TrialTools
from .servers import described

if TYPE_CHECKING:
    from .hub import TrialServers

CONFIG_ENV = "OPENWOP_MCP_CONFIG"
URL_ENV = "OPENWOP_MCP_URL"
TRANSPORTS = ("http", "stdio")
MAX_STDOUT_BYTES = 4 * MAX_OUTPUT_CHARS
"""The most an agent may write to stdout: its output at its limit in UTF-8; more, and the
trial errors without reading the rest."""


class McpAgentError(RuntimeError):
    """The command failed: a non-zero exit, or an output over the limit."""


@dataclass(frozen=True)
class McpOptions:
    """What ``run`` flags (or a host's agent config) give an ``mcp:COMMAND`` agent."""

    transport: str = "http"
    """How the config names each server: its URL (``http``) or a command (``stdio``)."""
    tool_catalog: str | None = None
    """A tool catalog file: the descriptions and input schemas the servers list."""
    live_tools: Mapping[str, Callable[..., Any]] | None = None
    """Live tools, whose own declarations describe them where the catalog does not."""

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise AgentSpecError(f"--mcp-transport must be one of {', '.join(TRANSPORTS)}")

    def specs(self) -> dict[str, ToolSpec]:
        """The tools described: the catalog's over the live tools' own declarations."""
        catalog = ToolCatalog.from_file(self.tool_catalog).tools if self.tool_catalog else {}
        return {**live_declarations(self.live_tools or {}), **catalog}


class McpAgent:
    """``mcp:COMMAND`` (see the module's docstring)."""

    def __init__(
        self,
        command: str,
        agent_id: str = "mcp",
        specs: Mapping[str, ToolSpec] | None = None,
        transport: str = "http",
    ) -> None:
        self.command, self.agent_id, self.specs = command, agent_id, dict(specs or {})
        self.transport = McpOptions(transport).transport

    @classmethod
    def from_options(cls, command: str, options: McpOptions | None = None) -> McpAgent:
        options = options or McpOptions()
        return cls(command, specs=options.specs(), transport=options.transport)

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        with contextlib.ExitStack() as stack:
            servers, config = await self.serve(context, port, stack)
            return await self.play(context, servers, config)

    def converse(self, context: TrialContext, port: ToolPort) -> Conversation:
        """The command once per turn, the trial's servers kept for the whole conversation."""
        return _McpConversation(self, context, port)

    async def serve(
        self, context: TrialContext, port: ToolPort, stack: contextlib.ExitStack
    ) -> tuple[TrialServers, Path]:
        """The trial's servers and their config file, until ``stack`` closes."""
        from .hub import McpHub  # the MCP SDK, on first use

        hub = McpHub.running()
        if hub is None:
            hub = await asyncio.to_thread(McpHub.shared)
        trial = TrialTools.of(
            (*context.tool_names, *context.task_tools),
            port,
            asyncio.get_running_loop(),
            described(context.tool_listing, self.specs),
        )
        servers = stack.enter_context(hub.serving(trial))
        config = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "mcp.json"
        config.write_text(json.dumps(servers.config(self.transport), indent=2) + "\n")
        return servers, config

    async def play(self, context: TrialContext, servers: TrialServers, config: Path) -> AgentReply:
        """One run of the command: the task's input (a conversation's messages) on stdin."""
        command = self.command.replace("{mcp_config}", shlex.quote(str(config))).replace(
            "{mcp_url}", shlex.quote(servers.url)
        )
        env = {**os.environ, CONFIG_ENV: str(config), URL_ENV: servers.url}
        with kept_stderr() as kept:
            async with spawned(command, env, tail=kept) as (proc, stderr):
                await _feed(proc, json.dumps(_stdin(context), ensure_ascii=False).encode())
                stdout = await _read_bounded(proc.stdout)
                code = await proc.wait()
        if code != 0:
            tail = stderr.decode("utf-8", "replace").strip()
            error = McpAgentError(
                f"the agent exited with code {code}" + (f"; stderr: {tail[-500:]}" if tail else "")
            )
            error.stderr = tail  # type: ignore[attr-defined]
            raise error
        return AgentReply(_output(stdout))


class _McpConversation:
    """A conversation's servers, opened for its first turn and closed with it."""

    def __init__(self, agent: McpAgent, context: TrialContext, port: ToolPort) -> None:
        self._agent, self._context, self._port = agent, context, port
        self._stack = contextlib.ExitStack()
        self._served: tuple[TrialServers, Path] | None = None

    async def reply(self, context: TrialContext) -> AgentReply:
        if self._served is None:
            self._served = await self._agent.serve(self._context, self._port, self._stack)
        servers, config = self._served
        return await self._agent.play(context, servers, config)

    async def aclose(self) -> None:
        self._stack.close()


def _stdin(context: TrialContext) -> Any:
    """The task's input; in a conversation, its messages so far."""
    if context.turn is None:
        return context.input
    return [dict(message) for message in context.messages]


async def _feed(proc: Any, data: bytes) -> None:
    """The input, then end of input; an agent that does not read it is not an error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.close()


async def _read_bounded(stream: Any) -> bytes:
    out = bytearray()
    while chunk := await stream.read(65536):
        out.extend(chunk)
        if len(out) > MAX_STDOUT_BYTES:
            raise McpAgentError(f"the agent wrote more than {MAX_STDOUT_BYTES} bytes to stdout")
    return bytes(out)


def _output(stdout: bytes) -> Any:
    text = stdout.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text.removesuffix("\n").removesuffix("\r")
