"""The run diff (RFC 0054): two eval runs' logs compared event by event, and their verdicts
compared task by task and trial by trial, each run graded under the terms its log recorded.

Pure: the answer is a function of the two logs and the suites they ran — no clock, no I/O.
Read it as ``a → b``: ``added`` is in b only, ``removed`` in a only, and every ``delta`` is
b − a, so diffing a baseline (a) against a candidate (b) shows the candidate's change.

Content-free, like the summary: an event is compared, and shown, only as its projection —
its type, its sequence and a whitelist of ids, names, enums, counts and scores of its type;
tool arguments only as the SHA-256 of their canonical JSON, and never an output, a prompt, a
tool result, an error message or a reason's text (a trial's reasons as their rule codes).
Run-scoped members — ``eventId``, ``runId``, ``timestamp``, ``invocationId``, ``callId``,
``agentId``, ``owner`` — and wall-clock measures (``latencyMs``, ``durationMs``) are not
compared: two runs of the same agent on the same fixtures then diff as identical.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.limits import MAX_SAFE_INTEGER
from ..core import Suite, SuiteGrade, canonical_json
from ..core.canonical import is_number
from ..core.errors import GradingError, SuiteError
from ..core.grading import TaskGrade, TrialGrade
from ..core.stats import decimal
from . import event_names as n
from .verdict import read_verdict

MAX_EVENT_DIFFS = 1000
"""``eventDiffs`` entries; the rest are counted in ``stateDiff.eventDiffsOmitted``."""
MAX_TASK_DIFFS = 1000
"""Changed tasks listed in ``stateDiff.tasks``; the rest are counted in ``tasksOmitted``."""
MAX_TRIAL_DIFFS = 1000
"""Changed trials listed over all tasks; a task's others are counted in its ``trialsOmitted``."""
MAX_NAME_CHARS = 256
"""A longer name (a tool name is the agent's choice) is shown as ``sha256:<hex>`` of it."""
MAX_NAMES = 64
"""Members of a list of names (``modes``) kept; a longer list is not shown."""


@dataclass(frozen=True)
class DiffSide:
    """One run: its id and status, the suite it ran (None if it cannot be read) and its log."""

    run_id: str
    status: str
    suite: Suite | None
    docs: Sequence[dict[str, Any]]
    agent_id: str | None = None


# --- projecting an event ------------------------------------------------------------------

_DROP = object()
Check = Callable[[Any], Any]
"""A member's value as shown, or ``_DROP`` when it is not of the member's content-free kind."""


def _name(value: Any) -> Any:
    if not isinstance(value, str) or len(value) <= MAX_NAME_CHARS:
        return value if isinstance(value, str) else _DROP
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _number(value: Any) -> Any:
    # finite and safe at once: NaN compares false, and no int is turned into a float
    return value if is_number(value) and abs(value) <= MAX_SAFE_INTEGER else _DROP


def _count(value: Any) -> Any:
    return value if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER else _DROP


def _flag(value: Any) -> Any:
    return value if isinstance(value, bool) else _DROP


def _scalar(value: Any) -> Any:
    return value if isinstance(value, bool) else _number(value)


def _names(value: Any) -> Any:
    if not isinstance(value, list) or len(value) > MAX_NAMES:
        return _DROP
    shown = [_name(v) for v in value]
    return _DROP if _DROP in shown else shown


def _one_of(*allowed: str) -> Check:
    return lambda value: value if isinstance(value, str) and value in allowed else _DROP


_X = n.EXT + "."
_RUN_ERRORS = _one_of(  # the runner's fixed run-level failures (runner/ending.py)
    "store_error", "run_failed", "fixture_source_lost", "suite_unloadable", "run_abandoned"
)
_TRIAL: dict[str, tuple[str, Check]] = {
    "taskId": (_X + "taskId", _name),
    "trial": (_X + "trial", _count),
}
WHITELISTS: dict[str, dict[str, tuple[str, Check]]] = {
    n.RUN_STARTED: {"workflowId": ("workflowId", _name)},
    n.RUN_COMPLETED: {},  # its outputs only as present (see project)
    n.RUN_FAILED: {"errorCode": ("error.code", _RUN_ERRORS)},
    n.RUN_CANCELLED: {},
    n.EVAL_STARTED: {
        "suiteId": ("suiteId", _name),
        "suiteVersion": ("suiteVersion", _name),
        "taskCount": ("taskCount", _count),
        "modes": ("modes", _names),
    },
    n.EVAL_SCORED: {
        "taskId": ("taskId", _name),
        "trial": (_X + "trial", _count),
        "score": ("score", _number),
        "passed": ("passed", _flag),
        "costUsd": ("costUsd", _number),
        "safetyFindingCount": ("safetyFindingCount", _count),
    },
    n.EVAL_COMPLETED: {
        "aggregateScore": ("aggregateScore", _number),
        "gatedAggregateScore": ("gatedAggregateScore", _number),
        "passed": ("passed", _flag),
        "passedCount": ("passedCount", _count),
        "taskCount": ("taskCount", _count),
        "baselineRunId": ("baselineRunId", _name),
        "regressionVsBaseline": ("regressionVsBaseline", _scalar),
    },
    n.INVOCATION_STARTED: _TRIAL,
    n.TOOL_CALLED: {**_TRIAL, "toolName": ("toolName", _name)},  # and argsHash (see project)
    n.TOOL_RETURNED: {
        **_TRIAL,
        "toolName": ("toolName", _name),
        "status": ("status", _one_of("ok", "error")),
        "miss": (_X + "miss", _flag),
        "errorCode": ("error.code", _one_of("fixture_miss", "tool_error")),
    },
    n.DECIDED: {**_TRIAL, "decision": ("decision", _one_of("completed", "failed"))},
    n.INVOCATION_COMPLETED: {
        **_TRIAL,
        "outcome": ("outcome", _one_of("completed", "failed", "cancelled")),
        "errorKind": (_X + "error", _one_of("fixture-miss", "timeout", "protocol", "exception")),
    },
}
"""What each event type shows: member → (its dotted path in the payload, its check). An
unknown type shows its type and sequence only."""


def _dig(payload: Any, path: str) -> Any:
    for key in path.split("."):
        if not isinstance(payload, dict) or key not in payload:
            return _DROP
        payload = payload[key]
    return payload


_HEX64 = re.compile(r"[0-9a-f]{64}")


def _args_hash(payload: dict[str, Any]) -> Any:
    if "inputs" not in payload:
        given = payload.get("argsHash")
        return given if isinstance(given, str) and _HEX64.fullmatch(given) else _DROP
    try:
        text = canonical_json(payload["inputs"])
    except Exception:  # not canonical JSON (a foreign log): no hash rather than a crash
        return _DROP
    return hashlib.sha256(text.encode()).hexdigest()


def project(doc: dict[str, Any]) -> dict[str, Any]:
    """The content-free projection of one event: what the diff compares and shows."""
    raw = doc.get("type")
    kind = n.v2_type(raw) if isinstance(raw, str) else None
    out: dict[str, Any] = {"type": _name(kind) if kind is not None else None}
    if _count(doc.get("sequence")) is not _DROP:
        out["sequence"] = doc["sequence"]
    payload = doc.get("payload")
    payload = payload if isinstance(payload, dict) else {}
    for member, (path, check) in WHITELISTS.get(kind or "", {}).items():
        value = check(_dig(payload, path))
        if value is not _DROP:
            out[member] = value
    if kind == n.TOOL_CALLED and (digest := _args_hash(payload)) is not _DROP:
        out["argsHash"] = digest
    if kind == n.RUN_COMPLETED:
        out["outputsPresent"] = "outputs" in payload
    return out


# --- the event diff -----------------------------------------------------------------------


def _by_sequence(docs: Sequence[dict[str, Any]], through: int | None) -> dict[int, Any]:
    """Each addressable event by its sequence (the first of a repeated one), up to ``through``."""
    events: dict[int, dict[str, Any]] = {}
    for doc in docs:
        seq = doc.get("sequence")
        if type(seq) is int and 0 <= seq <= (MAX_SAFE_INTEGER if through is None else through):
            events.setdefault(seq, doc)
    return events


def _ended(docs: Sequence[dict[str, Any]]) -> bool:
    return any(isinstance(d, dict) and n.v2_type(str(d.get("type"))) in n.ENDINGS for d in docs)


def _last(docs: Sequence[dict[str, Any]]) -> int:
    return max(_by_sequence(docs, None), default=-1)


def _event_diffs(
    a: DiffSide, b: DiffSide, through: int | None, limit: int
) -> tuple[list[dict[str, Any]], int | None, int]:
    """The entries (at most ``limit``), the first diverging sequence, and how many were cut."""
    left, right = _by_sequence(a.docs, through), _by_sequence(b.docs, through)
    diffs: list[dict[str, Any]] = []
    first: int | None = None
    omitted = 0
    for seq in sorted(left.keys() | right.keys()):
        entry: dict[str, Any] = {"seq": seq}
        if seq not in right:
            entry |= {"op": "removed", "aEvent": project(left[seq])}
        elif seq not in left:
            entry |= {"op": "added", "bEvent": project(right[seq])}
        else:
            shown = project(left[seq]), project(right[seq])
            if canonical_json(shown[0]) == canonical_json(shown[1]):
                continue
            entry |= {"op": "changed", "aEvent": shown[0], "bEvent": shown[1]}
        first = seq if first is None else first
        if len(diffs) < limit:
            diffs.append(entry)
        else:
            omitted += 1
    return diffs, first, omitted


# --- the state diff -----------------------------------------------------------------------


def _pair(a: Any, b: Any) -> dict[str, Any]:
    """``{a, b}``, with ``delta`` = b − a when both are numbers (exact on their decimals)."""
    out = {"a": a, "b": b}
    if is_number(a) and is_number(b):
        exact = decimal(b) - decimal(a)
        out["delta"] = int(exact) if type(a) is int and type(b) is int else float(exact)
    return out


def _grade(side: DiffSide, label: str, notes: list[str]) -> SuiteGrade | None:
    if side.suite is None:
        notes.append(f"{label}: the run's suite cannot be read; the eval diff is omitted")
        return None
    try:  # under the terms its eval.started recorded, as the run and ``verify`` grade it
        return read_verdict(side.suite, side.docs, keep_trials=True).grade
    except (SuiteError, GradingError):  # a log its suite cannot grade: said, not quoted
        notes.append(f"{label}: the run's log cannot be graded; the eval diff is omitted")
        return None


def _trial_view(trial: TrialGrade | None) -> dict[str, Any] | None:
    if trial is None:
        return None
    return {
        "outcome": trial.outcome,
        "score": trial.score,
        "gatingScore": trial.gating,
        "passed": trial.passed,
        "trajectoryMatched": None if trial.trajectory is None else trial.trajectory.matched,
    }


def _rules(trial: TrialGrade | None) -> list[str]:
    """The rule codes of a trial's reasons, in grading order — never their text."""
    return [] if trial is None else list(dict.fromkeys(r.rule for r in trial.reasons))


def _trial_entry(index: int, a: TrialGrade | None, b: TrialGrade | None) -> dict[str, Any] | None:
    in_a, in_b = _rules(a), _rules(b)
    views = _trial_view(a), _trial_view(b)
    if views[0] == views[1] and in_a == in_b and a is not None and b is not None:
        return None
    constraints = {
        "violatedInA": in_a,
        "violatedInB": in_b,
        "newlyViolated": [r for r in in_b if r not in in_a],
        "resolved": [r for r in in_a if r not in in_b],
    }
    return {"trial": index, "a": views[0], "b": views[1], "constraints": constraints}


def _task_entry(
    task_id: str, a: TaskGrade | None, b: TaskGrade | None, budget: list[int]
) -> dict[str, Any] | None:
    trials_a, trials_b = ({t.index: t for t in task.trials} if task else {} for task in (a, b))
    changed = []
    for index in range(max(len(trials_a), len(trials_b))):
        entry = _trial_entry(index, trials_a.get(index), trials_b.get(index))
        if entry is not None:
            changed.append(entry)
    pairs = {
        key: _pair(None if a is None else getattr(a, attr), None if b is None else getattr(b, attr))
        for key, attr in (("score", "score"), ("gatedScore", "gated_score"), ("passed", "passed"))
    }
    same = a is not None and b is not None and all(p["a"] == p["b"] for p in pairs.values())
    if same and not changed:
        return None
    shown = changed[: max(budget[0], 0)]
    budget[0] -= len(shown)
    out: dict[str, Any] = {
        "taskId": task_id,
        **pairs,
        "trials": shown,
        "unchangedTrials": max(len(trials_a), len(trials_b)) - len(changed),
    }
    if len(shown) < len(changed):
        out["trialsOmitted"] = len(changed) - len(shown)
    return out


def _eval_diff(a: SuiteGrade, b: SuiteGrade) -> dict[str, Any]:
    def p95(grade: SuiteGrade) -> float | None:
        return None if grade.p95_latency_ms is None else float(grade.p95_latency_ms)

    return {
        "aggregateScore": _pair(a.aggregate_score, b.aggregate_score),
        "gatedAggregateScore": _pair(a.gated_aggregate_score, b.gated_aggregate_score),
        "passed": _pair(a.passed, b.passed),
        "passedCount": _pair(a.passed_count, b.passed_count),
        "taskCount": _pair(len(a.tasks), len(b.tasks)),
        "totalCostUsd": _pair(a.total_cost_usd, b.total_cost_usd),
        "p95LatencyMs": _pair(p95(a), p95(b)),
    }


def _tasks_diff(a: SuiteGrade, b: SuiteGrade, out: dict[str, Any]) -> None:
    """``tasks`` (the changed ones, a's order then b's extras) and their counts, into ``out``."""
    by_a, by_b = ({t.task_id: t for t in grade.tasks} for grade in (a, b))
    budget = [MAX_TRIAL_DIFFS]  # changed trials left to list, over all tasks
    tasks: list[dict[str, Any]] = []
    unchanged = omitted = 0
    for task_id in dict.fromkeys([*by_a, *by_b]):
        entry = _task_entry(task_id, by_a.get(task_id), by_b.get(task_id), budget)
        if entry is None:
            unchanged += 1
        elif len(tasks) < MAX_TASK_DIFFS:
            tasks.append(entry)
        else:
            omitted += 1
    out["tasks"] = tasks
    out["unchangedTasks"] = unchanged
    if omitted:
        out["tasksOmitted"] = omitted


def _state_diff(a: DiffSide, b: DiffSide) -> dict[str, Any]:
    out: dict[str, Any] = {"status": _pair(a.status, b.status)}
    if a.agent_id is not None or b.agent_id is not None:
        out["agentId"] = _pair(a.agent_id, b.agent_id)
    refs = [None if s.suite is None else f"{s.suite.suite_id}@{s.suite.version}" for s in (a, b)]
    out["suiteRef"] = _pair(*refs)
    notes: list[str] = []
    graded_a, graded_b = _grade(a, "a", notes), _grade(b, "b", notes)
    if graded_a is not None and graded_b is not None:
        out["eval"] = _eval_diff(graded_a, graded_b)
        _tasks_diff(graded_a, graded_b, out)
    if notes:
        out["notes"] = notes
    return out


def run_diff(a: DiffSide, b: DiffSide, max_event_diffs: int = MAX_EVENT_DIFFS) -> dict[str, Any]:
    """The ``RunDiffResponse`` of run ``a`` against run ``b``.

    A run whose log has no ending event is in flight: then only the sequences both logs can
    hold so far are compared (up to the last of the shorter in-flight log) and
    ``truncated`` is true; the state diff grades what each log holds.
    """
    in_flight = [side for side in (a, b) if not _ended(side.docs)]
    through = min(_last(side.docs) for side in in_flight) if in_flight else None
    diffs, first, omitted = _event_diffs(a, b, through, max_event_diffs)
    state = _state_diff(a, b)
    if omitted:
        state["eventDiffsOmitted"] = omitted
    return {
        "a": a.run_id,
        "b": b.run_id,
        "divergedAtSeq": first,
        "eventDiffs": diffs,
        "stateDiff": state,
        "truncated": bool(in_flight),
    }
