"""Fast JSON text for records, events and responses (orjson), where canonical form is not
required; canonical text (RFC 8785) is :func:`openwop_eval.core.canonical_json`.

Output is compact UTF-8 JSON. Values orjson cannot encode (integers beyond 64 bits, keys that
are not strings) fall back to the standard encoder, never to a crash; a non-finite float is
an error either way, since no JSON reader can take it back.
"""

from __future__ import annotations

import copy as copy_module
import json
import math
from typing import Any

import orjson


def dumps(value: Any) -> str:
    """Compact JSON text of ``value``; ``ValueError`` for NaN or ±Infinity anywhere in it."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if "null" in text and _has_non_finite(value):  # orjson writes NaN as null: refuse it
        raise ValueError("Out of range float values are not JSON compliant")
    return text


def loads(text: str | bytes) -> Any:
    """Strict JSON: no ``NaN``/``Infinity``, no lone surrogates, depth ≤ 1024; else
    ``ValueError`` (``orjson.JSONDecodeError`` is one)."""
    return orjson.loads(text)


def copy(value: Any) -> Any:
    """A deep copy of a JSON value (several times faster than ``copy.deepcopy``)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError:  # beyond what orjson encodes (integers past 64 bits)
        return copy_module.deepcopy(value)


_LEAVES = frozenset({str, int, bool, type(None)})
"""Types that hold no float: most of a trial's diagnostics, skipped without a push."""


def _has_non_finite(value: Any) -> bool:
    # A loop over a stack, not recursion through generators: this walks every trial's
    # diagnostics (their ``null``s send each one here), so exact types go first and leaves
    # are never pushed; subclasses take the general branches below.
    stack = [value]
    pop, push, leaves = stack.pop, stack.append, _LEAVES
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict or kind is list or kind is tuple:
            for inner in item.values() if kind is dict else item:
                if type(inner) not in leaves:
                    push(inner)
        elif kind in leaves:
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False
