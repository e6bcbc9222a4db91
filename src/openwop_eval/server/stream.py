"""Live events: Server-Sent Events (resumable with ``Last-Event-ID``) and long polling.

A stream replays the log after the cursor, then waits for commits (woken by the hub, with a
once-a-second look at the store so another process's writes are seen too), sends a comment
every 15 s so proxies and the client's 30 s read timeout never cut an idle stream, and closes
right after the run's terminal event.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse

from .auth import require
from .errors import PROTOCOL_VERSION, ApiError
from .feed import Page
from .inputs import seconds, sequence
from .runs import own_run
from .sse_gzip import GzipStream, accepts_gzip, pack
from .state import HostState, host, principal, respond

KEEPALIVE_S = 15.0
RECHECK_S = 1.0
PAGE = 500
STREAM_PAGE = 2000
"""Frames per write of an event stream (a poll answers PAGE events at most)."""
SETTLE_S = 30.0


async def events(request: Request) -> StreamingResponse:
    who = principal(request)
    require(who, "runs:read")
    run = await own_run(request, who, current=False)  # a live run's stream: no query
    mode = request.query_params.get("streamMode", "updates")
    if any(m not in ("updates", "values") for m in mode.split(",")):
        raise ApiError(
            400,
            "unsupported_stream_mode",
            f"stream mode {mode[:100]!r} is not served",
            {"supported": ["updates"]},
        )
    # checked before the response starts: a failure inside the stream could only cut it
    after = sequence(request.headers.get("last-event-id"), "Last-Event-ID")
    headers = {
        "OpenWOP-Version": PROTOCOL_VERSION,
        "Cache-Control": "no-cache",
        "X-Accel-Buffering": "no",
        "Vary": "Accept-Encoding",
    }
    frames = _frames(request, run.run_id, after)
    if accepts_gzip(request.headers.get("accept-encoding")):
        headers["Content-Encoding"] = "gzip"
        body = _gzip(frames)
    else:
        body = _identity(frames)
    return StreamingResponse(body, headers=headers, media_type="text/event-stream")


async def _identity(frames: AsyncIterator[Page | bytes]) -> AsyncIterator[bytes]:
    async for part in frames:
        yield part.chunk if isinstance(part, Page) else part


RETRY = b"retry: 1000\n\n"
KEEPALIVE = b": keep-alive\n\n"
_PACKED = {RETRY: pack(RETRY), KEEPALIVE: pack(KEEPALIVE)}


async def _gzip(frames: AsyncIterator[Page | bytes]) -> AsyncIterator[bytes]:
    """The stream as one gzip member; each write decodes at once (sse_gzip.py)."""
    stream = GzipStream()
    async for part in frames:
        yield stream.send(await part.packed() if isinstance(part, Page) else _PACKED[part])
    yield stream.end()


async def _frames(request: Request, run_id: str, after: int) -> AsyncIterator[Page | bytes]:
    state = host(request)
    store = state.store
    yield RETRY
    quiet_since = time.monotonic()
    recheck, idle = True, True  # idle: the last round sent nothing
    while True:
        signal = state.hub.signal(run_id)
        # The run's feed reads each page once (in a worker thread, so a long replay never
        # stalls the loop) for every subscriber; a page goes out as one write.
        page = await state.feed.page(run_id, after, STREAM_PAGE, recheck)
        recheck = False
        if page is not None:
            after = page.last
            if page.ended:
                await _settled(state, run_id)
                yield page
                return
            yield page
            quiet_since, idle = time.monotonic(), False
            if page.count == STREAM_PAGE:
                await asyncio.sleep(0)  # more may follow: let other streams have a turn
            elif not await state.hub.wait(signal, RECHECK_S):
                # A short page is all there was when the signal was taken: what follows
                # comes with its firing (paced, hub.py), as one page, not commit by commit.
                recheck = True
            continue
        # A round with nothing new: has the run ended before the cursor? (Not while this
        # host runs it: its terminal event is still to come, or its end wakes us again.)
        if idle and run_id not in state.manager.active:
            run = await asyncio.to_thread(store.get_run, run_id, False)
            if run is None or (
                run.terminal and not await asyncio.to_thread(store.event_rows, run_id, after, 1)
            ):
                return  # the terminal event was already sent before the cursor
        if idle and await request.is_disconnected():
            return
        idle = True
        if not await state.hub.wait(signal, RECHECK_S):
            recheck = True  # another process may have committed: the next round reads
            if time.monotonic() - quiet_since >= KEEPALIVE_S:
                quiet_since = time.monotonic()
                yield KEEPALIVE


async def _settled(state: HostState, run_id: str) -> None:
    """Wait until a run this host runs has stored its end (status, summary), which it does
    just after committing its terminal event: a client that has seen that event may read
    its summary at once."""
    task = state.manager.tasks.get(run_id)
    if task is not None:
        await asyncio.wait([task], timeout=SETTLE_S)


async def poll(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "runs:read")
    run = await own_run(request, who, current=False)  # its state is read in the loop below
    state = host(request)
    after = sequence(request.query_params.get("afterSequence"), "afterSequence")
    timeout = seconds(request.query_params.get("timeout", "30"), "timeout", 0, 60)
    deadline = time.monotonic() + min(timeout, state.config.limits.max_poll_wait_s)
    while True:
        signal = state.hub.signal(run.run_id)
        # The state is read before the events: a run is marked terminal only after its last
        # event is committed, so a terminal state means this read sees the whole log.
        current = await asyncio.to_thread(state.store.get_run, run.run_id, False) or run
        docs = await asyncio.to_thread(state.store.events, run.run_id, after, PAGE)
        remaining = deadline - time.monotonic()
        if docs or current.terminal or remaining <= 0:
            break
        await state.hub.wait(signal, min(remaining, RECHECK_S))
    if docs:
        last = docs[-1]["sequence"]
    else:
        last = await asyncio.to_thread(state.store.last_sequence, run.run_id)
    body: dict[str, Any] = {
        "runId": run.run_id,
        "events": docs,
        "lastSequence": last,
        "status": current.status,
        "isTerminal": current.terminal and len(docs) < PAGE,  # a full page may have more
    }
    return respond(200, body)
