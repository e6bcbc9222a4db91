"""One reader per run for its event streams: each committed page is read from the store and
formatted as Server-Sent Events frames once, then handed to every subscriber that asks for
it — not one query and one JSON encoding per subscriber per event.

Bounded: the newest ``MAX_FRAMES`` frames of the ``MAX_RUNS`` most recently followed runs.
A subscriber further behind reads the store itself, one page at a time, through the same
cache. Sequences are dense from 0, so "the frames after N" is a run of consecutive keys.
"""

from __future__ import annotations

import asyncio
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

from ..store import Store

MAX_FRAMES: Final = 2000
MAX_RUNS: Final = 16


@dataclass(frozen=True, slots=True)
class Frame:
    sequence: int
    type: str
    text: str


def frame_of(doc: dict[str, Any]) -> Frame:
    seq = doc["sequence"]
    return Frame(seq, doc["type"], f"id: {seq}\nevent: {doc['type']}\ndata: {json.dumps(doc)}\n\n")


@dataclass
class _Run:
    frames: dict[int, Frame] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def after(self, after: int, limit: int) -> list[Frame]:
        out: list[Frame] = []
        seq = after + 1
        while len(out) < limit and seq in self.frames:
            out.append(self.frames[seq])
            seq += 1
        return out

    def keep(self, frames: list[Frame]) -> None:
        for frame in frames:
            self.frames[frame.sequence] = frame
        if len(self.frames) > MAX_FRAMES:  # drop the oldest: late readers go to the store
            for seq in sorted(self.frames)[: len(self.frames) - MAX_FRAMES]:
                del self.frames[seq]


class Feed:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._runs: OrderedDict[str, _Run] = OrderedDict()

    async def page(self, run_id: str, after: int, limit: int) -> tuple[list[Frame], bool]:
        """The frames after sequence ``after`` (at most ``limit``), from memory when another
        subscriber has read them already; and whether they were read from the store now (so
        a short page means the reader has caught up with the log)."""
        run = self._run(run_id)
        async with run.lock:  # one reader at a time: the others find its page in memory
            frames = run.after(after, limit)
            if frames:
                return frames, False
            docs = await asyncio.to_thread(self._store.events, run_id, after, limit)
            frames = [frame_of(doc) for doc in docs]
            run.keep(frames)
            return frames, True

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _Run()
            while len(self._runs) > MAX_RUNS:
                self._runs.popitem(last=False)
        else:
            self._runs.move_to_end(run_id)
        return run
