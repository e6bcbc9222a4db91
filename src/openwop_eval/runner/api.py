"""The runner's one door: a :class:`RunRequest` and the :class:`RunService` that starts it,
resumes it and cancels it — for the command line and the host alike.

A run is everything that decides its verdict — suite, agent, fixture source, options — and
is stored with all of it when it starts. A resume goes through :meth:`RunService.reopen`,
which restores the run exactly as it was started from the store, or ends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import IO, Any

from ..agents import Agent, resolve_agent
from ..core import SuiteError
from ..core.plan import RunTerms
from ..core.records import Recording
from ..core.rubric import Judge
from ..core.safety import SafetyPolicy
from ..log.names import EVAL_STARTED
from ..log.terms import terms_of
from ..store import RunRecord, Store
from ..store.leases import Lease
from ..store.sql import Within
from ..suitefile import LoadedSuite, load_suite, parse_suite, suite_document
from .ending import SOURCE_LOST, SUITE_LOST, RunFailure, end_run, settle_logged_end
from .fixtures import FixtureSource, FixtureSourceError
from .result import RunError, RunResult
from .run import (
    Execution,
    Observer,
    RunOptions,
    TrialExecutor,
    execute_run,
    prepare_run,
    reopen_run,
)
from .safety import policy_from_json
from .tools import LiveTool

Sealer = Callable[[RunRecord, dict[str, Any]], str]
"""A host's seal of a run (as created) completed with a summary."""


class RunEndedError(RunError):
    """A run that could not be restored as it was started, and was ended as failed."""

    def __init__(self, run_id: str, failure: RunFailure) -> None:
        super().__init__(f"run {run_id} was ended as failed: {failure.message}")
        self.run_id, self.failure = run_id, failure


@dataclass(frozen=True)
class RunRequest:
    """What a run is: the suite, the agent, what answers its tools, and how to run it."""

    suite: LoadedSuite
    agent: Agent
    agent_spec: str
    """Recorded, so the run can be resumed without naming the agent again."""
    options: RunOptions = field(default_factory=RunOptions)
    fixtures: FixtureSource = field(default_factory=FixtureSource)
    judge: Judge | None = None
    live_tools: Mapping[str, LiveTool] | None = None
    owner: dict[str, Any] | None = None
    """The ``run.started`` owner (a host's caller)."""
    metadata: Mapping[str, Any] | None = None
    """Recorded with the run's options (a host's ``evalSuiteRef``, ``fixtureRuns``)."""
    terms: RunTerms = field(default_factory=RunTerms)
    """The modes in effect (default: the suite's), the baseline, the safety bar."""
    safety: SafetyPolicy | None = None
    """What an adversarial run's detectors look for (default: the built-in policy)."""
    executor: TrialExecutor | None = None
    """Where the trials play (a Ray executor); None: in process. A resume chooses afresh."""
    agent_version: str | None = None
    """The agent's version (a host's): stored with the run, echoed in ``eval.started``."""
    on_create: Callable[[str], Within | None] | None = None
    """For the new run's id, writes made in the transaction that creates it."""


@dataclass(frozen=True)
class Reopened:
    """An unfinished run as it was started: its record, suite and fixture source."""

    run: RunRecord
    loaded: LoadedSuite
    fixtures: FixtureSource
    terms: RunTerms = field(default_factory=RunTerms)
    """As its ``eval.started`` records them."""
    safety: SafetyPolicy | None = None


@dataclass
class ActiveRun:
    """A run ready to execute: await :meth:`execute`; :meth:`cancel` ends it as cancelled,
    :meth:`stop` leaves it open for a later resume (a host shutting down)."""

    run: RunRecord
    execution: Execution
    _task: asyncio.Task[Any] | None = None
    _cancelled: bool = False

    @property
    def run_id(self) -> str:
        return self.run.run_id

    async def execute(self) -> RunResult:
        self._task = asyncio.current_task()
        if self._cancelled and self._task is not None:
            self._task.cancel()  # asked before it began: it ends at its first step
        return await execute_run(self.execution, self.run_id)

    def stop(self) -> None:
        self.execution.stopping = True
        self.cancel()

    def cancel(self) -> None:
        """End the run as cancelled, keeping its finished trials (or, after :meth:`stop`,
        leave it open)."""
        self._cancelled = True
        if self._task is not None:
            self._task.cancel()


class RunService:
    """Starts, resumes and ends runs on one store."""

    def __init__(
        self,
        store: Store,
        on_commit: Callable[[str], None] | None = None,
        lease: Lease | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        # lease: a host replica's; the runs this service starts and resumes are leased by it;
        # sealer: a host's, to seal each run it completes with its summary (evidence.py)
        self.store, self.on_commit, self.lease, self.sealer = store, on_commit, lease, sealer

    def start(
        self, request: RunRequest, observer: Observer | None = None, events: IO[str] | None = None
    ) -> ActiveRun:
        """Check the request, create the run with its opening events, and make it ready."""
        execution = self._execution(request, observer, events)
        run = prepare_run(
            execution,
            suite_document(request.suite.suite),
            request.agent_spec,
            request.owner,
            dict(request.metadata or {}),
            request.agent_version,
            request.on_create,
        )
        self._sealed(execution, run)
        return ActiveRun(run, execution)

    def _sealed(self, execution: Execution, run: RunRecord) -> None:
        if self.sealer is not None:  # the run as created is what its seal vouches for
            execution.seal = partial(self.sealer, run)

    def reopen(
        self, run_id: str, known: Callable[[RunRecord], LoadedSuite | None] | None = None
    ) -> Reopened:
        """Restore an unfinished run from the store, the one way every resume starts.

        Raises :class:`RunError` when there is nothing to resume, and
        :class:`RunEndedError` — after ending the run as failed — when its suite or fixture
        source cannot be read back: continuing it on anything else could change its verdict.
        ``known`` may give the run's suite already parsed — only if its document is exactly
        the run's stored one (a host's catalog suite): parsing a large suite takes a while.
        """
        run = self.store.get_run(run_id)
        if run is None:
            raise RunError(f"no run {run_id!r} in the store at {self.store.url}")
        settled = None if run.terminal else settle_logged_end(self.store, run_id)
        if run.terminal or settled is not None:
            status = settled or run.status
            raise RunError(f"run {run_id} is already {status}; there is nothing to resume")
        loaded = known(run) if known is not None else None
        try:
            loaded = loaded or parse_suite(run.suite_doc, source=f"run {run_id}")
        except SuiteError:
            raise self._ended(run_id, SUITE_LOST) from None
        try:
            fixtures = FixtureSource.from_json(run.fixture_source)
        except FixtureSourceError:
            raise self._ended(run_id, SOURCE_LOST) from None
        terms = terms_of(_eval_started(self.store.events(run_id, limit=8)), [])
        safety = policy_from_json(run.options.get("safety")) if "safety" in run.options else None
        return Reopened(run, loaded, fixtures, terms, safety)

    def resume(
        self,
        reopened: Reopened,
        agent: Agent,
        options: RunOptions,
        judge: Judge | None = None,
        live_tools: Mapping[str, LiveTool] | None = None,
        observer: Observer | None = None,
        events: IO[str] | None = None,
        executor: TrialExecutor | None = None,
    ) -> ActiveRun:
        """Make a reopened run ready again, on the suite and fixtures it was started with;
        only the agent's wiring (and concurrency, timeouts, the executor) may be given
        afresh."""
        run = reopened.run
        request = RunRequest(
            reopened.loaded,
            agent,
            run.agent_spec,
            options,
            reopened.fixtures,
            judge,
            live_tools,
            terms=reopened.terms,
            safety=reopened.safety,
            executor=executor,
        )
        execution = self._execution(request, observer, events)
        reopen_run(execution, run)
        self._sealed(execution, run)
        return ActiveRun(run, execution)

    def fail(self, run_id: str, failure: RunFailure) -> bool:
        """End an unfinished run that cannot go on; False if even that could not be stored."""
        return end_run(self.store, run_id, "failed", failure)

    def _ended(self, run_id: str, failure: RunFailure) -> RunEndedError:
        self.fail(run_id, failure)
        return RunEndedError(run_id, failure)

    def _execution(
        self, request: RunRequest, observer: Observer | None, events: IO[str] | None
    ) -> Execution:
        check_runnable(request)
        # An executor that sends trials elsewhere checks it can, before anything is stored.
        prepare = getattr(request.executor, "prepare", None)
        if callable(prepare):
            prepare(request.agent, request.judge, request.live_tools)
        return Execution(
            self.store,
            request.suite,
            request.agent,
            request.options,
            request.judge,
            request.live_tools,
            request.fixtures,
            observer,
            events,
            self.on_commit,
            terms=request.terms,
            safety=request.safety,
            executor=request.executor,
            lease=self.lease,
        )


def _eval_started(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    payload = next((d.get("payload") for d in docs if d.get("type") == EVAL_STARTED), None)
    return payload if isinstance(payload, dict) else None


def check_runnable(request: RunRequest) -> None:
    """What a run needs beyond a valid suite: a judge for rubric tasks, a mode for
    live-shadow, a positive concurrency."""
    suite = request.suite.suite
    rubric_tasks = [t.task_id for t in suite.tasks if t.expected.kind == "rubric"]
    if rubric_tasks and request.judge is None:
        raise RunError(
            f"tasks {', '.join(rubric_tasks)} are rubric tasks; choose a judge"
            " (scripted:FILE or openai:MODEL)"
        )
    if request.fixtures.live_shadow and "live-shadow" not in suite.modes:
        raise RunError("live-shadow runs need a suite whose modes include live-shadow")
    if request.options.concurrency < 1:
        raise RunError("concurrency must be at least 1")
    try:
        request.options.slice  # noqa: B018 (parsed to be checked)
    except ValueError as exc:
        raise RunError(str(exc)) from None
    modes = request.terms.modes
    if modes is not None and not set(modes) <= set(suite.modes):
        raise RunError(f"modes {sorted(set(modes) - set(suite.modes))} are not the suite's")
    effective = request.terms.modes_of(suite)
    if request.terms.baseline is not None and "regression" not in effective:
        raise RunError("a baseline needs a suite whose modes include regression")
    if request.terms.fail_on_severity is not None and "adversarial" not in effective:
        raise RunError("failing on a finding's severity needs the adversarial mode")


# --- the convenience functions of the library -------------------------------------------


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
    terms: RunTerms | None = None,
    safety: SafetyPolicy | None = None,
    executor: TrialExecutor | None = None,
) -> RunResult:
    """Run every trial of every task of ``suite`` against ``agent`` and grade the run.

    ``recording`` (responses recorded in earlier runs, per task) answers the tool calls of
    the tasks it names, in place of the suite's fixtures; it is stored with the run, so a
    resume serves it again. ``agent_spec`` is recorded so the run can be resumed without
    naming the agent again; it defaults to ``agent`` when that is a specification string.
    ``terms`` give a regression run its baseline and an adversarial run its safety bar;
    ``safety`` what its detectors look for. ``executor`` plays the trials elsewhere (a
    :class:`~.ray_executor.RayExecutor`); by default they play in this process.
    """
    options = options or RunOptions()
    loaded = suite if isinstance(suite, LoadedSuite) else load_suite(suite)
    spec = (
        agent if isinstance(agent, str) else (agent_spec or f"python-object:{type(agent).__name__}")
    )
    resolved = (
        resolve_agent(agent, threads=options.concurrency) if isinstance(agent, str) else agent
    )
    fixtures = FixtureSource(recording, options.live_shadow)
    request = RunRequest(
        loaded,
        resolved,
        spec,
        options,
        fixtures,
        judge,
        live_tools,
        terms=terms or RunTerms(),
        safety=safety,
        executor=executor,
    )
    try:
        active = RunService(store or Store()).start(request, observer, events)
        return await active.execute()
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
    observer: Observer | None = None,
    events: IO[str] | None = None,
    executor: TrialExecutor | None = None,
) -> RunResult:
    """Run only the trials a run is missing, on the fixtures it started with, then grade it
    as a whole (its trials played by ``executor``, by default in this process)."""
    service = RunService(store or Store())
    reopened = service.reopen(run_id)
    saved = reopened.run.options
    options = options or RunOptions(
        **{k: v for k, v in saved.items() if k in RunOptions.__dataclass_fields__}
    )
    # A shard stays its slice: new options change how it runs, never which trials are its.
    options = replace(options, shard=saved.get("shard"))
    chosen = agent if agent is not None else reopened.run.agent_spec
    if isinstance(chosen, str) and chosen.startswith("python-object:"):
        raise RunError(f"run {run_id} was started with an in-process agent; pass the agent again")
    resolved = (
        resolve_agent(chosen, threads=options.concurrency) if isinstance(chosen, str) else chosen
    )
    try:
        active = service.resume(
            reopened, resolved, options, judge, live_tools, observer, events, executor
        )
        return await active.execute()
    finally:
        _close(resolved)


def run_suite(suite: LoadedSuite | str | Path, agent: Agent | str, **kwargs: Any) -> RunResult:
    """Blocking :func:`run_suite_async`, for scripts and notebooks without an event loop."""
    return asyncio.run(run_suite_async(suite, agent, **kwargs))


def _close(agent: Agent) -> None:
    close = getattr(agent, "close", None)
    if callable(close):
        close()
