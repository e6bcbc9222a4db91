"""JSON values: canonical text (RFC 8785, JCS) and JSON equality.

JSON equality is not Python equality: ``1 == 1.0`` holds in both, but ``True == 1`` holds
only in Python. Every comparison of agent-produced values in the core goes through
:func:`json_equal` so a boolean never matches a number.
"""

from __future__ import annotations

from typing import Any, TypeAlias, TypeGuard

import rfc8785

JSON: TypeAlias = Any
"""A value decoded from JSON: dict, list, str, int, float, bool or None."""


def canonical_json(value: JSON) -> str:
    """Return the RFC 8785 canonical text of ``value`` (sorted keys, no spaces, JS numbers)."""
    return rfc8785.dumps(value).decode("utf-8")


def stringify(value: JSON) -> str:
    """A string stays as it is; any other value becomes its canonical JSON text."""
    return value if isinstance(value, str) else canonical_json(value)


def is_number(value: object) -> TypeGuard[int | float]:
    """True for JSON numbers (ints and floats), false for booleans."""
    # a tuple, not ``int | float``: isinstance on a union type is several times slower, and
    # this runs for every value the matchers compare
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: JSON, b: JSON) -> bool:
    """Deep JSON equality: key order ignored, arrays in order, ``1 == 1.0``, ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if is_number(a) or is_number(b):
        return is_number(a) and is_number(b) and a == b
    if isinstance(a, str) or a is None:
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(json_equal(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list | tuple):
        return (
            isinstance(b, list | tuple)
            and len(a) == len(b)
            and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    return False
