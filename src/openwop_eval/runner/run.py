"""Running a suite: schedule every missing trial, commit each as it ends, then decide.

Theory of operation. A run is created in the store with its suite and agent, then
``run.started`` and ``eval.started`` are committed. Trials run concurrently (``concurrency``
workers, each taking the next missing trial), each under its own timeout; a finished trial
goes to the run's committer (:mod:`.committer`), which grades it and commits its events and
diagnostics in one transaction, so a run killed at any moment keeps exactly its committed
trials. ``resume`` reruns only the trials without an ``eval.scored``, its earlier trials read
back from the log. The verdict is folded from the trials as they are graded and recorded —
each as its ``eval.scored`` states it — so memory stays flat however many trials; ``verify``
recomputes it from the log alone and must agree, as must a resumed run and an uninterrupted
one. When the suite's ``maxCostUsd`` is exceeded, or with ``fail_fast`` the run can no longer
pass, no further trial starts (:mod:`.schedule`); trials that never ran count as failed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import IO, Any, Protocol

from ..agents.base import Agent
from ..core import CompiledTask, GradingPlan, SuiteGrade, SuiteTally, plan_suite, summary_dict
from ..core.gate import open_gate
from ..core.names import EXT_AGENT_VERSION, EXT_SHARD
from ..core.plan import RunTerms
from ..core.rubric import Judge
from ..core.safety import SafetyPolicy
from ..files.suites import LoadedSuite
from ..log.event_names import (
    EVAL_COMPLETED,
    EVAL_STARTED,
    EXT,
    RUN_COMPLETED,
    RUN_STARTED,
    workflow_id,
)
from ..log.shards import ShardMark, document_digest
from ..log.terms import started_payload
from ..log.verdict import completed_payload
from ..log.versions import LogVersionError
from ..runtime.clock import utc_stamp
from ..store import EventRow, RunRecord, Store, StoreUnavailableError
from ..store.leases import Lease, LeaseLostError
from ..store.status import required
from ..store.within import Within, chain
from ..users import UserPlayers
from .baseline import diff_ref
from .commit_process import CommitProcessError, committer_for
from .committer import Committer
from .ending import end_run, failure_of, writer_for
from .events import EventWriter, new_id, pending
from .fail_fast import FailFast
from .findings import policy_to_json
from .fixtures import FixtureSource
from .result import RunResult
from .schedule import Schedule
from .spec import LiveTool
from .spec import RunOptions as RunOptions
from .stored import prior_trials, read_back
from .trial import GradedTrial, PlayedTrial, TrialSetup, run_trial


class TrialExecutor(Protocol):
    """Runs trials somewhere else than on the event loop (a Ray cluster): the run's driver
    still grades and commits every trial, so where a trial ran never changes its verdict."""

    async def run(self, setup: TrialSetup) -> PlayedTrial: ...


class Observer(Protocol):
    """Told of a run's start and of each trial as it is committed."""

    def started(self, run_id: str, total: int, done: int) -> None: ...

    def finished(self, outcome: GradedTrial) -> None: ...


@dataclass
class Execution:
    """Everything one execution of a run needs; shared by new runs and resumed ones."""

    store: Store
    loaded: LoadedSuite
    agent: Agent
    options: RunOptions = field(default_factory=RunOptions)
    judge: Judge | None = None
    live: Mapping[str, LiveTool] | None = None
    fixtures: FixtureSource = field(default_factory=FixtureSource)
    """What answers the tool calls; stored with the run, and restored from it on resume."""
    observer: Observer | None = None
    jsonl: IO[str] | None = None
    on_commit: Callable[[str], None] | None = None
    """Called with the run id after each commit (a host wakes its event streams)."""
    stopping: bool = False
    """Set before cancelling to stop without ending the run (a host shutting down): the
    finished trials are kept and the run stays open for recovery to resume."""
    terms: RunTerms = field(default_factory=RunTerms)
    """The modes in effect, the baseline and the safety bar: recorded in ``eval.started``."""
    users: UserPlayers | None = None
    """Who plays conversation tasks' users (None: from the suite and the environment)."""
    safety: SafetyPolicy | None = None
    """What adversarial runs detect (the defaults when None)."""
    executor: TrialExecutor | None = None
    """Where trials run: None runs each in this process, on the event loop."""
    lease: Lease | None = None
    """A host replica's lease: the run is leased as it is created and every commit is
    fenced by it (store/leases.py); None for a process that is the run's only writer."""
    seal: Callable[[dict[str, Any]], str] | None = None
    """A host's seal of the run's summary, stored with it (server/evidence.py)."""

    @property
    def plan(self) -> GradingPlan:
        return plan_suite(self.loaded.suite, self.terms)

    @property
    def detectors(self) -> SafetyPolicy | None:
        """The detection policy when the run is adversarial, else None."""
        adversarial = "adversarial" in self.terms.modes_of(self.loaded.suite)
        return (self.safety or SafetyPolicy()) if adversarial else None


def prepare_run(
    execution: Execution,
    suite_doc: dict[str, Any],
    agent_spec: str,
    owner: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    agent_version: str | None = None,
    on_create: Callable[[str], Within | None] | None = None,
) -> RunRecord:
    """Create the run in the store with ``run.started`` and ``eval.started``, atomically:
    a run that exists has its opening events, whenever the process dies. ``on_create``
    gives, for the new run's id, writes to make in the same transaction (a host settles
    the request's idempotency key there)."""
    suite = execution.loaded.suite
    tenant = execution.options.tenant
    run_id = f"{tenant}/{new_id()}"
    started: dict[str, Any] = {"workflowId": workflow_id(suite.suite_id), "inputs": {}}
    if owner is not None:
        started["owner"] = owner
    terms = execution.terms
    if terms.baseline is not None:
        terms = replace(terms, baseline=diff_ref(run_id, terms.baseline, execution.store))
    if terms.day is None:  # the day quarantines are judged on, for good
        terms = replace(terms, day=utc_stamp()[:10])
    execution.terms = terms
    eval_started = started_payload(suite, terms, (extra or {}).get("fixtureRuns"))
    shard = execution.options.slice
    if shard is not None:  # what merging the shards checks: the slice and what ran
        mark = ShardMark(
            shard,
            document_digest(suite_doc),
            document_digest(execution.fixtures.to_json()),
            execution.agent.agent_id,
        )
        eval_started[EXT] = {**eval_started.get(EXT, {}), EXT_SHARD: mark.as_json()}
    if agent_version is not None:
        eval_started[EXT] = {**eval_started.get(EXT, {}), EXT_AGENT_VERSION: agent_version}
    stored = {**execution.options.as_dict(), **(extra or {})}
    detectors = execution.detectors
    if detectors is not None:
        stored["safety"] = policy_to_json(detectors)
    opening: list[EventRow] = []
    numbering = EventWriter(run_id, lambda docs, _trials: opening.extend(docs))
    numbering.write([pending(RUN_STARTED, started), pending(EVAL_STARTED, eval_started)])
    numbering.flush()
    run = execution.store.create_run(
        RunRecord(
            run_id=run_id,
            tenant=tenant,
            status="running",
            suite_id=suite.suite_id,
            suite_version=suite.version,
            agent_spec=agent_spec,
            agent_id=execution.agent.agent_id,
            suite_doc=suite_doc,
            options=stored,
            fixture_source=execution.fixtures.to_json(),
            agent_version=agent_version,
        ),
        opening,
        chain(
            execution.lease.claim_in(run_id) if execution.lease is not None else None,
            on_create(run_id) if on_create is not None else None,
        ),
    )
    if execution.jsonl is not None:
        execution.jsonl.write("".join(row.text + "\n" for row in opening))
    if execution.on_commit is not None:
        execution.on_commit(run_id)
    return run


async def execute_run(execution: Execution, run_id: str) -> RunResult:
    """Run the missing trials of a prepared (or interrupted) run and decide it.

    Cancelled, it commits its finished trials and ends with ``run.cancelled``; failing, it
    ends with ``run.failed``. Either way the run is left terminal, never ``running`` —
    except when the store is away past its retries (:class:`StoreUnavailableError`), the
    lease was lost, the commit process died or a newer version wrote its log: the failure
    is not the run's, so it stays open with what it committed, for a host's recovery or
    ``run --resume`` (of a version that reads it) to finish.
    """
    store = execution.store
    writer = _writer(execution, run_id, store.last_sequence(run_id))
    committer: list[Committer] = []
    try:
        return await _execute(execution, run_id, writer, committer)
    except asyncio.CancelledError:
        await _stop(committer)
        if execution.stopping:
            writer.flush()
        else:
            end_run(store, run_id, "cancelled", writer=writer)
        raise
    except (LeaseLostError, CommitProcessError, StoreUnavailableError, LogVersionError):
        await _stop(committer)  # another replica runs it now, the commit process died (as
        raise  # in a crash), the store is away, or a newer version wrote it: leave it open
    except Exception as exc:
        await _stop(committer)
        end_run(store, run_id, "failed", failure_of(exc), writer)
        raise


async def _stop(committer: list[Committer]) -> None:
    """Let the committer commit what it was handed, and stop it, before the run is ended
    on this thread (the writer is used by one thread at a time)."""
    if committer:
        with contextlib.suppress(Exception):  # a store failure: what is committed is kept
            await asyncio.shield(committer[0].close())


def reopen_run(execution: Execution, run: RunRecord) -> None:
    """Mark a restored run running again (unless it ended since: :class:`RunStatusError`);
    its events file gets the whole log so far."""
    store = execution.store
    required(store.set_status(run.run_id, "running"))
    if execution.jsonl is not None:
        for row in store.iter_event_rows(run.run_id):
            execution.jsonl.write(row.text + "\n")


def _writer(execution: Execution, run_id: str, last: int) -> EventWriter:
    wake, on_commit = execution.on_commit, None
    if wake is not None:  # the committer's thread commits: the host is told on its loop
        loop = asyncio.get_running_loop()

        def on_commit(committed: str) -> None:
            loop.call_soon_threadsafe(wake, committed)

    fence = execution.lease.fence(run_id) if execution.lease is not None else None
    return writer_for(execution.store, run_id, last, execution.jsonl, on_commit, fence)


async def _execute(
    execution: Execution, run_id: str, writer: EventWriter, holder: list[Committer]
) -> RunResult:
    plan = execution.plan
    keep = execution.options.keep_trials
    tally = SuiteTally(plan, keep)
    # Reading and grading are CPU work: off the event loop, which a host shares with requests.
    done, spent = await asyncio.to_thread(prior_trials, execution.store, run_id, tally, keep)
    shard = execution.options.slice
    total = plan.count * len(plan.tasks)
    if shard is not None:
        total = len(range(shard.index - 1, total, shard.count))
    if execution.observer is not None:
        execution.observer.started(run_id, total, len(done))
    observer = execution.observer
    detectors = execution.detectors
    decider = FailFast(tally, plan) if execution.options.fail_fast else None
    width = len(plan.tasks)
    todo = (
        (task, i)
        for i in range(plan.count)
        for position, task in enumerate(plan.tasks)
        if (task.task_id, i) not in done and (shard is None or shard.holds(position, i, width))
    )
    schedule = Schedule(plan, todo, spent, decider)

    def delivered(outcomes: list[GradedTrial]) -> None:
        if observer is not None:
            for outcome in outcomes:
                observer.finished(outcome)
        schedule.delivered()

    committer = committer_for(
        writer,
        plan,
        decider.fold if decider is not None else tally.add_grade,
        delivered,
        store=execution.store,
        jsonl=execution.jsonl,
        hosted=any(
            part is not None for part in (execution.on_commit, execution.lease, execution.executor)
        ),
        to_run=total - len(done),
        waiting=4 * execution.options.concurrency if decider is not None else None,
    )
    player = execution.executor.run if execution.executor is not None else run_trial
    users = execution.users or UserPlayers()
    holder.append(committer)

    async def play(task: CompiledTask, index: int) -> PlayedTrial:
        # A coroutine, so that its frame, which holds `execution`, is on every trial's stack:
        # the host's watchdog names the run of an agent that blocks the loop by it.
        fixtures = execution.fixtures.book(task, index)
        return await player(
            TrialSetup(
                task,
                index,
                execution.agent,
                execution.judge,
                fixtures,
                execution.live,
                execution.options.timeout_s,
                detectors,
                users,
            )
        )

    count = max(1, min(execution.options.concurrency, total))
    workers = [asyncio.ensure_future(schedule.worker(play, committer.put)) for _ in range(count)]
    try:
        await asyncio.gather(*workers)
    except BaseException:  # one failed (the store) or the run is cancelled: stop them all
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    finally:
        await users.aclose()  # the simulated users' endpoint clients, if any were opened
    await committer.close()
    skipped = total - len(done) - schedule.played if schedule.decided else 0
    return await _finish(execution, run_id, writer, tally, schedule.exhausted, len(done), skipped)


async def _finish(
    execution: Execution,
    run_id: str,
    writer: EventWriter,
    tally: SuiteTally,
    exhausted: bool,
    resumed: int,
    skipped: int = 0,
) -> RunResult:
    # The verdict of the trials as they were graded and recorded, one at a time: no second
    # reading of the log (``verify`` is that reading, and must agree).
    outline = tally.finish()
    summary = summary_dict(outline)
    store, loaded = execution.store, execution.loaded
    seal = execution.seal(summary) if execution.seal is not None else None
    completing = asyncio.ensure_future(
        asyncio.to_thread(_complete, store, run_id, writer, outline, summary, seal)
    )
    try:
        await asyncio.shield(completing)
    except asyncio.CancelledError:  # too late to cancel: the verdict is being committed
        await completing  # so the run is completed, not cancelled: its result is returned
    return RunResult(
        run_id,
        outline,
        summary,
        read_back(store, loaded, run_id, outline if execution.options.keep_trials else None),
        exhausted,
        resumed,
        execution.agent.agent_id,
        skipped=skipped,
    )


def _complete(
    store: Store,
    run_id: str,
    writer: EventWriter,
    grade: SuiteGrade,
    summary: dict[str, Any],
    seal: str | None,
) -> None:
    """Commit the verdict, mark the run completed with its seal (off the event loop)."""
    outputs = {"outputs": {"evalSummary": summary}}
    completed = completed_payload(summary, open_gate(grade))
    writer.write([pending(EVAL_COMPLETED, completed), pending(RUN_COMPLETED, outputs)])
    writer.flush()
    # RunStatusError if another writer ended the run first: its ending stands
    required(store.set_status(run_id, "completed", summary=summary, evidence=seal))
