"""Argument matchers compiled once more, into plain ``value -> bool`` predicates.

A predicate has no locations and no texts: it is the verdict of every call, while the
matcher's ``mismatch`` (the reference, which a predicate must always agree with) explains
the calls that fail. The common shapes are tested inline: string literals (the type too: a
str subclass is not the string, JSON equality says), two-sided ranges, ``$in`` of strings.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import lru_cache
from typing import Final, cast

from . import names as n
from .canonical import JSON, is_number, json_equal
from .matchers import (
    MISSING,
    AnyValue,
    ArrayOf,
    Literal,
    Matcher,
    ObjectOf,
    OneOf,
    Range,
    Regex,
)

Test = Callable[[JSON], bool]
Compare = Callable[[float, float], bool]
_OPERATORS: Final[dict[str, Compare]] = {
    n.M_GTE: operator.ge,
    n.M_GT: operator.gt,
    n.M_LTE: operator.le,
    n.M_LT: operator.lt,
}
_NUMBER: Final = (int, float)


def _operator(op: str) -> Compare:
    return _OPERATORS.get(op, operator.lt)  # as _compare reads it: anything else is "<"


def predicate(matcher: Matcher) -> Test:
    """``lambda value: matcher.mismatch(value, ()) is None``, without building a mismatch."""
    if isinstance(matcher, Literal):
        return literal_test(matcher.value)
    if isinstance(matcher, ObjectOf):
        return _object_test(matcher)
    if isinstance(matcher, ArrayOf):
        return _array_test(tuple(predicate(m) for m in matcher.items))
    if isinstance(matcher, Range):
        return _range_test(matcher)
    if isinstance(matcher, OneOf):
        return _one_of_test(matcher.values)
    if isinstance(matcher, Regex):
        return _regex_test(matcher.pattern.search)
    if isinstance(matcher, AnyValue):
        return lambda _value: True
    return lambda value: matcher.mismatch(value, ()) is None


MEMO_TEXTS: Final = 256
"""Short argument texts whose verdict a ``$regex`` step remembers: arguments recur across
trials, and a call into RE2 costs some 20 dictionary lookups."""
MEMO_TEXT_CHARS: Final = 128


def _regex_test(search: Callable[[str], bool]) -> Test:
    known: dict[str, bool] = {}

    def test(value: JSON) -> bool:
        if not isinstance(value, str):
            return False
        found = known.get(value)
        if found is None:
            found = search(value)
            if len(value) <= MEMO_TEXT_CHARS and len(known) < MEMO_TEXTS:
                known[value] = found
        return found

    return test


def literal_test(expected: JSON) -> Test:
    """``json_equal(expected, value)``, specialised on the type of ``expected``."""
    if isinstance(expected, bool):
        return lambda value: value is expected
    if is_number(expected):
        return lambda value: (
            isinstance(value, _NUMBER) and not isinstance(value, bool) and expected == value
        )
    if isinstance(expected, str):
        kind = type(expected)
        return lambda value: type(value) is kind and expected == value
    if expected is None:
        return lambda value: value is None
    return lambda value: json_equal(expected, value)


_SYMBOLS: Final = {n.M_GTE: ">=", n.M_GT: ">", n.M_LTE: "<=", n.M_LT: "<"}


def _object_test(matcher: ObjectOf) -> Test:
    """A function generated per object, testing its fields inline, in order: the common
    ones with no call at all, the others through their predicate. Only identifiers of our
    own and the operators above are compiled; every key and value of the suite is bound to
    a parameter of the function's maker, never written into its source, so objects of one
    shape share one compiled maker."""
    names: dict[str, object] = {}
    lines = ["    def test(value):", "        if not isinstance(value, dict):"]
    lines += ["            return False", "        get = value.get"]
    for i, (key, m) in enumerate(matcher.fields):
        names[f"K{i}"] = key
        lines += [f"        x = get(K{i}, MISSING)", f"        if {_field_fails(i, m, names)}:"]
        lines.append("            return False")
    # every wanted key is present by then, so an extra key makes the object larger
    size = len(matcher.fields)
    lines.append(f"        return len(value) == {size}" if matcher.exact else "        return True")
    lines.append("    return test")
    maker = _maker(f"def make({', '.join(names)}):\n" + "\n".join(lines))
    return maker(**names)


@lru_cache(maxsize=256)
def _maker(source: str) -> Callable[..., Test]:
    scope: dict[str, object] = {"MISSING": MISSING, "NUMBER": _NUMBER}
    exec(compile(source, "<openwop-eval args test>", "exec"), scope)
    return cast(Callable[..., Test], scope["make"])


def _field_fails(i: int, m: Matcher, names: dict[str, object]) -> str:
    """The condition, on ``x`` (the field's value, or MISSING), under which field i fails."""
    number = "not isinstance(x, NUMBER) or isinstance(x, bool)"
    if isinstance(m, Literal):
        names[f"V{i}"] = want = m.value
        if type(want) is str:
            return f"type(x) is not str or x != V{i}"
        if isinstance(want, bool):
            return f"x is not V{i}"
        if is_number(want):
            return f"{number} or not V{i} == x"
        if want is None:
            return "x is not None"
    elif isinstance(m, Range):
        bounds = []
        for j, (op, bound) in enumerate(m.bounds):
            names[f"B{i}_{j}"] = bound
            bounds.append(f" or not x {_SYMBOLS.get(op, '<')} B{i}_{j}")
        return number + "".join(bounds)
    elif isinstance(m, OneOf) and m.values and all(type(v) is str for v in m.values):
        names[f"S{i}"] = frozenset(m.values)
        return f"type(x) is not str or x not in S{i}"
    elif isinstance(m, AnyValue):
        return "x is MISSING"
    names[f"T{i}"] = predicate(m)
    return f"x is MISSING or not T{i}(x)"


def _array_test(items: tuple[Test, ...]) -> Test:
    size = len(items)

    def test(value: JSON) -> bool:
        if not isinstance(value, list) or len(value) != size:
            return False
        return all(item(element) for item, element in zip(items, value, strict=True))

    return test


def _range_test(matcher: Range) -> Test:
    bounds = tuple((_operator(op), bound) for op, bound in matcher.bounds)
    if len(bounds) == 2:
        (first, low), (second, high) = bounds
        return lambda value: (
            isinstance(value, _NUMBER)
            and not isinstance(value, bool)
            and first(value, low)
            and second(value, high)
        )

    def test(value: JSON) -> bool:
        if not isinstance(value, _NUMBER) or isinstance(value, bool):
            return False
        return all(compare(value, bound) for compare, bound in bounds)

    return test


def _one_of_test(values: tuple[JSON, ...]) -> Test:
    if values and all(type(v) is str for v in values):
        strings = frozenset(values)
        return lambda value: type(value) is str and value in strings
    tests = tuple(literal_test(v) for v in values)

    return lambda value: any(item(value) for item in tests)
