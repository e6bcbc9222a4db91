"""OpenWOP v2 events of an eval run: envelopes, payloads and where they are written.

Every event of a trial carries the extension member ``x-openwop-eval`` = ``{taskId, trial,
invocationId}``, so it is attributable to exactly one (task, trial) even when trials run
concurrently; the protocol's closed payloads admit ``x-`` members for exactly this. A trial's
events are committed together when it ends, and take their sequence numbers then, so the log
holds no half trial and a reader following ``sequence`` never misses an event.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ..core import JSON

EXT = "x-openwop-eval"
SCHEMA_VERSION = 1

# The v2 event types of an eval run (v1 spellings are accepted when reading).
RUN_STARTED = "run.started"
RUN_COMPLETED = "run.completed"
RUN_FAILED = "run.failed"
RUN_CANCELLED = "run.cancelled"
EVAL_STARTED = "eval.started"
EVAL_SCORED = "eval.scored"
EVAL_COMPLETED = "eval.completed"
INVOCATION_STARTED = "agent.invocation-started"
INVOCATION_COMPLETED = "agent.invocation-completed"
TOOL_CALLED = "agent.tool-called"
TOOL_RETURNED = "agent.tool-returned"
DECIDED = "agent.decided"

V1_NAMES = {
    "agent.toolCalled": TOOL_CALLED,
    "agent.toolReturned": TOOL_RETURNED,
    "agent.invocation.started": INVOCATION_STARTED,
    "agent.invocation.completed": INVOCATION_COMPLETED,
}


def v2_type(event_type: str) -> str:
    return V1_NAMES.get(event_type, event_type)


def new_id(prefix: str = "") -> str:
    return prefix + secrets.token_hex(12)


def timestamp() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class Pending:
    """An event built but not yet committed: it has no sequence number yet."""

    type: str
    payload: dict[str, Any]
    timestamp: str
    event_id: str


def pending(event_type: str, payload: dict[str, Any]) -> Pending:
    return Pending(event_type, payload, timestamp(), new_id("ev-"))


class EventWriter:
    """Numbers and commits events: to the store (atomically, with trial diagnostics) and to
    an optional JSON-lines file. One writer per run; it continues after ``last_sequence``."""

    def __init__(
        self,
        run_id: str,
        commit: Callable[[list[dict[str, Any]], Any], None],
        last_sequence: int = -1,
        jsonl: IO[str] | None = None,
    ) -> None:
        self.run_id = run_id
        self._commit = commit
        self._next = last_sequence + 1
        self._jsonl = jsonl

    def write(self, events: Sequence[Pending], trial: Any = None) -> list[dict[str, Any]]:
        docs = [
            {
                "eventId": e.event_id,
                "runId": self.run_id,
                "type": e.type,
                "payload": e.payload,
                "timestamp": e.timestamp,
                "sequence": self._next + i,
                "schemaVersion": SCHEMA_VERSION,
            }
            for i, e in enumerate(events)
        ]
        self._commit(docs, trial)  # raises before the counter moves: nothing is skipped
        self._next += len(docs)
        if self._jsonl is not None:
            self._jsonl.write("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
            self._jsonl.flush()
        return docs


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Events from a JSON-lines file, in sequence order; blank lines are skipped."""
    docs = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not a JSON event ({exc})") from None
            if not isinstance(doc, dict):
                raise ValueError(f"{path}:{number}: an event must be a JSON object")
            docs.append(doc)
    return sorted(docs, key=lambda d: d.get("sequence", 0))


def trial_ext(task_id: str, trial: int, invocation_id: str, **extra: JSON) -> dict[str, JSON]:
    return {EXT: {"taskId": task_id, "trial": trial, "invocationId": invocation_id, **extra}}
