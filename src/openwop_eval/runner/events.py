"""Writing an eval run's events: ids, timestamps, numbering and committing.

A trial's events are committed together when it ends, and take their sequence numbers then,
so the log holds no half trial and a reader following ``sequence`` never misses an event.
The names and the reading of a log are the :mod:`openwop_eval.log` package's.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..clock import utc_stamp
from ..log.jsonl import parse_jsonl
from ..log.names import SCHEMA_VERSION


def new_id(prefix: str = "") -> str:
    return prefix + secrets.token_hex(12)


def event_id() -> str:
    """A unique event id that sorts by creation time: new ids land at the end of the store's
    index on ``eventId`` instead of on random pages, so a commit's cost stays flat as a run
    grows (random ids made it grow with the table)."""
    return f"ev-{time.time_ns() // 1000:014x}{secrets.token_hex(6)}"


@dataclass(frozen=True, slots=True)
class Pending:
    """An event built but not yet committed: it has no sequence number yet."""

    type: str
    payload: dict[str, Any]
    timestamp: str
    event_id: str


def pending(event_type: str, payload: dict[str, Any]) -> Pending:
    return Pending(event_type, payload, utc_stamp(), event_id())


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


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Events from a JSON-lines file, in sequence order (see :func:`parse_jsonl`)."""
    with open(path, encoding="utf-8") as handle:
        return parse_jsonl(handle, str(path))
