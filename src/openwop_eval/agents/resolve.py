"""From an ``--agent`` string to an agent."""

from __future__ import annotations

from pathlib import Path

from .a2a import A2AAgent, CredentialVariables
from .base import Agent, AgentSpecError
from .command import CommandAgent
from .mcp import McpAgent, McpOptions
from .openai_agent import OpenAIAgent, OpenAIAgentOptions
from .python import PythonAgent, load_callable
from .scripted import ScriptedAgent


def resolve_agent(
    spec: str,
    *,
    agent_id: str | None = None,
    threads: int = 32,
    openai: OpenAIAgentOptions | None = None,
    mcp: McpOptions | None = None,
    a2a: CredentialVariables | None = None,
) -> Agent:
    """``scripted:PATH``, ``cmd:COMMAND``, ``mcp:COMMAND``, ``openai:MODEL`` (with
    ``openai``'s endpoint, tool catalog and prices; ``mcp:`` with ``mcp``'s transport and
    tool catalog), ``a2a:URL`` (credentials from the variables ``a2a`` names, by default
    the standard ones: ``docs/a2a.md``),
    ``package.module:function`` or ``file.py:function``."""
    agent: Agent
    if openai is not None and not spec.startswith("openai:"):
        raise AgentSpecError(
            "the endpoint, API, API key, tool catalog and prices are for an openai:MODEL agent only"
        )
    if mcp is not None and not spec.startswith("mcp:"):
        raise AgentSpecError("the MCP transport is for an mcp:COMMAND agent only")
    if a2a is not None and not spec.startswith("a2a:"):
        raise AgentSpecError("credential variables are for an a2a:URL agent only")
    if spec.startswith("openai:"):
        agent = OpenAIAgent.from_options(spec.removeprefix("openai:"), openai)
    elif spec.startswith("scripted:"):
        agent = ScriptedAgent.from_file(spec.removeprefix("scripted:"))
    elif spec.startswith("mcp:"):
        command = spec.removeprefix("mcp:").strip()
        if not command:
            raise AgentSpecError("mcp: needs a command, e.g. mcp:'python agent.py {mcp_config}'")
        agent = McpAgent.from_options(command, mcp)
    elif spec.startswith("a2a:"):
        agent = A2AAgent.from_url(spec.removeprefix("a2a:"), variables=a2a)
    elif spec.startswith("cmd:"):
        command = spec.removeprefix("cmd:").strip()
        if not command:
            raise AgentSpecError("cmd: needs a command, e.g. cmd:'python agent.py'")
        agent = CommandAgent(command)
    else:
        agent = PythonAgent(load_callable(spec), spec, threads)
    if agent_id is not None:
        agent.agent_id = agent_id
    return agent


def absolute_spec(spec: str, base: Path | None = None) -> str:
    """The spec with its file paths made absolute (against ``base``, else the working
    directory), so it means the same from anywhere: ``scripted:PATH`` and ``file.py:fn``."""
    root = base or Path.cwd()
    if spec.startswith(("openai:", "cmd:", "mcp:", "a2a:")):
        return spec  # a model name, a shell command and a URL are not paths
    if spec.startswith("scripted:"):
        return "scripted:" + str((root / spec.removeprefix("scripted:")).resolve())
    target, sep, attribute = spec.rpartition(":")
    if sep and target.endswith(".py"):
        return f"{(root / target).resolve()}:{attribute}"
    return spec
