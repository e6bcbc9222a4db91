"""Agents built with a framework, evaluated unchanged: ``--agent myapp.agents:triage`` may
name an OpenAI Agents SDK ``Agent``, a LangGraph graph or a Pydantic AI ``Agent`` object.

An adapter runs the team's object as it is, with one difference: each tool invocation the
framework makes goes to the trial's tool boundary (``await tools.call(name, args)``) under the
tool's own name instead of running the tool's function, so fixtures, misses, live tools and
trajectories apply exactly as to any agent. A framework's tool names are renamed to the
suite's by the run's tool map (``--tool-map``), as for every agent form.

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
