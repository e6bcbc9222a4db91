"""One reader per run for its event streams: each committed page is read from the store and
formatted as Server-Sent Events once, then handed to every subscriber that asks for it — not
one query, one encoding and one write's worth of copying per subscriber per event.

The store keeps each event's JSON text as it was written, so a frame is that text with its
``id:`` and ``event:`` lines, encoded once; consecutive frames are joined into one ``bytes``
page, and subscribers at the same cursor share that page object (the common case: every
live subscriber is at the log's end, woken by the same commit).

The host's runs write through :class:`FeedingStore`: each committed page of a followed run
is handed to the feed on the loop and formatted there, before the commit's wake-up, so
live subscribers find it in memory and the store is not read back. A subscriber at the end
of the log costs no query until the run commits again: the feed
remembers the hub's signal (hub.py) in force when it last saw the end of the log, and while
that signal has not fired nothing new is there. ``recheck`` (after a quiet second) reads
anyway, for what another process committed.

Bounded: the newest ``MAX_FRAMES`` frames and ``MAX_PAGES`` joined pages of the
``MAX_RUNS`` most recently followed runs. A subscriber further behind reads the store one
page at a time, through the same page cache. Sequences are dense from 0, so "the frames
after N" is a slice of the window.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NamedTuple

import orjson

from ..log.event_names import RUN_CANCELLED, RUN_COMPLETED, RUN_FAILED
from ..store import EventRow, Store
from ..store.sql import Within
from .hub import Hub
from .sse_gzip import Packed, pack

MAX_FRAMES: Final = 4000
MAX_PAGES: Final = 8
MAX_RUNS: Final = 16
PACK_INLINE: Final = 64 * 1024
"""A page smaller than this is compressed on the loop: a thread hop would cost more."""
REREAD_S: Final = 0.5
"""A recheck reads the store only if no read of this run started in the last half second."""
TERMINAL: Final = frozenset({RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED})


class Frames(NamedTuple):
    """Consecutive events from sequence ``first``, each an encoded frame; ``end`` is the
    sequence of the run's terminal event when they hold it."""

    first: int
    datas: list[bytes]
    end: int | None


@dataclass(slots=True, eq=False)
class Page:
    """Consecutive frames after sequence ``after``, as one write; it stops at the run's
    terminal event (``ended``). Its gzip segment is made when a gzip stream first sends
    it, and then shared like the text (sse_gzip.py)."""

    after: int
    last: int
    count: int
    ended: bool
    chunk: bytes
    _packed: Packed | None = None
    _packing: asyncio.Future[Packed] | None = None

    async def packed(self) -> Packed:
        """The gzip segment, made once: a large page in a worker thread (zlib releases the
        GIL, so it compresses beside the loop and the run), which every stream waiting for
        it shares; a stream that leaves meanwhile does not cancel it for the others."""
        if self._packed is None:
            if len(self.chunk) < PACK_INLINE:
                self._packed = pack(self.chunk)
            else:
                if self._packing is None:
                    self._packing = asyncio.ensure_future(asyncio.to_thread(pack, self.chunk))
                self._packed = await asyncio.shield(self._packing)
        return self._packed


def frame_of(row: EventRow) -> bytes:
    text = row.text
    if "\n" in text or "\r" in text:  # a line break would end the data line: re-encode
        text = orjson.dumps(orjson.loads(text)).decode()
    return f"id: {row.sequence}\nevent: {row.type}\ndata: {text}\n\n".encode()


def frames_of(rows: Sequence[EventRow]) -> Frames | None:
    """The rows' frames, or None unless their sequences are consecutive (as a run's are)."""
    if not rows or rows[-1].sequence - rows[0].sequence != len(rows) - 1:
        return None
    end = next((r.sequence for r in rows if r.type in TERMINAL), None)
    return Frames(rows[0].sequence, [frame_of(r) for r in rows], end)


@dataclass
class _Run:
    # The window: the frames of sequences first..first+len-1, in a list, so a page is a
    # slice and one join (no lookup per frame).
    first: int = 0
    datas: list[bytes] = field(default_factory=list)
    terminal: int | None = None  # the terminal event's sequence, once in the window
    pages: OrderedDict[int, Page] = field(default_factory=OrderedDict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    end: int | None = None  # no event after this sequence while ``seen`` has not fired
    seen: asyncio.Event | None = None
    fed: bool = False  # the run's commits reach the feed (FeedingStore)
    read_at: float = float("-inf")

    @property
    def tail(self) -> int:
        return self.first + len(self.datas) - 1

    def page(self, after: int, limit: int) -> Page | None:
        """The page after ``after`` from memory, if memory holds its first frame."""
        cached = self.pages.get(after)
        if cached is not None:  # a page is never wrong, only maybe short: the rest follows
            self.pages.move_to_end(after)
            return cached
        i = after + 1 - self.first
        if not 0 <= i < len(self.datas):
            return None
        j = min(len(self.datas), i + limit)
        if self.terminal is not None:
            j = min(j, self.terminal + 1 - self.first)
        if j <= i:
            return None  # nothing after the terminal event
        last = self.first + j - 1
        return self.join(after, self.datas[i:j], last, last == self.terminal)

    def join(self, after: int, datas: list[bytes], last: int, ended: bool) -> Page:
        page = Page(after, last, len(datas), ended, b"".join(datas))
        self.pages[after] = page
        self.pages.move_to_end(after)
        while len(self.pages) > MAX_PAGES:
            self.pages.popitem(last=False)
        return page

    def keep(self, frames: Frames) -> None:
        """Add frames read from the store, or committed, to the window when they extend it
        (frames behind the window are served as a page only)."""
        tail, last = self.tail, frames.first + len(frames.datas) - 1
        if last <= tail:
            return
        if frames.first > tail + 1 or not self.datas:  # a gap: start afresh
            self.first, self.datas, self.terminal = frames.first, list(frames.datas), None
        else:
            self.datas += frames.datas[tail + 1 - frames.first :]
        if frames.end is not None and frames.end > tail:
            self.terminal = frames.end
        excess = len(self.datas) - MAX_FRAMES
        if excess > 0:  # drop the oldest: late readers go to the store
            del self.datas[:excess]
            self.first += excess

    def at_end(self, after: int, signal: asyncio.Event | None) -> bool:
        """Nothing after ``after`` is committed that the feed could know of: it is fed every
        commit before the commit's wake-up (then its tail is the log's end), or it read the
        store to its end under a signal that has not fired since."""
        if self.fed:
            return after >= self.tail
        return (
            self.end is not None
            and after >= self.end
            and signal is not None
            and signal is self.seen
            and not signal.is_set()
        )

    def read_to(self, last: int, seen: asyncio.Event) -> None:
        """A read taken under ``seen`` found nothing after ``last``."""
        if seen is self.seen and self.end is not None:
            self.end = min(self.end, last)
        else:
            self.end, self.seen = last, seen


class Feed:
    def __init__(self, store: Store, hub: Hub) -> None:
        self._store, self._hub = store, hub
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self.on_follow: Callable[[str], object] | None = None
        """Told of each run the feed starts to follow (a run worker then sends its frames)."""

    def follows(self, run_id: str) -> bool:
        return run_id in self._runs

    def committed(self, run_id: str, docs: Sequence[object]) -> None:
        """A commit of the run's events (rows as the store wrote them), from any thread:
        handed to the loop as they are, and formatted there — the committing thread is a
        run's critical path, the loop has time (the commit's list is never changed)."""
        if run_id in self._runs:  # else followed by nobody: nothing to do
            self._hub.call(self._offer, run_id, docs)

    def _offer(self, run_id: str, docs: Sequence[object]) -> None:
        if run_id not in self._runs:
            return
        rows = [d for d in docs if isinstance(d, EventRow)]
        frames = frames_of(rows) if len(rows) == len(docs) else None  # documents: unencoded
        if frames is not None:
            self.offer(run_id, frames)

    def offer(self, run_id: str, frames: Frames) -> None:
        """A commit's frames, on the loop, before its wake-up: from a run here (above) or
        from a run worker (workers.py), which formats them itself."""
        run = self._runs.get(run_id)
        if run is not None:
            run.keep(frames)
            run.fed = True  # every later commit comes here too, before its wake-up

    async def page(self, run_id: str, after: int, limit: int, recheck: bool) -> Page | None:
        """The frames after sequence ``after`` (at most ``limit``), from memory when another
        subscriber has read them already; None when there are none yet."""
        run = self._run(run_id)
        page = run.page(after, limit)
        if page is not None:
            return page
        async with run.lock:  # one reader at a time: the others find its page in memory
            page = run.page(after, limit)
            if page is not None:
                return page
            if run.at_end(after, self._hub.current(run_id)) and (
                not recheck or time.monotonic() - run.read_at < REREAD_S
            ):
                return None
            seen = self._hub.signal(run_id)  # before the read: a commit during it re-arms
            run.read_at = time.monotonic()
            rows = await asyncio.to_thread(self._store.event_rows, run_id, after, limit)
            if len(rows) < limit:
                run.read_to(rows[-1].sequence if rows else after, seen)
            frames = frames_of(rows)
            if frames is None:  # none, or a log with holes: sent as it is, not kept
                if not rows:
                    return None
                cut = next((i for i, r in enumerate(rows) if r.type in TERMINAL), len(rows) - 1)
                datas = [frame_of(r) for r in rows[: cut + 1]]
                return run.join(after, datas, rows[cut].sequence, rows[cut].type in TERMINAL)
            run.keep(frames)
            n = len(rows) if frames.end is None else frames.end + 1 - frames.first
            ended = frames.end is not None  # cut at the terminal event
            return run.join(after, frames.datas[:n], rows[n - 1].sequence, ended)

    def _run(self, run_id: str) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            run = self._runs[run_id] = _Run()
            while len(self._runs) > MAX_RUNS:
                self._runs.popitem(last=False)
            if self.on_follow is not None:
                self.on_follow(run_id)
        else:
            self._runs.move_to_end(run_id)
        return run


class FeedingStore(Store):
    """The store as the host's runs see it: the same store (every attribute is the
    wrapped one's), whose ``append`` also hands the committed events to ``tap`` — the
    feed's :meth:`Feed.committed` here, a run worker's sender there (worker.py)."""

    def __init__(  # no second engine: delegates
        self, store: Store, tap: Callable[[str, Sequence[dict[str, Any] | EventRow]], None]
    ) -> None:
        self._wrapped, self._tap = store, tap

    def __getattr__(self, name: str) -> Any:
        return getattr(self._wrapped, name)

    def append(
        self,
        run_id: str,
        docs: Sequence[dict[str, Any] | EventRow],
        trials: Sequence[tuple[str, int, str, dict[str, Any] | str]] = (),
        within: Within | None = None,
    ) -> None:
        self._wrapped.append(run_id, docs, trials, within)
        self._tap(run_id, docs)
