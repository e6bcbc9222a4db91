"""Baselines of regression runs: the earlier run a run is compared with (RFC 0251).

A usable baseline is a completed eval run of the same suite id and version in the same
tenant, with its summary. One that is asked for and is not usable is refused with one
message whatever the reason, so the refusal tells nothing about another tenant's runs.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

from ..core import OpenwopEvalError, Suite, canonical_json
from ..core.canonical import is_number
from ..core.plan import Baseline
from ..protocol.ids import project
from ..store import RunRecord, Store
from .stored import stored_summary

UNUSABLE = (
    "is not a usable baseline: a completed eval run of the same suite id and version,"
    " in the same tenant"
)


class BaselineError(OpenwopEvalError):
    """The named baseline cannot be used (the message is the same whatever the reason)."""


def _aggregate(summary: Any) -> float | None:
    score = summary.get("aggregateScore") if isinstance(summary, dict) else None
    if is_number(score) and math.isfinite(score) and 0 <= score <= 1:
        return float(score)
    return None


def _usable(store: Store, run: RunRecord | None, suite: Suite, tenant: str) -> float | None:
    """The baseline's aggregate score, as its log bears it out, when ``run`` is usable."""
    if (
        run is None
        or run.tenant != tenant
        or run.mode != "eval"
        or run.status != "completed"
        or (run.suite_id, run.suite_version) != (suite.suite_id, suite.version)
    ):
        return None
    return _aggregate(stored_summary(store, run))


def baseline_run(store: Store, suite: Suite, tenant: str, run_id: str) -> Baseline:
    """The named run as a baseline, or :class:`BaselineError`."""
    score = _usable(store, store.get_run(run_id), suite, tenant)
    if score is None:
        raise BaselineError(f"run {run_id} {UNUSABLE}")
    return Baseline(run_id, score)


def newest_baseline(store: Store, suite: Suite, tenant: str) -> Baseline | None:
    """The newest usable baseline in the store, or None when there is none yet."""
    for run in store.list_runs(
        tenant, status="completed", suite=(suite.suite_id, suite.version), limit=20
    ):
        score = _usable(store, store.get_run(run.run_id), suite, tenant)
        if score is not None:
            return Baseline(run.run_id, score)
    return None


def baseline_summary(summary: Any, run_id: str | None, suite: Suite, source: str) -> Baseline:
    """A baseline from a summary read from a file: it must be of the same suite and
    version. Without a run id (a bare summary) it is named by its content's digest."""
    score = _aggregate(summary)
    same = isinstance(summary, dict) and (
        summary.get("suiteId"),
        summary.get("suiteVersion"),
    ) == (suite.suite_id, suite.version)
    if score is None or not same:
        raise BaselineError(f"{source} is not a summary of {suite.suite_id}@{suite.version}")
    if run_id is None:
        run_id = "sha256:" + hashlib.sha256(canonical_json(summary).encode()).hexdigest()[:32]
    return Baseline(run_id, score)


def diff_ref(run_id: str, baseline: Baseline, store: Store) -> Baseline:
    """The baseline with the run diff its summary names — when the baseline is a run of
    this store, where the diff can be computed."""
    if store.get_run(baseline.run_id, documents=False) is None:
        return baseline
    ref = f"/runs/{project(run_id)}:diff?against={project(baseline.run_id)}"
    return Baseline(baseline.run_id, baseline.aggregate_score, ref)
