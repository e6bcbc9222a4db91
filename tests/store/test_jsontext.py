"""The fast JSON text the store and the events file use: hostile values refused or carried
whole, never turned silently into something else."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.base import jsontext


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_is_refused_not_written_as_null(bad: float) -> None:
    for value in (bad, {"a": [1, {"b": bad}]}, [None, bad]):
        with pytest.raises(ValueError, match="not JSON compliant"):
            jsontext.dumps(value)


def test_what_orjson_cannot_encode_falls_back_to_the_standard_encoder() -> None:
    value = {"big": 2**70, "n": None}
    assert json.loads(jsontext.dumps(value)) == value
    assert jsontext.dumps({1: "x"}) == '{"1":"x"}'


def test_a_copy_is_deep_and_equal_even_past_64_bits() -> None:
    for value in ({"a": [1, {"b": "é"}], "c": None}, {"big": 2**70}):
        copied = jsontext.copy(value)
        assert copied == value
        assert copied is not value
    nested = {"a": [{"b": 1}]}
    jsontext.copy(nested)["a"][0]["b"] = 2
    assert nested == {"a": [{"b": 1}]}


@pytest.mark.parametrize("text", ["NaN", "[1e999]", '"\\ud800"', "[" * 2000 + "]" * 2000, "{"])
def test_loads_is_strict(text: str) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - orjson's messages vary by case
        jsontext.loads(text)


class _Mapping(dict[str, object]):
    pass


_leaves = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=4)
_values = st.recursive(
    _leaves | st.floats(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=4)
        | st.dictionaries(st.text(max_size=3), inner, max_size=2).map(_Mapping)
    ),
    max_leaves=20,
)


def _non_finite(value: object) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_non_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_non_finite(v) for v in value)
    return False


@given(_values)
def test_dumps_refuses_exactly_the_values_with_a_non_finite_number(value: object) -> None:
    if _non_finite(value):
        with pytest.raises(ValueError, match="not JSON compliant"):
            jsontext.dumps(value)
    else:
        assert json.loads(jsontext.dumps(value)) == json.loads(json.dumps(value))
