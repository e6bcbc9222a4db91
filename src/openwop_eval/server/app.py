"""The ASGI app: routes in one place, version negotiation, the error envelope, lifecycle."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Lifespan, Message, Receive, Scope, Send

from .. import __version__
from ..core import names as n
from ..log.event_names import EVENT_LOG_SCHEMA_VERSION
from ..log.versions import LogVersionError
from ..protocol.deployments import STATES
from ..store import Store, StoreUnavailableError
from ..store.host import HostStore
from ..store.leases import Lease
from ..store.sql import in_memory
from .agents import (
    get_agent,
    list_agents,
    list_deployment_events,
    list_deployments,
    transition,
)
from .auth import KeyRing
from .catalog import Catalog
from .config import ConfigError, HostConfig
from .diff import run_diff_route
from .errors import (
    PROTOCOL_VERSION,
    ApiError,
    envelope,
    handle_api_error,
    handle_http_error,
    handle_log_version,
    handle_store_unavailable,
    handle_unexpected,
)
from .evidence import evidence_key, sealer
from .feed import Feed, FeedingStore
from .gate import Gate
from .hub import Hub
from .manager import RunManager
from .openapi import openapi
from .replicas import Replica, SqliteLock, replica_id
from .report import run_report
from .runs import cancel_run, create_run, eval_summary, get_run, list_runs
from .state import HostState, host, respond
from .stream import events, poll
from .viewer import viewer_routes
from .worker_pool import RunWorkers


def discovery_document(state: HostState) -> dict[str, Any]:
    config, catalog = state.config, state.catalog
    eval_suite: dict[str, Any] = {
        "modes": catalog.modes,
        "maxTasksPerSuite": config.limits.max_tasks_per_suite,
        "trajectory": True,
        "trials": True,
        "recordedFixtures": True,
        n.FACET_BASELINE_SELECTION: True,
    }
    doc: dict[str, Any] = {
        "protocolVersions": [PROTOCOL_VERSION],
        "preferredVersion": PROTOCOL_VERSION,
        "protocolVersion": PROTOCOL_VERSION,
        "engineVersion": 1,
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "implementation": {"name": "openwop-eval", "version": __version__},
        "agents": {
            "status": "experimental",
            "since": "2.0",
            "until": "2099-01-01",
            "witness": "witnessable-gated",
            "manifestRuntime": {"installScope": "host"},
            "evalSuite": eval_suite,
            "deployment": {
                "channels": list(config.deployment.channels),
                "canary": False,
                "rollback": True,
                "states": list(STATES),
            },
        },
        "runList": {
            "status": "stable",
            "since": "2.0",
            "witness": "witnessable-gated",
            "maxPageSize": config.limits.max_page_size,
            "filters": ["workflowId", "status"],
        },
    }
    if catalog.fixtures:
        doc["fixtures"] = list(catalog.fixtures)
    if config.signing is not None:  # no key: no signingKeys, and no signature is checkable
        doc["signingKeys"] = config.signing.published()
    return doc


async def discovery(request: Request) -> Response:
    body = discovery_document(host(request))
    tag = '"' + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32] + '"'
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers={"ETag": tag, "OpenWOP-Version": PROTOCOL_VERSION})
    return respond(200, body, {"ETag": tag})


ROUTES = [
    Route("/.well-known/openwop", discovery, methods=["GET"]),
    Route("/openapi.json", openapi, methods=["GET"]),
    Route("/runs", create_run, methods=["POST"]),
    Route("/runs", list_runs, methods=["GET"]),
    Route("/runs/{run_id}:diff", run_diff_route, methods=["GET"]),  # before /runs/{run_id}
    Route("/runs/{run_id}", get_run, methods=["GET"]),
    Route("/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
    Route("/runs/{run_id}/events", events, methods=["GET"]),
    Route("/runs/{run_id}/events/poll", poll, methods=["GET"]),
    Route("/runs/{run_id}/eval-summary", eval_summary, methods=["GET"]),
    Route("/runs/{run_id}/report", run_report, methods=["GET"]),
    Route("/agents", list_agents, methods=["GET"]),
    Route("/agents/{agent_id}", get_agent, methods=["GET"]),
    Route("/agents/{agent_id}/deployments", list_deployments, methods=["GET"]),
    Route("/agents/{agent_id}/deployments", transition, methods=["POST"]),
    Route("/agents/{agent_id}/deployments/events", list_deployment_events, methods=["GET"]),
]


class _HttpMiddleware:
    """ASGI middleware that sees HTTP requests only; lifespan and the rest pass through."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            await self.http(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise NotImplementedError


class ProtocolMiddleware(_HttpMiddleware):
    """Refuse unknown protocol majors (406) and NUL anywhere in the path, query or headers
    (400: PostgreSQL text cannot hold it, so no route may pass it on), keep projected ids
    whole, stamp the version."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw_version, nul = None, False
        for name, value in scope["headers"]:  # one pass; the last of repeats counts
            nul = nul or b"\x00" in value
            if name.lower() == b"openwop-version":
                raw_version = value
        requested = None if raw_version is None else raw_version.decode("latin-1")
        if requested is not None and requested.split(".")[0].strip() != "2":
            body = envelope(
                "protocol_version_unsupported",
                f"protocol version {requested[:40]} is not served",
                {"protocolVersions": [PROTOCOL_VERSION]},
            )
            await _refuse(406, body, scope, receive, send)
            return
        query = scope.get("query_string") or b""
        if nul or "\x00" in scope["path"] or b"\x00" in query or b"%00" in query:
            body = envelope("validation_error", "the request must not contain NUL (U+0000)")
            await _refuse(400, body, scope, receive, send)
            return
        raw = scope.get("raw_path") or b""
        if b"%2F" in raw or b"%2f" in raw:  # a front door percent-encoded the id's slash
            from urllib.parse import unquote

            path = raw.split(b"?")[0].replace(b"%2F", b"~2F").replace(b"%2f", b"~2F")
            scope = {**scope, "path": unquote(path.decode("latin-1"))}
        await self.app(scope, receive, send)


class LastResortMiddleware(_HttpMiddleware):
    """Answer anything unexpected with the content-free 500 envelope and keep the
    connection: Starlette's own last resort re-raises after answering, and the server then
    drops the keep-alive connection unannounced, resetting the client's next request on it.
    An exception after the response started still propagates: the server must cut that
    response short."""

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            response = await handle_unexpected(Request(scope), exc)
            await response(scope, receive, send)


async def _refuse(
    status: int, body: dict[str, Any], scope: Scope, receive: Receive, send: Send
) -> None:
    response = JSONResponse(body, status_code=status, headers={"OpenWOP-Version": PROTOCOL_VERSION})
    await response(scope, receive, send)


def _workers(config: HostConfig, url: str, lease: Lease) -> RunWorkers | None:
    if not config.workers:
        return None
    if in_memory(url):
        if config.run_workers is None:  # the default: runs play here, as they can
            return None
        raise ConfigError("run_workers needs a store other processes can open, not memory")
    return RunWorkers(config.workers, config, url, lease)


def create_app(
    config: HostConfig, store: Store | None = None, port: int | None = None
) -> Starlette:
    """The host as an ASGI app; eval runs play in this process, or in ``run_workers``
    worker processes (workers.py). On SQLite it is the
    store's only host (:class:`ConfigError` when another holds it); on PostgreSQL one of
    any number of replicas (replicas.py). ``port`` names the replica by default."""
    store = store or Store(config.database)
    sqlite = store.url.startswith("sqlite")
    catalog = Catalog(config)
    lock = SqliteLock(store.url) if sqlite else None
    hub = Hub()
    feed = Feed(store, hub)
    owner, ttl = replica_id(config.replicas, port), config.replicas.lease_seconds
    lease = Lease(owner, ttl, fenced=not sqlite)  # on SQLite the file lock is the fence
    workers = _workers(config, store.url, lease)
    host_store = HostStore(store)
    if lock is not None:  # the only host: no request that claimed a key is still answered
        host_store.release_unsettled()
    key = evidence_key(config, host_store)  # before the workers start: they read it too
    feeding = FeedingStore(store, feed.committed)  # a run here feeds the streams
    manager = RunManager(feeding, catalog, hub, lease, workers, sealer(config, key))
    replica = Replica(manager, lease, config.replicas, only=sqlite)
    gate = Gate(store, catalog, config, key)
    state = HostState(config, store, host_store, catalog, hub, manager, KeyRing(config), feed, gate)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await anyio.sleep(0)  # imports anyio's backend now, not in the first event stream
        if workers is not None:
            await workers.start(feed, hub)
        await replica.start()
        try:
            yield
        finally:
            await replica.stop()
            if workers is not None:
                await workers.close()
            await catalog.aclose()
            if lock is not None:
                lock.release()

    app = http_app(ROUTES, lifespan)
    app.state.host = state
    return app


def viewer_app(store: Store) -> Starlette:
    """``openwop-eval view``: the viewer's read-only pages over ``store`` on the host's HTTP
    stack, and nothing else of the host — no API routes, run workers, replica or keys."""
    return http_app(viewer_routes(store))


def http_app(routes: Sequence[BaseRoute], lifespan: Lifespan[Starlette] | None = None) -> Starlette:
    """The one HTTP stack of the host and the viewer: every refusal in the error envelope
    (no such path or method a 404), anything unexpected a content-free 500 that keeps the
    connection, NUL refused and protocol versions negotiated, no slash redirects."""
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            ApiError: handle_api_error,
            HTTPException: handle_http_error,
            StoreUnavailableError: handle_store_unavailable,
            LogVersionError: handle_log_version,
        },
    )
    app.router.redirect_slashes = False  # `/runs/` is no route: a 404, never a redirect
    app.add_middleware(ProtocolMiddleware)
    app.add_middleware(LastResortMiddleware)  # outermost of ours: a content-free 500
    return app
