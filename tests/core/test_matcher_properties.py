"""Property: whatever validate accepts grades any value without an exception.

Random ``$regex`` and ``$schema`` matchers (cycles, bad refs and bad patterns included) meet
random values (deep, huge, NaN, lone surrogates included). Either compiling reports a
problem, or every value gets a verdict and a printable reason.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from hypothesis import find, given, settings
from hypothesis import strategies as st

from openwop_eval.core.matchers import compile_args

_KEYS = st.sampled_from(["a", "b", "id", "$ref", "children"])

values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and infinities too: a Python agent can pass them
    | st.text(max_size=20)
    | st.sampled_from(["\ud800", "a" * 5000 + "!", "A-1001", "x@example.com"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)

_PATTERNS = st.sampled_from(
    ["^a", "(a+)+$", "(a)\\1", "a(?=b)", "[", "\\pL+", "^\\d{2,}$", "(?i)id", "\\Z", "x*+"]
)
_REFS = st.sampled_from(
    ["#", "#/$defs/a", "#/$defs/b", "#/$defs/missing", "#/properties/a", "#leaf",
     "http://127.0.0.1:9/s.json", "other.json", "#/enum/0"]
)  # fmt: skip
_LEAVES = st.one_of(
    st.booleans(),
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "object", "array"])}),
    st.fixed_dictionaries({"$ref": _REFS}),
    st.fixed_dictionaries({"pattern": _PATTERNS}),
    st.fixed_dictionaries({"enum": st.lists(values, max_size=3)}),
    st.fixed_dictionaries({"multipleOf": st.sampled_from([0.5, 3, 1e-300])}),
    st.fixed_dictionaries({"uniqueItems": st.just(True)}),
    st.fixed_dictionaries({"minLength": st.integers(0, 3), "format": st.just("email")}),
)


def _applicators(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    pairs = st.lists(inner, min_size=1, max_size=3)
    return st.one_of(
        st.fixed_dictionaries({"allOf": pairs}),
        st.fixed_dictionaries({"anyOf": pairs}),
        st.fixed_dictionaries({"oneOf": pairs}),
        st.fixed_dictionaries({"not": inner}),
        st.fixed_dictionaries({"if": inner, "then": inner}),
        st.fixed_dictionaries({"properties": st.dictionaries(_KEYS, inner, max_size=2)}),
        st.fixed_dictionaries({"patternProperties": st.dictionaries(_PATTERNS, inner, max_size=2)}),
        st.fixed_dictionaries({"additionalProperties": inner}),
        st.fixed_dictionaries({"items": inner}),
        st.fixed_dictionaries({"prefixItems": pairs}),
        st.fixed_dictionaries({"contains": inner}),
    )


_SUBSCHEMAS = st.recursive(_LEAVES, _applicators, max_leaves=8)

schemas = st.builds(
    lambda body, a, b, anchor: {
        **(body if isinstance(body, dict) else {"allOf": [body]}),
        "$defs": {"a": a, "b": b, "leafy": {"$anchor": "leaf", **anchor}},
    },
    _SUBSCHEMAS,
    _SUBSCHEMAS,
    _SUBSCHEMAS,
    st.fixed_dictionaries({"type": st.sampled_from(["string", "array"])}),
)


def _grades_without_error(spec: Any, value: Any) -> None:
    matcher, problems = compile_args(spec, False, ())
    if problems:
        return
    found = matcher.mismatch(value, ())
    if found is not None:
        assert isinstance(found.describe(), str)


@settings(max_examples=300, deadline=timedelta(seconds=10))
@given(schema=schemas, value=values)
def test_an_accepted_schema_grades_any_value(schema: Any, value: Any) -> None:
    _grades_without_error({"$schema": schema}, value)


@settings(max_examples=300, deadline=timedelta(seconds=10))
@given(pattern=st.text(alphabet="ab()[]{}|*+?.^$\\dwsSzZ1=!<>:,-P", max_size=12), value=values)
def test_an_accepted_regex_grades_any_value(pattern: str, value: Any) -> None:
    _grades_without_error({"v": {"$regex": pattern}}, {"v": value})


@settings(max_examples=100, deadline=timedelta(seconds=10))
@given(schema=schemas, depth=st.integers(0, 5000))
def test_an_accepted_schema_grades_a_value_of_any_depth(schema: Any, depth: int) -> None:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"a": value}
    _grades_without_error({"$schema": schema}, value)


def test_the_generator_reaches_accepted_schemas_with_refs_and_patterns() -> None:
    # Guard: were every generated schema refused, the properties above would be void.
    def accepted(schema: Any) -> bool:
        text = json.dumps(schema)
        return (
            '"$ref"' in text
            and '"pattern' in text
            and not compile_args({"$schema": schema}, False, ())[1]
        )

    found = find(schemas, accepted, settings=settings(max_examples=2000, database=None))
    assert compile_args({"$schema": found}, False, ())[1] == []


_KEYWORDS = st.sampled_from(
    ["$id", "$ref", "$anchor", "$schema", "$defs", "definitions", "$dynamicRef", "$comment",
     "type", "enum", "const", "pattern", "patternProperties", "properties", "items",
     "prefixItems", "additionalProperties", "unevaluatedProperties", "unevaluatedItems",
     "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas",
     "dependencies", "contains", "minContains", "propertyNames", "format", "multipleOf",
     "minimum", "maxLength", "uniqueItems", "required", "contentSchema"]
)  # fmt: skip
_WILD: st.SearchStrategy[Any] = st.recursive(
    values | st.sampled_from(["#", "#/$defs/a", "urn:x", "\ud800", "#a", "string", "%zz"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_KEYWORDS | _KEYS, inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=timedelta(seconds=10))
@given(schema=st.dictionaries(_KEYWORDS, _WILD, max_size=5), value=values)
def test_any_object_as_a_schema_compiles_or_is_a_problem(schema: Any, value: Any) -> None:
    _grades_without_error({"$schema": schema}, value)
