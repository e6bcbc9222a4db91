"""Loading suites: every problem at once, each with its JSON path and line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openwop_eval import SuiteError, load_suite, parse_suite
from tests.helpers import golden, suite_doc

FIVE_MISTAKES_YAML = """\
suiteId: acme.support.evals.refunds
version: 1.0.0
modes: [golden]
trials: {count: 2, k: 3}
tasks:
  - taskId: lookup
    input: {}
    expected:
      kind: golden
      match: {strategy: exactly, value: x}
      trajectory:
        steps:
          - tool: crm:lookup
            args: {id: {$regex: "([a-z]"}}
  - taskId: lookup
    input: {}
    expected:
      kind: rubric
      rubric: [{criterion: c, weight: 0}]
      trajectroy: {}
"""


def problems_of(path: Path) -> list[tuple[int | None, str, str]]:
    with pytest.raises(SuiteError) as caught:
        load_suite(path)
    return [(p.line, p.path, p.message) for p in caught.value.problems]


def test_five_mistakes_are_all_listed_with_paths_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(FIVE_MISTAKES_YAML)
    found = problems_of(path)
    assert [(line, where) for line, where, _ in found] == [
        (4, "$.trials.k"),
        (10, "$.tasks[0].expected.match.strategy"),
        (14, "$.tasks[0].expected.trajectory.steps[0].args.id.$regex"),
        (15, "$.tasks[1].taskId"),
        (19, "$.tasks[1].expected.rubric"),
        (20, "$.tasks[1].expected.trajectroy"),
    ]
    messages = [m for _, _, m in found]
    assert messages[1].endswith("did you mean 'exact'?")
    assert messages[3] == "taskId 'lookup' is already used by tasks[0]"
    assert "did you mean 'trajectory'?" in messages[5]


def test_json_problems_carry_lines_too(tmp_path: Path) -> None:
    doc = suite_doc(golden("a"), golden("A"))
    doc["thresholds"] = {"passScore": 1.5}
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(doc, indent=2))
    found = problems_of(path)
    assert [(where, message) for _, where, message in found] == [
        (
            "$.tasks[1].taskId",
            "'A' is not lowercase letters, digits and hyphens, starting with a letter or digit",
        ),
        ("$.thresholds.passScore", "must be ≤ 1, got 1.5"),
    ]
    assert all(line is not None and line > 1 for line, _, _ in found)


@pytest.mark.parametrize(
    ("text", "suffix", "message"),
    [
        ('{"a": 1,, }', ".json", "not valid JSON"),
        ("a: [1, 2", ".yaml", "not valid YAML"),
        ("", ".json", "the file is empty"),
        ('{"suiteId": 1, "suiteId": 2}', ".json", "duplicate key 'suiteId'"),
        ("suiteId: a\nsuiteId: b\n", ".yaml", "duplicate key 'suiteId'"),
        ("1: a\n", ".yaml", "keys must be strings"),
        ('{"x": NaN}', ".json", "NaN is not a JSON number"),
        ("x: 1e999\n", ".yaml", "inf is not a JSON number"),
    ],
)
def test_unreadable_documents(tmp_path: Path, text: str, suffix: str, message: str) -> None:
    path = tmp_path / f"suite{suffix}"
    path.write_text(text)
    assert any(message in m for _, _, m in problems_of(path))


def test_yaml_means_what_the_same_json_would(tmp_path: Path) -> None:
    """YAML 1.2 core scalars: `on` is a string, 012 is twelve, dates stay strings."""
    path = tmp_path / "suite.yaml"
    path.write_text(
        "suiteId: acme.x.evals.y\nversion: 1.0.0\nmodes: [golden]\ntasks:\n"
        "  - taskId: t\n    input: {a: on, b: 012, c: 2024-01-01, d: yes, e: 1.5, f: null}\n"
        "    expected: {kind: golden, match: {strategy: exact, value: on}}\n"
    )
    task = load_suite(path).suite.tasks[0]
    assert task.input == {"a": "on", "b": 12, "c": "2024-01-01", "d": "yes", "e": 1.5, "f": None}


def test_a_missing_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    assert "cannot read the file" in problems_of(tmp_path / "nope.json")[0][2]


@pytest.mark.parametrize(
    ("patch", "where", "message"),
    [
        ({"modes": []}, "$.modes", "needs at least 1 item"),
        ({"modes": ["golden", "golden"]}, "$.modes", "has duplicate items"),
        ({"thresholds": None}, "$.thresholds", "expected an object, got null"),
        ({"trials": {"count": 0}}, "$.trials.count", "must be ≥ 1, got 0"),
        ({"trials": {"passRule": "most"}}, "$.trials.passRule", "'most' is not one of"),
        ({"suiteId": "acme"}, "$.suiteId", "'acme' is not a suite id like"),
        ({"extra": 1}, "$.extra", "unknown key 'extra'"),
    ],
)
def test_structural_problems(patch: dict[str, Any], where: str, message: str) -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite({**suite_doc(golden("a")), **patch})
    assert [(p.path, p.message[: len(message)]) for p in caught.value.problems] == [
        (where, message)
    ]


@pytest.mark.parametrize(
    ("expected", "where", "message"),
    [
        ({"kind": "golden"}, "$.tasks[0].expected", "a golden task needs match"),
        ({"kind": "rubric"}, "$.tasks[0].expected", "a rubric task needs rubric"),
        (
            {
                "kind": "golden",
                "match": {"strategy": "exact", "value": 1},
                "rubric": [{"criterion": "c", "weight": 1}],
            },
            "$.tasks[0].expected.rubric",
            "a golden task takes match, not rubric",
        ),
        (
            {
                "kind": "golden",
                "match": {"strategy": "exact", "value": 1},
                "trajectory": {"steps": [{"tool": "a:b"}], "forbidden": ["a:*"]},
            },
            "$.tasks[0].expected.trajectory.steps[0].tool",
            "step tool 'a:b' is also forbidden",
        ),
        (
            {
                "kind": "golden",
                "match": {"strategy": "exact", "value": 1},
                "trajectory": {"steps": [{"tool": "a:b"}, {"tool": "a:c"}], "maxCalls": 1},
            },
            "$.tasks[0].expected.trajectory.maxCalls",
            "maxCalls is 1 but there are 2 steps",
        ),
        (
            {
                "kind": "golden",
                "match": {"strategy": "exact", "value": 1},
                "trajectory": {"before": [["a:b"]]},
            },
            "$.tasks[0].expected.trajectory.before[0]",
            "needs at least 2 items",
        ),
    ],
)
def test_semantic_problems(expected: dict[str, Any], where: str, message: str) -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(suite_doc({"taskId": "a", "input": None, "expected": expected}))
    assert [(p.path, p.message[: len(message)]) for p in caught.value.problems] == [
        (where, message)
    ]


def test_warnings_do_not_block_a_valid_suite() -> None:
    doc = suite_doc(
        {
            "taskId": "a",
            "input": {},
            "expected": {
                "kind": "rubric",
                "rubric": [{"criterion": "c", "weight": 0.5}],
                "trajectory": {},
            },
        },
        pass_score=0,
    )
    loaded = parse_suite(doc)
    assert sorted(p.path for p in loaded.warnings) == [
        "$.tasks[0].expected.rubric",
        "$.tasks[0].expected.trajectory",
        "$.thresholds.passScore",
    ]
    assert all(p.severity == "warning" for p in loaded.warnings)


def test_suite_error_message_lists_every_error() -> None:
    with pytest.raises(SuiteError) as caught:
        parse_suite(suite_doc(golden("a"), golden("a"), modes=[]), source="s.json")
    text = str(caught.value)
    assert text.startswith("s.json: 2 problem(s) in the suite:")
    assert "$.modes" in text
    assert "$.tasks[1].taskId" in text


# --- hostile input: numbers JSON cannot carry (issue 8, defect 4) ------------------------

STEP_ARGS_YAML = """\
suiteId: acme.support.evals.refunds
version: 1.0.0
modes: [golden]
tasks:
  - taskId: t
    input: {}
    expected:
      kind: golden
      match: {strategy: contains, value: ok}
      trajectory:
        steps:
          - tool: a:b
            args: {id: NUMBER}
"""


@pytest.mark.parametrize("number", ["9007199254740992", "-9007199254740993", "1" + "0" * 5000])
def test_integers_beyond_2_53_are_located_problems(tmp_path: Path, number: str) -> None:
    """rfc8785 (the canonical encoder every run uses) refuses them, so validate must too."""
    path = tmp_path / "suite.yaml"
    path.write_text(STEP_ARGS_YAML.replace("NUMBER", number))
    [(line, where, message)] = problems_of(path)
    assert (line, where) == (13, "$.tasks[0].expected.trajectory.steps[0].args.id")
    assert "±(2^53−1)" in message


def test_the_largest_safe_integer_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(STEP_ARGS_YAML.replace("NUMBER", "-9007199254740991"))
    step = load_suite(path).suite.tasks[0].expected.trajectory.steps[0]  # type: ignore[union-attr]
    assert step.args == {"id": -(2**53 - 1)}


def test_json_numbers_that_overflow_to_infinity_are_located_problems(tmp_path: Path) -> None:
    doc = suite_doc(golden("t", value=1, strategy="contains"), thresholds={"maxCostUsd": 1})
    text = json.dumps(doc, indent=2).replace('"value": 1', '"value": 1e999')
    text = text.replace('"maxCostUsd": 1', '"maxCostUsd": -1E+999')
    path = tmp_path / "suite.json"
    path.write_text(text)
    found = problems_of(path)
    assert [(where, message) for _, where, message in found] == [
        ("$.tasks[0].expected.match.value", "inf is not a JSON number"),
        ("$.thresholds.maxCostUsd", "-inf is not a JSON number"),
    ]
    assert all(line is not None and line > 1 for line, _, _ in found)


@pytest.mark.parametrize("spelling", [".inf", "-.Inf", ".NaN", "!!float nan", "!!float inf"])
def test_yaml_non_finite_spellings_are_problems(tmp_path: Path, spelling: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(STEP_ARGS_YAML.replace("NUMBER", spelling))
    [(line, where, message)] = problems_of(path)
    assert (line, where) == (13, "$.tasks[0].expected.trajectory.steps[0].args.id")
    assert message.endswith("is not a JSON number")


@pytest.mark.parametrize(
    "value", [float("inf"), float("-inf"), float("nan"), 2**53, -(2**63), 10**400]
)
def test_documents_not_from_a_file_get_the_same_number_checks(value: float) -> None:
    """The host parses stored suites with parse_suite: no file, no parser, same rules."""
    doc = suite_doc(golden("t", value={"deep": [value]}))
    with pytest.raises(SuiteError) as caught:
        parse_suite(doc)
    assert [p.path for p in caught.value.problems] == ["$.tasks[0].expected.match.value.deep[0]"]
