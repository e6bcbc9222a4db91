"""The fast canonical encoder writes exactly what the RFC 8785 reference writes."""

from __future__ import annotations

import math
from typing import Any

import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval.core import canonical_json

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.floats(1e-5, 1e16)
    | st.text(max_size=8)
    | st.sampled_from(["\x00", "\x1f\x7f", '"\\/', "\u2028", "\ue000", "\U0001f600", "é"])
)
JSONS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


def reference(value: Any) -> str | type[Exception]:
    try:
        return rfc8785.dumps(value).decode("utf-8")
    except Exception as exc:
        return type(exc)


def ours(value: Any) -> str | type[Exception]:
    try:
        return canonical_json(value)
    except Exception as exc:
        return type(exc)


@settings(max_examples=500, deadline=None)
@given(JSONS)
def test_every_value_is_written_as_the_reference_writes_it(value: Any) -> None:
    assert ours(value) == reference(value)


def test_the_edges_of_the_fast_path() -> None:
    edges: list[Any] = [
        {"a": 1.0},  # integral float: "1" in JCS
        [1e-4, 9.99e-5, 1e15 - 0.5, 1e15 + 0.5, 1e21, 5e-324, -0.0],
        {"\ue000": 1, "\U0001f600": 2},  # sorted by UTF-16 units, not code points
        [2**53 - 1, 2**53, -(2**53 - 1)],
        {"k": "\ud800"},  # a lone surrogate
        [math.pi, -math.e],
    ]
    for value in edges:
        assert ours(value) == reference(value), value
