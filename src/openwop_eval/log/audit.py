"""The auditor: a run's summary checked against the verdict its event log bears out.

The verdict is :func:`~.verdict.read_verdict`'s; anything a given summary claims that it does
not bear out is named by its JSON path, as is anything the log contradicts itself on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core import Suite, SuiteGrade
from ..core.gate import GateVerdict, open_gate
from .jsondiff import Mismatch, diff
from .verdict import read_verdict


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

    @property
    def gate(self) -> GateVerdict:
        """The gate recomputed from the log: the RFC's ``passed`` and the run's policy."""
        return open_gate(self.grade)


def verify_log(
    suite: Suite,
    docs: Iterable[dict[str, Any]],
    given: dict[str, Any] | None = None,
    *,
    ordered: bool = False,
    keep_trials: bool = False,
) -> Verification:
    """Recompute a run's summary from its log and compare it with ``given``: the log read
    as a stream (``ordered``: ``docs`` come in sequence order, else they are sorted first);
    ``keep_trials`` keeps each trial's grade in the result (for a report)."""
    verdict = read_verdict(suite, docs, ordered=ordered, keep_trials=keep_trials)
    mismatches = diff(given, verdict.summary) if given is not None else []
    return Verification(verdict.summary, verdict.grade, mismatches, verdict.problems)
