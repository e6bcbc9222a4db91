"""The auditor: recompute a run's verdict from its event log alone, and compare.

Trial scores are the recorded facts of ``eval.scored``; trajectories, misses and errors come
from the ``agent.*`` events; the grading is the core's. Anything the log or a given summary
claims that the recomputation does not bear out is named by its JSON path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    Suite,
    SuiteGrade,
    SuiteTally,
    TrialRecord,
    grade_suite,
    json_equal,
    plan_suite,
    summary_dict,
)
from ..core import names as n
from .names import sequence_of
from .reader import LogReader
from .replay import replay
from .terms import terms_of


@dataclass(frozen=True)
class Mismatch:
    path: str
    given: Any
    recomputed: Any

    def __str__(self) -> str:
        return f"{self.path}: given {_show(self.given)}, recomputed {_show(self.recomputed)}"


_MISSING = "<absent>"


def _show(value: Any) -> str:
    return value if value == _MISSING else repr(value)


@dataclass
class Verification:
    summary: dict[str, Any]
    grade: SuiteGrade
    mismatches: list[Mismatch] = field(default_factory=list)
    """Where the given summary disagrees with the recomputation."""
    log_problems: list[str] = field(default_factory=list)
    """Where the log contradicts itself (an ``eval.scored`` verdict, ``eval.completed``)."""

    @property
    def agrees(self) -> bool:
        return not self.mismatches


@dataclass(frozen=True)
class Recomputed:
    """A run graded from its log alone: under the terms its ``eval.started`` states."""

    grade: SuiteGrade
    summary: dict[str, Any]
    problems: list[str]


def recompute(
    suite: Suite,
    docs: Iterable[dict[str, Any]],
    detail: Callable[[TrialRecord], TrialRecord] | None = None,
) -> Recomputed:
    """The one reading of a run's verdict: the runner decides with it, ``verify`` audits,
    the run diff compares. ``detail`` puts back what the log leaves out of a trial's record
    (its output, its error's text) for the reasons people read; the numbers and verdicts
    cannot differ, the scores being recorded facts. Each trial is graded once."""
    log = replay(docs)
    problems = list(log.problems)
    plan = plan_suite(suite, terms_of(log.started, problems))
    records = log.records if detail is None else [detail(r) for r in log.records]
    grade = grade_suite(plan, records)
    return Recomputed(grade, summary_dict(grade), problems)


COMPLETED_KEYS = ("aggregateScore", "passed", "taskCount", "passedCount")


def completed_payload(summary: dict[str, Any]) -> dict[str, Any]:
    """``eval.completed``: the summary's values, and the regression delta when there is one."""
    payload = {key: summary[key] for key in COMPLETED_KEYS}
    if "regression" in summary:
        payload[n.REGRESSION_VS_BASELINE] = summary["regression"]["scoreDelta"]
    return payload


def verify_log(
    suite: Suite,
    docs: Iterable[dict[str, Any]],
    given: dict[str, Any] | None = None,
    *,
    ordered: bool = False,
    keep_trials: bool = False,
) -> Verification:
    """Recompute a run's summary from its log and compare it with ``given``.

    The log is read as a stream (``ordered``: ``docs`` come in sequence order, else they are
    sorted first) and graded trial by trial, so memory is bounded by the trials in flight,
    not by the log; ``keep_trials`` keeps each trial's grade in the result (for a report).
    """
    reader = LogReader()
    tally: SuiteTally | None = None
    problems = reader.problems  # one bounded list, in the order things were found
    for doc in docs if ordered else sorted(docs, key=sequence_of):
        scored = reader.feed(doc)
        if scored is None:
            continue
        if tally is None:  # the terms are in eval.started, which comes first
            tally = _tally(suite, reader, keep_trials)
        trial = tally.add(scored.record)
        if scored.passed != trial.passed:
            problems.append(
                f"eval.scored for task {trial.task_id!r} trial {trial.index} says passed="
                f"{str(scored.passed).lower()}, but the recomputed verdict is "
                f"{str(trial.passed).lower()}"
            )
    grade = (tally or _tally(suite, reader, keep_trials)).finish()
    summary = summary_dict(grade)
    expected = completed_payload(summary)
    for payload in reader.completed:
        for key in (*COMPLETED_KEYS, n.REGRESSION_VS_BASELINE):
            for m in diff(payload.get(key, _MISSING), expected.get(key, _MISSING), key):
                problems.append(f"eval.completed {m}")
    mismatches = diff(given, summary) if given is not None else []
    return Verification(summary, grade, mismatches, problems.listed())


def _tally(suite: Suite, reader: LogReader, keep_trials: bool) -> SuiteTally:
    terms_problems: list[str] = []
    plan = plan_suite(suite, terms_of(reader.started, terms_problems))
    for problem in terms_problems:
        reader.problems.append(problem)
    return SuiteTally(plan, keep_trials)


def diff(given: Any, recomputed: Any, path: str = "$") -> list[Mismatch]:
    """Every path where two JSON values differ (numbers by exact value, booleans strictly)."""
    if isinstance(given, dict) and isinstance(recomputed, dict):
        out = []
        for key in list(dict.fromkeys([*given, *recomputed])):
            out.extend(
                diff(given.get(key, _MISSING), recomputed.get(key, _MISSING), f"{path}.{key}")
            )
        return out
    if isinstance(given, list) and isinstance(recomputed, list):
        out = []
        for i in range(max(len(given), len(recomputed))):
            a = given[i] if i < len(given) else _MISSING
            b = recomputed[i] if i < len(recomputed) else _MISSING
            out.extend(diff(a, b, f"{path}[{i}]"))
        return out
    return [] if json_equal(given, recomputed) else [Mismatch(path, given, recomputed)]
