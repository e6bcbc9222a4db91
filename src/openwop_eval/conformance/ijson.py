"""Strict I-JSON (RFC 7493) parsing for certification evidence (pure).

A bundle is hashed and signed, so two readers must never read one text two ways. The
stdlib parser keeps the last of two duplicate member names, turns ``NaN`` into a float and
accepts integers no IEEE double can hold; here each of those is refused, never coerced:

- invalid UTF-8, a byte order mark, a syntax error or trailing text after the value;
- a duplicate member name, at any depth (``"a"`` and ``"\\u0061"`` are the same name);
- a lone surrogate, raw or escaped (``"\\ud800"``), in a member name or a string value;
- ``NaN``/``Infinity`` and a number literal that overflows a double (``1e400``);
- an integer literal beyond ±(2^53−1) (``9007199254740993``).

A number written with a fraction or an exponent (``1.0e20``, ``2.5``) is accepted when it
is a finite double: RFC 8785 serializes it the ECMAScript way, and RFC 7493 only asks that
values stay within double precision. The integer-range rule binds integer literals, as the
certification digest states it. Input is bounded (:data:`MAX_BUNDLE_BYTES`, nesting
:data:`MAX_DEPTH`). Every error is located — line and column for the text, a JSON pointer
for a value — and quotes at most a short, escaped piece of the input.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from typing import Any, Final, Literal

MAX_BUNDLE_BYTES: Final = 16 * 1024 * 1024
"""The largest text accepted (16 MiB; the largest published bundle is about 0.25 MiB)."""
MAX_DEPTH: Final = 64
"""The deepest nesting of arrays and objects accepted (a bundle needs about ten)."""
MAX_SAFE_INTEGER: Final = 2**53 - 1

Kind = Literal["not-json", "non-ijson", "too-large", "too-deep"]
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class IJsonError(ValueError):
    """Text that is not strict I-JSON; ``location`` is ``line L, column C`` or a pointer."""

    def __init__(self, kind: Kind, reason: str, location: str) -> None:
        super().__init__(f"{reason} at {location}")
        self.kind: Kind = kind
        self.reason = reason
        self.location = location


def printable(text: str) -> str:
    """Untrusted text with every control, format (bidi) or unassigned character escaped."""
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in _HIDDEN else c for c in text)


def snippet(text: str, limit: int = 40) -> str:
    """A short, printable rendering of untrusted text."""
    return printable(text if len(text) <= limit else text[:limit] + "…")


def pointer(path: tuple[str | int, ...]) -> str:
    """RFC 6901 pointer of ``path``, each member name shortened and escaped."""
    if not path:
        return "/"
    parts = (snippet(str(p).replace("~", "~0").replace("/", "~1"), 64) for p in path)
    return "".join("/" + p for p in parts)


class _Refused:
    """A value the hooks refused; the walk reports it with its pointer."""

    def __init__(self, kind: Kind, reason: str) -> None:
        self.kind: Kind = kind
        self.reason = reason


class _Duplicated(dict[str, Any]):
    """An object that carried a member name twice."""

    def __init__(self, pairs: list[tuple[str, Any]], name: str) -> None:
        super().__init__(pairs)
        self.name = name


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for name, _ in pairs:
        if name in seen:
            return _Duplicated(pairs, name)
        seen.add(name)
    return dict(pairs)


def _integer(literal: str) -> int | _Refused:
    if len(literal) > 20 or abs(value := int(literal)) > MAX_SAFE_INTEGER:
        return _Refused("non-ijson", f"integer {snippet(literal, 24)} is beyond ±(2^53−1)")
    return value


def _number(literal: str) -> float | _Refused:
    value = float(literal)
    if not math.isfinite(value):
        return _Refused("non-ijson", f"number {snippet(literal, 24)} overflows a double")
    return value


def _constant(name: str) -> _Refused:
    return _Refused("not-json", f"{name} is not a JSON number")


def _location(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    return f"line {line}, column {index - (text.rfind(chr(10), 0, index) + 1) + 1}"


def _check_depth(text: str, limit: int) -> None:
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                raise IJsonError(
                    "too-deep", f"nesting deeper than {limit}", _location(text, match.start())
                )
        elif token in "]}":
            depth -= 1


def _walk(value: Any, path: tuple[str | int, ...]) -> None:
    if isinstance(value, _Refused):
        raise IJsonError(value.kind, value.reason, pointer(path))
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise IJsonError("non-ijson", "a lone surrogate in a string", pointer(path))
    elif isinstance(value, dict):
        if isinstance(value, _Duplicated):
            where = pointer(path)
            raise IJsonError(
                "non-ijson", f'member name "{snippet(value.name)}" appears twice', where
            )
        for name, item in value.items():
            if _SURROGATE.search(name):
                raise IJsonError("non-ijson", "a lone surrogate in a member name", pointer(path))
            _walk(item, (*path, name))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _walk(item, (*path, index))


def _text(data: bytes | str, max_bytes: int) -> str:
    if isinstance(data, bytes):
        if len(data) > max_bytes:
            raise IJsonError("too-large", f"over {max_bytes} bytes", f"byte {max_bytes}")
        if data.startswith(b"\xef\xbb\xbf"):
            raise IJsonError("non-ijson", "a byte order mark", "line 1, column 1")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data[: exc.start].decode("utf-8")
            raise IJsonError("not-json", "invalid UTF-8", _location(text, len(text))) from None
    if len(data) > max_bytes:  # a character is at least one byte
        raise IJsonError("too-large", f"over {max_bytes} bytes", f"character {max_bytes}")
    if data.startswith("\ufeff"):
        raise IJsonError("non-ijson", "a byte order mark", "line 1, column 1")
    if raw := _SURROGATE.search(data):
        raise IJsonError("not-json", "a lone surrogate", _location(data, raw.start()))
    if len(data.encode("utf-8")) > max_bytes:
        raise IJsonError("too-large", f"over {max_bytes} bytes", "the end of the text")
    return data


def parse_ijson(
    data: bytes | str, *, max_bytes: int = MAX_BUNDLE_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """The value of a strict I-JSON text, or :class:`IJsonError` saying where and why."""
    text = _text(data, max_bytes)
    _check_depth(text, max_depth)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_int=_integer,
            parse_float=_number,
            parse_constant=_constant,
        )
    except json.JSONDecodeError as exc:
        raise IJsonError("not-json", exc.msg, _location(text, exc.pos)) from None
    except RecursionError:  # only if max_depth was raised past the interpreter's limit
        raise IJsonError("too-deep", "nesting too deep to parse", "line 1, column 1") from None
    _walk(value, ())
    return value
