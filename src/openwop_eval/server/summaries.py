"""Completed runs' summaries, encoded once: a completed run's summary never changes, so the
host answers ``GET …/eval-summary`` from memory — no query, no JSON work — after the first
read. Bounded by entries and bytes; the least recently read go first."""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock
from typing import Final

MAX_ENTRIES: Final = 4096
MAX_BYTES: Final = 64 * 2**20


class SummaryCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._max_entries, self._max_bytes = max_entries, max_bytes
        self._lock = Lock()

    def get(self, run_id: str) -> bytes | None:
        with self._lock:
            body = self._items.get(run_id)
            if body is not None:
                self._items.move_to_end(run_id)
            return body

    def put(self, run_id: str, body: bytes) -> None:
        """Keep a completed run's encoded summary (one larger than the whole cache is not
        kept)."""
        if len(body) > self._max_bytes:
            return
        with self._lock:
            old = self._items.pop(run_id, None)
            self._bytes += len(body) - (len(old) if old is not None else 0)
            self._items[run_id] = body
            while len(self._items) > self._max_entries or self._bytes > self._max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._bytes -= len(dropped)

    def __len__(self) -> int:
        return len(self._items)
