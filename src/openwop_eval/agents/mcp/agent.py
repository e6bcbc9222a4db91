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
from ..base import AgentReply, AgentSpecError, ToolPort, TrialContext
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
        with hub.serving(trial) as servers, tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "mcp.json"
            config.write_text(json.dumps(servers.config(self.transport), indent=2) + "\n")
            return await self._play(context, servers, config)

    async def _play(self, context: TrialContext, servers: TrialServers, config: Path) -> AgentReply:
        command = self.command.replace("{mcp_config}", shlex.quote(str(config))).replace(
            "{mcp_url}", shlex.quote(servers.url)
        )
        env = {**os.environ, CONFIG_ENV: str(config), URL_ENV: servers.url}
        with kept_stderr() as kept:
            async with spawned(command, env, tail=kept) as (proc, stderr):
                await _feed(proc, json.dumps(context.input, ensure_ascii=False).encode())
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
