"""The one reading of a run's verdict: an event log graded under the terms it recorded.

Every verdict this project shows after the fact comes from :func:`read_verdict` — ``verify``,
the reports of a stored run, the run diff, a merge of shards, a stored run's summary read
back for ``compare`` or as a regression baseline. The runner's live tally decides the same
way as the trials finish, and is tested equal to it.

Trial scores are the recorded facts of ``eval.scored``; trajectories, misses and errors come
from the ``agent.*`` events; the terms (modes, baseline, severity bar) from ``eval.started``;
the grading is the core's. The log is read as a stream, each trial graded once, so memory
is bounded by the trials in flight, not by the log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..core import Suite, SuiteGrade, SuiteTally, TrialRecord, plan_suite, summary_dict
from ..core import names as n
from ..core.gate import GateVerdict, open_gate
from .event_names import EXT, sequence_of
from .jsondiff import MISSING, diff
from .reader import LogReader
from .terms import terms_of

Detail = Callable[[TrialRecord], TrialRecord]
"""Puts back what a log leaves out of a trial's record (its output, its error's text) for
the reasons people read; the numbers and verdicts cannot change, the scores being facts."""


@dataclass(frozen=True)
class Verdict:
    """A run graded from its log: its summary, its grade (task by task; trial by trial when
    kept) and where the log contradicts itself (an ``eval.scored`` verdict, an
    ``eval.completed`` figure, a term it cannot be graded under)."""

    summary: dict[str, Any]
    grade: SuiteGrade
    problems: list[str]

    @property
    def gate(self) -> GateVerdict:
        """The gate: the RFC's ``passed`` and the run's gate policy."""
        return open_gate(self.grade)


COMPLETED_KEYS = ("aggregateScore", "passed", "taskCount", "passedCount")


def completed_payload(summary: dict[str, Any], gate: GateVerdict) -> dict[str, Any]:
    """``eval.completed``: the summary's values, the regression delta when there is one, and
    the gate's verdict (content-free: the rules that shut it, never their text)."""
    payload = {key: summary[key] for key in COMPLETED_KEYS}
    if "regression" in summary:
        payload[n.REGRESSION_VS_BASELINE] = summary["regression"]["scoreDelta"]
    payload[EXT] = {n.EXT_GATE: gate_json(gate)}
    return payload


def gate_json(gate: GateVerdict) -> dict[str, Any]:
    """The gate's verdict as ``eval.completed`` carries it."""
    return {"passed": gate.passed, "rules": [reason.rule for reason in gate.reasons]}


def read_verdict(
    suite: Suite,
    docs: Iterable[dict[str, Any]],
    *,
    ordered: bool = False,
    keep_trials: bool = False,
    detail: Detail | None = None,
) -> Verdict:
    """Grade the log ``docs`` of a run of ``suite``: ``ordered`` when they come in sequence
    order (a store's, a stream's), else they are sorted first; ``keep_trials`` keeps each
    trial's grade (for a report, the run diff); ``detail`` see :data:`Detail`."""
    reader = LogReader()
    tally: SuiteTally | None = None
    problems = reader.problems  # one bounded list, in the order things were found
    for doc in docs if ordered else sorted(docs, key=sequence_of):
        scored = reader.feed(doc)
        if scored is None:
            continue
        if tally is None:  # the terms are in eval.started, which comes first
            tally = _tally(suite, reader, keep_trials)
        record = scored.record if detail is None else detail(scored.record)
        trial = tally.add(record)
        if scored.passed != trial.passed:
            problems.append(
                f"eval.scored for task {trial.task_id!r} trial {trial.index} says passed="
                f"{str(scored.passed).lower()}, but the recomputed verdict is "
                f"{str(trial.passed).lower()}"
            )
    grade = (tally or _tally(suite, reader, keep_trials)).finish()
    summary = summary_dict(grade)
    _check_completed(reader, summary, open_gate(grade))
    return Verdict(summary, grade, problems.listed())


def _tally(suite: Suite, reader: LogReader, keep_trials: bool) -> SuiteTally:
    terms_problems: list[str] = []
    plan = plan_suite(suite, terms_of(reader.started, terms_problems))
    for problem in terms_problems:
        reader.problems.append(problem)
    return SuiteTally(plan, keep_trials)


def _check_completed(reader: LogReader, summary: dict[str, Any], gate: GateVerdict) -> None:
    expected = completed_payload(summary, gate)
    for payload in reader.completed:
        for key in (*COMPLETED_KEYS, n.REGRESSION_VS_BASELINE):
            for m in diff(payload.get(key, MISSING), expected.get(key, MISSING), key):
                reader.problems.append(f"eval.completed {m}")
        ext = payload.get(EXT)
        stated = ext.get(n.EXT_GATE, MISSING) if isinstance(ext, dict) else MISSING
        if stated is not MISSING:  # a log of an earlier version states no gate
            for m in diff(stated, expected[EXT][n.EXT_GATE], f"{EXT}.{n.EXT_GATE}"):
                reader.problems.append(f"eval.completed {m}")
