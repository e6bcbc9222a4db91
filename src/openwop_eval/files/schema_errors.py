"""JSON Schema validation errors, rewritten as problems a person can act on.

"Additional properties are not allowed ('taskid' was unexpected)" becomes, at the key's own
path, "unknown key 'taskid'; did you mean 'taskId'? (expected one of: …)".

:data:`ModelValidator` checks the suite schema the way the pydantic models read it, so that
what the schema accepts the models accept: integers are written as integers, and ``$`` in a
pattern is the end of the text (Python's ``re`` also lets it match before a final newline).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from ..core.problems import Loc, Problem
from ..core.suite import AGENT_ID_PATTERN, SUITE_ID_PATTERN, TASK_ID_PATTERN, VERSION_PATTERN

_PATTERN_HINTS = {
    SUITE_ID_PATTERN: "a suite id like 'acme.support.evals.refunds'"
    " (<scope>.<org>.evals.<name>, lowercase)",
    VERSION_PATTERN: "a version like '1.0.0' (MAJOR.MINOR.PATCH)",
    TASK_ID_PATTERN: "lowercase letters, digits and hyphens, starting with a letter or digit",
    AGENT_ID_PATTERN: "1–128 of A–Z a–z 0–9 . _ ~ : -",
}

_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "null": "null",
}


def _is_integer(checker: Any, value: Any) -> bool:
    # JSON Schema would take 2.0 and 1e300 too; the semantic checks and the models would then
    # judge and run different numbers
    return isinstance(value, int) and not isinstance(value, bool)


@cache
def _end_anchored(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + r"\Z"
    return re.compile(pattern)


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not _end_anchored(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_Draft = jsonschema.Draft202012Validator
ModelValidator = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    _Draft,
    validators={"pattern": _pattern},
    type_checker=_Draft.TYPE_CHECKER.redefine("integer", _is_integer),
)


def model_validator(schema: dict[str, Any]) -> Validator:
    """A :data:`ModelValidator` for ``schema`` with its local references inlined: a schema
    that is only ``{"$ref": "#/$defs/X"}`` validates exactly as ``X`` does (2020-12), and
    resolving the reference at every instance cost a quarter of a 10,000-task suite's
    validation. ``$defs`` stays, so a reference left in place (a recursive one) resolves;
    leaving one is always right, only slower. For schemas whose definitions set no ``$id``
    or anchor (which would move the base of the references inside them): the shipped ones."""
    defs = schema.get("$defs", {})
    inlined = {k: v if k == "$defs" else _inline(v, defs, ()) for k, v in schema.items()}
    validator: Validator = ModelValidator(inlined)
    return validator


def _inline(node: Any, defs: dict[str, Any], within: tuple[str, ...]) -> Any:
    """``node`` with each pure local reference replaced by its target, except one inside
    its own target (``within``: the definitions being inlined), which stays a reference."""
    if isinstance(node, list):
        return [_inline(item, defs, within) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if len(node) == 1 and isinstance(ref, str) and ref.startswith(_LOCAL):
        name = ref[len(_LOCAL) :]
        if name in defs and name not in within:
            return _inline(defs[name], defs, (*within, name))
        return node
    return {k: v if k in _DATA else _inline(v, defs, within) for k, v in node.items()}


_LOCAL = "#/$defs/"
_DATA = frozenset({"const", "enum", "default", "examples"})
"""Keywords whose values are instances, not schemas: a ``$ref`` there is data. (A property
of one of these names keeps its references: slower, never wrong.)"""


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _suggest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def schema_problems(validator: Validator, doc: Any) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[Loc, str]] = set()
    for error in validator.iter_errors(doc):
        for problem in _explain(error):
            key = (problem.loc, problem.message)
            if key not in seen:
                seen.add(key)
                problems.append(problem)
    return problems


def _explain(error: ValidationError) -> list[Problem]:
    loc: Loc = tuple(error.absolute_path)
    kind, value, instance = error.validator, error.validator_value, error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = list(schema.get("properties", {}))
        return [
            Problem(
                (*loc, key),
                f"unknown key {key!r}{_suggest(key, known)} (expected one of: {', '.join(known)})",
            )
            for key in instance
            if key not in known
        ]
    if kind == "required" and isinstance(instance, dict) and isinstance(value, list):
        return [
            Problem(loc, f"missing required key {key!r}") for key in value if key not in instance
        ]
    return [Problem(loc, _message(kind, value, instance, error))]


def _message(kind: Any, value: Any, instance: Any, error: ValidationError) -> str:
    if kind == "enum":
        choices = [str(v) for v in value]
        hint = _suggest(instance, choices) if isinstance(instance, str) else ""
        return f"{instance!r} is not one of: {', '.join(choices)}{hint}"
    if kind == "const":
        return f"must be {value!r}, got {instance!r}"
    integral = isinstance(instance, float) and instance.is_integer()
    if kind == "type" and "integer" in value and integral:
        return f"expected an integer, got {instance!r}; write it without a fraction or exponent"
    if kind == "type":
        wanted = " or ".join(
            _TYPE_WORDS.get(t, t) for t in ([value] if isinstance(value, str) else value)
        )
        return f"expected {wanted}, got {json_type(instance)}"
    if kind == "pattern":
        return f"{_quote(instance)} is not {_PATTERN_HINTS.get(value, f'a match for {value}')}"
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": "≥", "maximum": "≤", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[
            kind
        ]
        return f"must be {op} {value}, got {instance}"
    if kind == "minItems":
        return f"needs at least {value} item{'s' if value != 1 else ''}"
    if kind == "maxItems":
        return f"takes at most {value} item{'s' if value != 1 else ''}"
    if kind == "minLength":
        return "must not be empty" if value == 1 else f"needs at least {value} characters"
    if kind == "maxLength" and isinstance(instance, str):
        return f"is {len(instance)} characters; the limit is {value}"
    if kind == "uniqueItems":
        return "has duplicate items"
    return error.message


def _quote(value: Any, limit: int = 80) -> str:
    """A value as an error message quotes it: cut short, since it may be hostile and huge."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
