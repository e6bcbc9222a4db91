"""Argument matching: literals by JSON equality, subset/exact objects, and every matcher."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.core.matchers import compile_args


def matches(expected: Any, actual: Any, exact: bool = False) -> bool:
    matcher, problems = compile_args(expected, exact, ())
    assert problems == []
    return matcher.mismatch(actual, ()) is None


def problems_of(expected: Any) -> list[str]:
    return [f"{p.path}: {p.message}" for p in compile_args(expected, False, ())[1]]


@pytest.mark.parametrize(
    ("expected", "actual", "result"),
    [
        ({"n": 1}, {"n": 1.0}, True),
        ({"n": True}, {"n": 1}, False),
        ({"n": 1}, {"n": True}, False),
        ({"n": None}, {"n": None}, True),
        ({"n": None}, {}, False),
        ({"s": "a"}, {"s": "A"}, False),
        ({"xs": [1, 2]}, {"xs": [1, 2]}, True),
        ({"xs": [1, 2]}, {"xs": [2, 1]}, False),
        ({"xs": [1]}, {"xs": [1, 2]}, False),
        ({"o": {"a": 1}}, {"o": {"a": 1, "b": 2}}, True),
    ],
)
def test_literals_compare_by_json_equality(expected: Any, actual: Any, result: bool) -> None:
    assert matches(expected, actual) is result


def test_subset_allows_extra_keys_at_every_depth() -> None:
    assert matches({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}, "d": 3})


def test_exact_forbids_extra_keys_at_every_depth() -> None:
    assert not matches({"a": {"b": 1}}, {"a": {"b": 1}, "d": 3}, exact=True)
    assert not matches({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, exact=True)
    assert matches({"a": {"b": 1}}, {"a": {"b": 1}}, exact=True)


@pytest.mark.parametrize(
    ("matcher", "value", "result"),
    [
        ({"$regex": "^A-\\d+$"}, "A-100", True),
        ({"$regex": "\\d"}, "x1y", True),
        ({"$regex": "^A"}, "B-1", False),
        ({"$regex": "1"}, 1, False),
        ({"$gte": 10, "$lt": 20}, 10, True),
        ({"$gte": 10, "$lt": 20}, 20, False),
        ({"$gt": 10}, 10, False),
        ({"$lte": 0.5}, 0.5, True),
        ({"$gte": 0}, True, False),
        ({"$gte": 0}, "5", False),
        ({"$in": ["a", 1]}, 1.0, True),
        ({"$in": ["a", 1]}, True, False),
        ({"$any": True}, None, True),
        ({"$schema": {"type": "string", "maxLength": 3}}, "abc", True),
        ({"$schema": {"type": "string", "maxLength": 3}}, "abcd", False),
        ({"$literal": {"$regex": "x"}}, {"$regex": "x"}, True),
        ({"$literal": {"$regex": "x"}}, "x", False),
    ],
)
def test_matchers(matcher: dict[str, Any], value: Any, result: bool) -> None:
    assert matches({"v": matcher}, {"v": value}) is result


def test_any_still_requires_the_key() -> None:
    assert not matches({"v": {"$any": True}}, {})


def test_matchers_apply_inside_arrays() -> None:
    assert matches({"xs": [{"$gt": 0}, {"$regex": "^b"}]}, {"xs": [1, "bee"]})


def test_a_top_level_matcher_applies_to_the_whole_arguments() -> None:
    schema = {"$schema": {"type": "object", "required": ["id"]}}
    assert matches(schema, {"id": 1})
    assert not matches(schema, {"name": 1})


def test_mismatch_says_where_and_why() -> None:
    matcher, _ = compile_args({"order": {"id": {"$regex": "^A"}}}, False, ())
    found = matcher.mismatch({"order": {"id": "B-2"}}, ())
    assert found is not None
    assert found.describe() == 'args.order.id: expected a string matching /^A/, got "B-2"'
    missing = matcher.mismatch({"order": {}}, ())
    assert missing is not None
    assert missing.describe() == "args.order.id: missing (expected a string matching /^A/)"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"v": {"$regx": "a"}}, "$.v.$regx: unknown matcher '$regx'"),
        ({"v": {"$regex": "a", "x": 1}}, "$.v: an object mixes matcher keys"),
        ({"v": {"$regex": "a", "$in": []}}, "$.v: a matcher object takes exactly one key"),
        ({"v": {"$regex": "("}}, "$.v.$regex: not a valid regular expression"),
        ({"v": {"$regex": 3}}, "$.v.$regex: $regex takes a string"),
        ({"v": {"$gte": "1"}}, "$.v.$gte: $gte takes a number"),
        ({"v": {"$gte": True}}, "$.v.$gte: $gte takes a number"),
        ({"v": {"$in": 1}}, "$.v.$in: $in takes an array"),
        ({"v": {"$any": False}}, "$.v.$any: $any takes true"),
        ({"v": {"$schema": {"type": "strin"}}}, "$.v.$schema: not a valid JSON Schema"),
        ({"v": {"$schema": 3}}, "$.v.$schema: $schema takes a JSON Schema"),
    ],
)
def test_bad_matchers_are_problems(spec: dict[str, Any], message: str) -> None:
    found = problems_of(spec)
    assert len(found) == 1
    assert found[0].startswith(message)


def test_a_mismatch_describes_values_json_cannot_write() -> None:
    matcher, _ = compile_args({"v": {"$gt": 0}}, False, ())
    nan = matcher.mismatch({"v": float("nan")}, ())
    assert nan is not None
    assert nan.describe() == "args.v: expected a number > 0, got nan"
    deep: list[Any] = []
    for _ in range(10_000):
        deep = [deep]
    found = matcher.mismatch({"v": deep}, ())
    assert found is not None
    assert found.describe() == (
        "args.v: expected a number > 0, got a value nested more than 100 levels deep"
    )
