"""OTLP/JSON trace exports: the JSON encoding of an ``ExportTraceServiceRequest``.

    {"resourceSpans": [{"resource": {"attributes": [...]},
                        "scopeSpans": [{"scope": {...}, "spans": [
                          {"traceId": "…", "spanId": "…", "parentSpanId": "…", "name": "…",
                           "startTimeUnixNano": "…", "endTimeUnixNano": "…",
                           "attributes": [{"key": "gen_ai.tool.name",
                                           "value": {"stringValue": "crm_lookup"}}],
                           "status": {"code": 2, "message": "…"}}]}]}]}

Ids are read as the OTLP/JSON hex the specification prescribes, or as the base64 that
protobuf's generic JSON mapping (``MessageToJson``) writes; int64 values as strings or
numbers; enums (a status code, a span kind) as numbers or names. What the spans mean is
:mod:`.spans`' business.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.problems import Loc
from .records import TraceError

_HEX = re.compile(r"[0-9a-fA-F]+")
_ERROR_CODES = (2, "2", "STATUS_CODE_ERROR", "ERROR")
_SCALARS = ("stringValue", "boolValue", "doubleValue", "bytesValue")
_KINDS = ("UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")


@dataclass(frozen=True, slots=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    attrs: Mapping[str, Any]
    resource: Mapping[str, Any]
    error: str | None
    """The status message when the span's status is an error ("" when it has none)."""
    order: int
    """Its position in the file: the tie-break of equal start times."""
    kind: str = "UNSPECIFIED"
    """``INTERNAL``, ``SERVER``, ``CLIENT``, ``PRODUCER``, ``CONSUMER`` or ``UNSPECIFIED``."""

    @property
    def duration_ms(self) -> float | None:
        return (self.end - self.start) / 1e6 if self.end >= self.start > 0 else None


def spans_of(doc: Any, first: int = 0) -> list[Span]:
    """Every span of one export request, its resource's attributes beside it."""
    resource_spans = _list(doc, "resourceSpans", ())
    found: list[Span] = []
    for r, group in enumerate(resource_spans):
        loc: Loc = ("resourceSpans", r)
        group = _object(group, loc)
        resource = _attributes(_object(group.get("resource", {}), (*loc, "resource")), loc)
        scopes = "scopeSpans" if "scopeSpans" in group else "instrumentationLibrarySpans"
        for s, scope in enumerate(_list(group, scopes, loc)):
            for i, span in enumerate(_list(scope, "spans", (*loc, scopes, s))):
                where = (*loc, scopes, s, "spans", i)
                found.append(_span(_object(span, where), resource, first + len(found), where))
    return found


def _span(span: dict[str, Any], resource: Mapping[str, Any], order: int, loc: Loc) -> Span:
    parent = span.get("parentSpanId") or None
    status = _object(span.get("status", {}), (*loc, "status"))
    error = None
    if status.get("code") in _ERROR_CODES:
        message = status.get("message")
        error = message if isinstance(message, str) else ""
    name = span.get("name", "")
    if not isinstance(name, str):
        raise TraceError("a span name must be a string", (*loc, "name"))
    return Span(
        trace_id=_id(span.get("traceId"), 16, (*loc, "traceId")),
        span_id=_id(span.get("spanId"), 8, (*loc, "spanId")),
        parent_id=None if parent is None else _id(parent, 8, (*loc, "parentSpanId")),
        name=name,
        start=_int(span.get("startTimeUnixNano", 0), (*loc, "startTimeUnixNano")),
        end=_int(span.get("endTimeUnixNano", 0), (*loc, "endTimeUnixNano")),
        attrs=_attributes(span, loc),
        resource=resource,
        error=error,
        order=order,
        kind=_kind(span.get("kind"), (*loc, "kind")),
    )


def _kind(value: Any, loc: Loc) -> str:
    """A span kind, from its number (``2``) or its enum name (``SPAN_KIND_SERVER``); absent
    or null, unspecified."""
    if value is None:
        return _KINDS[0]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(_KINDS):
        return _KINDS[value]
    if isinstance(value, str) and value.removeprefix("SPAN_KIND_") in _KINDS:
        return value.removeprefix("SPAN_KIND_")
    raise TraceError("not a span kind (0–5, or a name such as SPAN_KIND_CLIENT)", loc)


def _id(value: Any, size: int, loc: Loc) -> str:
    """A trace or span id as lowercase hex, from hex or base64."""
    if isinstance(value, str):
        if len(value) == 2 * size and _HEX.fullmatch(value):
            return value.lower()
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) == size:
            return raw.hex()
    raise TraceError(f"not a {size}-byte id in hex or base64", loc)


def _int(value: Any, loc: Loc) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    digits = value.removeprefix("-") if isinstance(value, str) else ""
    if digits.isascii() and digits.isdigit() and len(digits) <= 19:
        return int(value)
    raise TraceError("not an integer (int64 as a number or a string)", loc)


def _attributes(owner: dict[str, Any], loc: Loc) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for i, pair in enumerate(_list(owner, "attributes", loc)):
        where = (*loc, "attributes", i)
        if not isinstance(pair, dict) or not isinstance(pair.get("key"), str):
            raise TraceError("an attribute must be {key, value}", where)
        values[pair["key"]] = any_value(pair.get("value"), (*where, "value"))
    return values


def any_value(value: Any, loc: Loc) -> Any:
    """An ``AnyValue`` as plain data: scalars, arrays and key-value lists as lists and dicts.
    Nesting is bounded by the document's depth limit, which is checked before."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict) or len(value) != 1:
        raise TraceError("an AnyValue must be an object with one value member", loc)
    kind, inner = next(iter(value.items()))
    if kind in _SCALARS:
        return inner
    if kind == "intValue":
        return _int(inner, (*loc, kind))
    if kind == "arrayValue":
        items = _list(_object(inner, (*loc, kind)), "values", (*loc, kind))
        return [any_value(v, (*loc, kind, "values", i)) for i, v in enumerate(items)]
    if kind == "kvlistValue":
        return _attributes({"attributes": _object(inner, loc).get("values", [])}, (*loc, kind))
    raise TraceError(f"unknown AnyValue member {kind!r}", loc)


def _object(value: Any, loc: Loc) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TraceError("expected an object", loc)
    return value


def _list(owner: Any, key: str, loc: Loc) -> list[Any]:
    value = _object(owner, loc).get(key, [])
    if not isinstance(value, list):
        raise TraceError(f"{key} must be a list", (*loc, key))
    return value
