"""Running a suite: schedule every missing trial, commit each as it ends, then decide.

Theory of operation. A run is created in the store with its suite and agent, then
``run.started`` and ``eval.started`` are committed. Trials run concurrently (a semaphore of
``concurrency``), each under its own timeout; a finished trial's events and diagnostics are
committed in one transaction, so a run killed at any moment keeps exactly its finished
trials. ``resume`` reruns only the trials without an ``eval.scored``. The verdict is always
computed from the event log itself (the same reading ``verify`` does), so a resumed run and
an uninterrupted one, and any auditor, reach the same summary. When the suite's
``maxCostUsd`` is exceeded no further trial starts; trials that never ran count as failed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from fractions import Fraction
from typing import IO, Any, Protocol

from ..agents.base import Agent
from ..core import GradingPlan, SuiteGrade, TrialRecord, plan_suite
from ..core.plan import RunTerms
from ..core.rubric import Judge
from ..core.safety import SafetyPolicy
from ..core.stats import decimal_sum
from ..log.audit import completed_payload, recompute, regrade
from ..log.names import EVAL_COMPLETED, EVAL_STARTED, RUN_COMPLETED, RUN_STARTED, workflow_id
from ..log.replay import replay
from ..log.terms import started_payload
from ..store import RunRecord, Store
from ..suitefile import LoadedSuite
from .baseline import diff_ref
from .ending import end_run, failure_of, writer_for
from .events import EventWriter, new_id, pending
from .fixtures import FixtureSource
from .safety import policy_to_json
from .tools import LiveTool
from .trial import TrialOutcome, TrialSetup, run_trial


@dataclass(frozen=True)
class RunOptions:
    concurrency: int = 8
    timeout_s: float | None = 300.0
    tenant: str = "local"
    live_shadow: bool = False
    """Ignore fixtures and call live tools (only for suites that declare ``live-shadow``)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Observer(Protocol):
    def started(self, run_id: str, total: int, done: int) -> None: ...

    def finished(self, outcome: TrialOutcome) -> None: ...


@dataclass
class RunResult:
    run_id: str
    grade: SuiteGrade
    summary: dict[str, Any]
    diagnostics: dict[tuple[str, int], dict[str, Any]]
    budget_exhausted: bool = False
    resumed_trials: int = 0
    agent_id: str = ""


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
    safety: SafetyPolicy | None = None
    """What adversarial runs detect (the defaults when None)."""

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
) -> RunRecord:
    """Create the run in the store with ``run.started`` and ``eval.started``, atomically:
    a run that exists has its opening events, whenever the process dies."""
    suite = execution.loaded.suite
    tenant = execution.options.tenant
    run_id = f"{tenant}/{new_id()}"
    started: dict[str, Any] = {"workflowId": workflow_id(suite.suite_id), "inputs": {}}
    if owner is not None:
        started["owner"] = owner
    terms = execution.terms
    if terms.baseline is not None:
        terms = replace(terms, baseline=diff_ref(run_id, terms.baseline, execution.store))
        execution.terms = terms
    eval_started = started_payload(suite, terms, (extra or {}).get("fixtureRuns"))
    stored = {**execution.options.as_dict(), **(extra or {})}
    detectors = execution.detectors
    if detectors is not None:
        stored["safety"] = policy_to_json(detectors)
    opening: list[dict[str, Any]] = []
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
        ),
        opening,
    )
    if execution.jsonl is not None:
        execution.jsonl.write("".join(_line(doc) for doc in opening))
    if execution.on_commit is not None:
        execution.on_commit(run_id)
    return run


async def execute_run(execution: Execution, run_id: str) -> RunResult:
    """Run the missing trials of a prepared (or interrupted) run and decide it.

    Cancelled, it commits its finished trials and ends with ``run.cancelled``; failing, it
    ends with ``run.failed``. Either way the run is left terminal, never ``running``.
    """
    store = execution.store
    writer = _writer(execution, run_id, store.last_sequence(run_id))
    try:
        return await _execute(execution, run_id, writer)
    except asyncio.CancelledError:
        if execution.stopping:
            writer.flush()
        else:
            end_run(store, run_id, "cancelled", writer=writer)
        raise
    except Exception as exc:
        end_run(store, run_id, "failed", failure_of(exc), writer)
        raise


def reopen_run(execution: Execution, run: RunRecord) -> None:
    """Mark a restored run running again; its events file gets the whole log so far."""
    store = execution.store
    if execution.jsonl is not None:
        for doc in store.events(run.run_id):
            execution.jsonl.write(_line(doc))
    store.set_status(run.run_id, "running")


def _writer(execution: Execution, run_id: str, last: int) -> EventWriter:
    return writer_for(execution.store, run_id, last, execution.jsonl, execution.on_commit)


async def _execute(execution: Execution, run_id: str, writer: EventWriter) -> RunResult:
    plan = execution.plan
    # Reading and grading are CPU work: off the event loop, which a host shares with requests.
    prior = await asyncio.to_thread(replay, execution.store.events(run_id))
    done = {(r.task_id, r.index) for r in prior.records}
    spent = [r.cost_usd for r in prior.records if r.cost_usd is not None]
    budget = _budget(plan)
    exhausted = budget is not None and decimal_sum(spent) > budget
    todo = [
        (task, i) for i in range(plan.count) for task in plan.tasks if (task.task_id, i) not in done
    ]
    if execution.observer is not None:
        execution.observer.started(run_id, plan.count * len(plan.tasks), len(done))

    gate = asyncio.Semaphore(max(1, execution.options.concurrency))
    detectors = execution.detectors

    async def one(task: Any, index: int) -> None:
        nonlocal exhausted
        async with gate:
            if exhausted:
                return
            outcome = await run_trial(
                TrialSetup(
                    plan,
                    task,
                    index,
                    execution.agent,
                    execution.judge,
                    execution.fixtures.book(task, index),
                    execution.live,
                    execution.options.timeout_s,
                    detectors,
                )
            )
            writer.write(
                outcome.events, (task.task_id, index, outcome.invocation_id, outcome.diagnostics)
            )
            if outcome.record.cost_usd is not None:
                spent.append(outcome.record.cost_usd)
                exhausted = exhausted or (budget is not None and decimal_sum(spent) > budget)
            if execution.observer is not None:
                execution.observer.finished(outcome)

    await asyncio.gather(*(one(task, i) for task, i in todo))
    writer.flush()
    return await _finish(execution, run_id, writer, exhausted, len(done))


async def _finish(
    execution: Execution,
    run_id: str,
    writer: EventWriter,
    exhausted: bool,
    resumed: int,
) -> RunResult:
    docs = execution.store.events(run_id)
    diagnostics = execution.store.trial_results(run_id)
    summary, grade = await asyncio.to_thread(decide, execution.loaded, docs, diagnostics)
    writer.write(
        [
            pending(EVAL_COMPLETED, completed_payload(summary)),
            pending(RUN_COMPLETED, {"outputs": {"evalSummary": summary}}),
        ]
    )
    writer.flush()
    execution.store.set_status(run_id, "completed", summary=summary)
    return RunResult(
        run_id, grade, summary, diagnostics, exhausted, resumed, execution.agent.agent_id
    )


def decide(
    loaded: LoadedSuite,
    docs: list[dict[str, Any]],
    diagnostics: dict[tuple[str, int], dict[str, Any]],
) -> tuple[dict[str, Any], SuiteGrade]:
    """The summary from the log alone, as any auditor computes it, and the same grade with
    the local diagnostics (outputs, error messages) put back for the reasons people read;
    the numbers and verdicts cannot differ, the scores being recorded facts."""
    done = recompute(loaded.suite, docs)
    records = done.log.records
    grade = regrade(done, [_enrich(r, diagnostics.get((r.task_id, r.index))) for r in records])
    return done.summary, grade


def _enrich(record: TrialRecord, extra: dict[str, Any] | None) -> TrialRecord:
    if not extra:
        return record
    error = extra.get("error") if record.error is not None else None
    return replace(record, output=extra.get("output"), error=error or record.error)


def _budget(plan: GradingPlan) -> Fraction | None:
    thresholds = plan.suite.thresholds
    if thresholds is None or thresholds.max_cost_usd is None:
        return None
    return decimal_sum([thresholds.max_cost_usd])


def _line(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False) + "\n"
