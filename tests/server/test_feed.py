"""The event streams' feed and hub, alone: what is read from the store, what is served from
memory, that commits handed over by the runs are served without reading them back, and that
the hub's paced, thread-safe wake-ups never lose a commit. No timing is asserted: every
wait is bounded and its outcome, not its length, is checked."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from openwop_eval.server import feed as feed_module
from openwop_eval.server import hub as hub_module
from openwop_eval.server.feed import Feed, FeedingStore, frame_of, frames_of
from openwop_eval.server.hub import Hub
from openwop_eval.store import EventRow, Store

RUN = "acme/0123456789abcdef"


def row(seq: int, kind: str = "agent.tool-called", text: str | None = None) -> EventRow:
    doc = {"sequence": seq, "eventId": f"ev-{seq}", "type": kind}
    return EventRow(seq, f"ev-{seq}", kind, text or json.dumps(doc, separators=(",", ":")))


class FakeStore:
    """A log in memory that counts its reads."""

    def __init__(self, rows: list[EventRow]) -> None:
        self.rows, self.reads = rows, 0

    def event_rows(self, run_id: str, after: int = -1, limit: int | None = None) -> list[Any]:
        self.reads += 1
        newer = [r for r in self.rows if r.sequence > after]
        return newer[:limit] if limit is not None else newer

    def append(self, run_id: str, docs: Any, trials: Any = (), within: Any = None) -> None:
        self.rows.extend(docs)


def feed_of(rows: list[EventRow]) -> tuple[Feed, FakeStore, Hub]:
    store, hub = FakeStore(rows), Hub()
    return Feed(store, hub), store, hub  # type: ignore[arg-type]


def ids(chunk: bytes) -> list[int]:
    return [int(line[4:]) for line in chunk.split(b"\n") if line.startswith(b"id: ")]


def test_a_frame_is_the_stored_text_and_a_line_break_is_re_encoded() -> None:
    assert frame_of(row(3)) == b'id: 3\nevent: agent.tool-called\ndata: {"sequence":3,' + (
        b'"eventId":"ev-3","type":"agent.tool-called"}\n\n'
    )
    assert frame_of(row(4, text='{\n "sequence": 4}')).endswith(b'data: {"sequence":4}\n\n')
    frames = frames_of([row(5), row(6, "run.completed")])
    assert frames is not None
    assert (frames.first, frames.end) == (5, 6)
    assert frames_of([row(5), row(7)]) is None  # not consecutive: never kept


def test_subscribers_share_one_read_and_stop_at_the_terminal_event() -> None:
    async def scenario() -> None:
        feed, store, hub = feed_of([row(0), row(1), row(2, "run.completed"), row(3)])
        hub.signal(RUN)
        pages = [await feed.page(RUN, -1, 10, recheck=False) for _ in range(5)]
        assert store.reads == 1
        assert all(p is pages[0] for p in pages)  # one bytes object for every subscriber
        assert pages[0] is not None
        assert ids(pages[0].chunk) == [0, 1, 2]
        assert pages[0].ended

    asyncio.run(scenario())


def test_at_the_end_of_the_log_no_query_until_a_commit_or_a_recheck(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed_module, "REREAD_S", 0.0)  # a recheck always reads

    async def scenario() -> None:
        feed, store, hub = feed_of([row(0), row(1)])
        hub.signal(RUN)
        first = await feed.page(RUN, -1, 10, recheck=False)
        assert first is not None
        assert first.last == 1
        assert await feed.page(RUN, 1, 10, recheck=False) is None
        assert store.reads == 1  # at the end: the signal has not fired since the read
        store.rows.append(row(2))
        hub.notify(RUN)  # quiet until now: fires at once
        assert await feed.page(RUN, 1, 10, recheck=False) is not None
        assert store.reads == 2
        assert await feed.page(RUN, 2, 10, recheck=True) is None  # read again, found nothing
        assert store.reads == 3

    asyncio.run(scenario())


def test_committed_events_are_served_without_reading_them_back() -> None:
    async def scenario() -> None:
        feed, store, hub = feed_of([row(0), row(1)])
        writer = FeedingStore(store, feed.committed)  # type: ignore[arg-type]
        hub.signal(RUN)
        assert (await feed.page(RUN, -1, 10, recheck=False)) is not None  # follows the run
        await asyncio.to_thread(writer.append, RUN, [row(1), row(2), row(3)])  # overlaps
        await asyncio.sleep(0)  # the hand-over runs on the loop
        page = await feed.page(RUN, 1, 10, recheck=False)
        assert page is not None
        assert ids(page.chunk) == [2, 3]
        assert await feed.page(RUN, 3, 10, recheck=True) is None  # fed: the tail is the end
        assert store.reads == 1
        assert writer.rows is store.rows  # everything else is the wrapped store's

    asyncio.run(scenario())


def test_a_subscriber_behind_the_window_reads_the_store_page_by_page(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feed_module, "MAX_FRAMES", 4)  # the window ends up holding 6..9
    monkeypatch.setattr(feed_module, "MAX_PAGES", 1)

    async def scenario() -> None:
        feed, store, hub = feed_of([row(n) for n in range(10)])
        hub.signal(RUN)
        for reads in (4, 6):  # a reader, then a late one: pages behind the window are read
            seen: list[int] = []
            after = -1
            while (page := await feed.page(RUN, after, 3, recheck=False)) is not None:
                seen += ids(page.chunk)
                after = page.last
            assert seen == list(range(10))
            assert store.reads == reads  # the end is known: no read finds it again

    asyncio.run(scenario())


def test_commits_within_the_pace_wait_for_one_firing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_module, "PACE_S", 3600.0)

    async def scenario() -> None:
        hub = Hub()
        first = hub.signal(RUN)
        hub.notify(RUN)
        assert first.is_set()  # after a quiet spell: at once
        second = hub.signal(RUN)
        for _ in range(3):
            hub.notify(RUN)
        assert not second.is_set()  # within the pace: one firing, scheduled, for all three

    asyncio.run(scenario())


def test_a_paced_commit_still_fires(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hub_module, "PACE_S", 0.01)

    async def scenario() -> None:
        hub = Hub()
        signals = []
        for _ in range(5):  # back to back: each but the first is paced
            signals.append(hub.signal(RUN))
            hub.notify(RUN)
        assert all([await hub.wait(signal, 30) for signal in signals])

    asyncio.run(scenario())


def test_a_commit_in_another_thread_wakes_the_loop() -> None:
    async def scenario() -> None:
        hub = Hub()
        signal = hub.signal(RUN)
        await asyncio.to_thread(hub.notify, RUN)
        assert await hub.wait(signal, 30)
        assert not await hub.wait(hub.signal("acme/other-run-000000"), 0)

    asyncio.run(scenario())


def test_the_feeding_store_is_a_store() -> None:
    assert issubclass(FeedingStore, Store)


def test_the_window_stops_at_the_terminal_event_and_a_log_with_holes_is_sent_as_it_is() -> None:
    async def scenario() -> None:
        feed, _, hub = feed_of([row(0), row(1, "run.completed")])
        hub.signal(RUN)
        first = await feed.page(RUN, -1, 10, recheck=False)
        assert first is not None
        assert (ids(first.chunk), first.ended) == ([0, 1], True)
        assert await feed.page(RUN, 1, 10, recheck=False) is None  # nothing after the end
        holes, _, _ = feed_of([row(0), row(2), row(3, "run.failed")])
        page = await holes.page(RUN, -1, 10, recheck=False)
        assert page is not None
        assert (ids(page.chunk), page.last, page.ended) == ([0, 2, 3], 3, True)

    asyncio.run(scenario())
