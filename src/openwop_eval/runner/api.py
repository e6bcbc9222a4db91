"""The runner's one door: the :class:`RunService` that starts a :class:`~.spec.RunSpec`,
resumes it and cancels it — for the command line and the host alike.

A run is everything that decides its verdict — suite, agent, fixture source, terms,
options — and is stored with all of it when it starts. A resume goes through
:meth:`RunService.reopen`, which restores the run exactly as it was started from the store,
or ends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import IO, Any

from ..agents import Agent, resolve_agent
from ..core import SuiteError
from ..core.plan import RunTerms
from ..core.problems import Problem
from ..core.records import Recording
from ..core.rubric import Judge
from ..core.safety import SafetyPolicy
from ..files.suites import LoadedSuite, load_suite, parse_suite, suite_document
from ..log.event_names import EVAL_STARTED
from ..log.terms import terms_of
from ..store import RunRecord, Store
from ..store.leases import Lease
from ..users import UserPlayers
from .active import ActiveRun as ActiveRun
from .active import Reopened as Reopened
from .active import RunEndedError as RunEndedError
from .active import SpecError as SpecError
from .ending import SOURCE_LOST, SUITE_LOST, RunFailure, end_run, settle_logged_end
from .findings import policy_from_json
from .fixtures import FixtureSource, FixtureSourceError
from .result import RunError as RunError
from .result import RunResult
from .run import (
    Execution,
    Observer,
    RunOptions,
    TrialExecutor,
    prepare_run,
    reopen_run,
)
from .spec import LiveTool, RunSpec, settle, validate

Sealer = Callable[[RunRecord, dict[str, Any]], str]
"""A host's seal of a run (as created) completed with a summary."""


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
        self, spec: RunSpec, observer: Observer | None = None, events: IO[str] | None = None
    ) -> ActiveRun:
        """Check the spec (:class:`SpecError`: its problems), create the run with its opening
        events, and make it ready; a spec that resumes a run goes on with it instead. An
        agent named only by ``agent_spec`` is resolved here, and closed if the run cannot
        start."""
        problems = validate(spec, self.store) if spec.resume is not None else []
        if problems:
            raise SpecError(problems)
        reopened = self.reopen(spec.resume) if spec.resume is not None else None
        stored = _stored_options(reopened.run) if reopened is not None else None
        options = spec.run_options(stored)
        agent = spec.agent or _agent(spec, reopened, options)
        try:
            if reopened is not None:
                options = replace(options, shard=reopened.run.options.get("shard"))
                return self.resume(
                    reopened,
                    agent,
                    options,
                    spec.judge,
                    spec.live_tools,
                    observer,
                    events,
                    spec.executor,
                    keep_trials=spec.keep_trials,
                    users=spec.users,
                )
            return self._create(replace(spec, agent=agent), observer, events)
        except BaseException:
            if spec.agent is None:
                _close(agent)
            raise

    def _create(
        self, spec: RunSpec, observer: Observer | None, events: IO[str] | None
    ) -> ActiveRun:
        spec = self._settled(spec)
        assert spec.suite is not None
        listing = dict(spec.tool_listing or {})
        fixtures = FixtureSource(spec.recording, spec.run_options().live_shadow, listing)
        execution = self._execution(spec, fixtures, observer, events)
        run = prepare_run(
            execution,
            suite_document(spec.suite.suite),
            spec.agent_spec,
            spec.owner,
            dict(spec.metadata or {}),
            spec.agent_version,
            spec.on_create,
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
        keep_trials: bool = False,
        users: UserPlayers | None = None,
    ) -> ActiveRun:
        """Make a reopened run ready again, on the suite, fixtures and terms it was started
        with; only the agent's wiring (and concurrency, timeouts, the executor) may be given
        afresh."""
        run, fixtures = reopened.run, reopened.fixtures
        spec = RunSpec(
            reopened.loaded,
            agent,
            run.agent_spec,
            options,
            fixtures.recording,
            judge,
            live_tools,
            terms=reopened.terms,
            safety=reopened.safety,
            executor=executor,
            keep_trials=keep_trials,
            users=users,
        )
        execution = self._execution(self._settled(spec), fixtures, observer, events)
        reopen_run(execution, run)
        self._sealed(execution, run)
        return ActiveRun(run, execution)

    def fail(self, run_id: str, failure: RunFailure) -> bool:
        """End an unfinished run that cannot go on; False if even that could not be stored."""
        return end_run(self.store, run_id, "failed", failure)

    def _ended(self, run_id: str, failure: RunFailure) -> RunEndedError:
        self.fail(run_id, failure)
        return RunEndedError(run_id, failure)

    def _settled(self, spec: RunSpec) -> RunSpec:
        settled, problems = settle(spec, self.store)
        if problems:
            raise SpecError(problems)
        return settled

    def _execution(
        self,
        spec: RunSpec,
        fixtures: FixtureSource,
        observer: Observer | None,
        events: IO[str] | None,
    ) -> Execution:
        assert spec.suite is not None  # settled
        assert spec.agent is not None
        # An executor that sends trials elsewhere checks it can, before anything is stored.
        prepare = getattr(spec.executor, "prepare", None)
        if callable(prepare):
            prepare(spec.agent, spec.judge, spec.live_tools)
        return Execution(
            self.store,
            spec.suite,
            spec.agent,
            spec.run_options(),
            spec.judge,
            spec.live_tools,
            fixtures,
            observer,
            events,
            self.on_commit,
            terms=spec.terms,
            safety=spec.safety,
            executor=spec.executor,
            lease=self.lease,
            users=spec.users,
        )


def _eval_started(docs: list[dict[str, Any]]) -> dict[str, Any] | None:
    payload = next((d.get("payload") for d in docs if d.get("type") == EVAL_STARTED), None)
    return payload if isinstance(payload, dict) else None


def _stored_options(run: RunRecord) -> RunOptions:
    saved = run.options
    return RunOptions(**{k: v for k, v in saved.items() if k in RunOptions.__dataclass_fields__})


def _agent(spec: RunSpec, reopened: Reopened | None, options: RunOptions) -> Agent:
    """The agent ``spec`` names by its specification, else the one a resumed run was
    started with."""
    chosen = spec.agent_spec or (reopened.run.agent_spec if reopened is not None else "")
    if reopened is not None and chosen.startswith("python-object:"):
        run_id = reopened.run.run_id
        raise RunError(f"run {run_id} was started with an in-process agent; pass the agent again")
    if not chosen:
        raise SpecError([Problem(("agent",), "a new run needs an agent (or a run to resume)")])
    return resolve_agent(chosen, threads=options.concurrency)


# --- the convenience functions of the library -------------------------------------------


async def run_spec_async(
    spec: RunSpec,
    *,
    store: Store | None = None,
    observer: Observer | None = None,
    events: IO[str] | None = None,
) -> RunResult:
    """Start (or resume) the run ``spec`` describes, run it to its end and grade it; its
    agent is closed when it ends."""
    try:
        active = RunService(store or Store()).start(spec, observer, events)
    except BaseException:
        if spec.agent is not None:
            _close(spec.agent)
        raise
    try:
        return await active.execute()
    finally:
        _close(active.execution.agent)


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
    users: UserPlayers | None = None,
) -> RunResult:
    """Run every trial of every task of ``suite`` against ``agent`` and grade the run.

    ``recording`` (responses recorded in earlier runs, per task) answers the tool calls of
    the tasks it names, in place of the suite's fixtures; it is stored with the run, so a
    resume serves it again. ``agent_spec`` is recorded so the run can be resumed without
    naming the agent again; it defaults to ``agent`` when that is a specification string.
    ``terms`` give a regression run its baseline and an adversarial run its safety bar;
    ``safety`` what its detectors look for. ``executor`` plays the trials elsewhere (a
    :class:`~.ray_executor.RayExecutor`); by default they play in this process. ``users``
    plays conversation tasks' users (by default: their scripts, and simulated users on the
    environment's endpoint).
    """
    loaded = suite if isinstance(suite, LoadedSuite) else load_suite(suite)
    spec = RunSpec(
        loaded,
        None if isinstance(agent, str) else agent,
        agent if isinstance(agent, str) else (agent_spec or _object_spec(agent)),
        options,
        recording,
        judge,
        live_tools,
        terms=terms or RunTerms(),
        safety=safety,
        executor=executor,
        users=users,
    )
    return await run_spec_async(spec, store=store, observer=observer, events=events)


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
    users: UserPlayers | None = None,
) -> RunResult:
    """Run only the trials a run is missing, on the fixtures it started with, then grade it
    as a whole (its trials played by ``executor``, by default in this process)."""
    spec = RunSpec(
        None,
        None if isinstance(agent, str) else agent,
        agent if isinstance(agent, str) else "",
        options,
        judge=judge,
        live_tools=live_tools,
        executor=executor,
        resume=run_id,
        users=users,
    )
    return await run_spec_async(spec, store=store, observer=observer, events=events)


def run_suite(suite: LoadedSuite | str | Path, agent: Agent | str, **kwargs: Any) -> RunResult:
    """Blocking :func:`run_suite_async`, for scripts and notebooks without an event loop."""
    return asyncio.run(run_suite_async(suite, agent, **kwargs))


def _object_spec(agent: Agent) -> str:
    return f"python-object:{type(agent).__name__}"


def _close(agent: Agent) -> None:
    close = getattr(agent, "close", None)
    if callable(close):
        close()
