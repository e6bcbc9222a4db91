"""The adversarial detectors: what each finds, what it must not, and that no input breaks
them or makes them report content."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.core import ToolCall
from openwop_eval.core.safety import (
    DEFAULT_SEVERITIES,
    MAX_SCANNED_CHARS,
    SECRET_PATTERNS,
    FindingTag,
    SafetyPolicy,
    at_or_above,
    detect,
    distinct_tags,
    finding_field_problems,
    finding_problem,
)
from tests.helpers import golden, plan, suite_doc

SECRETS = {
    "aws-access-key-id": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "a1B2" * 9,
    "github-fine-grained-token": "github_pat_" + "x" * 70,
    "openai-api-key": "sk-proj-" + "Ab3" * 10,
    "anthropic-api-key": "sk-ant-api03-" + "z" * 30,
    "slack-token": "xoxb-1234567890-abcdef",
    "google-api-key": "AIza" + "B" * 35,
    "stripe-secret-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "private-key-block": "-----BEGIN RSA PRIVATE KEY-----",
}
NEAR_MISSES = [
    "AKIA123",  # too short
    "ghp_short",
    "sk-short",
    "xoxq-1234567890-abcdef",  # not a Slack prefix
    "-----BEGIN PUBLIC KEY-----",
    "task-1234567890",
]


def kinds(found: tuple[Any, ...]) -> list[str]:
    return [d.tag.kind for d in found]


def test_every_secret_pattern_is_named_and_tested() -> None:
    assert {name for name, _ in SECRET_PATTERNS} == set(SECRETS)


@pytest.mark.parametrize(("name", "secret"), SECRETS.items())
def test_a_credential_shape_is_found_in_the_output_and_in_arguments(name: str, secret: str) -> None:
    in_output = detect(SafetyPolicy(), {"reply": f"here: {secret} done"}, (), None)
    assert [(d.tag.kind, d.where) for d in in_output] == [
        ("secret-leak", f"{name} in the output at $.reply")
    ]
    in_args = detect(SafetyPolicy(), "ok", (ToolCall("mail:send", {"body": [secret]}),), None)
    assert [d.where for d in in_args] == [f"{name} in call 1 to mail:send at $.body[0]"]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_not_secrets(text: str) -> None:
    assert detect(SafetyPolicy(), text, (), None) == ()


def test_the_secret_scan_can_be_turned_off() -> None:
    assert detect(SafetyPolicy(scan_secrets=False), SECRETS["github-token"], (), None) == ()


def test_canaries_are_found_in_values_and_keys_case_sensitively() -> None:
    policy = SafetyPolicy(canaries=("Cn-42", "other"))
    found = detect(policy, {"Cn-42": 1, "x": "cn-42"}, (ToolCall("a:b", "pre Cn-42"),), None)
    assert [(d.tag, d.where) for d in found] == [
        (FindingTag("canary-leak", "critical"), "canary 1 in the output at $"),
        (FindingTag("canary-leak", "critical"), "canary 1 in call 1 to a:b at $"),
    ]


def test_forbidden_calls_are_findings_and_severities_are_configurable() -> None:
    doc = suite_doc(golden("t", trajectory={"steps": [], "forbidden": ["admin:*"]}))
    spec = plan(doc).tasks[0].trajectory
    calls = (ToolCall("crm:read"), ToolCall("admin:drop"))
    found = detect(SafetyPolicy(severities={"forbidden-tool": "critical"}), "ok", calls, spec)
    assert [d.tag for d in found] == [FindingTag("forbidden-tool", "critical")]
    assert "admin:drop at call 2" in found[0].where
    assert detect(SafetyPolicy(forbidden_tools=False), "ok", calls, spec) == ()


def test_judge_findings_are_kept_unless_turned_off() -> None:
    tag = FindingTag("prompt-leak", "medium")
    assert [d.tag for d in detect(SafetyPolicy(), "ok", (), None, (tag,))] == [tag]
    assert detect(SafetyPolicy(judge=False), "ok", (), None, (tag,)) == ()


def test_what_is_not_scanned_is_not_called_clean() -> None:
    big = ["x" * (MAX_SCANNED_CHARS // 2)] * 3
    found = detect(SafetyPolicy(), big, (), None)
    assert kinds(found) == ["scan-incomplete"]


def test_distinct_tags_are_ordered_most_severe_first() -> None:
    tags = [
        FindingTag("b", "low"),
        FindingTag("a", "critical"),
        FindingTag("b", "low"),
        FindingTag("c", "critical"),
    ]
    assert distinct_tags(tags) == (tags[1], tags[3], tags[0])


def test_severity_levels_rank() -> None:
    assert at_or_above("critical", "high")
    assert at_or_above("high", "high")
    assert not at_or_above("medium", "high")
    assert not at_or_above("critical", None)


@pytest.mark.parametrize(
    ("kind", "severity", "fields"),
    [
        ("prompt-leak", "high", set()),
        ("Prompt Leak", "high", {"kind"}),
        ("a" * 65, "high", {"kind"}),
        ("ok", "severe", {"severity"}),
        (3, ["high"], {"kind", "severity"}),  # unhashable: a problem, not a crash
        ("ok", {"a": 1}, {"severity"}),
    ],
)
def test_finding_tags_are_checked_field_by_field(
    kind: Any, severity: Any, fields: set[str]
) -> None:
    assert set(finding_field_problems(kind, severity)) == fields
    assert (finding_problem(kind, severity) is None) == (not fields)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(output=JSON, args=JSON, canary=st.text(min_size=1, max_size=6))
def test_no_value_breaks_a_detector_and_every_tag_is_valid(
    output: Any, args: Any, canary: str
) -> None:
    found = detect(SafetyPolicy(canaries=(canary,)), output, (ToolCall("t:x", args),), None)
    for detection in found:
        assert finding_problem(detection.tag.kind, detection.tag.severity) is None
        # One of the detectors' fixed kinds, so nothing of the canary or the values is in
        # it (a bare ``canary not in kind`` fails for a canary such as "a": "canary-leak").
        assert detection.tag.kind in DEFAULT_SEVERITIES
