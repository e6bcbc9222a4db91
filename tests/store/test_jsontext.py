"""The fast JSON text the store and the events file use: hostile values refused or carried
whole, never turned silently into something else."""

from __future__ import annotations

import json
import math

import pytest

from openwop_eval import jsontext


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
