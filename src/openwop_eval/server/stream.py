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

from ..log.names import RUN_CANCELLED, RUN_COMPLETED, RUN_FAILED
from .auth import require
from .errors import PROTOCOL_VERSION, ApiError
from .inputs import seconds, sequence
from .runs import own_run
from .state import host, principal, respond

TERMINAL = {RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED}
KEEPALIVE_S = 15.0
RECHECK_S = 1.0
PAGE = 500


async def events(request: Request) -> StreamingResponse:
    who = principal(request)
    require(who, "runs:read")
    run = own_run(request, who)
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
    }
    return StreamingResponse(
        _frames(request, run.run_id, after), headers=headers, media_type="text/event-stream"
    )


async def _frames(request: Request, run_id: str, after: int) -> AsyncIterator[str]:
    state = host(request)
    store = state.store
    yield "retry: 1000\n\n"
    quiet_since = time.monotonic()
    while True:
        signal = state.hub.signal(run_id)
        # The run's feed reads each page once (in a worker thread, so a long replay never
        # stalls the loop) for every subscriber; a page goes out as one write.
        frames, fresh = await state.feed.page(run_id, after, PAGE)
        if frames:
            chunk, ended = [], False
            for frame in frames:
                after = frame.sequence
                chunk.append(frame.text)
                if frame.type in TERMINAL:
                    ended = True
                    break
            yield "".join(chunk)
            if ended:
                return
            quiet_since = time.monotonic()
            if fresh and len(frames) < PAGE:  # caught up: wait for the next commit
                await state.hub.wait(signal, RECHECK_S)
            else:
                await asyncio.sleep(0)  # let other streams and requests have a turn
            continue
        run = await asyncio.to_thread(store.get_run, run_id, False)
        if run is None or (
            run.terminal and not await asyncio.to_thread(store.events, run_id, after, 1)
        ):
            return  # the terminal event was already sent before the cursor
        if await request.is_disconnected():
            return
        if not await state.hub.wait(signal, RECHECK_S) and (
            time.monotonic() - quiet_since >= KEEPALIVE_S
        ):
            quiet_since = time.monotonic()
            yield ": keep-alive\n\n"


async def poll(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "runs:read")
    run = own_run(request, who)
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
    last = docs[-1]["sequence"] if docs else state.store.last_sequence(run.run_id)
    body: dict[str, Any] = {
        "runId": run.run_id,
        "events": docs,
        "lastSequence": last,
        "status": current.status,
        "isTerminal": current.terminal and len(docs) < PAGE,  # a full page may have more
    }
    return respond(200, body)
