"""The host's edge: every value a request carries is checked here, before a handler, the
store or the canonical JSON sees it, so a hostile request is a 4xx and never a 500.

PostgreSQL refuses NUL in text and strings longer than their column; RFC 8785 (the request
hash behind ``Idempotency-Key``) refuses NaN, infinities and integers beyond 2^53; the JSON
decoder and everything after it recurse. The limits below are the host's documented limits
(docs/host.md, "Limits"); each fits the store column it guards (tests/server checks them
against store/schema.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any, Final, TypeGuard

from starlette.requests import Request

from ..base.limits import MAX_SUITE_ID_CHARS, MAX_SUITE_VERSION_CHARS
from ..core.suite import SUITE_ID_PATTERN
from .errors import ApiError, validation

MAX_TENANT_CHARS: Final = 128
"""A tenant id (ids.schema.json); ``runs.tenant`` holds 160."""
MAX_RUN_ID_CHARS: Final = 262
"""``(anon:)?<tenant, 1–128>/<opaque, 16–128>`` (ids.schema.json); ``runs.run_id`` holds 300."""
MAX_AGENT_ID_CHARS: Final = 128
"""``[A-Za-z0-9._~:-]{1,128}`` (the suite's ``targetAgentId``); ``runs.agent_id`` holds 200."""
MAX_VERSION_CHARS: Final = 100
"""A deployment ``version``: ``deployments.version`` holds 100."""
MAX_CHANNEL_CHARS: Final = 100
"""A deployment ``channel`` (one of the configured channels)."""
MAX_SUITE_REF_CHARS: Final = MAX_SUITE_ID_CHARS + 1 + MAX_SUITE_VERSION_CHARS
"""``suiteId@version`` (the suite's own limits are the loader's, in ``base.limits``)."""
MAX_IDEMPOTENCY_KEY_CHARS: Final = 255
"""Printable ASCII (an sf-string); ``idempotency.key`` holds 300."""
MAX_OPERATION_CHARS: Final = 120
"""``idempotency.operation``; longer operation names are hashed to fit."""
MAX_CURSOR_CHARS: Final = 1024
MAX_JSON_DEPTH: Final = 64
"""Nested arrays and objects in a body, the body itself counting as one."""
MAX_PATH_CHARS: Final = 200
"""The JSONPath that locates a repeated key in a body is cut to this many characters."""
MAX_SAFE_INTEGER: Final = 2**53 - 1
"""I-JSON: RFC 8785 (the request hash) represents integers exactly only up to this."""
MAX_SEQUENCE: Final = 2**63 - 1
"""The largest ``afterSequence`` / ``Last-Event-ID`` accepted (a signed 64-bit integer)."""
MAX_STORED_SEQUENCE: Final = 2**63 - 1
"""``events.sequence`` is a 64-bit BIGINT: no event lies beyond it, so a larger cursor would
be past the end and be read as this one (today the same as ``MAX_SEQUENCE``)."""
QUERY_PARAMETERS: Final = (
    "limit",
    "cursor",
    "status",
    "workflowId",
    "afterSequence",
    "timeout",
    "streamMode",
    "against",
)
"""Every query parameter a route reads (the fuzzers send them, hostile)."""
RUN_STATUSES: Final = (
    "pending",
    "running",
    "paused",
    "waiting-approval",
    "waiting-input",
    "waiting-external",
    "completed",
    "failed",
    "cancelling",
    "cancelled",
)
"""The protocol's ``RunStatus``: the values ``GET /runs?status=`` filters on."""

_RUN_ID = re.compile(r"(?:anon:)?[A-Za-z0-9._~-]{1,128}/[A-Za-z0-9._~-]{16,128}")
_AGENT_ID = re.compile(r"[A-Za-z0-9._~:-]{1,128}")
_SEQUENCE = re.compile(r"-?[0-9]{1,19}")  # ASCII digits only: int() also takes "١", "1_0"
_INTEGER = re.compile(r"[0-9]{1,9}")
_SECONDS = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,6})?")
_KEY = re.compile(rf"[\x20-\x7e]{{1,{MAX_IDEMPOTENCY_KEY_CHARS}}}")
_SUITE_ID = re.compile(SUITE_ID_PATTERN)
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]{8,15}Z")


def is_run_id(value: object) -> TypeGuard[str]:
    """A well-formed run id; the host mints no other, so any other names no run."""
    return isinstance(value, str) and _RUN_ID.fullmatch(value) is not None


def is_agent_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and _AGENT_ID.fullmatch(value) is not None


def is_text(value: object, max_chars: int) -> TypeGuard[str]:
    """A non-empty one-line string a bounded column can hold: no control characters."""
    return isinstance(value, str) and 0 < len(value) <= max_chars and value.isprintable()


def sequence(value: str | None, name: str) -> int:
    """An event cursor: ``-1`` (the empty log's ``lastSequence``) up to ``MAX_SEQUENCE``."""
    if value is None or value == "":
        return -1
    if _SEQUENCE.fullmatch(value) is None or not -1 <= int(value) <= MAX_SEQUENCE:
        raise validation(
            f"{name} must be an event sequence number from -1 to {MAX_SEQUENCE}",
            {"parameter": name},
        )
    return min(int(value), MAX_STORED_SEQUENCE)


def integer(value: str, name: str, low: int, high: int) -> int:
    if _INTEGER.fullmatch(value) is None or not low <= int(value) <= high:
        raise validation(f"{name} must be an integer from {low} to {high}", {"parameter": name})
    return int(value)


def seconds(value: str, name: str, low: float, high: float) -> float:
    if _SECONDS.fullmatch(value) is None or not low <= float(value) <= high:
        raise validation(
            f"{name} must be a number of seconds from {low:g} to {high:g}", {"parameter": name}
        )
    return float(value)


def run_status(value: str | None) -> str | None:
    if value is not None and value not in RUN_STATUSES:
        raise validation("status must be a run status", {"statuses": list(RUN_STATUSES)})
    return value


def workflow_suite(value: str) -> str | None:
    """The suite id of an eval run's ``workflowId`` (``eval:<suiteId>``); ``None`` when the
    value names no workflow an eval run of this host can have (its filter matches nothing)."""
    suite_id = value.removeprefix("eval:")
    if suite_id == value or len(suite_id) > MAX_SUITE_ID_CHARS:
        return None
    return suite_id if _SUITE_ID.fullmatch(suite_id) is not None else None


def cursor_parts(stamp: str, run_id: str) -> bool:
    """Whether a decoded page cursor is one this host could have minted."""
    return _STAMP.fullmatch(stamp) is not None and is_run_id(run_id)


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get("idempotency-key")
    if not key:
        return None
    if _KEY.fullmatch(key) is None:
        raise ApiError(
            400,
            "idempotency_key_invalid",
            f"Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters",
        )
    return key


def operation(name: str) -> str:
    """An idempotency operation name that fits its column (a long agent id is hashed)."""
    if len(name) <= MAX_OPERATION_CHARS:
        return name
    return name.split(":", 1)[0] + "#" + hashlib.sha256(name.encode()).hexdigest()


# --- JSON bodies ------------------------------------------------------------------------


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text[:40]} is out of the range of a double")
    return number


def _int(text: str) -> int:
    number = int(text)  # over 4300 digits raises ValueError
    if abs(number) > MAX_SAFE_INTEGER:
        raise ValueError(f"integers must lie within ±{MAX_SAFE_INTEGER} (I-JSON)")
    return number


class _DuplicateKeyError(Exception):
    """An object of the body repeats a key (not a ValueError: the decoder's own are)."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _DuplicateKeyError
    return value


def parse_json(raw: bytes) -> Any:
    """Decode a request body, refusing what the store or the canonical JSON cannot hold,
    and an object that repeats a key: readers disagree on which of the two counts."""
    try:
        value = json.loads(
            raw,
            object_pairs_hook=_object,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except RecursionError:
        raise _too_deep() from None
    except _DuplicateKeyError:
        raise validation(
            "an object in the body repeats a key", {"path": _duplicate_path(raw)}
        ) from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise validation(f"the body is not valid JSON: {exc}") from None
    _check_tree(value)
    return value


class _Pairs(list[tuple[str, Any]]):
    """An object as its key/value pairs, in order (only to locate a repeated key)."""


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _step(key: str) -> str:
    """A key as a JSONPath step; one that is not a short plain name is ``[*]`` (no content
    of the body is echoed)."""
    return f".{key}" if _NAME.fullmatch(key) else "[*]"


def _duplicate_path(raw: bytes) -> str:
    """The JSONPath (``$.a[0].b``) of the first repeated key in the body, which is read
    again for it only on this refusal (``$`` should that fail)."""
    try:
        tree = json.loads(raw, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return "$"
    return _first_repeat(tree)


def _first_repeat(tree: Any) -> str:
    """The path of the first repeated key, depth first, in a tree of :class:`_Pairs`."""
    stack: list[tuple[Any, str]] = [(tree, "$")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Pairs):
            seen: set[str] = set()
            for key, _ in node:
                if key in seen:
                    return (path + _step(key))[:MAX_PATH_CHARS]
                seen.add(key)
            stack.extend((child, path + _step(key)) for key, child in reversed(node))
        elif isinstance(node, list):
            stack.extend((child, f"{path}[{i}]") for i, child in reversed(list(enumerate(node))))
    return "$"


def _too_deep() -> ApiError:
    return validation(f"the body nests arrays and objects deeper than {MAX_JSON_DEPTH} levels")


def _check_tree(value: Any) -> None:
    stack: list[tuple[Any, int]] = [(value, 0)]  # iterative: no recursion on hostile input
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            if depth >= MAX_JSON_DEPTH:
                raise _too_deep()
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, child in items:
                if isinstance(key, str):
                    _check_string(key)
                stack.append((child, depth + 1))
        elif isinstance(node, str):
            _check_string(node)


def _check_string(text: str) -> None:
    if "\x00" in text:
        raise validation("strings in the body must not contain U+0000")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise validation("strings in the body must be Unicode text (a lone surrogate)") from None
