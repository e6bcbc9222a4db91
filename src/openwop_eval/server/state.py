"""Everything a request handler reaches: configuration, store, catalog, runs, keys."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..core import canonical_json
from ..store import Store
from ..store.host import HostStore
from .auth import KeyRing, Principal
from .catalog import Catalog
from .config import HostConfig
from .errors import PROTOCOL_VERSION, ApiError, validation
from .hub import Hub
from .manager import RunManager


@dataclass
class HostState:
    config: HostConfig
    store: Store
    host_store: HostStore
    catalog: Catalog
    hub: Hub
    manager: RunManager
    keys: KeyRing


def host(request: Request) -> HostState:
    state: HostState = request.app.state.host
    return state


def principal(request: Request) -> Principal:
    return host(request).keys.authenticate(request)


async def json_body(request: Request) -> Any:
    limit = host(request).config.limits.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "payload_too_large", f"the body is over {limit} bytes")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > limit:
            raise ApiError(413, "payload_too_large", f"the body is over {limit} bytes")
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise validation(f"the body is not valid JSON: {exc}") from None


def respond(status: int, body: Any, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(
        body, status_code=status, headers={"OpenWOP-Version": PROTOCOL_VERSION, **(headers or {})}
    )


Handler = Callable[[], Awaitable[tuple[int, Any]]]


async def idempotent(
    request: Request, who: Principal, operation: str, body: Any, handler: Handler
) -> JSONResponse:
    """Run ``handler`` once per ``Idempotency-Key``; replay its 2xx answer to repeats."""
    key = request.headers.get("idempotency-key")
    if not key:
        status, payload = await handler()
        return respond(status, payload)
    if len(key) > 255:
        raise validation("Idempotency-Key is longer than 255 characters")
    store = host(request).host_store
    digest = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    claim, cached_status, cached = store.claim(who.tenant, operation, key, digest)
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
    try:
        status, payload = await handler()
    except BaseException:
        store.release(who.tenant, operation, key)  # a refusal is not cached: retry may pass
        raise
    store.settle(who.tenant, operation, key, status, payload)
    return respond(status, payload)
