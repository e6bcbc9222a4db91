"""Strict I-JSON: every refusal is located and quotes nothing long; valid I-JSON round-trips."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval.conformance.digests import jcs
from openwop_eval.conformance.ijson import (
    MAX_DEPTH,
    MAX_SAFE_INTEGER,
    IJsonError,
    parse_ijson,
    pointer,
    printable,
)


def refusal(text: bytes | str, **kwargs: Any) -> IJsonError:
    with pytest.raises(IJsonError) as caught:
        parse_ijson(text, **kwargs)
    return caught.value


@pytest.mark.parametrize(
    ("text", "kind", "location"),
    [
        ('{"a": 1, "a": 2}', "non-ijson", "/"),
        ('{"results": {"requirements": [{}, {}, {}, {"id": 1, "id": 2}]}}', "non-ijson",
         "/results/requirements/3"),
        ('{"a": 1, "\\u0061": 2}', "non-ijson", "/"),
        ('["ok", "\\ud800"]', "non-ijson", "/1"),
        ('{"k": {"\\udfff": 1}}', "non-ijson", "/k"),
        ('{"x": "\\ud83d"}', "non-ijson", "/x"),
        ('{"n": NaN}', "not-json", "/n"),
        ("[Infinity]", "not-json", "/0"),
        ("[-Infinity]", "not-json", "/0"),
        ('{"big": 1e400}', "non-ijson", "/big"),
        ('{"big": -1.5e309}', "non-ijson", "/big"),
        ("[9007199254740992]", "non-ijson", "/0"),
        ("[-9007199254740993]", "non-ijson", "/0"),
        ("[" + "9" * 5000 + "]", "non-ijson", "/0"),
        ('{"a": 1} trailing', "not-json", "line 1, column 10"),
        ('{"a": 1}\n{"b": 2}', "not-json", "line 2, column 1"),
        ('{"a": }', "not-json", "line 1, column 7"),
        ("", "not-json", "line 1, column 1"),
        ('"\ud800"', "not-json", "line 1, column 2"),
        ("\ufeff{}", "non-ijson", "line 1, column 1"),
        (b"\xef\xbb\xbf{}", "non-ijson", "line 1, column 1"),
        (b'{"a":\n "\xff"}', "not-json", "line 2, column 3"),
        (b'{"a": "\xed\xa0\x80"}', "not-json", "line 1, column 8"),
    ],
)  # fmt: skip
def test_every_refusal_is_located(text: bytes | str, kind: str, location: str) -> None:
    error = refusal(text)
    assert (error.kind, error.location) == (kind, location)
    assert str(error).endswith(f"at {location}")


def test_limits() -> None:
    assert refusal(b"[" * 10 + b"]" * 10, max_depth=9).kind == "too-deep"
    assert parse_ijson("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    deep = refusal("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert (deep.kind, deep.location) == ("too-deep", f"line 1, column {MAX_DEPTH + 1}")
    assert refusal(b" " * 11, max_bytes=10).kind == "too-large"
    assert refusal(" " * 11, max_bytes=10).kind == "too-large"
    assert refusal('"' + "é" * 6 + '"', max_bytes=10).kind == "too-large"  # 14 bytes, 8 chars
    assert parse_ijson('"[[[[[[[["', max_depth=2) == "[[[[[[[["  # brackets in strings


def test_errors_never_echo_long_or_raw_content() -> None:
    error = refusal('{"' + "\\u001b[31m" + "x" * 5000 + '": {"k": 1, "k": 2}}')
    assert len(str(error)) < 200
    assert "\x1b" not in str(error)
    assert "\\u001b" in str(error)
    assert len(str(refusal('["' + "y" * 9000 + '", 1e999]'))) < 200
    assert len(str(refusal("[" + "7" * 9000 + "]"))) < 200


def test_numbers_within_double_precision() -> None:
    assert parse_ijson(f"[{MAX_SAFE_INTEGER}, -{MAX_SAFE_INTEGER}]") == [
        MAX_SAFE_INTEGER,
        -MAX_SAFE_INTEGER,
    ]
    # a fraction or exponent literal is a double, accepted when finite (see the module doc)
    assert parse_ijson("[1.0e20, 2.5, -0, 1e-400]") == [1e20, 2.5, 0, 0.0]
    assert jcs(parse_ijson("[1.0e20]")) == b"[100000000000000000000]"


def test_valid_text_round_trips() -> None:
    text = '{"b": [1, 2.5, "\\u00e9\\ud83d\\ude00", true, null], "a": {"": {}}}'
    value = parse_ijson(text)
    assert value == {"b": [1, 2.5, "é😀", True, None], "a": {"": {}}}
    assert parse_ijson(jcs(value)) == value
    assert parse_ijson(text.encode()) == value


def test_pointers_escape_and_bound_member_names() -> None:
    assert pointer(()) == "/"
    assert pointer(("a/b", "m~n", 3)) == "/a~1b/m~0n/3"
    assert pointer(("z" * 100,)).endswith("…")
    assert printable("a\x1b[2J\u202eb\u2028") == "a\\u001b[2J\\u202eb\\u2028"


SAFE_INT = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
# JCS writes an integral double below 1e21 as an integer literal, so one past 2^53 reads back
# as an out-of-range integer: such doubles are outside what I-JSON integers may carry.
FINITE = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda x: not (x.is_integer() and MAX_SAFE_INTEGER < abs(x) < 1e21)
)
TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
IJSON = st.recursive(
    st.none() | st.booleans() | SAFE_INT | FINITE | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(IJSON)
def test_any_ijson_value_parses_to_itself(value: Any) -> None:
    assert parse_ijson(json.dumps(value)) == value
    assert parse_ijson(json.dumps(value, ensure_ascii=False).encode("utf-8")) == value
    assert parse_ijson(jcs(value)) == value
