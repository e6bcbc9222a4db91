"""Agents under evaluation: a Python callable, a scripted agent file, a subprocess, or a model
behind an OpenAI-compatible endpoint."""

from ..base.errors import InfrastructureError
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
from .openai_agent import OpenAIAgent, OpenAIAgentError, OpenAIAgentOptions
from .resolve import absolute_spec, resolve_agent
from .tool_catalog import Price, ToolCatalog, ToolSpec, function_name, parse_price

__all__ = [
    "Agent",
    "AgentProtocolError",
    "AgentReply",
    "AgentSpecError",
    "AsyncTools",
    "InfrastructureError",
    "OpenAIAgent",
    "OpenAIAgentError",
    "OpenAIAgentOptions",
    "Price",
    "SyncTools",
    "ToolCallError",
    "ToolCatalog",
    "ToolMissError",
    "ToolSpec",
    "TrialContext",
    "absolute_spec",
    "function_name",
    "parse_price",
    "resolve_agent",
]
