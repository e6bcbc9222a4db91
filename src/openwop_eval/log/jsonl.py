"""Event logs as JSON lines: strict JSON, every broken line a located error."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..base import jsontext
from .event_names import sequence_of


class OutOfOrderError(ValueError):
    """The log's events are not in sequence order, so it cannot be read as a stream."""


def iter_jsonl(lines: Iterable[str | bytes], source: str = "<events>") -> Iterator[dict[str, Any]]:
    """Events from JSON lines as they come, which must be in sequence order (the order
    :func:`parse_jsonl` sorts them in): a sequence number below the one before raises
    :class:`OutOfOrderError` where it is met."""
    last = None
    for number, doc in _events(lines, source):
        value = doc.get("sequence")
        sequence = value if type(value) is int else 0  # as sequence_of sorts it
        if last is not None and sequence < last:  # ties keep file order, as a stable sort does
            raise OutOfOrderError(f"{source}:{number}: sequence {sequence} follows {last}")
        last = sequence
        yield doc


def parse_jsonl(lines: Iterable[str | bytes], source: str = "<events>") -> list[dict[str, Any]]:
    """Every event of a log, in sequence order (the file's may be any)."""
    return sorted((doc for _, doc in _events(lines, source)), key=sequence_of)


def _events(lines: Iterable[str | bytes], source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each event with its line number; blank lines are skipped.

    Strict JSON — no ``NaN``, ``Infinity``, numbers that overflow, lone surrogates, or more
    than 1,024 levels of nesting — and each event an object; anything else is a
    ``ValueError`` naming ``source`` and the line, never a crash.
    """
    for number, line in enumerate(lines, 1):
        if not line or line.isspace():
            continue
        try:
            doc = jsontext.loads(line)
        except ValueError as exc:
            raise ValueError(f"{source}:{number}: not a JSON event ({exc})") from None
        if not isinstance(doc, dict):
            raise ValueError(f"{source}:{number}: an event must be a JSON object")
        yield number, doc
