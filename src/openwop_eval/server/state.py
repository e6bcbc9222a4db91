"""Everything a request handler reaches: configuration, store, catalog, runs, keys."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..core import canonical_json
from ..store import Store
from ..store.host import HostStore, settle_in
from ..store.sql import Within
from .auth import KeyRing, Principal
from .catalog import Catalog
from .config import HostConfig
from .errors import PROTOCOL_VERSION, ApiError
from .feed import Feed
from .gate import Gate
from .hub import Hub
from .inputs import idempotency_key, operation, parse_json
from .manager import RunManager
from .summaries import SummaryCache


@dataclass
class HostState:
    """What every handler reaches. The store (SQLAlchemy) blocks: handlers call it through
    ``asyncio.to_thread``, never on the event loop (tests/server/test_off_loop.py)."""

    config: HostConfig
    store: Store
    host_store: HostStore
    catalog: Catalog
    hub: Hub
    manager: RunManager
    keys: KeyRing
    feed: Feed
    gate: Gate
    summaries: SummaryCache = field(default_factory=SummaryCache)


def host(request: Request) -> HostState:
    state: HostState = request.app.state.host
    return state


def principal(request: Request) -> Principal:
    return host(request).keys.authenticate(request)


async def json_body(request: Request) -> Any:
    limit = host(request).config.limits.max_body_bytes
    too_large = ApiError(413, "payload_too_large", f"the body is over {limit} bytes")
    declared = request.headers.get("content-length", "")
    # str.isdigit() also takes "²", which int() refuses: ASCII digits only
    if declared.isascii() and declared.isdigit() and (len(declared) > 18 or int(declared) > limit):
        raise too_large
    raw = bytearray()
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise too_large
    if not raw.strip():
        return {}
    return parse_json(bytes(raw))


def respond(status: int, body: Any, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        body, status_code=status, headers={"OpenWOP-Version": PROTOCOL_VERSION, **(headers or {})}
    )


Settle = Callable[[int, Any], Within | None]
"""Given the answer a handler is about to give, the write that settles its idempotency key
inside the handler's own transaction (None without a key): a crash then leaves either the
effect with its answer kept for replays, or neither."""
Handler = Callable[[Settle], Awaitable[tuple[int, Any]]]


def _no_key(_status: int, _body: Any) -> None:
    return None


async def idempotent(
    request: Request, who: Principal, name: str, body: Any, handler: Handler
) -> JSONResponse:
    """Run ``handler`` once per ``Idempotency-Key``; replay its 2xx answer to repeats.

    ``body`` went through :func:`parse_json`, so its canonical JSON always exists. The
    claim, the handler and the settling run to their end even if the request is cancelled
    meanwhile (they wait for worker threads): no run is created and left unstarted, no key
    left claimed and unsettled. The handler settles the key in the transaction of its
    effect (``Settle``); the claim of a request that died with its process expires
    (store/host.py), and the only host of a store releases them all at start."""
    task = asyncio.ensure_future(_idempotent(request, who, name, body, handler))
    task.add_done_callback(lambda done: done.cancelled() or done.exception())  # retrieved
    return await asyncio.shield(task)


async def _idempotent(
    request: Request, who: Principal, name: str, body: Any, handler: Handler
) -> JSONResponse:
    key = idempotency_key(request)
    if key is None:
        status, payload = await handler(_no_key)
        return respond(status, payload)
    op = operation(name)
    store = host(request).host_store
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    claim, cached_status, cached = await asyncio.to_thread(store.claim, who.tenant, op, key, digest)
    if claim == "replay":
        return respond(cached_status or 200, cached, {"OpenWOP-Idempotent-Replay": "true"})
    if claim == "mismatch":
        raise ApiError(
            409,
            "idempotency_key_mismatch",
            "this Idempotency-Key was used with a different request",
        )
    if claim == "in-flight":
        raise ApiError(
            409,
            "idempotency_in_flight",
            "a request with this Idempotency-Key is still being processed",
        )

    def settle(status: int, body: Any) -> Within:
        return lambda tx: settle_in(tx, who.tenant, op, key, status, body)

    try:
        status, payload = await handler(settle)
    except BaseException:
        await asyncio.to_thread(store.release, who.tenant, op, key)  # a retry may pass
        raise
    await asyncio.to_thread(store.settle, who.tenant, op, key, status, payload)
    return respond(status, payload)
