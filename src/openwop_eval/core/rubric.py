"""Rubric scoring and the judge protocol.

A judge reads a task's output and returns one verdict per rubric criterion, in rubric order:
``met`` in [0, 1] (1 fully met, 0 not met, values between for partial credit) and an
optional rationale for the report. The trial score is ``Σ weight·met / Σ weight``, computed
on the decimal values as written (so weights 0.7 and 0.3 with the first met give exactly
0.7) and then rounded once to a float. Judges do I/O and live outside the core; the core
defines what they exchange and checks what they return.

In adversarial mode the request asks for safety findings too: a verdict may carry up to
:data:`MAX_FINDINGS_PER_VERDICT` finding tags (a kind slug and a severity, never the
offending text), and :func:`verdict_findings` gathers a trial's findings once checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Protocol

from .canonical import JSON, is_number
from .errors import JudgeProtocolError
from .safety import FindingTag, finding_field_problems
from .stats import decimal
from .suite import Criterion


@dataclass(frozen=True, slots=True)
class JudgeRequest:
    """What a judge is asked: one trial's output against the task's criteria."""

    task_id: str
    trial_index: int
    input: JSON
    output: JSON
    criteria: tuple[str, ...]
    report_findings: bool = False
    """Adversarial mode: also report safety findings (a judge may ignore them otherwise)."""


@dataclass(frozen=True, slots=True)
class CriterionVerdict:
    met: float
    rationale: str | None = None
    findings: tuple[FindingTag, ...] = ()


MAX_FINDINGS_PER_VERDICT: Final = 16
"""Enough for any honest verdict; bounds what a hostile judge can add to a trial."""


class Judge(Protocol):
    """Anything that can score a rubric. The runner awaits it once per rubric trial."""

    async def judge(self, request: JudgeRequest) -> Sequence[CriterionVerdict]: ...


def check_verdicts(
    criteria: Sequence[Criterion], verdicts: Sequence[CriterionVerdict]
) -> tuple[float, ...]:
    """The ``met`` values, or :class:`JudgeProtocolError` naming every defect."""
    defects = []
    if len(verdicts) != len(criteria):
        defects.append(
            f"expected {len(criteria)} verdicts (one per criterion), got {len(verdicts)}"
        )
    for i, verdict in enumerate(verdicts):
        met = verdict.met
        if not is_number(met) or not 0 <= met <= 1:
            defects.append(f"verdict {i + 1}: met must be a number in [0, 1], got {met!r}")
        defects.extend(f"verdict {i + 1}: {d}" for d in _finding_defects(verdict.findings))
    if defects:
        raise JudgeProtocolError("; ".join(defects))
    return tuple(float(v.met) for v in verdicts)


def _finding_defects(findings: object) -> list[str]:
    # a judge is third-party code: the annotation promises a tuple of tags, nothing enforces it
    if not isinstance(findings, tuple | list):
        return [f"findings must be a tuple of FindingTag, got {type(findings).__name__}"]
    defects = []
    if len(findings) > MAX_FINDINGS_PER_VERDICT:
        defects.append(f"at most {MAX_FINDINGS_PER_VERDICT} findings, got {len(findings)}")
    for j, tag in enumerate(findings[:MAX_FINDINGS_PER_VERDICT]):
        if not isinstance(tag, FindingTag):
            defects.append(f"finding {j + 1} must be a FindingTag, got {type(tag).__name__}")
        else:
            problems = finding_field_problems(tag.kind, tag.severity).values()
            defects.extend(f"finding {j + 1}: {p}" for p in problems)
    return defects


def verdict_findings(verdicts: Sequence[CriterionVerdict]) -> tuple[FindingTag, ...]:
    """Every finding of a trial's checked verdicts, once each, in the order first reported."""
    return tuple(dict.fromkeys(tag for v in verdicts for tag in v.findings))


def rubric_score(criteria: Sequence[Criterion], met: Sequence[float]) -> float:
    """``Σ weight·met / Σ weight``; a suite whose weights sum to 0 is rejected at load."""
    total = sum((decimal(c.weight) for c in criteria), Fraction(0))
    if total == 0 or len(met) != len(criteria):
        return 0.0
    earned = sum(
        (decimal(c.weight) * decimal(m) for c, m in zip(criteria, met, strict=True)),
        Fraction(0),
    )
    return float(earned / total)
