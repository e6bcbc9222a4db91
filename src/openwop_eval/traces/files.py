"""Reading trace files: bounded, strict JSON, the format told from the content.

A file is read within the limits of every document (:mod:`openwop_eval.base.limits`: its size,
nesting depth and values), as one JSON document or as JSON lines (``.jsonl``/``.ndjson``,
or any other name that is not one JSON document), and is then one of: OTLP/JSON export
requests (``resourceSpans``; one per line, as the collector's file exporter writes them),
an Inspect log (``.eval``, or its ``.json`` form), or conversations (:mod:`.conversations`).
Anything it cannot read is a located problem; nothing is guessed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base import limits
from ..files.documents import parse_document, read_bounded
from .conversations import UnreadableError, file_trace, is_entry, is_record, record_trace
from .inspect_log import read_inspect_log
from .otlp import Span, spans_of
from .records import Trace, TraceError, TraceProblem
from .spans import trace_of

Read = tuple[list[Trace], list[TraceProblem]]
_LINES = (".jsonl", ".ndjson")


def read_trace_files(paths: Sequence[str]) -> Read:
    """The traces of every file, or the problems of every file that cannot be read."""
    traces: list[Trace] = []
    problems: list[TraceProblem] = []
    for path in paths:
        found, wrong = read_trace_file(path)
        traces.extend(found)
        problems.extend(wrong)
    return traces, problems


def read_trace_file(path: str) -> Read:
    if Path(path).suffix.lower() == ".eval":
        return _inspect(path)
    data, unreadable = read_bounded(Path(path))  # the loader's reader: bounded, FIFO-safe
    if unreadable is not None:
        return [], [TraceProblem(path, unreadable)]
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return [], [TraceProblem(path, f"not valid UTF-8: byte 0x{data[exc.start]:02x}", line)]
    docs, problems = _documents(text, path)
    if problems:
        return [], problems
    return _classified(docs, path)


def _documents(text: str, path: str) -> tuple[list[tuple[int | None, Any]], list[TraceProblem]]:
    """(line, value) of each JSON document: the whole file, or each of its lines."""
    suffix = Path(path).suffix.lower()
    if not text.strip():
        return [], [TraceProblem(path, "the file is empty")]
    if suffix not in _LINES:
        doc, _, problems = parse_document(text, ".json")
        if not problems:
            return [(None, doc)], []
        if suffix == ".json" or "\n" not in text.strip():
            return [], [TraceProblem.of(path, p) for p in problems]
    return _lines(text, path)


def _lines(text: str, path: str) -> tuple[list[tuple[int | None, Any]], list[TraceProblem]]:
    docs: list[tuple[int | None, Any]] = []
    problems: list[TraceProblem] = []
    for number, line in enumerate(text.split("\n"), 1):  # not splitlines: U+2028 is text
        if not line.strip():
            continue
        doc, _, found = parse_document(line, ".json")
        problems.extend(TraceProblem.of(path, p, number) for p in found)
        docs.append((number, doc))
        if len(problems) >= limits.MAX_JSON_PROBLEMS:
            problems.append(TraceProblem(path, "too many problems; reading stopped", number))
            break
    return docs, problems


def _classified(docs: list[tuple[int | None, Any]], path: str) -> Read:
    values = [doc for _, doc in docs]
    if all(isinstance(v, dict) and "resourceSpans" in v for v in values):
        return _otlp(docs, path)
    if len(values) == 1 and _is_inspect_json(values[0]):
        return _inspect(path)
    if all(is_record(v) for v in values):
        return _records([(line, v, ()) for line, v in docs], path)
    if len(values) == 1 and isinstance(values[0], list):
        items = values[0]
        if items and all(is_record(v) for v in items):
            return _records([(None, v, (i,)) for i, v in enumerate(items)], path)
        return _bare(items, path, None)
    if all(is_entry(v) for v in values):
        return _bare(values, path, [line or 0 for line, _ in docs])
    return [], [
        TraceProblem(
            path,
            "not a trace file: expected OTLP/JSON (resourceSpans), an Inspect log, or chat"
            " messages / Responses items (records {taskId, trial, messages|items}, or one"
            " conversation)",
        )
    ]


def _records(entries: list[tuple[int | None, Any, tuple[int, ...]]], path: str) -> Read:
    traces, problems = [], []
    for line, value, prefix in entries:
        source = f"{path} $[{prefix[0]}]" if prefix else path
        try:
            traces.append(record_trace(value, source, line, prefix))
        except UnreadableError as exc:
            problems.append(exc.problem)
    return traces, problems


def _bare(values: list[Any], path: str, lines: list[int] | None) -> Read:
    try:
        return [file_trace(values, path, lines)], []
    except UnreadableError as exc:
        return [], [exc.problem]


def _otlp(docs: list[tuple[int | None, Any]], path: str) -> Read:
    """One trace per trace id; its spans may come from several lines of the file."""
    spans: dict[str, list[Span]] = defaultdict(list)
    read = 0
    for line, doc in docs:
        try:
            found = spans_of(doc, read)
        except TraceError as exc:
            return [], [exc.problem(path, line)]
        read += len(found)
        for span in found:
            spans[span.trace_id].append(span)
    traces, problems = [], []
    for trace_id, members in spans.items():
        source = f"{path} trace {trace_id}"
        try:
            traces.append(trace_of(members, source))
        except TraceError as exc:
            problems.append(exc.problem(source))
    return traces, problems


def _inspect(path: str) -> Read:
    try:
        return read_inspect_log(Path(path), path), []
    except TraceError as exc:
        return [], [exc.problem(path)]
    except OSError as exc:
        return [], [TraceProblem(path, f"cannot read the file: {exc}")]


def _is_inspect_json(value: Any) -> bool:
    return isinstance(value, dict) and {"version", "eval"} <= value.keys()
