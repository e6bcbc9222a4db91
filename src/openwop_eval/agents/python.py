"""A Python callable as an agent: ``package.module:function`` or ``path/to/file.py:function``.

The callable takes ``(input, tools)`` — in a conversation task ``(messages, tools)``, once per
turn, with the OpenAI-style messages so far — and returns the output, or an :class:`AgentReply` to
report cost and latency. An ``async def`` agent awaits ``tools.call(...)``; a plain function
runs in a thread of its own and calls ``tools.call(...)`` synchronously. The attribute may
also be an agent object of a framework an adapter knows (:mod:`.frameworks`), run unchanged
through the tool boundary.

A plain function's call gets a new thread, not one of a shared pool: a call that never
returns (its trial ends on its timeout) holds no thread another trial needs. Such a call
cannot be killed; it is counted as abandoned until it returns, and past
``MAX_ABANDONED_CALLS`` of them the agent's next trial ends its run (:class:`AgentStalledError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from .base import (
    AgentReply,
    AgentSpecError,
    AsyncTools,
    Conversation,
    SyncTools,
    ToolPort,
    TrialContext,
)
from .frameworks import adapt, conversation_of
from .mcp.servers import TrialMcp

MAX_ABANDONED_CALLS: Final = 16
"""Calls of a plain-function agent still running after their trials ended (timed out), per
agent and process. At the bound, the agent's next trial fails its run (``agent_stalled``)
instead of starting one more thread that may never end."""


class AgentStalledError(RuntimeError):
    """The agent cannot be run without harming other runs: it left too many calls running
    past their trials' timeouts, or blocked the event loop it shares. Not a trial's error:
    the run fails with the content-free ``agent_stalled``."""


def load_callable(spec: str) -> Callable[..., Any]:
    """Import ``module:attribute`` (a dotted module or a ``.py`` file) and return it: the
    agent it names, a framework's agent object adapted (:func:`.frameworks.adapt`)."""
    target, sep, attribute = spec.rpartition(":")
    if not sep or not target or not attribute:
        raise AgentSpecError(
            f"{spec!r} is not an agent: expected package.module:function, path/to/file.py:function,"
            " scripted:PATH or cmd:COMMAND"
        )
    module = load_module_file(Path(target)) if target.endswith(".py") else _import(target)
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise AgentSpecError(f"{target} has no attribute {attribute!r}")
    adapted = adapt(found)
    if adapted is not None:
        return adapted
    if not callable(found):
        raise AgentSpecError(
            f"{spec} is not callable, nor an agent object of a framework openwop-eval adapts"
            " (OpenAI Agents SDK, LangGraph, Pydantic AI)"
        )
    return found  # type: ignore[no-any-return]


def _import(name: str) -> Any:
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # like `python -m`: the working directory imports
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise AgentSpecError(f"cannot import {name}: {exc}") from exc


def load_module_file(path: Path) -> Any:
    if not path.is_file():
        raise AgentSpecError(f"no such file: {path}")
    name = f"openwop_eval_agent_{abs(hash(path.resolve()))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise AgentSpecError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    folder = str(path.resolve().parent)
    added = folder not in sys.path
    if added:  # as `python path/to/file.py` would: the modules beside it import
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise AgentSpecError(f"loading {path} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        if added:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)
    return module


class PythonAgent:
    """Runs a callable per trial; sync callables get a thread of their own per call."""

    def __init__(self, fn: Callable[..., Any], agent_id: str, threads: int = 32) -> None:
        self.fn = fn
        self.agent_id = agent_id
        self.abandoned = 0
        """Calls still running whose trials ended without them."""
        self._lock = threading.Lock()

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        mcp = TrialMcp(context, port, asyncio.get_running_loop())
        try:
            return await self.turn(context, port, mcp)
        finally:
            mcp.close()  # its servers end with the trial, whatever the agent left open

    def converse(self, context: TrialContext, port: ToolPort) -> Conversation:
        """A conversation: one call per turn with the messages so far, and the same MCP
        servers for every turn (they end with the conversation). An adapted framework agent
        plays it with its own history of it (:func:`.frameworks.conversation_of`)."""
        mcp = TrialMcp(context, port, asyncio.get_running_loop())
        return _Conversation(self, port, mcp, conversation_of(self.fn))

    async def turn(
        self,
        context: TrialContext,
        port: ToolPort,
        mcp: TrialMcp,
        fn: Callable[..., Any] | None = None,
    ) -> AgentReply:
        """One call of the callable (or of ``fn``, a conversation's own): with the input, or a
        conversation's messages so far."""
        fn = self.fn if fn is None else fn
        if inspect.iscoroutinefunction(fn):
            result = await fn(_argument(context), AsyncTools(port, context, mcp))
        else:
            result = await self._in_thread(fn, context, port, mcp)
            if inspect.isawaitable(result):
                result = await result
        return result if isinstance(result, AgentReply) else AgentReply(result)

    async def _in_thread(
        self, fn: Callable[..., Any], context: TrialContext, port: ToolPort, mcp: TrialMcp
    ) -> Any:
        if self.abandoned >= MAX_ABANDONED_CALLS:
            raise AgentStalledError(
                f"{self.abandoned} calls of the agent are still running past their timeouts"
            )
        loop = asyncio.get_running_loop()
        tools = SyncTools(port, context, loop, mcp)
        answer: asyncio.Future[tuple[bool, Any]] = loop.create_future()
        state = {"finished": False, "abandoned": False}

        def call() -> None:
            try:
                outcome: tuple[bool, Any] = (True, fn(_argument(context), tools))
            except BaseException as exc:  # the trial's, raised there
                outcome = (False, exc)
            with self._lock:
                state["finished"] = True
                if state["abandoned"]:
                    self.abandoned -= 1
            with contextlib.suppress(RuntimeError):  # the loop has closed
                loop.call_soon_threadsafe(_settle, answer, outcome)

        threading.Thread(target=call, name="openwop-eval-agent", daemon=True).start()
        try:
            ok, value = await answer
        except asyncio.CancelledError:  # the trial's timeout, or the run cancelled
            with self._lock:
                if not state["finished"]:
                    state["abandoned"] = True
                    self.abandoned += 1
            raise
        if not ok:
            raise value if isinstance(value, Exception) else RuntimeError(type(value).__name__)
        return value

    def __getstate__(self) -> dict[str, Any]:  # sent to other processes (Ray) without its lock
        return {"fn": self.fn, "agent_id": self.agent_id}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.fn, self.agent_id, self.abandoned = state["fn"], state["agent_id"], 0
        self._lock = threading.Lock()

    def close(self) -> None:
        """Nothing to release: each call's thread ends with the call."""


def _argument(context: TrialContext) -> Any:
    """What the callable is called with: the task's input, or in a conversation the messages
    so far (OpenAI-style, a fresh list each turn: the agent may keep or change it)."""
    if context.turn is None:
        return context.input
    return [dict(message) for message in context.messages]


class _Conversation:
    def __init__(
        self, agent: PythonAgent, port: ToolPort, mcp: TrialMcp, fn: Callable[..., Any] | None
    ) -> None:
        self._agent, self._port, self._mcp, self._fn = agent, port, mcp, fn

    async def reply(self, context: TrialContext) -> AgentReply:
        return await self._agent.turn(context, self._port, self._mcp, self._fn)

    async def aclose(self) -> None:
        self._mcp.close()


def _settle(answer: asyncio.Future[tuple[bool, Any]], outcome: tuple[bool, Any]) -> None:
    if not answer.done():
        answer.set_result(outcome)
