"""A Python callable as an agent: ``package.module:function`` or ``path/to/file.py:function``.

The callable takes ``(input, tools)`` and returns the output, or an :class:`AgentReply` to
report cost and latency. An ``async def`` agent awaits ``tools.call(...)``; a plain function
runs in a worker thread and calls ``tools.call(...)`` synchronously.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .base import AgentReply, AgentSpecError, AsyncTools, SyncTools, ToolPort, TrialContext


def load_callable(spec: str) -> Callable[..., Any]:
    """Import ``module:attribute`` (a dotted module or a ``.py`` file) and return it."""
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
    if not callable(found):
        raise AgentSpecError(f"{spec} is not callable")
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
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise AgentSpecError(f"loading {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


class PythonAgent:
    """Runs a callable per trial; sync callables get a thread of their own."""

    def __init__(self, fn: Callable[..., Any], agent_id: str, threads: int = 32) -> None:
        self.fn = fn
        self.agent_id = agent_id
        self._threads = threads
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(context.input, AsyncTools(port, context))
        else:
            loop = asyncio.get_running_loop()
            tools = SyncTools(port, context, loop)
            result = await loop.run_in_executor(self._pool(), self.fn, context.input, tools)
            if inspect.isawaitable(result):
                result = await result
        return result if isinstance(result, AgentReply) else AgentReply(result)

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._threads, thread_name_prefix="agent")
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
