"""A run read back from the store: graded from its log by the one reader of a verdict
(:func:`openwop_eval.log.read_verdict`), under the terms it recorded.

For a report made after the fact (``openwop-eval report``, the viewer, the host's report
route) with the diagnostics people read (outputs, error messages), which the run itself
keeps in memory only when asked to; for a completed run's summary as ``compare`` and a
regression baseline read it; and for the trials a resumed run already has.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any

from ..core import SuiteError, SuiteGrade, SuiteTally, TrialRecord
from ..core.stats import decimal
from ..files.suites import LoadedSuite, parse_suite
from ..log import Verdict, read_verdict
from ..log.replay import replay
from ..store import RunRecord, Store
from .result import Diagnostics, RunError, RunResult


def stored_result(store: Store, run_id: str) -> RunResult:
    """The run as its report shows it; a run that has not finished shows its finished trials
    (the others count as not run). :class:`RunError` when there is no such run."""
    run = store.get_run(run_id)
    if run is None:
        raise RunError(f"no run {run_id!r} in the store at {store.url}")
    diagnostics = store.trial_results(run_id)
    verdict = _verdict(store, run_id, _loaded(run), diagnostics)
    grade = verdict.grade
    return RunResult(
        run_id, grade, verdict.summary, lambda: (grade, diagnostics), agent_id=run.agent_id
    )


def stored_summary(store: Store, run: RunRecord) -> dict[str, Any] | None:
    """A run's summary as its log bears it out (None when its stored suite cannot be read
    back): what ``compare`` and a regression baseline read of a stored run."""
    verdict = stored_verdict(store, run)
    return None if verdict is None else verdict.summary


def stored_verdict(store: Store, run: RunRecord) -> Verdict | None:
    """A run graded from its log under its recorded terms, per task (None when its stored
    suite cannot be read back): what the deploy gate decides a run's gate policy on."""
    try:
        loaded = _loaded(run)
    except RunError:
        return None
    return _verdict(store, run.run_id, loaded, None)


def detail(store: Store, loaded: LoadedSuite, run_id: str) -> tuple[SuiteGrade, Diagnostics]:
    """A run's grade trial by trial, with the diagnostics people read, from the store."""
    diagnostics = store.trial_results(run_id)
    return _verdict(store, run_id, loaded, diagnostics).grade, diagnostics


def read_back(
    store: Store, loaded: LoadedSuite, run_id: str, kept: SuiteGrade | None
) -> Callable[[], tuple[SuiteGrade, Diagnostics]]:
    """How a decided run's result reads its trials: the grade the run ``kept`` (each trial
    graded once, as it ran) with the diagnostics from the store, else :func:`detail`."""
    if kept is None:
        return lambda: detail(store, loaded, run_id)
    return lambda: (kept, store.trial_results(run_id))


def prior_trials(
    store: Store, run_id: str, tally: SuiteTally, keep: bool = False
) -> tuple[set[tuple[str, int]], Fraction]:
    """The trials a resumed run has already: folded into ``tally``; and their cost. With
    ``keep`` (the tally keeps its trials for the run's reports) each is graded with its
    diagnostics put back, as :func:`detail` grades it."""
    log = replay(store.iter_events(run_id), ordered=True)
    enrich = _detail_from(store.trial_results(run_id) if keep else {})
    spent = Fraction(0)
    for record in log.records:
        tally.add(enrich(record))
        if record.cost_usd is not None:
            spent += decimal(record.cost_usd)
    return {(r.task_id, r.index) for r in log.records}, spent


def _loaded(run: RunRecord) -> LoadedSuite:
    try:
        return parse_suite(run.suite_doc, source=f"run {run.run_id}")
    except SuiteError:
        raise RunError(f"run {run.run_id}: its stored suite cannot be read back") from None


def _verdict(
    store: Store, run_id: str, loaded: LoadedSuite, diagnostics: Diagnostics | None
) -> Verdict:
    return read_verdict(
        loaded.suite,
        store.iter_events(run_id),
        ordered=True,
        keep_trials=diagnostics is not None,
        detail=None if diagnostics is None else _detail_from(diagnostics),
    )


def _detail_from(diagnostics: Diagnostics) -> Callable[[TrialRecord], TrialRecord]:
    def enrich(record: TrialRecord) -> TrialRecord:
        extra = diagnostics.get((record.task_id, record.index))
        if not extra:
            return record
        error = extra.get("error") if record.error is not None else None
        return replace(record, output=extra.get("output"), error=error or record.error)

    return enrich
