"""Golden strategies (including non-string outputs) and rubric scoring with judge verdicts."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.core import CriterionVerdict, JudgeProtocolError, check_verdicts, rubric_score
from openwop_eval.core.golden import golden_score
from openwop_eval.core.suite import Criterion, GoldenMatch


def score(strategy: str, value: Any, output: Any) -> float:
    return golden_score(GoldenMatch(strategy=strategy, value=value), output)


@pytest.mark.parametrize(
    ("value", "output", "expected"),
    [
        ("refund-issued", "refund-issued", 1.0),
        ("refund-issued", "refund-issued ", 0.0),
        ("42", 42, 1.0),
        (42, "42", 1.0),
        (1, 1.0, 1.0),
        ({"b": 1, "a": [1, 2]}, {"a": [1, 2], "b": 1}, 1.0),
        ({"a": 1}, '{"a":1}', 1.0),
        ({"a": 1}, '{"a": 1}', 0.0),
        (True, "true", 1.0),
        (None, "null", 1.0),
    ],
)
def test_exact_compares_stringified_values(value: Any, output: Any, expected: float) -> None:
    assert score("exact", value, output) == expected


@pytest.mark.parametrize(
    ("value", "output", "expected"),
    [
        ("refunded", "Your order was refunded.", 1.0),
        ("Refunded", "Your order was refunded.", 0.0),
        ("A-1", {"orderId": "A-1"}, 1.0),
        ('"status":"ok"', {"status": "ok", "x": 1}, 1.0),
        ("x", None, 0.0),
    ],
)
def test_contains_is_a_case_sensitive_substring(value: Any, output: Any, expected: float) -> None:
    assert score("contains", value, output) == expected


@pytest.mark.parametrize(
    ("value", "output", "expected"),
    [
        ({"a": 1, "b": [1, 2]}, '{ "b": [1, 2.0], "a": 1 }', 1.0),
        ({"a": 1}, {"a": 1}, 1.0),
        ({"a": [1, 2]}, {"a": [2, 1]}, 0.0),
        ({"a": True}, {"a": 1}, 0.0),
        ("plain text", "plain text", 1.0),
        ("5", "5", 0.0),
        ({"a": 1}, "not json", 0.0),
    ],
)
def test_json_match_parses_string_outputs(value: Any, output: Any, expected: float) -> None:
    assert score("json-match", value, output) == expected


CRITERIA = (Criterion(criterion="a", weight=0.7), Criterion(criterion="b", weight=0.3))


def test_rubric_score_is_the_weighted_share_of_met_criteria() -> None:
    assert rubric_score(CRITERIA, (1.0, 0.0)) == 0.7
    assert rubric_score(CRITERIA, (1.0, 1.0)) == 1.0
    assert rubric_score(CRITERIA, (0.5, 1.0)) == 0.65


def test_rubric_weights_are_normalised() -> None:
    criteria = (Criterion(criterion="a", weight=0.2), Criterion(criterion="b", weight=0.2))
    assert rubric_score(criteria, (1.0, 0.0)) == 0.5


def test_check_verdicts_accepts_one_verdict_per_criterion() -> None:
    verdicts = [CriterionVerdict(1.0, "cites the window"), CriterionVerdict(0.25)]
    assert check_verdicts(CRITERIA, verdicts) == (1.0, 0.25)


def test_check_verdicts_names_every_defect() -> None:
    with pytest.raises(JudgeProtocolError) as caught:
        check_verdicts(CRITERIA, [CriterionVerdict(1.5), CriterionVerdict(-1), CriterionVerdict(1)])
    message = str(caught.value)
    assert "expected 2 verdicts" in message
    assert "verdict 1: met must be a number in [0, 1], got 1.5" in message
    assert "verdict 2" in message
