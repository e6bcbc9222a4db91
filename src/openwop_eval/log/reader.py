"""Reading a run's log event by event: each trial's record as soon as its ``eval.scored``.

This is the one reading of a log (resume, ``verify``, reports all go through it). A trial's
score is the recorded fact in its ``eval.scored``; its trajectory is its
``agent.tool-called`` events; misses and errors come from ``agent.tool-returned`` and
``agent.invocation-completed``. Events are attributed to a trial by the ``x-openwop-eval``
member; a log without it (another host's) is read by invocation bracket, which holds when
its trials did not interleave.

Memory is bounded by the trials in flight, not by the log: a trial is forgotten once its
``eval.scored`` is read, and which trials were scored is kept as one bit each. A trial is
its events up to its ``eval.scored``; a later event of a scored trial is a problem and is
not counted. At most :data:`~openwop_eval.base.limits.MAX_OPEN_TRIALS` trials may be open at
once; past it the oldest is dropped, and if it is scored later it counts as not run (fails
closed) — it is never graded on part of its calls.

An event whose payload this version cannot read (a newer ``schemaVersion``) stops the reading
with :class:`~.versions.LogVersionError` (see :mod:`.versions`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, cast

from ..base.limits import MAX_LOG_PROBLEMS, MAX_OPEN_TRIALS, MAX_TRIALS_COUNT
from ..core import JSON, ToolCall, TrialRecord
from ..core import names as n
from ..core.canonical import is_number
from ..core.safety import MAX_TRIAL_FINDINGS, FindingTag, Severity, finding_problem
from ..core.suite import MAX_TURNS
from .event_names import (
    EVAL_COMPLETED,
    EVAL_SCORED,
    EVAL_STARTED,
    EXT,
    INVOCATION_COMPLETED,
    INVOCATION_STARTED,
    TOOL_CALLED,
    TOOL_RETURNED,
    V1_NAMES,
)
from .versions import check_version

_TRIAL_KINDS = (INVOCATION_STARTED, TOOL_CALLED, TOOL_RETURNED, INVOCATION_COMPLETED, EVAL_SCORED)
_KINDS = {
    **{kind: kind for kind in _TRIAL_KINDS},
    **{v1: v2 for v1, v2 in V1_NAMES.items() if v2 in _TRIAL_KINDS},
}
"""The events a trial is read from, under their v2 and v1 names."""


@dataclass
class _Call:
    tool: str
    args: JSON
    missed: bool = False
    result: JSON = None
    answered: bool = False
    turn: int = 0


@dataclass
class _Invocation:
    task_id: str | None = None
    trial: int | None = None
    calls: dict[str, _Call] = field(default_factory=dict)  # by callId, in call order
    error: str | None = None
    infrastructure: bool = False
    turns: int | None = None
    """A conversation: the agent turns it played."""
    exhausted: bool = False


@dataclass(frozen=True, slots=True)
class Scored:
    """One trial as its log states it."""

    record: TrialRecord
    passed: bool
    """The verdict its ``eval.scored`` states, to check against a recompute."""
    responses: list[tuple[str, JSON, JSON]]
    """The calls a fixture served or a live tool answered, with their results."""


class Problems:
    """What a log gets wrong, in order; past :data:`MAX_LOG_PROBLEMS` only counted."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.dropped = 0

    def append(self, problem: str) -> None:
        if len(self.items) < MAX_LOG_PROBLEMS:
            self.items.append(problem)
        else:
            self.dropped += 1

    def listed(self) -> list[str]:
        more = [f"… and {self.dropped} more problems"] if self.dropped else []
        return [*self.items, *more]


class LogReader:
    """Feed it events in sequence order; it returns each trial as it is scored."""

    def __init__(self) -> None:
        self.started: dict[str, Any] | None = None
        """The first ``eval.started`` payload: the run's terms (see :mod:`.terms`)."""
        self.completed: list[dict[str, Any]] = []
        """Every ``eval.completed`` payload, to check against a recompute."""
        self.problems = Problems()
        self._open: dict[str, _Invocation] = {}
        self._lost: dict[str, None] = {}  # an ordered set: the oldest is evicted first
        self._bracket: str | None = None
        self._scored: defaultdict[str, bytearray] = defaultdict(bytearray)
        self._bracket_trials: defaultdict[str, int] = defaultdict(int)
        self._read = 0

    def feed(self, doc: dict[str, Any]) -> Scored | None:
        """Read the next event; raises :class:`~.versions.LogVersionError` on one whose
        payload this version cannot read."""
        self._read += 1
        check_version(doc, self._read)
        raw = doc.get("type")
        kind = _KINDS.get(raw) if type(raw) is str else None
        if kind is None:
            self._note_run_event(raw, doc)
            return None
        payload = doc.get("payload")
        if type(payload) is not dict:
            payload = {}
        ext = payload.get(EXT)
        if type(ext) is not dict:
            ext = {}
        raw_key = ext.get("invocationId") or payload.get("invocationId") or self._bracket
        if kind == INVOCATION_STARTED:
            raw_key = payload.get("invocationId") or raw_key
            self._bracket = str(raw_key)
        if raw_key is None:
            return None
        key = raw_key if type(raw_key) is str else str(raw_key)
        inv = self._open.get(key)
        if inv is None and key in self._lost:  # a trial dropped past the open-trials limit
            if kind == EVAL_SCORED:
                del self._lost[key]
            return None
        if "taskId" in ext and not self._attributed(doc, ext, key, inv is None):
            return None
        if inv is None:
            inv = self._invocation(key)
        if "taskId" in ext:
            inv.task_id, inv.trial = str(ext["taskId"]), _index(ext.get("trial", 0))
        if kind != EVAL_SCORED:
            _apply(kind, payload, ext, inv)
            return None
        return self._close(key, inv, payload)

    def _attributed(self, doc: dict[str, Any], ext: dict[str, Any], key: str, new: bool) -> bool:
        """Whether an event's trial member holds: an index, and (for an event that opens an
        invocation) a trial not scored already."""
        trial = _index(ext.get("trial", 0))
        if trial is None:
            self.problems.append(f"event {doc.get('sequence')!r}: its trial is not an index")
            return False
        if new and self._was_scored(str(ext["taskId"]), trial):
            self.problems.append(
                f"event {doc.get('sequence')!r} belongs to task {ext['taskId']!r} trial"
                f" {trial}, which its eval.scored had closed; it is not counted"
            )
            return False
        return True

    def _note_run_event(self, kind: Any, doc: dict[str, Any]) -> None:
        if kind == EVAL_STARTED and self.started is None:
            self.started = _object(doc.get("payload"))
        elif kind == EVAL_COMPLETED:
            self.completed.append(_object(doc.get("payload")))

    def _invocation(self, key: str) -> _Invocation:
        inv = self._open.get(key)
        if inv is None:
            if len(self._open) >= MAX_OPEN_TRIALS:
                self._drop_oldest()
            inv = self._open[key] = _Invocation()
        return inv

    def _drop_oldest(self) -> None:
        """Forget the oldest open trial; it counts as not run. Its later events are refused:
        by its trial's bit, when the log names its trial (so nothing more is kept for it),
        else by its key, among the last ``MAX_OPEN_TRIALS`` dropped."""
        oldest = next(iter(self._open))
        inv = self._open.pop(oldest)
        if inv.task_id is not None and inv.trial is not None:
            self._mark_scored(inv.task_id, inv.trial)
        else:
            self._lost[oldest] = None
            if len(self._lost) > MAX_OPEN_TRIALS:
                del self._lost[next(iter(self._lost))]
        self.problems.append(
            f"more than {MAX_OPEN_TRIALS} trials are open at once; invocation {oldest!r} is"
            " dropped and counts as not run"
        )

    def _close(self, key: str, inv: _Invocation, scored: dict[str, Any]) -> Scored | None:
        del self._open[key]
        self._bracket = None
        if inv.task_id is None:
            inv.task_id = str(scored.get("taskId"))
        if inv.trial is None:
            inv.trial = self._bracket_trials[inv.task_id]
        self._bracket_trials[inv.task_id] += 1
        if self._was_scored(inv.task_id, inv.trial):
            self.problems.append(f"task {inv.task_id!r} trial {inv.trial} is scored more than once")
            return None
        self._mark_scored(inv.task_id, inv.trial)
        record = _record(inv, scored, self.problems)
        answered = [(c.tool, c.args, c.result) for c in inv.calls.values() if c.answered]
        return Scored(record, scored.get("passed") is True, answered)

    def _was_scored(self, task_id: str, trial: int) -> bool:
        bits = self._scored.get(task_id)
        return (
            bits is not None and trial < 8 * len(bits) and bool(bits[trial >> 3] >> (trial & 7) & 1)
        )

    def _mark_scored(self, task_id: str, trial: int) -> None:
        # Indexes past the largest trials.count are not tracked (the grader refuses them),
        # so a hostile index cannot make this grow.
        if trial >= MAX_TRIALS_COUNT:
            return
        bits = self._scored[task_id]
        if trial >= 8 * len(bits):
            bits.extend(bytes((trial >> 3) + 1 - len(bits)))
        bits[trial >> 3] |= 1 << (trial & 7)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _apply(kind: str, payload: dict[str, Any], ext: dict[str, Any], inv: _Invocation) -> None:
    call_id = str(payload.get("callId", len(inv.calls)))
    if kind == TOOL_CALLED:
        inputs = payload.get("inputs")
        call = _Call(str(payload.get("toolName")), {} if inputs is None else inputs)
        call.turn = turn_of(ext.get(n.TURN))
        inv.calls[call_id] = call
    elif kind == TOOL_RETURNED and call_id in inv.calls:
        call = inv.calls[call_id]
        call.missed = ext.get("miss") is True
        call.result = payload.get("outcome")
        call.answered = payload.get("status", "ok") == "ok"
    elif kind == INVOCATION_COMPLETED:
        _conversation(_object(ext.get(n.CONVERSATION)), inv)
        failed = payload.get("outcome") == "failed"
        if failed and ext.get("error") != "fixture-miss":  # a miss that propagated is the miss
            inv.error = str(ext.get("error", "failed"))
            inv.infrastructure = inv.error == n.ERROR_INFRASTRUCTURE


def turn_of(value: Any) -> int:
    """A call's turn: 0 when absent (not a conversation) or not a turn index."""
    return value if type(value) is int and 0 <= value < MAX_TURNS else 0


def _conversation(facts: dict[str, Any], inv: _Invocation) -> None:
    """A conversation's turns and ending, as recorded. An ending other than the user's is
    out of turns, so a log that garbles it fails the trial closed, never open."""
    if not facts:
        return
    turns = facts.get("turns")
    inv.turns = turns if type(turns) is int and 0 <= turns <= MAX_TURNS else 0
    inv.exhausted = facts.get("ended") != n.ENDED_BY_USER


def _index(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def _measure(scored: dict[str, Any], key: str, where: str, problems: Problems) -> Any:
    """A recorded cost, latency or score: a finite number ≥ 0, or None (with a problem)."""
    value = scored.get(key)
    if value is None or (is_number(value) and math.isfinite(value) and value >= 0):
        return value
    problems.append(f"{where}: {key} {value!r} is not a finite number ≥ 0; it is ignored")
    return None


def _record(inv: _Invocation, scored: dict[str, Any], problems: Problems) -> TrialRecord:
    where = f"eval.scored for task {inv.task_id!r} trial {inv.trial}"
    score = _measure(scored, "score", where, problems)
    if score is not None and score > 1:
        problems.append(f"{where}: score {score!r} is above 1; it counts as 0")
        score = None
    return TrialRecord(
        task_id=str(inv.task_id),
        index=int(inv.trial or 0),
        tool_calls=tuple(ToolCall(c.tool, c.args, c.missed, c.turn) for c in inv.calls.values()),
        error=inv.error,
        cost_usd=_measure(scored, "costUsd", where, problems),
        latency_ms=_measure(scored, "latencyMs", where, problems),
        output_score=float(score) if score is not None else 0.0,
        findings=_findings(_object(scored.get(EXT)).get(n.EXT_FINDINGS), where, problems),
        infrastructure=inv.infrastructure,
        turns=inv.turns,
        exhausted=inv.exhausted,
        user_simulator=inv.error == n.ERROR_USER_SIMULATOR,
    )


def _findings(value: Any, where: str, problems: Problems) -> tuple[FindingTag, ...]:
    """A trial's recorded findings; a malformed one is a problem and is left out."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_TRIAL_FINDINGS:
        problems.append(f"{where}: its findings are not a list of at most {MAX_TRIAL_FINDINGS}")
        return ()
    tags = []
    for item in value:
        kind, severity = _object(item).get("kind"), _object(item).get("severity")
        problem = finding_problem(kind, severity)
        if problem is not None:
            problems.append(f"{where}: a finding is left out: {problem}")
            continue
        tags.append(FindingTag(str(kind), cast(Severity, severity)))
    return tuple(tags)
