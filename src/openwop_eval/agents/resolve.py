"""From an ``--agent`` string to an agent."""

from __future__ import annotations

from .base import Agent, AgentSpecError
from .command import CommandAgent
from .python import PythonAgent, load_callable
from .scripted import ScriptedAgent


def resolve_agent(spec: str, *, agent_id: str | None = None, threads: int = 32) -> Agent:
    """``scripted:PATH``, ``cmd:COMMAND``, ``package.module:function`` or ``file.py:function``."""
    agent: Agent
    if spec.startswith("scripted:"):
        agent = ScriptedAgent.from_file(spec.removeprefix("scripted:"))
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
