"""Writing an eval run's events: ids, timestamps, numbering and committing.

A trial's events are committed together when it ends, and take their sequence numbers then,
so the log holds no half trial and a reader following ``sequence`` never misses an event.
The names and the reading of a log are the :mod:`openwop_eval.log` package's.
"""

from __future__ import annotations

import itertools
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, NamedTuple

from ..base.jsontext import dumps
from ..log.event_names import SCHEMA_VERSION
from ..log.jsonl import iter_jsonl, parse_jsonl
from ..runtime.clock import utc_stamp
from ..store import EventRow


def new_id(prefix: str = "") -> str:
    return prefix + secrets.token_hex(12)


class _Serial:
    """Ids unique within a process without a system call each: a random stem, drawn again
    in a forked child (which would otherwise repeat its parent's ids), and a counter."""

    def __init__(self) -> None:
        self.reset()
        os.register_at_fork(after_in_child=self.reset)

    def reset(self) -> None:
        self.stem, self.counter = secrets.token_hex(8), itertools.count()

    def next(self, prefix: str) -> str:
        return f"{prefix}{self.stem}{next(self.counter):08x}"


_SERIAL = _Serial()


def serial_id(prefix: str = "") -> str:
    """A unique id, cheaply (an invocation's: one per trial)."""
    return _SERIAL.next(prefix)


def id_stem() -> str:
    """The stem of event ids, one per trial's events: the time first, so ids sort by
    creation and new ones land at the end of the store's index on ``eventId`` instead of on
    random pages (random ids made a commit's cost grow with the table); then the process's
    random stem and a counter of fixed width, so two writers in the same microsecond differ
    and one never repeats itself (drawing randomness per stem was a system call per trial)."""
    return f"ev-{time.time_ns() // 1000:014x}{_SERIAL.next('')}"


class Pending(NamedTuple):
    """An event built but not yet committed: it has no id or sequence number yet."""

    type: str
    payload: dict[str, Any]
    timestamp: str


def pending(event_type: str, payload: dict[str, Any], timestamp: str | None = None) -> Pending:
    return Pending(event_type, payload, timestamp or utc_stamp())


_NAMES: dict[str, str] = {}
"""Event types as JSON strings: a run has a handful of them, each written a million times."""
_PLAIN = re.compile(r"[0-9A-Za-z:.+-]*")


def _json_name(event_type: str) -> str:
    text = _NAMES.get(event_type)
    if text is None:
        text = dumps(event_type)
        if len(_NAMES) < 256:
            _NAMES[event_type] = text
    return text


def _json_stamp(stamp: str) -> str:
    """A timestamp as a JSON string: the clock's own need no escaping."""
    return f'"{stamp}"' if _PLAIN.fullmatch(stamp) else dumps(stamp)


class EventWriter:
    """Numbers events and commits them: to the store, atomically with the diagnostics of
    the trials they finish, and to an optional JSON-lines file. One writer per run, used
    by one thread at a time.

    Each event is encoded once; the store, the file and the host's event streams all get
    that same text.
    """

    def __init__(
        self,
        run_id: str,
        commit: Callable[[list[EventRow], list[Any]], None],
        last_sequence: int = -1,
        jsonl: IO[str] | None = None,
    ) -> None:
        self.run_id = run_id
        self._commit = commit
        self._next = last_sequence + 1
        self._jsonl = jsonl
        self._head = f'"runId":{dumps(run_id)},'
        self._rows: list[EventRow] = []
        self._trials: list[Any] = []

    def write(self, events: Sequence[Pending], trial: Any = None) -> None:
        """Number ``events`` and note the trial they finish; :meth:`flush` commits."""
        self.write_encoded([(e.type, dumps(e.payload), e.timestamp) for e in events], trial)

    def write_encoded(self, events: Sequence[tuple[str, str, str]], trial: Any = None) -> None:
        """:meth:`write` for events whose payloads are JSON text already (``(type,
        payload text, timestamp)``, the payload from :func:`jsontext.dumps`): the text
        of each event is then that of its whole document encoded (a test holds them
        equal)."""
        stem, head = id_stem(), self._head
        for i, (kind, payload, stamp) in enumerate(events):
            event_id = f"{stem}{i:x}"
            text = (
                f'{{"eventId":"{event_id}",{head}"type":{_json_name(kind)},"payload":{payload},'
                f'"timestamp":{_json_stamp(stamp)},"sequence":{self._next},'
                f'"schemaVersion":{SCHEMA_VERSION}}}'
            )
            self._rows.append(EventRow(self._next, event_id, kind, text))
            self._next += 1
        if trial is not None:
            self._trials.append(trial)

    def flush(self) -> None:
        """Commit everything written so far, in one transaction."""
        if not self._rows and not self._trials:
            return
        rows, trials = self._rows, self._trials
        self._rows, self._trials = [], []
        try:
            self._commit(rows, trials)
        except BaseException:
            if rows:  # not committed: the next events take its numbers, the log keeps no gap
                self._next = rows[0].sequence
            raise
        if self._jsonl is not None:
            self._jsonl.write("".join(row.text + "\n" for row in rows))
            self._jsonl.flush()

    def discard(self) -> None:
        """Drop what was not committed (after the store failed); the numbers it took are
        given again, so the log keeps no gap."""
        if self._rows:
            self._next = self._rows[0].sequence
        self._rows, self._trials = [], []

    @property
    def last(self) -> int:
        """The sequence number of the last event written (-1: none yet)."""
        return self._next - 1

    def resync(self, last: int) -> None:
        """Go on after ``last``: another process (a commit process) wrote the run meanwhile."""
        self.discard()
        self._next = last + 1


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Events from a JSON-lines file, in sequence order (see :func:`parse_jsonl`)."""
    with open(path, "rb") as handle:  # bytes: the decoder checks UTF-8, line by line
        return parse_jsonl(handle, str(path))


def stream_jsonl(path: str | Path) -> Iterator[dict[str, Any]]:
    """Events from a JSON-lines file one at a time, which must be in sequence order
    (:class:`~openwop_eval.log.jsonl.OutOfOrderError` where one is not)."""
    with open(path, "rb") as handle:
        yield from iter_jsonl(handle, str(path))
