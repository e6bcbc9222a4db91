"""Document shapes that crashed the loader (issue 8, defect 6), now located problems.

Deep nesting (RecursionError), YAML control characters (ReaderError), non-string keys (a
TypeError in the path), tags with no JSON meaning, recursive anchors and text that is not
Unicode: each is one located problem and exit 2, for files and for decoded documents alike.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from openwop_eval import SuiteError, load_suite, parse_suite
from tests.files.test_suites import STEP_ARGS_YAML, problems_of
from tests.helpers import golden, suite_doc


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("suffix", "text"),
    [
        (".json", '{"suiteId": ' + nested(1000) + "}"),
        (".json", '{"a": "[[[[", "b": ' + nested(100_000) + "}"),
        (".json", "[" * 100_000),
        (".yaml", "suiteId: " + nested(1000) + "\n"),
        (".yaml", "".join(" " * i + "- \n" for i in range(1000))),
        (".yaml", "a:\n" + "".join(" " * (i + 1) + f"k{i}:\n" for i in range(1000))),
    ],
)
def test_deep_nesting_is_a_located_problem(tmp_path: Path, suffix: str, text: str) -> None:
    path = tmp_path / f"suite{suffix}"
    path.write_text(text)
    [(line, _, message)] = problems_of(path)
    assert line is not None
    assert "more than 64 levels deep" in message


def test_deep_documents_not_from_a_file_are_a_problem() -> None:
    inner: Any = "x"
    for _ in range(100_000):
        inner = [inner]
    with pytest.raises(SuiteError) as caught:
        parse_suite(suite_doc(golden("t", value=inner)))
    [problem] = caught.value.problems
    assert "more than 64 levels deep" in problem.message


@pytest.mark.parametrize("char", ["\x01", "\x1b", "\x7f", "\ufffe"])
def test_yaml_control_characters_are_a_located_problem(tmp_path: Path, char: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(f"suiteId: a\nversion: 'x{char}'\n", "utf-8")
    [(line, where, message)] = problems_of(path)
    assert (line, where) == (2, "$")
    assert message.startswith("not valid YAML: ")


@pytest.mark.parametrize(
    ("text", "line", "where"),
    [
        ("1.5: 1e999\n", 1, "$"),
        ("~: 3\n", 1, "$"),
        ("tasks:\n  - {input: {true: 1}}\n", 2, "$.tasks[0].input"),
        ("a:\n  [1, 2]: x\n", 2, "$.a"),
        ("a:\n  {b: 1}: x\n", 2, "$.a"),
        ("a: {!!binary aGk=: 1}\n", 1, "$.a"),
    ],
)
def test_non_string_yaml_keys_anywhere_are_located_problems(
    tmp_path: Path, text: str, line: int, where: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    [(found_line, found_where, message)] = problems_of(path)
    assert (found_line, found_where) == (line, where)
    assert message.startswith("keys must be strings; got ")


@pytest.mark.parametrize(
    ("key", "shown"), [(1, "1"), (1.5, "1.5"), (None, "None"), (("a", 1), "('a', 1)")]
)
def test_non_string_keys_in_documents_not_from_a_file(key: Any, shown: str) -> None:
    doc = suite_doc(golden("t", value={"ok": {key: 1}}))
    with pytest.raises(SuiteError) as caught:
        parse_suite(doc)
    assert [(p.path, p.message) for p in caught.value.problems] == [
        ("$.tasks[0].expected.match.value.ok", f"keys must be strings; got {shown}")
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("!!binary aGk=", "unsupported YAML tag !!binary"),
        ("!!set {a: null}", "unsupported YAML tag !!set"),
        ("!!timestamp 2024-01-01", "unsupported YAML tag !!timestamp"),
        ("!!python/object:os.system {}", "unsupported YAML tag !!python/object:os.system"),
        ("!custom x", "unsupported YAML tag !custom"),
    ],
)
def test_yaml_tags_without_a_json_meaning_are_problems(
    tmp_path: Path, value: str, message: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(STEP_ARGS_YAML.replace("NUMBER", value))
    [(line, where, found)] = problems_of(path)
    assert (line, where) == (13, "$.tasks[0].expected.trajectory.steps[0].args.id")
    assert found.startswith(message)


def test_a_recursive_yaml_anchor_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text("suiteId: x\ninput: &a [1, *a]\n")
    [(line, where, message)] = problems_of(path)
    assert (line, where) == (2, "$.input[1]")
    assert "refers to itself" in message


@pytest.mark.parametrize(
    ("data", "line", "message"),
    [
        (b'{"suiteId": "a",\n "version": "\xff"}', 2, "not valid UTF-8"),
        (b"suiteId: a\nversion: \xc3\x28\n", 2, "not valid UTF-8"),
        (b'{"suiteId": "\\ud800"}', None, "lone surrogate"),
        # libyaml refuses the escape; PyYAML's own parser decodes it and the check refuses it
        (b'suiteId: "\\ud800"\n', 1, "invalid Unicode|lone surrogate"),
    ],
)
def test_text_that_is_not_unicode_is_a_problem(
    tmp_path: Path, data: bytes, line: int | None, message: str
) -> None:
    path = tmp_path / ("suite.json" if data.startswith(b"{") else "suite.yaml")
    path.write_bytes(data)
    found = problems_of(path)
    assert any(re.search(message, m) for _, _, m in found), found
    if line is not None:
        assert found[0][0] == line


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(suite_doc(golden("t"))).encode())
    assert load_suite(path).suite.tasks[0].task_id == "t"


@pytest.mark.parametrize("where", ["value", "key", "tuple key"])
def test_integers_too_long_for_python_to_print_are_reported(where: str) -> None:
    huge = 10**5000  # str(huge) raises: the message must not try
    value = {"value": huge, "key": {huge: 1}, "tuple key": {(1, huge): 1}}[where]
    with pytest.raises(SuiteError) as caught:
        parse_suite(suite_doc(golden("t", value=value)))
    [problem] = caught.value.problems
    assert problem.path == "$.tasks[0].expected.match.value"
    assert "digits" in problem.message or "a tuple" in problem.message
