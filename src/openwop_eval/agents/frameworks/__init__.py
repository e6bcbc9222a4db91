"""Agents built with a framework, evaluated unchanged: ``--agent myapp.agents:triage`` may
name an OpenAI Agents SDK ``Agent``, a LangGraph graph or a Pydantic AI ``Agent`` object.

An adapter runs the team's object as it is, with one difference: each tool invocation the
framework makes goes to the trial's tool boundary (``await tools.call(name, args)``) under the
tool's own name instead of running the tool's function, so fixtures, misses, live tools and
trajectories apply exactly as to any agent. A framework's tool names are renamed to the
suite's by the run's tool map (``--tool-map``), as for every agent form.

In a conversation task an adapted agent keeps the framework's own history of the conversation
(:func:`conversation_of`): each turn gives the framework the turns before it in the framework's
form — with their tool calls and results — and the user's new message.

Each framework is an optional extra (``openwop-eval[agents-sdk]``, ``[langgraph]``,
``[pydantic-ai]``) imported only when an object of it is given: an object is recognized by its
type's module, so recognizing it imports nothing.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable
from typing import Any

from ..base import AsyncTools

FrameworkAgent = Callable[[Any, AsyncTools], Awaitable[Any]]
"""What an adapter gives back: an ``async`` Python agent ``(input, tools) -> output``."""
Start = Callable[[], FrameworkAgent]
"""What starts one conversation: the ``async`` agent that plays its turns, in order."""

_CONVERSATION = "__openwop_eval_conversation__"
"""The attribute of an adapted agent holding its :data:`Start`."""

ADAPTERS: tuple[tuple[str, str], ...] = (
    ("agents", "openai_agents_sdk"),
    ("langgraph", "langgraph_agent"),
    ("langchain", "langgraph_agent"),
    ("pydantic_ai", "pydantic_ai_agent"),
)
"""(the root package of a framework's types, the adapter module here that takes them)."""


def adapt(obj: object) -> FrameworkAgent | None:
    """The Python agent that runs ``obj`` through the trial's tool boundary, or ``None`` when
    ``obj`` is of no framework an adapter knows (then it must be a callable agent)."""
    root = type(obj).__module__.partition(".")[0]
    for framework, module in ADAPTERS:
        if root == framework:
            try:  # a package of the user's may share a framework's name: then it is none
                adapter = importlib.import_module(f"{__name__}.{module}")
            except ImportError:
                return None
            found: FrameworkAgent | None = adapter.adapt(obj)
            if found is not None:
                return found
    return None


def conversing(agent: FrameworkAgent, start: Start) -> FrameworkAgent:
    """``agent``, marked as playing a conversation with what ``start`` gives."""
    setattr(agent, _CONVERSATION, start)
    return agent


def conversation_of(agent: Callable[..., Any]) -> FrameworkAgent | None:
    """For an adapted framework agent, a new conversation's ``async (messages, tools)`` agent,
    which keeps the framework's history of it across turns; None for any other callable."""
    start = getattr(agent, _CONVERSATION, None)
    return start() if callable(start) else None
