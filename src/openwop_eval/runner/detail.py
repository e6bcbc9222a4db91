"""A run read back from the store: the trials a resumed run already has, and a decided
run's grade trial by trial with the diagnostics people read (outputs, error messages),
which the run itself never keeps in memory."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from fractions import Fraction
from typing import Any, TypeAlias

from ..core import SuiteGrade, SuiteTally, TrialRecord
from ..core.stats import decimal
from ..log.audit import recompute, regrade
from ..log.replay import replay
from ..store import Store
from ..suitefile import LoadedSuite

Diagnostics: TypeAlias = dict[tuple[str, int], dict[str, Any]]


def detail(store: Store, loaded: LoadedSuite, run_id: str) -> tuple[SuiteGrade, Diagnostics]:
    """A run's grade trial by trial, with the diagnostics people read, from the store."""
    diagnostics = store.trial_results(run_id)
    _summary, grade = decide(loaded, store.iter_events(run_id), diagnostics)
    return grade, diagnostics


def decide(
    loaded: LoadedSuite, docs: Iterable[dict[str, Any]], diagnostics: Diagnostics
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


def prior_trials(
    store: Store, run_id: str, tally: SuiteTally
) -> tuple[set[tuple[str, int]], Fraction]:
    """The trials a resumed run has already: folded into ``tally``; and their cost."""
    log = replay(store.iter_events(run_id), ordered=True)
    spent = Fraction(0)
    for record in log.records:
        tally.add(record)
        if record.cost_usd is not None:
            spent += decimal(record.cost_usd)
    return {(r.task_id, r.index) for r in log.records}, spent
