"""The ``$schema`` matcher's JSON Schema validator: pure, bounded, and checked up front.

:func:`compile_schema` accepts a schema only when it can grade any value without an
exception: a known dialect (draft 4 or later; 2020-12 when ``$schema`` is absent), valid
against its metaschema, and passing :func:`.schema_walk.analyse` (local ``$ref`` only, no
same-place cycles, RE2 patterns). Grading is then pure and bounded:

* the validator's registry refuses every retrieval: no network, no files, ever;
* ``format`` is an annotation, never asserted (no format checker: no DNS, no parsers);
* ``pattern``, ``patternProperties`` and ``additionalProperties`` match with RE2;
* each check has a budget: :data:`MAX_STEPS` keyword evaluations (error messages cost one
  step per 100 characters, ``uniqueItems`` over non-scalars the pairs it compares), at most
  :data:`MAX_DEPTH` nested, on a value at most :data:`MAX_VALUE_DEPTH` levels deep. A check
  that runs out is a mismatch that says so; the count is of work, never of time, so the same
  value always gets the same verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError, best_match
from jsonschema.protocols import Validator

from .regex import compile_regex
from .schema_walk import Finding, analyse, registry

MAX_STEPS: Final = 100_000
MAX_DEPTH: Final = 150
MAX_VALUE_DEPTH: Final = 100
MAX_MESSAGE: Final = 200
"""Characters of a validation message kept for the mismatch reason."""

KeywordFn = Callable[[Any, Any, Any, Any], Any]


class _OverBudgetError(Exception):
    """Raised inside the validator when a check spends its budget; caught by first_error."""


@dataclass(slots=True)
class _Budget:
    steps: int = MAX_STEPS
    depth: int = 0

    def spend(self, steps: int) -> None:
        self.steps -= steps
        if self.steps < 0:
            raise _OverBudgetError(f"it needs more than {MAX_STEPS} steps")
        if self.depth > MAX_DEPTH:
            raise _OverBudgetError(f"the schema nests more than {MAX_DEPTH} keywords deep on it")


# Keyword functions get no handle on the check they serve, so its budget rides in a context
# variable: per thread, set and reset around each check.
_BUDGET: ContextVar[_Budget | None] = ContextVar("openwop_eval_schema_budget", default=None)


@dataclass(frozen=True, slots=True)
class BoundedSchema:
    validator: Validator

    def first_error(self, value: Any) -> str | None:
        """None when ``value`` is valid; otherwise why not, in words."""
        if nested_deeper_than(value, MAX_VALUE_DEPTH):
            return f"not checked: the value is nested more than {MAX_VALUE_DEPTH} levels deep"
        token = _BUDGET.set(_Budget())
        try:
            error = best_match(self.validator.iter_errors(value))
        except _OverBudgetError as exc:
            return f"not checked: {exc}"
        except RecursionError:
            return "not checked: the check nests too deeply"
        except Exception as exc:  # third-party code on hostile input: a mismatch, never a crash
            return f"not checked: {type(exc).__name__} on this value"
        finally:
            _BUDGET.reset(token)
        if error is None:
            return None
        message: str = error.message
        return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def compile_schema(schema: Any) -> tuple[BoundedSchema | None, list[Finding]]:
    """The bounded validator for ``schema``, or why it cannot grade (located in the schema)."""
    cls, problem = _dialect(schema)
    if cls is None:
        return None, [problem]
    try:
        cls.check_schema(schema, format_checker=_metaschema_formats(cls))
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "its root"
        return None, [((), f"not a valid JSON Schema at {where}: {exc.message}")]
    except RecursionError:
        return None, [((), "the JSON Schema is nested too deeply to check")]
    findings = analyse(schema, cls.ID_OF(cls.META_SCHEMA) or "")
    if findings:
        return None, findings
    return BoundedSchema(bounded_validator_class(cls)(schema, registry=registry())), []


_NO_DIALECT: Final = ((), "")


def _dialect(schema: Any) -> tuple[Any, Finding]:
    """The jsonschema validator class for the schema's dialect (typed Any: jsonschema's
    Validator protocol lacks the class attributes used here), or None and why."""
    if not isinstance(schema, dict) or "$schema" not in schema:
        return jsonschema.Draft202012Validator, _NO_DIALECT
    uri = schema["$schema"]
    if not isinstance(uri, str):
        return None, (("$schema",), "$schema names the dialect and takes a URI string")
    try:
        cls = jsonschema.validators.validator_for(schema, default=None)  # type: ignore[arg-type]
    except ValueError:  # not even a URI
        cls = None
    if cls is None:
        return None, (
            ("$schema",),
            f"unknown JSON Schema dialect {uri!r}; use"
            " https://json-schema.org/draft/2020-12/schema (or omit $schema), 2019-09,"
            " or draft 7, 6 or 4 (a $schema matcher never fetches a metaschema)",
        )
    if cls is jsonschema.Draft3Validator:
        return None, (("$schema",), "JSON Schema draft 3 is not supported; use draft 4 or later")
    return cls, _NO_DIALECT


def _metaschema_formats(cls: Any) -> jsonschema.FormatChecker:
    # The metaschema's "regex" format would judge patterns by Python's re; RE2 judges them.
    checker = jsonschema.FormatChecker(formats=())
    checker.checkers = {k: v for k, v in cls.FORMAT_CHECKER.checkers.items() if k != "regex"}
    return checker


def nested_deeper_than(value: Any, limit: int) -> bool:
    """True when ``value`` has containers nested more than ``limit`` deep (no recursion)."""
    todo = [(value, 0)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict | list):
            if depth >= limit:
                return True
            todo.extend((child, depth + 1) for child in _items(node))
    return False


def _items(node: dict[Any, Any] | list[Any]) -> Any:
    return node.values() if isinstance(node, dict) else node


# --- the bounded validator class --------------------------------------------------------


@cache
def bounded_validator_class(cls: type[Validator]) -> type[Validator]:
    """``cls`` with RE2 regex keywords and every keyword counted against the check's budget."""
    keywords: dict[str, KeywordFn] = dict(cls.VALIDATORS)
    for name, fn in _RE2_KEYWORDS.items():
        if name in keywords:
            keywords[name] = fn
    bounded = {name: _bounded(name, fn) for name, fn in keywords.items()}
    extended: type[Validator] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        cls, validators=bounded
    )
    return extended


def _bounded(name: str, keyword: KeywordFn) -> KeywordFn:
    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        budget = _BUDGET.get()
        if budget is None:  # only outside BoundedSchema.first_error, which grading never is
            yield from keyword(validator, value, instance, schema) or ()
            return
        budget.depth += 1
        try:
            budget.spend(_cost(name, instance))
            for error in keyword(validator, value, instance, schema) or ():
                if not isinstance(error.validator, str):  # made here, not passed up from below
                    budget.spend(len(error.message) // 100)
                yield error
        finally:
            budget.depth -= 1

    return run


def _cost(name: str, instance: Any) -> int:
    if name == "uniqueItems" and isinstance(instance, list):
        if all(not isinstance(item, dict | list) for item in instance):
            return 1 + len(instance)  # sortable: jsonschema sorts
        return 1 + len(instance) * len(instance) // 2  # compared pair by pair
    return 1


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not compile_regex(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = compile_regex(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    regexes = [compile_regex(p) for p in schema.get("patternProperties", {})]
    extras = [
        key
        for key in instance  # in the value's order, so the reported extra is deterministic
        if key not in known and not any(r.search(key) for r in regexes)
    ]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        listed = ", ".join(repr(extra) for extra in extras)
        yield ValidationError(f"additional properties are not allowed ({listed} unexpected)")


_RE2_KEYWORDS: Final[dict[str, KeywordFn]] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}
