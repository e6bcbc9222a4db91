"""JSON values: canonical text (RFC 8785, JCS) and JSON equality.

JSON equality is not Python equality: ``1 == 1.0`` holds in both, but ``True == 1`` holds
only in Python. Every comparison of agent-produced values in the core goes through
:func:`json_equal` so a boolean never matches a number.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeAlias, TypeGuard

import orjson
import rfc8785

JSON: TypeAlias = Any
"""A value decoded from JSON: dict, list, str, int, float, bool or None."""


_ESCAPED: Final = re.compile(r'[\x00-\x1f\\"]')
_SAFE_INT: Final = 2**53 - 1


def canonical_json(value: JSON) -> str:
    """Return the RFC 8785 canonical text of ``value`` (sorted keys, no spaces, JS numbers)."""
    # An ASCII string with nothing to escape, and a safe integer, are written as rfc8785
    # writes them, without its byte buffer: reasons quote such values for every failure.
    kind = type(value)
    if kind is str and value.isascii() and _ESCAPED.search(value) is None:
        return f'"{value}"'
    if kind is int and -_SAFE_INT <= value <= _SAFE_INT:
        return str(value)
    if (kind is dict or kind is list) and _plain(value, 0):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode("utf-8")
        except TypeError:  # a lone surrogate: the reference encoder decides
            pass
    return rfc8785.dumps(value).decode("utf-8")


_PLAIN_DEPTH: Final = 64


def _plain(value: JSON, depth: int) -> bool:
    """Whether orjson's sorted compact text of ``value`` is its RFC 8785 text — the common
    case for arguments and outputs, and some 40 times faster: strings, booleans, null,
    integers within ±(2^53 − 1), non-integral floats from 1e-4 to 1e15 (the same shortest
    digits, in positional notation, from both), and arrays and objects of them whose keys
    are ASCII (which sort alike in UTF-8 and UTF-16). Anything else goes to the reference
    encoder, which also refuses what is not JSON."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(-_SAFE_INT <= value <= _SAFE_INT)
    if kind is float:
        return bool(1e-4 <= abs(value) < 1e15 and not value.is_integer())
    if depth >= _PLAIN_DEPTH:
        return False
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str or not k.isascii():
                return False
            if type(v) is not str and not _plain(v, depth + 1):  # strings, the most, inline
                return False
        return True
    if kind is list:
        for v in value:  # noqa: SIM110 - a loop, not all() over a generator: this is hot
            if type(v) is not str and not _plain(v, depth + 1):
                return False
        return True
    return False


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
