"""The runner's front door: run a suite, or resume a run, with one call.

A resume goes through :func:`reopen` — for the command line and the host alike — which
restores the run exactly as it was started (its stored suite and fixture source) or ends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..agents import Agent, resolve_agent
from ..core import OpenwopEvalError, SuiteError
from ..core.rubric import Judge
from ..store import RunRecord, Store
from ..suitefile import LoadedSuite, load_suite, parse_suite, suite_document
from .ending import SOURCE_LOST, SUITE_LOST, RunFailure, end_run, settle_logged_end
from .fixtures import FixtureSource, FixtureSourceError, Recording
from .run import Execution, Observer, RunOptions, RunResult, resume_run, start_run
from .tools import LiveTool


class RunError(OpenwopEvalError):
    """A run cannot start or resume (unknown run, finished run, missing judge…)."""


class RunEndedError(RunError):
    """A run that could not be restored as it was started, and was ended as failed."""

    def __init__(self, run_id: str, failure: RunFailure) -> None:
        super().__init__(f"run {run_id} was ended as failed: {failure.message}")
        self.run_id, self.failure = run_id, failure


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

    ``recording`` (responses recorded in earlier runs, per task) answers the tool calls of
    the tasks it names, in place of the suite's fixtures; it is stored with the run, so a
    resume serves it again. ``agent_spec`` is recorded so the run can be resumed without
    naming the agent again; it defaults to ``agent`` when that is a specification string.
    """
    options = options or RunOptions()
    loaded = suite if isinstance(suite, LoadedSuite) else load_suite(suite)
    spec = (
        agent if isinstance(agent, str) else (agent_spec or f"python-object:{type(agent).__name__}")
    )
    fixtures = FixtureSource(recording, options.live_shadow)
    check_runnable(loaded, fixtures, options, judge)
    resolved = (
        resolve_agent(agent, threads=options.concurrency) if isinstance(agent, str) else agent
    )
    execution = Execution(
        store or Store(), loaded, resolved, options, judge, live_tools, fixtures, observer, events
    )
    try:
        return await start_run(execution, suite_document(loaded.suite), spec)
    finally:
        _close(resolved)


@dataclass(frozen=True)
class Reopened:
    """An unfinished run as it was started: its record, suite and fixture source."""

    run: RunRecord
    loaded: LoadedSuite
    fixtures: FixtureSource


def reopen(store: Store, run_id: str) -> Reopened:
    """Restore an unfinished run from the store, the one way every resume starts.

    Raises :class:`RunError` when there is nothing to resume, and :class:`RunEndedError` —
    after ending the run as failed — when its suite or fixture source cannot be read back:
    continuing it on anything else could change its verdict.
    """
    run = store.get_run(run_id)
    if run is None:
        raise RunError(f"no run {run_id!r} in the store at {store.url}")
    settled = None if run.terminal else settle_logged_end(store, run_id)
    if run.terminal or settled is not None:
        status = settled or run.status
        raise RunError(f"run {run_id} is already {status}; there is nothing to resume")
    try:
        loaded = parse_suite(run.suite_doc, source=f"run {run_id}")
    except SuiteError:
        raise _ended(store, run_id, SUITE_LOST) from None
    try:
        fixtures = FixtureSource.from_json(run.fixture_source)
    except FixtureSourceError:
        raise _ended(store, run_id, SOURCE_LOST) from None
    return Reopened(run, loaded, fixtures)


def _ended(store: Store, run_id: str, failure: RunFailure) -> RunEndedError:
    end_run(store, run_id, "failed", failure)
    return RunEndedError(run_id, failure)


async def resume_async(
    run_id: str,
    *,
    store: Store | None = None,
    agent: Agent | str | None = None,
    options: RunOptions | None = None,
    judge: Judge | None = None,
    live_tools: Mapping[str, LiveTool] | None = None,
    observer: Observer | None = None,
    events: IO[str] | None = None,
) -> RunResult:
    """Run only the trials a run is missing, on the fixtures it started with, then grade it
    as a whole."""
    store = store or Store()
    reopened = reopen(store, run_id)
    run = reopened.run
    saved: dict[str, Any] = dict(run.options)
    options = options or RunOptions(
        **{k: v for k, v in saved.items() if k in RunOptions.__dataclass_fields__}
    )
    chosen = agent if agent is not None else run.agent_spec
    if isinstance(chosen, str) and chosen.startswith("python-object:"):
        raise RunError(f"run {run_id} was started with an in-process agent; pass the agent again")
    check_runnable(reopened.loaded, reopened.fixtures, options, judge)
    resolved = (
        resolve_agent(chosen, threads=options.concurrency) if isinstance(chosen, str) else chosen
    )
    execution = Execution(
        store,
        reopened.loaded,
        resolved,
        options,
        judge,
        live_tools,
        reopened.fixtures,
        observer,
        events,
    )
    try:
        return await resume_run(execution, run)
    finally:
        _close(resolved)


def run_suite(suite: LoadedSuite | str | Path, agent: Agent | str, **kwargs: Any) -> RunResult:
    """Blocking :func:`run_suite_async`, for scripts and notebooks without an event loop."""
    return asyncio.run(run_suite_async(suite, agent, **kwargs))


def check_runnable(
    loaded: LoadedSuite, fixtures: FixtureSource, options: RunOptions, judge: Judge | None
) -> None:
    """What a run needs beyond a valid suite: a judge for rubric tasks, a mode for
    live-shadow, a positive concurrency."""
    suite = loaded.suite
    rubric_tasks = [t.task_id for t in suite.tasks if t.expected.kind == "rubric"]
    if rubric_tasks and judge is None:
        raise RunError(
            f"tasks {', '.join(rubric_tasks)} are rubric tasks; choose a judge"
            " (--judge scripted:FILE or --judge openai:MODEL)"
        )
    if fixtures.live_shadow and "live-shadow" not in suite.modes:
        raise RunError("live-shadow runs need a suite whose modes include live-shadow")
    if options.concurrency < 1:
        raise RunError("concurrency must be at least 1")


def _close(agent: Agent) -> None:
    close = getattr(agent, "close", None)
    if callable(close):
        close()
