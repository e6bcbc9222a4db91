"""Run routes: create an eval run, read it, list, cancel, and read its EvalSummary."""

from __future__ import annotations

import asyncio
import base64
import binascii
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..log.event_names import EVENT_LOG_SCHEMA_VERSION, workflow_id
from ..store import RunRecord
from .auth import Principal, require
from .errors import PROTOCOL_VERSION, ApiError, not_found, validation
from .ids import unproject
from .inputs import (
    MAX_CURSOR_CHARS,
    cursor_parts,
    integer,
    is_run_id,
    run_status,
    workflow_suite,
)
from .run_request import create
from .slots import LineFullError
from .state import HostState, Settle, host, idempotent, json_body, principal, respond

QUEUE_RETRY_AFTER_S = 5
"""``Retry-After`` of a run refused because the queue is full (docs/host.md#run-queue)."""


def snapshot(run: RunRecord) -> dict[str, Any]:
    body: dict[str, Any] = {
        "runId": run.run_id,
        "workflowId": workflow_id(run.suite_id),
        "status": run.status,
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "owner": run.options.get("owner") or _owner(run.tenant),
        "startedAt": run.created_at,
        "metadata": {
            "evalSuiteRef": f"{run.suite_id}@{run.suite_version}",
            "agentId": run.agent_id,
        },
    }
    if run.terminal:
        body["completedAt"] = run.updated_at
    if run.error:
        body["error"] = {"code": "run_failed", "message": run.error}
    return body


def _owner(tenant: str) -> dict[str, Any]:
    return {
        "tenant": tenant,
        "subject": {
            "issuer": "urn:openwop-eval:host",
            "subjectId": tenant,
            "tenant": tenant,
            "lane": "api-key",
            "kind": "user",
        },
    }


def path_run_id(request: Request, who: Principal) -> str:
    """The run id in the path, checked before any store sees it: another tenant's is 403."""
    run_id = unproject(request.path_params["run_id"])
    tenant, sep, _ = run_id.partition("/")
    if not sep:
        raise not_found("the run")
    if tenant != who.tenant:  # before the id's form: the same 403 whatever follows the slash
        raise ApiError(403, "id_tenant_mismatch", "the run id belongs to another tenant")
    if not is_run_id(run_id):  # the host mints no other: never send it to the store
        raise not_found("the run")
    return run_id


async def own_run(request: Request, who: Principal, current: bool = True) -> RunRecord:
    """The run named in the path, if it belongs to the caller's tenant (read off the loop).
    ``current=False``: a caller that needs only the run's identity gets the record a run
    that this host is running started with, without a query."""
    run_id = path_run_id(request, who)
    state = host(request)
    active = None if current else state.manager.active.get(run_id)
    if active is not None:
        return active.run
    run = await asyncio.to_thread(state.store.get_run, run_id, False)
    if run is None:
        raise not_found("the run")
    return run


async def create_run(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "runs:create")
    body = await json_body(request)
    state = host(request)

    async def handler(settle: Settle) -> tuple[int, Any]:
        # Checking the baseline and fixture runs and creating the run read and write the
        # store: a worker thread does it all; the run's task starts on the loop.
        slots = state.manager.slots
        try:
            admission = slots.admit()
        except LineFullError:
            raise queue_full(slots.running, slots.queued) from None
        try:
            active, answer = await asyncio.to_thread(
                create, state, who, body, settle, admission.queued
            )
        except BaseException:
            slots.settle(admission)
            raise
        state.manager.launch(active, admission)
        return 201, answer

    return await idempotent(request, who, "runs.create", body, handler)


def queue_full(running: int, queued: int) -> ApiError:
    return ApiError(
        503,
        "service_unavailable",
        "the host runs as many runs as it may and its queue is full; retry later",
        {
            "retryAfterSeconds": QUEUE_RETRY_AFTER_S,
            "maxRunningRuns": running,
            "maxQueuedRuns": queued,
        },
        {"Retry-After": str(QUEUE_RETRY_AFTER_S)},
    )


async def get_run(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "runs:read")
    return respond(200, snapshot(await own_run(request, who)))


async def list_runs(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "runs:read")
    state = host(request)
    query = request.query_params
    limit = integer(query.get("limit", "20"), "limit", 1, state.config.limits.max_page_size)
    before = _decode_cursor(query["cursor"]) if "cursor" in query else None
    status = run_status(query.get("status"))
    workflow = query.get("workflowId")
    suite_id = None if workflow is None else workflow_suite(workflow)
    if workflow is not None and suite_id is None:  # no eval run is of that workflow
        return respond(200, {"runs": []})
    runs = await asyncio.to_thread(  # filtered in the query, so a page is a page of matches
        partial(
            state.store.list_runs,
            who.tenant,
            status=status,
            suite_id=suite_id,
            limit=limit + 1,
            before=before,
        )
    )
    body: dict[str, Any] = {"runs": [snapshot(r) for r in runs[:limit]]}
    if len(runs) > limit:
        last = runs[limit - 1]
        body["nextCursor"] = base64.urlsafe_b64encode(
            f"{last.created_at}|{last.run_id}".encode()
        ).decode()
    return respond(200, body)


def _decode_cursor(cursor: str) -> tuple[str, str]:
    stamp = run_id = ""
    if len(cursor) <= MAX_CURSOR_CHARS:
        try:
            text = base64.urlsafe_b64decode(cursor.encode()).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            text = ""
        stamp, _, run_id = text.partition("|")
    if not cursor_parts(stamp, run_id):  # nothing unchecked reaches the store's query
        raise validation("the cursor was not minted by this host")
    return stamp, run_id


async def cancel_run(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "runs:cancel")
    run = await own_run(request, who)
    await json_body(request)
    if run.terminal:
        raise ApiError(
            409, "run_terminal", f"the run is already {run.status}", {"runStatus": run.status}
        )
    state = host(request)
    await state.manager.cancel(run.run_id)
    after = await asyncio.to_thread(state.store.get_run, run.run_id, False)
    status = after.status if after is not None and after.terminal else "cancelling"
    return respond(200, {"runId": run.run_id, "status": status})


async def eval_summary(request: Request) -> Response:
    who = principal(request)
    require(who, "runs:read")
    state = host(request)
    run_id = path_run_id(request, who)  # the tenant rule first, whatever is cached
    body = state.summaries.get(run_id)
    if body is None:
        body = await asyncio.to_thread(_summary_body, state, run_id)
        state.summaries.put(run_id, body)  # completed: it never changes again
    return Response(
        body, media_type="application/json", headers={"OpenWOP-Version": PROTOCOL_VERSION}
    )


def _summary_body(state: HostState, run_id: str) -> bytes:
    """A completed run's summary, encoded; read in a worker thread on a cache miss."""
    run = state.store.get_run(run_id, documents=False)
    if run is None:
        raise not_found("the run")
    if run.mode != "eval":
        raise not_found("an eval summary for this run")
    summary = state.store.summary(run.run_id) if run.status == "completed" else None
    if summary is None:
        raise ApiError(
            409,
            "run_state_conflict",
            f"the eval run is {run.status}; its summary exists once it completes",
            {"runStatus": run.status},
        )
    return JSONResponse(summary).render(summary)
