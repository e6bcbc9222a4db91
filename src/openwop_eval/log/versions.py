"""The version of an event on read: which ``schemaVersion`` this version of openwop-eval reads.

``schemaVersion`` is the version of an event's payload schema (an integer ≥ 1 in the OpenWOP
envelope). This version writes :data:`~.names.SCHEMA_VERSION` and reads that and every
older one; an event it reads the payload of, stated at a newer version, is refused, naming
both versions: its payload may mean something this version would misread, and a verdict
graded from a misread log is worse than none. So is a ``schemaVersion`` that is no integer
≥ 1: there is no telling which schema its payload follows.

What is checked is the events whose payloads the reading of a log interprets
(:data:`READ_TYPES`: the run's terms, each trial's events and score, the verdict); the
version of any other event's payload (``agent.decided``, a vendor's event) changes nothing
this version reads, so another host may version those as it likes. An event without a
``schemaVersion`` (another host's log, or one written by hand) is read as the current one.
"""

from __future__ import annotations

from typing import Any, Final

from .event_names import (
    EVAL_COMPLETED,
    EVAL_SCORED,
    EVAL_STARTED,
    INVOCATION_COMPLETED,
    INVOCATION_STARTED,
    RUN_COMPLETED,
    SCHEMA_VERSION,
    TOOL_CALLED,
    TOOL_RETURNED,
    V1_NAMES,
)

NEWEST_READ: Final = SCHEMA_VERSION
"""The newest ``schemaVersion`` this version reads (the one it writes)."""

_READ = (
    RUN_COMPLETED,
    EVAL_STARTED,
    EVAL_SCORED,
    EVAL_COMPLETED,
    INVOCATION_STARTED,
    INVOCATION_COMPLETED,
    TOOL_CALLED,
    TOOL_RETURNED,
)
READ_TYPES: Final = frozenset([*_READ, *(v1 for v1, v2 in V1_NAMES.items() if v2 in _READ)])
"""The event types whose payloads a reading of a log interprets, in v2 and v1 spelling."""

_SHOWN_CHARS = 40


class LogVersionError(ValueError):
    """An event of a log that this version cannot read: a newer ``schemaVersion``, or one
    that is no version at all. The message names the event and both versions."""


def check_version(doc: dict[str, Any], position: int) -> None:
    """Refuse ``doc``, the ``position``-th event of a log (from 1, in sequence order), when
    this version cannot read its payload: :class:`LogVersionError`."""
    value = doc.get("schemaVersion", NEWEST_READ)  # absent: read as the current one
    if type(value) is int and 1 <= value <= NEWEST_READ:
        return
    kind = doc.get("type")
    if type(kind) is not str or kind not in READ_TYPES:
        return
    where = _where(doc, kind, position)
    if type(value) is int and value > NEWEST_READ:
        raise LogVersionError(
            f"{where}: schemaVersion {_shown(value)} is newer than {NEWEST_READ}, the newest"
            " this version of openwop-eval reads; upgrade openwop-eval to read this log"
        )
    raise LogVersionError(
        f"{where}: schemaVersion {_shown(value)} is not an integer ≥ 1, so there is no telling"
        " which schema its payload follows; the log is not read"
    )


def _where(doc: dict[str, Any], kind: str, position: int) -> str:
    run_id = doc.get("runId")
    run = f" of run {_shown(run_id)}" if type(run_id) is str else ""
    return f"event {position}{run} (sequence {_shown(doc.get('sequence'))}, {kind})"


def _shown(value: Any) -> str:
    """A value of untrusted input, short: a long text cut, a huge number by its size."""
    if type(value) is int:
        if abs(value) < 10**18:
            return str(value)
        return f"{'-' if value < 0 else ''}<an integer of {value.bit_length()} bits>"
    if isinstance(value, str):
        text = repr(value[:_SHOWN_CHARS])
        return text if len(value) <= _SHOWN_CHARS else f"{text[:-1]}…{text[-1]}"
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, float):
        return repr(value)
    return "an array" if isinstance(value, list) else "an object"
