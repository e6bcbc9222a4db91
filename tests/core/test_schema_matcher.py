"""``$schema`` matchers: whatever validate accepts grades without an exception, in bounded work,
without the network or files; what cannot run is a located problem at validate time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openwop_eval.core.matchers import compile_args
from openwop_eval.core.schema_matcher import (
    MAX_DEPTH,
    MAX_STEPS,
    MAX_VALUE_DEPTH,
)
from openwop_eval.core.schema_walk import MAX_IN_PLACE, MAX_IN_PLACE_DEPTH
from tests.core.terminates import terminates

TREE = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}


def problems_of(schema: Any) -> list[str]:
    return [
        f"{p.path}: {p.message}" for p in compile_args({"v": {"$schema": schema}}, False, ())[1]
    ]


def reason(schema: Any, value: Any) -> str | None:
    """None when ``value`` matches; otherwise the mismatch, as reported."""
    matcher, problems = compile_args({"$schema": schema}, False, ())
    assert problems == []
    found = matcher.mismatch(value, ())
    return None if found is None else found.describe()


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"children": []}
    for _ in range(depth):
        value = {"children": [value]}
    return value


# --- issue 8, defect 4: validate said valid, then grading crashed -----------------------


def test_a_self_reference_at_the_same_place_is_rejected() -> None:
    (problem,) = problems_of({"$ref": "#"})
    assert problem.startswith("$.v.$schema.$ref: this $ref leads back to a schema that applies")
    assert "below a keyword that descends into the value" in problem


def test_a_cycle_through_defs_is_rejected() -> None:
    schema = {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a",
    }
    (problem,) = problems_of(schema)
    assert problem.startswith("$.v.$schema.$defs.b.$ref: this $ref leads back")


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"$ref": "#"}]},
        {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
        {"oneOf": [{"$ref": "#"}]},
        {"not": {"$ref": "#"}},
        {"if": {"$ref": "#"}},
        {"if": True, "then": {"$ref": "#"}},
        {"if": False, "else": {"$ref": "#"}},
        {"dependentSchemas": {"a": {"$ref": "#"}}},
        {
            "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}},
            "$ref": "#/$defs/a",
        },
    ],
)
def test_every_cycle_that_stays_at_the_same_place_is_rejected(schema: Any) -> None:
    (problem,) = problems_of(schema)
    assert "leads back to a schema that applies at the same place" in problem


@pytest.mark.parametrize(
    ("ref", "where"),
    [
        ("#/$defs/missing", "$.v.$schema.$ref"),
        ("#nowhere", "$.v.$schema.$ref"),
        ("other.json", "$.v.$schema.$ref"),
        ("urn:example:elsewhere", "$.v.$schema.$ref"),
        ("#/properties/a/items", "$.v.$schema.$ref"),
    ],
)
def test_a_ref_that_does_not_resolve_within_the_schema_is_rejected(ref: str, where: str) -> None:
    (problem,) = problems_of({"$ref": ref, "properties": {"a": {}}})
    assert problem.startswith(f"{where}: $ref {ref!r} does not resolve within this schema;")
    assert "never fetches another document" in problem


def test_an_unresolvable_ref_in_an_unused_definition_is_rejected_too() -> None:
    (problem,) = problems_of({"$defs": {"a": {"items": {"$ref": "#/$defs/b"}}}})
    assert problem.startswith("$.v.$schema.$defs.a.items.$ref: $ref '#/$defs/b' does not resolve")


@pytest.mark.parametrize("ref", ["#/enum/0", "#/required"])
def test_a_ref_must_point_at_a_subschema(ref: str) -> None:
    schema = {"enum": [{"$ref": "#"}], "required": ["a"], "$ref": ref}
    assert problems_of(schema) == [
        f"$.v.$schema.$ref: $ref {ref!r} points at something that is not a subschema"
    ]


def test_a_recursive_schema_that_descends_into_the_value_grades() -> None:
    assert problems_of(TREE) == []
    assert reason(TREE, nested(20)) is None
    bad = reason(TREE, {"children": [{"children": [{"children": 5}]}]})
    assert bad == (
        "args: expected a value valid against the schema (5 is not of type 'array'),"
        ' got {"children":[{"children":[{"children":5}]}]}'
    )


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        ({"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#"}}]},
         [1, [2, [3]]], [1, ["x"]]),
        ({"type": "object", "additionalProperties": {"$ref": "#"}}, {"a": {"b": {}}}, {"a": 1}),
        ({"prefixItems": [{"$ref": "#"}], "type": "array"}, [[[]]], [[1]]),
        ({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}},
                             "required": ["v"]}},
          "$ref": "#/$defs/node"}, {"v": 1, "next": {"v": 2}}, {"v": 1, "next": {}}),
        ({"$defs": {"a": {"$anchor": "leaf", "type": "string"}}, "items": {"$ref": "#leaf"}},
         ["x"], [1]),
        ({"$defs": {"a": {"$id": "urn:example:leaf", "type": "string"}},
          "items": {"$ref": "urn:example:leaf"}}, ["x"], [1]),
        ({"$schema": "http://json-schema.org/draft-07/schema#",
          "definitions": {"n": {"type": "integer"}}, "items": {"$ref": "#/definitions/n"}},
         [1], ["x"]),
    ],
)  # fmt: skip
def test_local_refs_resolve_and_grade(schema: Any, good: Any, bad: Any) -> None:
    assert problems_of(schema) == []
    assert reason(schema, good) is None
    assert reason(schema, bad) is not None


@pytest.mark.parametrize(
    ("schema", "keyword"),
    [
        ({"$dynamicRef": "#meta", "$dynamicAnchor": "meta"}, "$dynamicRef"),
        ({"$schema": "https://json-schema.org/draft/2019-09/schema", "$recursiveRef": "#"},
         "$recursiveRef"),
    ],
)  # fmt: skip
def test_dynamic_refs_are_rejected(schema: Any, keyword: str) -> None:
    assert problems_of(schema) == [
        f"$.v.$schema.{keyword}: {keyword} is not supported in $schema matchers; use $ref"
    ]


def test_a_schema_that_expands_exponentially_in_place_is_rejected() -> None:
    defs: dict[str, Any] = {
        f"a{i}": {"allOf": [{"$ref": f"#/$defs/a{i + 1}"}] * 2} for i in range(30)
    }
    defs["a30"] = {"type": "object"}
    (problem,) = problems_of({"$defs": defs, "$ref": "#/$defs/a0"})
    assert problem.startswith("$.v.$schema: this schema applies more than 10000 subschemas")


def test_in_place_nesting_is_bounded() -> None:
    defs: dict[str, Any] = {f"a{i}": {"$ref": f"#/$defs/a{i + 1}"} for i in range(60)}
    defs["a60"] = {"type": "object"}
    (problem,) = problems_of({"$defs": defs, "$ref": "#/$defs/a0"})
    assert problem.startswith("$.v.$schema: $ref and in-place applicators")
    assert "nest more than 50 deep" in problem


def test_a_deeply_nested_value_is_a_mismatch_not_a_recursion_error() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert reason({"items": {"$ref": "#"}}, deep) == (
        "args: expected a value valid against the schema (not checked: the value is nested more"
        " than 100 levels deep), got a value nested more than 100 levels deep"
    )
    assert reason(TREE, nested(45)) is None  # 90 levels of objects and arrays


def test_work_that_explodes_with_the_value_runs_out_of_budget() -> None:
    # Two branches descend into "x" with the whole schema: 2^depth checks.
    out = terminates(
        """
        from openwop_eval.core.matchers import compile_args
        schema = {"allOf": [{"properties": {"x": {"$ref": "#"}}}] * 2}
        matcher, problems = compile_args({"$schema": schema}, False, ())
        assert problems == []
        value = 1
        for _ in range(40):
            value = {"x": value}
        print(matcher.mismatch(value, ()).expected)
        """
    )
    assert out == "a value valid against the schema (not checked: it needs more than 100000 steps)"


def test_unique_items_over_objects_is_charged_per_pair() -> None:
    schema = {"uniqueItems": True}
    assert reason(schema, [{"a": i} for i in range(400)]) is None
    found = reason(schema, [{"a": i} for i in range(20_000)])
    assert found is not None
    assert "(not checked: it needs more than 100000 steps)" in found


def test_error_messages_are_charged_so_a_huge_value_cannot_multiply() -> None:
    # Each branch's message repeats the value: 3000 copies of a megabyte, unless charged.
    schema = {"anyOf": [{"type": "string", "const": f"x{i}"} for i in range(3000)]}
    found = reason(schema, {"k": "y" * 1_000_000})
    assert found is not None
    assert "(not checked: it needs more than 100000 steps)" in found


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_number_is_a_mismatch_not_a_crash(value: float) -> None:
    found = reason({"multipleOf": 0.5}, value)
    assert found is not None
    assert found.startswith("args: expected a value valid against the schema (not checked: ")


def test_format_is_an_annotation_and_never_asserted() -> None:
    for fmt in ("email", "hostname", "idn-hostname", "uri", "date-time", "regex"):
        assert reason({"type": "string", "format": fmt}, "(not [valid") is None


def test_pattern_inside_a_schema_runs_on_re2() -> None:
    out = terminates(
        """
        from openwop_eval.core.matchers import compile_args
        schema = {"type": "string", "pattern": "(a+)+$"}
        matcher, problems = compile_args({"$schema": schema}, False, ())
        assert problems == []
        print(matcher.mismatch("a" * 40 + "b", ()) is None, matcher.mismatch("aaa", ()) is None)
        """
    )
    assert out == "False True"


def test_pattern_properties_and_additional_properties_use_re2() -> None:
    schema = {"patternProperties": {"^x-\\pL+$": {"type": "string"}}, "additionalProperties": False}
    assert reason(schema, {"x-é": "a"}) is None
    assert reason(schema, {"x-é": 1}) is not None
    assert reason(schema, {"y": "a"}) == (
        "args: expected a value valid against the schema (additional properties are not allowed"
        """ ('y' unexpected)), got {"y":"a"}"""
    )


def test_unevaluated_properties_beside_pattern_properties_is_rejected() -> None:
    (problem,) = problems_of({"patternProperties": {"^a": {}}, "unevaluatedProperties": False})
    assert problem.startswith("$.v.$schema.unevaluatedProperties: unevaluatedProperties cannot")


@pytest.mark.parametrize(
    ("dialect", "message"),
    [
        (
            "http://example.com/my-dialect",
            "unknown JSON Schema dialect 'http://example.com/my-dialect'",
        ),
        ("http://[::1", "unknown JSON Schema dialect"),
        (["x"], "$schema names the dialect and takes a URI string"),
        ("http://json-schema.org/draft-03/schema#", "JSON Schema draft 3 is not supported"),
    ],
)
def test_an_unknown_dialect_is_rejected(dialect: Any, message: str) -> None:
    (problem,) = problems_of({"$schema": dialect, "type": "string"})
    assert problem.startswith(f"$.v.$schema.$schema: {message}")


@pytest.mark.parametrize(
    "dialect",
    [
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-04/schema#",
    ],
)
def test_known_dialects_grade(dialect: str) -> None:
    schema = {"$schema": dialect, "type": "object", "required": ["id"]}
    assert reason(schema, {"id": 1}) is None
    assert reason(schema, {}) is not None


def test_a_non_string_ref_is_rejected_even_where_the_metaschema_allows_it() -> None:
    schema = {"$schema": "http://json-schema.org/draft-04/schema#", "$ref": 5}
    assert problems_of(schema) == ["$.v.$schema.$ref: $ref takes a string (a URI reference)"]


def test_a_schema_invalid_against_its_metaschema_is_located() -> None:
    assert problems_of({"properties": {"a": {"minLength": -1}}}) == [
        "$.v.$schema: not a valid JSON Schema at properties/a/minLength: -1 is less than the"
        " minimum of 0"
    ]


def test_the_documented_limits_are_the_enforced_ones() -> None:
    text = " ".join((Path(__file__).parents[2] / "docs" / "suite-format.md").read_text().split())
    assert (
        f"applies at most {MAX_IN_PLACE} subschemas, through at most {MAX_IN_PLACE_DEPTH} nested"
        in text
    )
    assert f"has a budget — {MAX_STEPS} keyword evaluations" in text
    assert (
        f"keywords nested at most {MAX_DEPTH} deep, a value nested at most {MAX_VALUE_DEPTH}"
        in text
    )
    assert f"not checked: it needs more than {MAX_STEPS} steps" in text
