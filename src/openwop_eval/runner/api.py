"""The runner's front door: run a suite (or resume a run) with one call."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from ..agents import Agent, resolve_agent
from ..core import OpenwopEvalError
from ..core.rubric import Judge
from ..store import Store
from ..suitefile import LoadedSuite, load_suite, parse_suite
from .run import Execution, Observer, Recording, RunOptions, RunResult, resume_run, start_run
from .tools import LiveTool


class RunError(OpenwopEvalError):
    """A run cannot start or resume (unknown run, finished run, missing judge…)."""


async def run_suite_async(
    suite: LoadedSuite | str | Path,
    agent: Agent | str,
    *,
    store: Store | None = None,
    options: RunOptions | None = None,
    judge: Judge | None = None,
    live_tools: Mapping[str, LiveTool] | None = None,
    recording: Recording | None = None,
    observer: Observer | None = None,
    events: IO[str] | None = None,
    agent_spec: str | None = None,
) -> RunResult:
    """Run every trial of every task of ``suite`` against ``agent`` and grade the run.

    ``agent_spec`` is recorded so the run can be resumed without naming the agent again;
    it defaults to ``agent`` when that is a specification string.
    """
    options = options or RunOptions()
    loaded = suite if isinstance(suite, LoadedSuite) else load_suite(suite)
    spec = (
        agent if isinstance(agent, str) else (agent_spec or f"python-object:{type(agent).__name__}")
    )
    resolved = (
        resolve_agent(agent, threads=options.concurrency) if isinstance(agent, str) else agent
    )
    _check(loaded, options, judge)
    execution = Execution(
        store or Store(), loaded, resolved, options, judge, live_tools, recording, observer, events
    )
    try:
        doc = loaded.suite.model_dump(by_alias=True, exclude_none=True, mode="json")
        return await start_run(execution, doc, spec)
    finally:
        _close(resolved)


async def resume_async(
    run_id: str,
    *,
    store: Store | None = None,
    agent: Agent | str | None = None,
    options: RunOptions | None = None,
    judge: Judge | None = None,
    live_tools: Mapping[str, LiveTool] | None = None,
    recording: Recording | None = None,
    observer: Observer | None = None,
    events: IO[str] | None = None,
) -> RunResult:
    """Run only the trials a run is missing, then grade it as a whole."""
    store = store or Store()
    run = store.get_run(run_id)
    if run is None:
        raise RunError(f"no run {run_id!r} in the store at {store.url}")
    if run.terminal:
        raise RunError(f"run {run_id} is already {run.status}; there is nothing to resume")
    saved: dict[str, Any] = dict(run.options)
    options = options or RunOptions(
        **{k: v for k, v in saved.items() if k in RunOptions.__dataclass_fields__}
    )
    loaded = parse_suite(run.suite_doc, source=f"run {run_id}")
    chosen = agent if agent is not None else run.agent_spec
    if isinstance(chosen, str) and chosen.startswith("python-object:"):
        raise RunError(f"run {run_id} was started with an in-process agent; pass the agent again")
    resolved = (
        resolve_agent(chosen, threads=options.concurrency) if isinstance(chosen, str) else chosen
    )
    _check(loaded, options, judge)
    execution = Execution(
        store, loaded, resolved, options, judge, live_tools, recording, observer, events
    )
    try:
        return await resume_run(execution, run)
    finally:
        _close(resolved)


def run_suite(suite: LoadedSuite | str | Path, agent: Agent | str, **kwargs: Any) -> RunResult:
    """Blocking :func:`run_suite_async`, for scripts and notebooks without an event loop."""
    return asyncio.run(run_suite_async(suite, agent, **kwargs))


def _check(loaded: LoadedSuite, options: RunOptions, judge: Judge | None) -> None:
    suite = loaded.suite
    rubric_tasks = [t.task_id for t in suite.tasks if t.expected.kind == "rubric"]
    if rubric_tasks and judge is None:
        raise RunError(
            f"tasks {', '.join(rubric_tasks)} are rubric tasks; choose a judge"
            " (--judge scripted:FILE or --judge openai:MODEL)"
        )
    if options.live_shadow and "live-shadow" not in suite.modes:
        raise RunError("live-shadow runs need a suite whose modes include live-shadow")
    if options.concurrency < 1:
        raise RunError("concurrency must be at least 1")


def _close(agent: Agent) -> None:
    close = getattr(agent, "close", None)
    if callable(close):
        close()
