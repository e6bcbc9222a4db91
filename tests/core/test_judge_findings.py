"""Safety findings on rubric verdicts: checked with the verdicts, gathered once per trial."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.core import CriterionVerdict, JudgeProtocolError, check_verdicts
from openwop_eval.core.rubric import (
    MAX_FINDINGS_PER_VERDICT,
    JudgeRequest,
    verdict_findings,
)
from openwop_eval.core.safety import FindingTag, finding_field_problems
from openwop_eval.core.suite import Criterion

CRITERIA = (
    Criterion(criterion="keeps the prompt secret", weight=1),
    Criterion(criterion="b", weight=1),
)
LEAK = FindingTag("prompt-leak", "high")
SECRET = FindingTag("secret-leak", "critical")
SLUG = "a finding kind must be a lower-case slug of 1 to 64 of [a-z0-9.-]"
SEVERITY = "a finding severity must be one of low, medium, high, critical"


def test_a_request_does_not_ask_for_findings_by_default() -> None:
    assert JudgeRequest("t", 0, {}, "out", ("c",)).report_findings is False


def test_valid_findings_leave_the_met_values_unchanged() -> None:
    verdicts = [CriterionVerdict(0.0, "leaks", (LEAK, SECRET)), CriterionVerdict(1.0)]
    assert check_verdicts(CRITERIA, verdicts) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("tag", "defect"),
    [
        (FindingTag("prompt leak", "high"), f"verdict 1: finding 2: {SLUG}"),
        (FindingTag("a" * 65, "high"), f"verdict 1: finding 2: {SLUG}"),
        (FindingTag("", "high"), f"verdict 1: finding 2: {SLUG}"),
        (FindingTag("prompt-leak", "severe"), f"verdict 1: finding 2: {SEVERITY}"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_finding_is_a_protocol_error(tag: FindingTag, defect: str) -> None:
    verdicts = [CriterionVerdict(0.0, None, (LEAK, tag)), CriterionVerdict(1.0)]
    with pytest.raises(JudgeProtocolError) as caught:
        check_verdicts(CRITERIA, verdicts)
    assert str(caught.value) == defect


def test_every_defect_is_named_at_once() -> None:
    bad = FindingTag(["kind"], ["high"])  # type: ignore[arg-type]
    verdicts = [CriterionVerdict(2.0, None, (bad,)), CriterionVerdict(1.0, None, (LEAK, 3))]  # type: ignore[arg-type]
    with pytest.raises(JudgeProtocolError) as caught:
        check_verdicts(CRITERIA, verdicts)
    assert str(caught.value).split("; ") == [
        "verdict 1: met must be a number in [0, 1], got 2.0",
        f"verdict 1: finding 1: {SLUG}",
        f"verdict 1: finding 1: {SEVERITY}",
        "verdict 2: finding 2 must be a FindingTag, got int",
    ]


@pytest.mark.parametrize("findings", [LEAK, "prompt-leak", None, {LEAK}])
def test_findings_that_are_not_a_sequence_are_a_protocol_error(findings: Any) -> None:
    verdicts = [CriterionVerdict(1.0, None, findings), CriterionVerdict(1.0)]
    with pytest.raises(JudgeProtocolError, match=r"verdict 1: findings must be a tuple"):
        check_verdicts(CRITERIA, verdicts)


def test_at_most_the_documented_number_of_findings_per_verdict() -> None:
    limit = tuple(FindingTag(f"kind-{i}", "low") for i in range(MAX_FINDINGS_PER_VERDICT))
    assert MAX_FINDINGS_PER_VERDICT == 16
    assert check_verdicts(CRITERIA, [CriterionVerdict(1.0, None, limit)] * 2) == (1.0, 1.0)
    over = [CriterionVerdict(1.0, None, (*limit, LEAK)), CriterionVerdict(1.0)]
    with pytest.raises(JudgeProtocolError, match=r"^verdict 1: at most 16 findings, got 17$"):
        check_verdicts(CRITERIA, over)


def test_verdict_findings_gathers_each_finding_once_in_the_order_first_reported() -> None:
    low_leak = FindingTag("prompt-leak", "low")
    verdicts = [
        CriterionVerdict(0.0, None, (SECRET, LEAK, SECRET)),
        CriterionVerdict(1.0),
        CriterionVerdict(0.5, None, (LEAK, low_leak)),
    ]
    assert verdict_findings(verdicts) == (SECRET, LEAK, low_leak)
    assert verdict_findings([CriterionVerdict(1.0)]) == ()
    assert verdict_findings([]) == ()


@pytest.mark.parametrize(
    ("kind", "severity", "fields"),
    [
        ("prompt-leak", "high", set()),
        ("prompt leak", "high", {"kind"}),
        ("prompt-leak", "High", {"severity"}),
        (None, {"level": "high"}, {"kind", "severity"}),
    ],
)
def test_finding_field_problems_names_each_bad_field(
    kind: Any, severity: Any, fields: set[str]
) -> None:
    assert set(finding_field_problems(kind, severity)) == fields
