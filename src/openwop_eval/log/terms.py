"""A run's terms in its log: what ``eval.started`` says beyond the suite, written once when
the run is created and read back by every resume and every audit.

The modes in effect (``modes``), the baseline of a regression run (``baselineRunId``, with
its aggregate score under ``x-openwop-eval`` so the log alone gives ``scoreDelta``) and the
severity that fails an adversarial trial: the log carries them, so a resumed run and an
auditor grade under exactly the terms the run started with.
"""

from __future__ import annotations

import math
from typing import Any, cast, get_args

from pydantic import TypeAdapter

from ..core import JSON, Suite
from ..core import names as n
from ..core.canonical import is_number
from ..core.gate_policy import IsoDate, UnknownCost
from ..core.plan import Baseline, RunTerms
from ..core.safety import Severity
from ..core.suite import Mode
from .event_names import EXT

MODES: tuple[str, ...] = get_args(Mode)
GATE_DAY: TypeAdapter[str] = TypeAdapter(IsoDate)


def started_payload(
    suite: Suite, terms: RunTerms, fixture_runs: dict[str, str] | None = None
) -> dict[str, JSON]:
    """The ``eval.started`` payload of a run of ``suite`` under ``terms``."""
    modes = terms.modes_of(suite)
    payload: dict[str, JSON] = {
        "suiteId": suite.suite_id,
        "suiteVersion": suite.version,
        "taskCount": len(suite.tasks),
        "modes": list(modes),
    }
    ext: dict[str, JSON] = {}
    if terms.baseline is not None:
        payload["baselineRunId"] = terms.baseline.run_id
        ext[n.EXT_BASELINE_AGGREGATE] = terms.baseline.aggregate_score
        if terms.baseline.diff_ref is not None:
            ext[n.EXT_DIFF_REF] = terms.baseline.diff_ref
    if fixture_runs:
        payload["fixtureRuns"] = dict(fixture_runs)  # the accepted map, echoed
    if terms.fail_on_severity is not None:
        ext[n.EXT_FAIL_ON_SEVERITY] = terms.fail_on_severity
    gate: dict[str, JSON] = {}
    if terms.require_all_tasks:
        gate["requireAllTasks"] = True
    if terms.unknown_cost is not None:
        gate["unknownCost"] = terms.unknown_cost
    if gate:
        ext[n.EXT_GATE] = gate
    if terms.day is not None:
        ext[n.EXT_AS_OF] = terms.day
    if ext:
        payload[EXT] = ext
    return payload


def terms_of(payload: dict[str, Any] | None, problems: list[str]) -> RunTerms:
    """The terms an ``eval.started`` payload states; what it states badly is a problem and
    falls back to the suite's own (no baseline, no safety bar)."""
    if payload is None:
        return RunTerms()
    raw = payload.get(EXT)
    ext: dict[str, Any] = raw if isinstance(raw, dict) else {}
    return RunTerms(
        modes=_modes(payload.get("modes"), problems),
        fail_on_severity=_severity(ext.get(n.EXT_FAIL_ON_SEVERITY), problems),
        baseline=_baseline(payload, ext, problems),
        **_gate(ext, problems),
    )


def _gate(ext: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """The run's additions to the gate policy and its day; a bad one is a problem and is
    read the strict way (every task required, an unknown cost failing, no quarantine)."""
    found: dict[str, Any] = {}
    raw = ext.get(n.EXT_GATE, {})
    gate: dict[str, Any] = raw if isinstance(raw, dict) else {"requireAllTasks": raw}
    required = gate.get("requireAllTasks", False)
    if required is not False:
        found["require_all_tasks"] = True
        if required is not True:
            problems.append("eval.started: gate.requireAllTasks is not a boolean; it is required")
    cost = gate.get("unknownCost")
    if cost in get_args(UnknownCost):
        found["unknown_cost"] = cost
    elif cost is not None:
        found["unknown_cost"] = "fail"
        problems.append("eval.started: gate.unknownCost is not fail or zero; fail applies")
    day = ext.get(n.EXT_AS_OF)
    if isinstance(day, str) and _is_day(day):
        found["day"] = day
    elif day is not None:
        problems.append(f"eval.started: {n.EXT_AS_OF} is not a date; no quarantine holds")
    return found


def _is_day(text: str) -> bool:
    try:
        GATE_DAY.validate_python(text)
    except ValueError:
        return False
    return True


def _modes(value: Any, problems: list[str]) -> tuple[Mode, ...] | None:
    if value is None:
        return None
    if isinstance(value, list) and value and all(m in MODES for m in value):
        return tuple(cast(Mode, m) for m in dict.fromkeys(value))
    problems.append("eval.started: modes is not a list of modes; the suite's modes apply")
    return None


def _severity(value: Any, problems: list[str]) -> Severity | None:
    if value is None or value in n.SEVERITIES:
        return cast(Severity | None, value)
    problems.append(f"eval.started: {n.EXT_FAIL_ON_SEVERITY} is not a severity; it is ignored")
    return None


def _baseline(payload: dict[str, Any], ext: dict[str, Any], problems: list[str]) -> Baseline | None:
    run_id = payload.get("baselineRunId")
    if run_id is None:
        return None
    score = ext.get(n.EXT_BASELINE_AGGREGATE)
    diff_ref = ext.get(n.EXT_DIFF_REF)
    if not isinstance(run_id, str) or not run_id:
        problems.append("eval.started: baselineRunId is not a run id; it is ignored")
        return None
    if not (is_number(score) and math.isfinite(score) and 0 <= score <= 1):
        return None  # another host's log: the delta cannot be recomputed from it
    return Baseline(run_id, float(score), diff_ref if isinstance(diff_ref, str) else None)
