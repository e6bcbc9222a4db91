"""OpenWOP v2 events of an eval run: envelopes, payloads and where they are written.

Every event of a trial carries the extension member ``x-openwop-eval`` = ``{taskId, trial,
invocationId}``, so it is attributable to exactly one (task, trial) even when trials run
concurrently; the protocol's closed payloads admit ``x-`` members for exactly this. A trial's
events are committed together when it ends, and take their sequence numbers then, so the log
holds no half trial and a reader following ``sequence`` never misses an event.
"""

from __future__ import annotations

import asyncio
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
    """Numbers events and commits them: to the store, atomically with each trial's
    diagnostics, and to an optional JSON-lines file. One writer per run.

    Trials finishing in the same turn of the event loop share one transaction (group
    commit, at most ``max_batch`` trials); the commit runs before any other trial starts, so
    a crash loses at most the trials of that turn and never part of one.
    """

    def __init__(
        self,
        run_id: str,
        commit: Callable[[list[dict[str, Any]], list[Any]], None],
        last_sequence: int = -1,
        jsonl: IO[str] | None = None,
        max_batch: int = 64,
    ) -> None:
        self.run_id = run_id
        self._commit = commit
        self._next = last_sequence + 1
        self._jsonl = jsonl
        self._max_batch = max_batch
        self._docs: list[dict[str, Any]] = []
        self._trials: list[Any] = []
        self._scheduled = False
        self._failure: BaseException | None = None

    def write(self, events: Sequence[Pending], trial: Any = None) -> None:
        self._raise_failure()
        for event in events:
            self._docs.append(
                {
                    "eventId": event.event_id,
                    "runId": self.run_id,
                    "type": event.type,
                    "payload": event.payload,
                    "timestamp": event.timestamp,
                    "sequence": self._next,
                    "schemaVersion": SCHEMA_VERSION,
                }
            )
            self._next += 1
        if trial is not None:
            self._trials.append(trial)
        if len(self._trials) >= self._max_batch:
            self.flush()
        elif not self._scheduled:
            try:
                asyncio.get_running_loop().call_soon(self._flush_soon)
                self._scheduled = True
            except RuntimeError:  # no event loop: commit now
                self.flush()

    def _flush_soon(self) -> None:
        self._scheduled = False
        try:
            self.flush()
        except Exception as exc:  # surfaced by the next write() or flush()
            self._failure = exc

    def flush(self) -> None:
        """Commit everything written so far (the run calls it before it decides)."""
        self._raise_failure()
        if not self._docs and not self._trials:
            return
        docs, trials = self._docs, self._trials
        self._docs, self._trials = [], []
        self._commit(docs, trials)
        if self._jsonl is not None:
            self._jsonl.write("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
            self._jsonl.flush()

    def discard(self) -> None:
        """Drop what was not committed (after the store failed)."""
        self._docs, self._trials, self._failure = [], [], None

    def _raise_failure(self) -> None:
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Events from a JSON-lines file, in sequence order; blank lines are skipped.

    Strict JSON (no NaN or Infinity, which no store could hold); a line that is not an
    event is a located ``ValueError``, never a crash, however it is broken.
    """
    docs = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line, parse_constant=_no_constant)
            except RecursionError:
                raise ValueError(f"{path}:{number}: an event nested too deeply") from None
            except ValueError as exc:
                raise ValueError(f"{path}:{number}: not a JSON event ({exc})") from None
            if not isinstance(doc, dict):
                raise ValueError(f"{path}:{number}: an event must be a JSON object")
            docs.append(doc)
    return sorted(docs, key=sequence_of)


def sequence_of(doc: dict[str, Any]) -> int:
    """An event's sequence for ordering; a missing or malformed one sorts first."""
    value = doc.get("sequence")
    return value if type(value) is int else 0


def trial_ext(task_id: str, trial: int, invocation_id: str, **extra: JSON) -> dict[str, JSON]:
    return {EXT: {"taskId": task_id, "trial": trial, "invocationId": invocation_id, **extra}}
