"""Argument matchers for trajectory steps: compiled once per suite, applied to every call.

A step's ``args`` value is matched against a call's arguments. Literals compare by JSON
equality; objects match key by key (``subset``: extra keys allowed; ``exact``: none),
recursively; arrays match element by element, same length. A one-key object whose key
starts with ``$`` is a matcher (``$regex``, ``$gte``/``$gt``/``$lte``/``$lt`` combinable,
``$in``, ``$any``, ``$schema``, ``$literal``). A failed match yields an :class:`ArgMismatch`
saying where and why, for reports.

``mismatch`` is the reference reading, which explains a failed call;
:mod:`.predicates` compiles each matcher once more into a plain verdict for every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Protocol

from . import names as n
from .canonical import JSON, canonical_json, is_number, json_equal
from .frozen import quick_init
from .problems import Loc, Problem, format_loc
from .regex import Regex as CompiledRegex
from .regex import RegexError, compile_regex
from .schema_matcher import MAX_VALUE_DEPTH, BoundedSchema, compile_schema, nested_deeper_than

MISSING: Final = object()
"""Stands for a key the call did not pass."""

COMPARISONS: Final = {n.M_GTE: "≥", n.M_GT: ">", n.M_LTE: "≤", n.M_LT: "<"}
MATCHER_KEYS: Final = (*COMPARISONS, n.M_REGEX, n.M_IN, n.M_ANY, n.M_SCHEMA, n.M_LITERAL)


@quick_init
@dataclass(frozen=True, slots=True)
class ArgMismatch:
    """Where a call's arguments departed from a step's, as a path below ``args``."""

    loc: Loc
    expected: str
    got: object  # a JSON value, or MISSING

    def describe(self) -> str:
        where = format_loc(self.loc).replace("$", "args", 1)
        if self.got is MISSING:
            return f"{where}: missing (expected {self.expected})"
        return f"{where}: expected {self.expected}, got {_show(self.got)}"


def _show(value: JSON) -> str:
    if type(value) in _SCALARS and (type(value) is not str or len(value) <= 256):
        return _show_scalar(type(value).__name__, value)  # the type too: 1, 1.0, True differ
    return _shown(value)


_SCALARS: Final = frozenset((str, int, float, bool, type(None)))


@lru_cache(maxsize=4096)
def _show_scalar(kind: str, value: JSON) -> str:
    # Suite values are shown again for every failing trial: canonicalise each once.
    return _shown(value)


def _shown(value: JSON) -> str:
    if nested_deeper_than(value, MAX_VALUE_DEPTH):
        return f"a value nested more than {MAX_VALUE_DEPTH} levels deep"
    try:
        text = canonical_json(value)
    except (ValueError, TypeError):  # not JSON: NaN, infinities, or a non-JSON Python object
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Matcher(Protocol):
    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        """None when ``value`` matches; otherwise the first difference found."""

    def expected(self) -> str:
        """What the matcher wants, in words."""


# What a matcher expects, in words, is a constant of the suite: Literal, Regex, Range and
# OneOf work it out at its first failing call and keep it, not again for every one.


def _kept(matcher: Any, make: Callable[[], str]) -> str:
    text: str | None = matcher.text
    if text is None:
        text = make()
        object.__setattr__(matcher, "text", text)  # a cache: frozen to everyone else
    return text


@dataclass(frozen=True, slots=True)
class Literal:
    value: JSON
    text: str | None = field(default=None, init=False, repr=False, compare=False)

    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        if json_equal(self.value, value):
            return None
        return ArgMismatch(loc, self.expected(), value)

    def expected(self) -> str:
        return _kept(self, lambda: _show(self.value))


@dataclass(frozen=True, slots=True)
class Regex:
    pattern: CompiledRegex
    text: str | None = field(default=None, init=False, repr=False, compare=False)

    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        if isinstance(value, str) and self.pattern.search(value):
            return None
        return ArgMismatch(loc, self.expected(), value)

    def expected(self) -> str:
        return _kept(self, lambda: f"a string matching /{self.pattern.source}/")


@dataclass(frozen=True, slots=True)
class Range:
    bounds: tuple[tuple[str, int | float], ...]
    text: str | None = field(default=None, init=False, repr=False, compare=False)

    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        if is_number(value) and all(_compare(op, value, b) for op, b in self.bounds):
            return None
        return ArgMismatch(loc, self.expected(), value)

    def expected(self) -> str:
        return _kept(self, self._words)

    def _words(self) -> str:
        text = " and ".join(f"{COMPARISONS[op]} {_show(b)}" for op, b in self.bounds)
        return f"a number {text}".rstrip()


def _compare(op: str, value: int | float, bound: int | float) -> bool:
    if op == n.M_GTE:
        return value >= bound
    if op == n.M_GT:
        return value > bound
    if op == n.M_LTE:
        return value <= bound
    return value < bound


@dataclass(frozen=True, slots=True)
class OneOf:
    values: tuple[JSON, ...]
    text: str | None = field(default=None, init=False, repr=False, compare=False)

    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        if any(json_equal(v, value) for v in self.values):
            return None
        return ArgMismatch(loc, self.expected(), value)

    def expected(self) -> str:
        return _kept(self, lambda: f"one of {_show(list(self.values))}")


@dataclass(frozen=True, slots=True)
class AnyValue:
    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        return None

    def expected(self) -> str:
        return "any value"


@dataclass(frozen=True, slots=True)
class Schema:
    schema: BoundedSchema

    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        error = self.schema.first_error(value)
        if error is None:
            return None
        return ArgMismatch(loc, f"{self.expected()} ({error})", value)

    def expected(self) -> str:
        return "a value valid against the schema"


@dataclass(frozen=True, slots=True)
class ObjectOf:
    fields: tuple[tuple[str, Matcher], ...]
    exact: bool

    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        if not isinstance(value, dict):
            return ArgMismatch(loc, self.expected(), value)
        for key, matcher in self.fields:
            if key not in value:
                return ArgMismatch((*loc, key), matcher.expected(), MISSING)
            found = matcher.mismatch(value[key], (*loc, key))
            if found is not None:
                return found
        if self.exact:
            wanted = {key for key, _ in self.fields}
            for key in value:
                if key not in wanted:
                    return ArgMismatch((*loc, key), "no such key (argsMatch: exact)", value[key])
        return None

    def expected(self) -> str:
        return "an object"


@dataclass(frozen=True, slots=True)
class ArrayOf:
    items: tuple[Matcher, ...]

    def mismatch(self, value: JSON, loc: Loc) -> ArgMismatch | None:
        if not isinstance(value, list) or len(value) != len(self.items):
            return ArgMismatch(loc, self.expected(), value)
        for i, (matcher, item) in enumerate(zip(self.items, value, strict=True)):
            found = matcher.mismatch(item, (*loc, i))
            if found is not None:
                return found
        return None

    def expected(self) -> str:
        return f"an array of {len(self.items)} items"


# --- compilation ------------------------------------------------------------------------

Report = Callable[[Loc, str], None]


def compile_args(raw: JSON, exact: bool, loc: Loc) -> tuple[Matcher, list[Problem]]:
    """Compile a step's ``args`` into a matcher; problems are located under ``loc``."""
    problems: list[Problem] = []

    def report(where: Loc, message: str) -> None:
        problems.append(Problem(where, message))

    return _compile(raw, exact, loc, report), problems


def _compile(raw: JSON, exact: bool, loc: Loc, report: Report) -> Matcher:
    if isinstance(raw, dict):
        if any(isinstance(k, str) and k.startswith("$") for k in raw):
            return _compile_operator(raw, loc, report)
        fields = tuple((k, _compile(v, exact, (*loc, k), report)) for k, v in raw.items())
        return ObjectOf(fields, exact)
    if isinstance(raw, list):
        return ArrayOf(tuple(_compile(v, exact, (*loc, i), report) for i, v in enumerate(raw)))
    return Literal(raw)


def _compile_operator(raw: dict[str, JSON], loc: Loc, report: Report) -> Matcher:
    keys = list(raw)
    unknown = [k for k in keys if k not in MATCHER_KEYS]
    if unknown:
        if all(k.startswith("$") for k in keys):
            report(
                (*loc, unknown[0]),
                f"unknown matcher {unknown[0]!r}; expected one of {', '.join(MATCHER_KEYS)}"
                " (to match a literal key that starts with '$', write {\"$literal\": {...}})",
            )
        else:
            report(
                loc,
                "an object mixes matcher keys ($...) with plain keys; wrap a literal object"
                ' in {"$literal": ...}',
            )
        return AnyValue()
    if all(k in COMPARISONS for k in keys):
        bounds: list[tuple[str, int | float]] = []
        for key in keys:
            bound = raw[key]
            if is_number(bound):
                bounds.append((key, bound))
            else:
                report((*loc, key), f"{key} takes a number, got {_show(bound)}")
        return Range(tuple(bounds))
    if len(keys) != 1:
        report(
            loc,
            f"a matcher object takes exactly one key (only {', '.join(COMPARISONS)}"
            f" combine); got {', '.join(keys)}",
        )
        return AnyValue()
    key, arg = keys[0], raw[keys[0]]
    if key == n.M_LITERAL:
        return Literal(arg)
    if key == n.M_ANY:
        if arg is not True:
            report((*loc, key), f"$any takes true, got {_show(arg)}")
        return AnyValue()
    if key == n.M_IN:
        if not isinstance(arg, list):
            report((*loc, key), f"$in takes an array of values, got {_show(arg)}")
            return AnyValue()
        return OneOf(tuple(arg))
    if key == n.M_REGEX:
        return _compile_regex(arg, (*loc, key), report)
    return _compile_schema(arg, (*loc, key), report)


def _compile_regex(arg: JSON, loc: Loc, report: Report) -> Matcher:
    if not isinstance(arg, str):
        report(loc, f"$regex takes a string, got {_show(arg)}")
        return AnyValue()
    try:
        return Regex(compile_regex(arg))
    except RegexError as exc:
        report(loc, str(exc))
        return AnyValue()


def _compile_schema(arg: JSON, loc: Loc, report: Report) -> Matcher:
    if not isinstance(arg, dict | bool):
        report(loc, f"$schema takes a JSON Schema (an object or a boolean), got {_show(arg)}")
        return AnyValue()
    schema, findings = compile_schema(arg)
    for where, message in findings:
        report((*loc, *where), message)
    return AnyValue() if schema is None else Schema(schema)
