"""Suite regular expressions run on RE2: linear time, RE2 syntax, no fallback to Python's re."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval.core.matchers import compile_args
from openwop_eval.core.regex import RegexError, compile_regex
from tests.core.terminates import terminates


def problems_of(spec: Any) -> list[str]:
    return [f"{p.path}: {p.message}" for p in compile_args(spec, False, ())[1]]


def found(pattern: str, text: str) -> bool:
    return compile_regex(pattern).search(text)


# --- issue 8, defect 2: backtracking was unbounded --------------------------------------


def test_a_catastrophic_backtracking_pattern_grades_at_once() -> None:
    # On Python's re this takes minutes (2^40 paths); RE2 answers in microseconds.
    out = terminates(
        """
        from openwop_eval.core.matchers import compile_args
        matcher, problems = compile_args({"id": {"$regex": "(a+)+$"}}, False, ())
        assert problems == []
        print(matcher.mismatch({"id": "a" * 40 + "b"}, ()) is None)
        """
    )
    assert out == "False"


REDOS = [
    ("(a+)+$", "a", "!"),
    ("^(a|a)*$", "a", "!"),
    ("(a|aa)+$", "a", "!"),
    ("^(\\w+\\s?)*$", "a", "!"),
    ("(x+x+)+y", "x", ""),
    ("(.*a){12}$", "a", "!"),
    ("^(a?){30}a{30}$", "a", ""),
]


@settings(deadline=timedelta(seconds=5), max_examples=40)
@given(case=st.sampled_from(REDOS), n=st.integers(1, 100_000))
def test_classic_redos_patterns_stay_linear(case: tuple[str, str, str], n: int) -> None:
    pattern, char, tail = case
    text = char * n + tail
    expected = pattern == "^(a?){30}a{30}$" and 30 <= n <= 60
    assert found(pattern, text) is expected


# --- what RE2 cannot run is a located problem, saying why and what instead ---------------


@pytest.mark.parametrize(
    ("pattern", "hint"),
    [
        ("(a)\\1", "RE2 has no backreferences"),
        ("(?P<x>a)(?P=x)", "RE2 has no backreferences"),
        ("a(?=b)", "RE2 has no lookahead"),
        ("a(?!b)", "RE2 has no lookahead"),
        ("(?<=a)b", "RE2 has no lookbehind"),
        ("(?<!a)b", "RE2 has no lookbehind"),
        ("(?>a+)b", "atomic groups and possessive quantifiers are not needed"),
        ("a*+b", "atomic groups and possessive quantifiers are not needed"),
        ("(a)?(?(1)b|c)", "RE2 has no conditional groups"),
        ("abc\\Z", "write \\z for the end of the text"),
        ("(?x) a b", "RE2 supports only the flags i, m, s and U"),
        ("\\u00e9", "write \\x{00E9} for a code point"),
        ("a{1001}", "RE2 allows repetition counts up to 1000"),
        ("([a-z]", "missing )"),
    ],
)
def test_patterns_re2_cannot_run_are_rejected_saying_why(pattern: str, hint: str) -> None:
    problems = problems_of({"v": {"$regex": pattern}})
    assert len(problems) == 1
    assert problems[0].startswith("$.v.$regex: not a valid regular expression (RE2: ")
    assert hint in problems[0]
    with pytest.raises(RegexError):
        compile_regex(pattern)


def test_regexes_inside_a_schema_are_rejected_where_they_stand() -> None:
    schema = {
        "patternProperties": {"(?<=x)y": {}},
        "properties": {"pattern": {"pattern": "(a)\\1"}},  # a property named "pattern"
    }
    assert problems_of({"v": {"$schema": schema}}) == [
        '$.v.$schema.patternProperties["(?<=x)y"]: not a valid regular expression (RE2: invalid'
        " perl operator: (?<=; RE2 has no lookbehind; match the preceding text itself, or drop"
        " it): '(?<=x)y'",
        "$.v.$schema.properties.pattern.pattern: not a valid regular expression (RE2: invalid"
        " escape sequence: \\1; RE2 has no backreferences; repeat the group's pattern instead):"
        " '(a)\\\\1'",
    ]


# --- semantics: RE2 syntax, unanchored search, code points ------------------------------


@pytest.mark.parametrize(
    ("pattern", "text", "result"),
    [
        ("^abc$", "abc", True),
        ("^abc$", "abc\n", False),  # $ is the very end (Python's re also allows a final \n)
        ("(?m)^abc$", "x\nabc\ny", True),
        ("abc\\z", "xabc", True),
        ("b", "abc", True),  # unanchored, like re.search
        ("^\\d+$", "١٢", False),  # \d, \w, \s and \b are ASCII
        ("^\\p{Nd}+$", "١٢", True),
        ("^\\w$", "é", False),
        ("^\\pL$", "é", True),
        ("^.$", "😀", True),  # . is one code point
        ("^\\x{e9}$", "é", True),
        ("(?i)^é$", "É", True),
        ("^a.c$", "a\nc", False),
        ("(?s)^a.c$", "a\nc", True),
        ("(?P<year>\\d{4})-(?<month>\\d\\d)", "2024-05", True),
        ("[[:alpha:]]+", "abc", True),
        ("a\x00b", "a\x00b", True),
    ],
)
def test_re2_semantics(pattern: str, text: str, result: bool) -> None:
    assert found(pattern, text) is result


def test_any_string_is_searched_without_error_even_a_lone_surrogate() -> None:
    assert found("b", "\ud800b")
    assert found("\ud800", "x\ud800")
    assert not found("^b$", "\udfffb")


@pytest.mark.parametrize("value", [1, 1.5, True, None, ["abc"], {"a": "abc"}])
def test_a_regex_never_matches_a_non_string(value: Any) -> None:
    matcher, _ = compile_args({"v": {"$regex": ".*"}}, False, ())
    assert matcher.mismatch({"v": value}, ()) is not None


def test_a_huge_text_is_searched_in_one_pass() -> None:
    text = "ab" * 5_000_000
    assert found("(a|b)*c?$", text)
    assert not found("(ab)+c", text)


# --- RE2 agrees with Python's re where both define the same thing -----------------------

_ATOMS = st.sampled_from(["a", "b", "x", ".", "[ab]", "[^a]", "\\d", "[a-c1]"])


def _compose(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, inner).map("".join),
        st.tuples(inner, inner).map(lambda t: f"(?:{t[0]}|{t[1]})"),
        st.tuples(inner, st.sampled_from(["*", "+", "?", "{1,2}", "*?", "{2}"])).map(
            lambda t: f"(?:{t[0]}){t[1]}"
        ),
        inner.map(lambda p: f"({p})"),
    )


_PATTERNS = st.tuples(
    st.sampled_from(["", "^"]),
    st.recursive(_ATOMS, _compose, max_leaves=8),
    st.sampled_from(["", "$"]),
).map("".join)


@settings(max_examples=400)
@given(pattern=_PATTERNS, text=st.text(alphabet="abx1", max_size=12))
def test_re2_and_python_re_agree_on_plain_patterns(pattern: str, text: str) -> None:
    # ASCII texts without newlines: where \d and $ mean the same in both engines.
    assert found(pattern, text) is (re.search(pattern, text) is not None)
