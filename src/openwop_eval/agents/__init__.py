"""Agents under evaluation: a Python callable, a scripted agent file, or a subprocess."""

from .base import (
    Agent,
    AgentProtocolError,
    AgentReply,
    AgentSpecError,
    AsyncTools,
    SyncTools,
    ToolCallError,
    ToolMissError,
    TrialContext,
)
from .resolve import absolute_spec, resolve_agent

__all__ = [
    "Agent",
    "AgentProtocolError",
    "AgentReply",
    "AgentSpecError",
    "AsyncTools",
    "SyncTools",
    "ToolCallError",
    "ToolMissError",
    "TrialContext",
    "absolute_spec",
    "resolve_agent",
]
