"""Run routes: create an eval run, read it, list, cancel, and read its EvalSummary."""

from __future__ import annotations

import asyncio
import base64
import binascii
from functools import partial
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..core.plan import Baseline, RunTerms
from ..core.suite import Mode
from ..log.names import EVENT_LOG_SCHEMA_VERSION, workflow_id
from ..runner import ActiveRun, Recording, RunError, merge_recordings
from ..runner.baseline import UNUSABLE, BaselineError, baseline_run, newest_baseline
from ..store import RunRecord
from .auth import Principal, require
from .catalog import Catalog
from .errors import PROTOCOL_VERSION, ApiError, not_found, validation
from .ids import project, unproject
from .inputs import (
    MAX_AGENT_ID_CHARS,
    MAX_CURSOR_CHARS,
    MAX_SUITE_REF_CHARS,
    cursor_parts,
    integer,
    is_run_id,
    is_text,
    run_status,
    workflow_suite,
)
from .slots import LineFullError
from .state import HostState, Settle, host, idempotent, json_body, principal, respond

QUEUE_RETRY_AFTER_S = 5
"""``Retry-After`` of a run refused because the queue is full (docs/host.md#run-queue)."""

CREATE_KEYS = {
    "mode",
    "evalSuiteRef",
    "agentId",
    "evalModes",
    "baselineRunId",
    "fixtureRuns",
    "configurable",
    "tags",
    "metadata",
    "inputs",
    "tenantId",
    "scopeId",
    "residency",
    "callbackUrl",
    "workflowId",
}


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
                _create, state, who, body, settle, admission.queued
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


def _create(
    state: HostState, who: Principal, body: Any, settle: Settle, queued: bool = False
) -> tuple[ActiveRun, dict[str, Any]]:
    if not isinstance(body, dict):
        raise validation("the body must be a JSON object")
    problems = [f"unknown key {k!r}" for k in body if k not in CREATE_KEYS]
    if body.get("mode") != "eval":
        problems.append('this host runs eval runs only: mode must be "eval"')
    ref, agent_id = body.get("evalSuiteRef"), body.get("agentId")
    if not isinstance(ref, str) or not ref:
        problems.append("evalSuiteRef is required (suiteId@version)")
    elif not is_text(ref, MAX_SUITE_REF_CHARS):
        problems.append(f"evalSuiteRef must be at most {MAX_SUITE_REF_CHARS} printable characters")
    if not isinstance(agent_id, str) or not agent_id:
        problems.append("agentId is required")
    elif not is_text(agent_id, MAX_AGENT_ID_CHARS):
        problems.append(f"agentId must be at most {MAX_AGENT_ID_CHARS} printable characters")
    if "baselineRunId" in body and not isinstance(body["baselineRunId"], str):
        problems.append("baselineRunId must be a run id")
    if body.get("tenantId", who.tenant) != who.tenant:
        raise ApiError(403, "id_tenant_mismatch", "tenantId is not the caller's tenant")
    if problems:
        raise validation("the run request is invalid", {"problems": problems})
    suite = state.catalog.suite(str(ref))
    agent = state.catalog.agents.get(str(agent_id))
    if suite is None:
        raise validation(
            f"no suite {ref!r} on this host",
            {"suites": sorted(s.ref for s in state.catalog.suites.values())},
        )
    if agent is None:
        raise validation(f"agent {agent_id!r} is not configured on this host")
    modes = _check_suite(state.catalog, suite.loaded.suite, str(agent_id), body)
    recording = _fixture_runs(state, who, body.get("fixtureRuns"), suite.loaded.suite)
    terms = RunTerms(
        modes=modes,
        fail_on_severity=state.config.adversarial.fail_on_severity,
        baseline=_baseline(state, who, body.get("baselineRunId"), suite.loaded.suite, modes),
    )
    extra = {
        "owner": who.owner(),
        **({"fixtureRuns": body["fixtureRuns"]} if "fixtureRuns" in body else {}),
    }
    manager = state.manager
    status = "pending" if queued else "running"  # a queued run waits for a slot
    try:
        active = manager.prepare(
            who.tenant,
            who.owner(),
            suite,
            agent,
            extra,
            recording,
            terms,
            lambda run_id: settle(201, _created(run_id, status)),  # kept with the run, or neither
            queued,
        )
    except RunError as exc:  # what the runner needs beyond the checks above
        raise validation(f"the run cannot start: {exc}") from None
    return active, _created(active.run_id, status)


def _created(run_id: str, status: str) -> dict[str, Any]:
    """The answer to the ``POST /runs`` that created ``run_id``."""
    path = f"/runs/{project(run_id)}"
    return {
        "runId": run_id,
        "status": status,
        "eventsUrl": f"{path}/events",
        "statusUrl": path,
    }


def _check_suite(
    catalog: Catalog, suite: Any, agent_id: str, body: dict[str, Any]
) -> tuple[Mode, ...]:
    """Check the suite against the request and the host; returns the modes in effect."""
    limit = catalog.config.limits.max_tasks_per_suite
    if len(suite.tasks) > limit:
        raise validation(f"the suite has {len(suite.tasks)} tasks; this host runs at most {limit}")
    if suite.target_agent_id is not None and suite.target_agent_id != agent_id:
        raise validation(f"the suite targets agent {suite.target_agent_id}, not {agent_id}")
    modes = body.get("evalModes")
    if modes is not None:
        if not isinstance(modes, list) or not modes or not all(isinstance(m, str) for m in modes):
            raise validation("evalModes must be a non-empty list of modes")
        bad = [m for m in modes if m not in suite.modes or m not in catalog.modes]
        if bad:
            raise validation(
                f"modes {bad} are not declared by the suite or not run here",
                {"suiteModes": list(suite.modes), "hostModes": catalog.modes},
            )
        return tuple(dict.fromkeys(modes))
    return tuple(suite.modes)


def _baseline(
    state: HostState, who: Principal, run_id: str | None, suite: Any, modes: tuple[Mode, ...]
) -> Baseline | None:
    """The baseline of a regression run: the one named, or the newest usable one."""
    if "regression" not in modes:
        if run_id is not None:
            raise validation('baselineRunId needs "regression" among the modes in effect')
        return None
    store = state.store
    if run_id is None:
        return newest_baseline(store, suite, who.tenant)
    try:
        if not is_run_id(run_id):  # an id the host never minted names no run
            raise BaselineError(run_id)
        return baseline_run(store, suite, who.tenant, run_id)
    except BaselineError:
        raise validation(f"baselineRunId {UNUSABLE}") from None  # the same for every reason


def _fixture_runs(state: HostState, who: Principal, value: Any, suite: Any) -> Recording | None:
    if value is None:
        return None
    task_ids = {t.task_id for t in suite.tasks}
    refused = validation(
        "fixtureRuns must map task ids of the suite to completed eval runs of"
        " the same suite in your tenant"
    )
    if not isinstance(value, dict) or not value:
        raise refused
    store = state.store
    docs_by_run: dict[str, list[dict[str, Any]]] = {}
    for task_id, run_id in value.items():
        # the task id first: a body of bogus entries costs no query each
        known = task_id in task_ids and is_run_id(run_id)
        run = store.get_run(run_id) if known else None
        if (
            task_id not in task_ids
            or run is None
            or run.tenant != who.tenant
            or run.status != "completed"
            or run.suite_id != suite.suite_id
        ):
            raise refused  # the same answer whatever the reason
        docs_by_run.setdefault(run_id, store.events(run_id))
    return merge_recordings((docs_by_run[run_id], [task]) for task, run_id in value.items())


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
