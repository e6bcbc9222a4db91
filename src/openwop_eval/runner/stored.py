"""A stored run read back whole, for a report made after the fact (``openwop-eval report``,
the viewer): graded from its log as the runner decided it, with its trials' diagnostics."""

from __future__ import annotations

from ..core import SuiteError
from ..store import Store
from ..suitefile import parse_suite
from .api import RunError
from .detail import decide
from .result import RunResult


def stored_result(store: Store, run_id: str) -> RunResult:
    """The run as its report shows it; a run that has not finished shows its finished trials
    (the others count as not run). :class:`RunError` when there is no such run."""
    run = store.get_run(run_id)
    if run is None:
        raise RunError(f"no run {run_id!r} in the store at {store.url}")
    try:
        loaded = parse_suite(run.suite_doc, source=f"run {run_id}")
    except SuiteError:
        raise RunError(f"run {run_id}: its stored suite cannot be read back") from None
    diagnostics = store.trial_results(run_id)
    summary, grade = decide(loaded, store.iter_events(run_id), diagnostics)
    return RunResult(run_id, grade, summary, lambda: (grade, diagnostics), agent_id=run.agent_id)
