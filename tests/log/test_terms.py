"""A run's terms and findings read back from a hostile log: each bad value is a problem and
falls back to the suite's own terms — never a crash, never a guessed baseline or bar."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.core.plan import Baseline, RunTerms
from openwop_eval.core.safety import FindingTag
from openwop_eval.log import EXT, replay
from openwop_eval.log.terms import started_payload, terms_of
from tests.helpers import golden, suite_doc


def test_the_terms_round_trip_through_eval_started() -> None:
    suite = parse_suite(suite_doc(golden("t"), modes=["golden", "regression"])).suite
    terms = RunTerms(("regression",), "high", Baseline("acme/r-1", 0.75, "/runs/x:diff?against=y"))
    payload = started_payload(suite, terms, {"t": "acme/r-0"})
    assert payload["baselineRunId"] == "acme/r-1"
    assert payload["fixtureRuns"] == {"t": "acme/r-0"}
    problems: list[str] = []
    assert terms_of(payload, problems) == terms
    assert problems == []


@pytest.mark.parametrize(
    ("payload", "terms", "problem"),
    [
        ({"modes": "golden"}, RunTerms(), "modes is not a list"),
        ({"modes": ["golden", "telepathy"]}, RunTerms(), "modes is not a list"),
        ({"modes": []}, RunTerms(), "modes is not a list"),
        ({EXT: {"failOnSeverity": "severe"}}, RunTerms(), "not a severity"),
        ({EXT: {"failOnSeverity": ["high"]}}, RunTerms(), "not a severity"),
        ({"baselineRunId": 7, EXT: {"baselineAggregateScore": 1}}, RunTerms(), "not a run id"),
        ({"baselineRunId": "a/b", EXT: {"baselineAggregateScore": 1.5}}, RunTerms(), None),
        ({"baselineRunId": "a/b", EXT: {"baselineAggregateScore": "1"}}, RunTerms(), None),
        ({"baselineRunId": "a/b", EXT: []}, RunTerms(), None),
        ({EXT: {"baselineAggregateScore": 0.5}}, RunTerms(), None),  # no run: no baseline
    ],
)
def test_hostile_terms_fall_back_to_the_suites_own(
    payload: dict[str, Any], terms: RunTerms, problem: str | None
) -> None:
    problems: list[str] = []
    assert terms_of(payload, problems) == terms
    assert (problem is None) == (not problems)
    assert problem is None or problem in problems[0]


def scored(findings: Any) -> list[dict[str, Any]]:
    ext = {"taskId": "t", "trial": 0, "invocationId": "i", "safetyFindings": findings}
    return [
        {"sequence": 0, "type": "agent.invocation-started", "payload": {"invocationId": "i"}},
        {"sequence": 1, "type": "eval.scored", "payload": {"taskId": "t", "score": 1, EXT: ext}},
    ]


@pytest.mark.parametrize(
    ("findings", "kept", "problems"),
    [
        ([{"kind": "canary-leak", "severity": "critical"}], 1, 0),
        ("canary-leak", 0, 1),
        ([{"kind": "x", "severity": "high"}] * 65, 0, 1),
        ([{"kind": "Not A Slug", "severity": "high"}, {"kind": "ok", "severity": "low"}], 1, 1),
        ([{"kind": "ok", "severity": {"a": 1}}], 0, 1),
        ([7, None, []], 0, 3),
    ],
)
def test_recorded_findings_are_read_as_far_as_they_hold(
    findings: Any, kept: int, problems: int
) -> None:
    log = replay(scored(findings))
    assert len(log.records[0].findings) == kept
    assert len(log.problems) == problems


@given(
    st.recursive(
        st.none() | st.text() | st.integers(), lambda c: st.lists(c) | st.dictionaries(st.text(), c)
    )
)
def test_no_value_breaks_reading_terms_or_findings(value: Any) -> None:
    terms_of({"modes": value, "baselineRunId": value, EXT: {"failOnSeverity": value}}, [])
    terms_of({EXT: value}, [])
    tags = replay(scored(value)).records[0].findings
    assert all(isinstance(t, FindingTag) for t in tags)
