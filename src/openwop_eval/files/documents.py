"""Decoding JSON and YAML documents with the line of every value and strict JSON semantics.

A document must be plain JSON data that a run can carry: duplicate keys, non-string keys,
non-finite numbers, integers beyond ±(2^53−1) and text that is not Unicode are problems, not
silent surprises (YAML is read by :mod:`openwop_eval.files.yamldoc`). Every limit of
:mod:`openwop_eval.base.limits` is enforced before the work it bounds: the file size before
decoding, the nesting depth before any recursive decoding or walk.
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import stat
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import Any

from ..base import limits
from ..core.problems import Loc, Problem
from .yamldoc import TooLongInteger, line_in, parse_yaml


class LineMap:
    """1-based lines of the values in a document, by location."""

    def __init__(self, lines: dict[Loc, int] | None = None) -> None:
        self.lines: dict[Loc, int] = {} if lines is None else lines

    def line_of(self, loc: Loc) -> int | None:
        """The line of ``loc``, or of its nearest ancestor the map knows."""
        for end in range(len(loc), -1, -1):
            line = self._line(loc[:end])
            if line is not None:
                return line
        return None

    def _line(self, loc: Loc) -> int | None:
        return self.lines.get(loc)


def read_document(path: Path) -> tuple[Any, LineMap, list[Problem]]:
    """Read and decode a JSON or YAML file; a file that cannot be read is a problem too."""
    data, problem = read_bounded(path)
    if problem is not None:
        return None, LineMap(), [Problem((), problem)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start]
        return None, LineMap(), [Problem((), f"not valid UTF-8: byte 0x{byte:02x}", line=line)]
    return parse_document(text, path.suffix.lower())


def read_bounded(path: Path) -> tuple[bytes, str | None]:
    """At most ``MAX_FILE_BYTES + 1`` bytes; a pipe must keep delivering until it ends."""
    limit = limits.MAX_FILE_BYTES
    size_limit = f"{limit:,} bytes ({limit // 2**20} MiB)"
    try:
        # O_NONBLOCK: opening a FIFO that has no writer must not block
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        return b"", f"cannot read the file: {exc}"
    chunks: list[bytes] = []
    total = 0
    try:
        info = os.fstat(fd)
        regular = stat.S_ISREG(info.st_mode)
        if regular and info.st_size > limit:
            return b"", f"the file is {info.st_size:,} bytes; the limit is {size_limit}"
        while total <= limit:
            if not regular and not _wait_readable(fd):
                return b"", f"no data arrived for {limits.READ_IDLE_TIMEOUT_S:g} s; reading stopped"
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except BlockingIOError:  # woken without data: wait again
                continue
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        return b"", f"cannot read the file: {exc}"
    finally:
        os.close(fd)
    if total > limit:
        return b"", f"the file is over the limit of {size_limit}; reading stopped there"
    return b"".join(chunks), None


def _wait_readable(fd: int) -> bool:
    """False when a pipe, FIFO or device has delivered nothing for the idle timeout."""
    timeout = limits.READ_IDLE_TIMEOUT_S
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(timeout * 1000))
    if os.name == "nt":  # pragma: no cover - select() takes only sockets there
        return True
    return bool(select.select([fd], [], [], timeout)[0])  # pragma: no cover


def parse_document(text: str, suffix: str) -> tuple[Any, LineMap, list[Problem]]:
    """Decode ``text``; JSON for ``.json``, YAML for ``.yaml``/``.yml``, else JSON then YAML."""
    if len(text) > limits.MAX_FILE_BYTES:
        message = (
            f"the document is {len(text):,} characters; the limit is {limits.MAX_FILE_BYTES:,}"
        )
        return None, LineMap(), [Problem((), message)]
    text = text.removeprefix("\ufeff")  # a byte order mark is not content
    if not text.strip():
        return None, LineMap(), [Problem((), "the file is empty")]
    if suffix in (".yaml", ".yml"):
        return _parse_yaml(text)
    if suffix == ".json" or text.lstrip().startswith(("{", "[")):
        return _parse_json(text)
    return _parse_yaml(text)


def _parse_yaml(text: str) -> tuple[Any, LineMap, list[Problem]]:
    doc, root, problems = parse_yaml(text)
    lines: LineMap = _YamlLines(root) if root is not None else LineMap()
    if not problems:
        problems = check_values(doc, lines.line_of)
    return doc, lines, problems


class _YamlLines(LineMap):
    """Lines looked up in the composed node graph, only for the locations asked about."""

    def __init__(self, root: Any) -> None:
        super().__init__()
        self._root = root
        self._keys: dict[int, dict[str, Any]] = {}

    def line_of(self, loc: Loc) -> int | None:
        return line_in(self._root, loc, self._keys)


# --- JSON -------------------------------------------------------------------------------


class _Object(dict[str, Any]):
    """A decoded JSON object that had duplicate keys (the last value wins, as in json)."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    duplicates = []
    for key, value in pairs:
        if key in seen:
            duplicates.append(key)
        seen[key] = value
    if not duplicates:
        return seen
    marked = _Object(seen)
    marked.duplicates = duplicates
    return marked


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _int(text: str) -> int | TooLongInteger:
    # Python refuses to convert more than 4,300 digits; anything this long is out of range
    return TooLongInteger(len(text.lstrip("-"))) if len(text) > 100 else int(text)


def _parse_json(text: str) -> tuple[Any, LineMap, list[Problem]]:
    too_deep = _json_too_deep(text)
    if too_deep is not None:
        return None, LineMap(), [Problem((), _too_deep_message(), line=too_deep)]
    try:
        doc = json.loads(
            text, object_pairs_hook=_pairs, parse_constant=_no_constant, parse_int=_int
        )
    except json.JSONDecodeError as exc:
        return None, LineMap(), [Problem((), f"not valid JSON: {exc.msg}", line=exc.lineno)]
    except (ValueError, RecursionError) as exc:
        return None, LineMap(), [Problem((), f"not valid JSON: {exc}")]
    lines = _JsonLines(text)
    return doc, lines, check_values(doc, lines.line_of)


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _json_too_deep(text: str) -> int | None:
    """The line where ``text`` nests deeper than ``MAX_DEPTH``, found without recursion."""
    if text.count("[") + text.count("{") <= limits.MAX_DEPTH:
        return None
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    depths = accumulate(map(_DEPTH_STEP.__getitem__, brackets))
    if max(depths, default=0) <= limits.MAX_DEPTH:
        return None
    depth = 0  # too deep: find where, token by token (only on this path)
    for match in re.finditer(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', text):
        step = _DEPTH_STEP.get(match.group())
        depth += step or 0
        if depth > limits.MAX_DEPTH:
            return text.count("\n", 0, match.start()) + 1
    return 1


def _too_deep_message() -> str:
    return f"nested more than {limits.MAX_DEPTH} levels deep (the limit)"


class _JsonLines(LineMap):
    """Lines of the values of a valid JSON text, mapped the first time a line is asked for."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self._text: str | None = text

    def _line(self, loc: Loc) -> int | None:
        if self._text is not None:
            self.lines, self._text = _json_lines(self._text), None
        return self.lines.get(loc)


_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},\n]|[^\s\[\]{},:"]+')


def _json_lines(text: str) -> dict[Loc, int]:
    """The line of every value, by location, from one pass over the tokens of ``text``.

    ``text`` has been decoded by ``json`` already, so it is well formed and at most
    ``MAX_DEPTH`` deep. (json-source-map does the same recursively and several times slower;
    this runs on hostile input, which is large and full of problems to locate.)
    """
    lines: dict[Loc, int] = {}
    line = 1
    open_: list[list[Any]] = []  # per open container: [its location, next key or index]
    expect_key = False
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == "\n":
            line += 1
        elif first == ",":
            if isinstance(open_[-1][1], int):
                open_[-1][1] += 1
            else:
                expect_key = True
        elif first in "]}":
            open_.pop()
            expect_key = False
        elif expect_key:  # an object key (a string token)
            open_[-1][1] = json.loads(token) if "\\" in token else token[1:-1]
            expect_key = False
        else:
            here: Loc = (*open_[-1][0], open_[-1][1]) if open_ else ()
            lines[here] = line
            if first == "{":
                open_.append([here, ""])
                expect_key = True
            elif first == "[":
                open_.append([here, 0])
    return lines


# --- plain JSON data ---------------------------------------------------------------------


def check_values(doc: Any, line_of: Callable[[Loc], int | None] | None = None) -> list[Problem]:
    """Why ``doc`` is not plain JSON data within the limits; empty when it is.

    One iterative walk (no recursion, so any depth is safe), which stops at the first value
    past ``MAX_DEPTH`` or ``MAX_VALUES``: it runs on every document, from a file or not.
    """
    problems: list[Problem] = []
    stack: list[tuple[Any, Loc]] = [(doc, ())]
    count = 0
    while stack:
        value, loc = stack.pop()
        count += 1
        if count > limits.MAX_VALUES:
            problems.append(Problem((), _TOO_MANY_VALUES))
            break
        if isinstance(value, dict | list) and len(loc) >= limits.MAX_DEPTH:
            problems.append(Problem(loc, _too_deep_message()))
            break
        message = _value_problem(value)
        if message is not None:
            problems.append(Problem(loc, message))
        elif isinstance(value, dict):
            count += len(value)
            for key in getattr(value, "duplicates", ()):
                problems.append(Problem((*loc, key), f"duplicate key {key!r}"))
            for key, item in reversed(value.items()):
                if not isinstance(key, str):
                    problems.append(Problem(loc, f"keys must be strings; got {_show(key)}"))
                elif (bad := _text_problem(key)) is not None:
                    problems.append(Problem(loc, f"key: {bad}"))
                else:
                    stack.append((item, (*loc, key)))
        elif isinstance(value, list):
            stack.extend(((item, (*loc, i)) for i, item in reversed(list(enumerate(value)))))
    if line_of is not None:
        problems = [p.at_line(line_of(p.loc)) for p in problems]
    return problems


def _value_problem(value: Any) -> str | None:
    if value is None or isinstance(value, bool | dict | list):
        return None
    if isinstance(value, str):
        return _text_problem(value)
    if isinstance(value, int):
        return None if abs(value) <= limits.MAX_SAFE_INTEGER else f"{_show(value)} {_OUT_OF_RANGE}"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    if isinstance(value, TooLongInteger):
        return f"an integer of {value.digits:,} digits {_OUT_OF_RANGE}"
    return f"expected a JSON value, got {type(value).__name__}"


_TOO_MANY_VALUES = (
    f"more values than the limit of {limits.MAX_VALUES:,} per document (objects, arrays, keys"
    " and scalars each count one, repeats included)"
)
_OUT_OF_RANGE = (
    "is outside the integers a JSON number carries exactly, ±(2^53−1); write it as a string"
)


def _show(value: Any) -> str:
    """A short, safe rendering: Python will not even print an int of more than 4,300 digits."""
    if isinstance(value, int) and value.bit_length() > 100:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1:,} digits"
    try:
        text = repr(value)
    except ValueError:  # a huge int inside a tuple key, say
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def _text_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"contains a lone surrogate U+{ord(text[exc.start]):04X}; text must be valid Unicode"
    return None
