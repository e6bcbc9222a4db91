"""A run read back from the store: the trials a resumed run already has, and a decided
run's grade trial by trial with the diagnostics people read (outputs, error messages),
which the run itself keeps in memory only when asked to (for its reports)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from fractions import Fraction
from typing import Any, TypeAlias

from ..core import SuiteGrade, SuiteTally, TrialRecord
from ..core.stats import decimal
from ..log.audit import recompute
from ..log.replay import replay
from ..store import Store
from ..suitefile import LoadedSuite

Diagnostics: TypeAlias = dict[tuple[str, int], dict[str, Any]]


def detail(store: Store, loaded: LoadedSuite, run_id: str) -> tuple[SuiteGrade, Diagnostics]:
    """A run's grade trial by trial, with the diagnostics people read, from the store."""
    diagnostics = store.trial_results(run_id)
    _summary, grade = decide(loaded, store.iter_events(run_id), diagnostics)
    return grade, diagnostics


def read_back(
    store: Store, loaded: LoadedSuite, run_id: str, kept: SuiteGrade | None
) -> Callable[[], tuple[SuiteGrade, Diagnostics]]:
    """How a decided run's result reads its trials: the grade the run ``kept`` (each trial
    graded once, as it ran) with the diagnostics from the store, else :func:`detail`."""
    if kept is None:
        return lambda: detail(store, loaded, run_id)
    return lambda: (kept, store.trial_results(run_id))


def decide(
    loaded: LoadedSuite, docs: Iterable[dict[str, Any]], diagnostics: Diagnostics
) -> tuple[dict[str, Any], SuiteGrade]:
    """The summary from the log alone, as any auditor computes it, with the local
    diagnostics (outputs, error messages) put back for the reasons people read; each trial
    is graded once."""
    done = recompute(
        loaded.suite, docs, lambda r: _enrich(r, diagnostics.get((r.task_id, r.index)))
    )
    return done.summary, done.grade


def _enrich(record: TrialRecord, extra: dict[str, Any] | None) -> TrialRecord:
    if not extra:
        return record
    error = extra.get("error") if record.error is not None else None
    return replace(record, output=extra.get("output"), error=error or record.error)


def prior_trials(
    store: Store, run_id: str, tally: SuiteTally, keep: bool = False
) -> tuple[set[tuple[str, int]], Fraction]:
    """The trials a resumed run has already: folded into ``tally``; and their cost. With
    ``keep`` (the tally keeps its trials for the run's reports) each is graded with its
    diagnostics put back, as :func:`detail` grades it."""
    log = replay(store.iter_events(run_id), ordered=True)
    diagnostics = store.trial_results(run_id) if keep else {}
    spent = Fraction(0)
    for record in log.records:
        tally.add(_enrich(record, diagnostics.get((record.task_id, record.index))))
        if record.cost_usd is not None:
            spent += decimal(record.cost_usd)
    return {(r.task_id, r.index) for r in log.records}, spent
