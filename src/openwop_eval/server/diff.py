"""The run diff route: ``GET /runs/{runId}:diff?against=OTHER`` (RFC 0054).

The path run is ``a``, the ``against`` run ``b``; both must be eval runs of the caller's
tenant. The diff itself is :func:`openwop_eval.log.rundiff.run_diff`, computed off the event
loop: it grades both logs, which is CPU work bounded by the suites.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from ..core import SuiteError
from ..files.suites import parse_suite
from ..log.rundiff import DiffSide, run_diff
from ..store import RunRecord, Store
from .auth import Principal, require
from .errors import ApiError, not_found, validation
from .ids import unproject
from .inputs import MAX_RUN_ID_CHARS, is_run_id
from .runs import own_run
from .state import host, principal, respond

MAX_AGAINST_CHARS = 3 * MAX_RUN_ID_CHARS
"""The ``against`` parameter as sent: a run id with every byte projected (``~HH``)."""


async def run_diff_route(request: Request) -> JSONResponse:
    who = principal(request)
    require(who, "runs:read")
    path_run = await own_run(request, who)
    against = await _against(request, who)
    if path_run.mode != "eval" or against.mode != "eval":
        raise not_found("an eval run to diff")
    # both logs are read, and the diff computed, in a worker thread
    return respond(200, await asyncio.to_thread(_diff, host(request).store, path_run, against))


def _diff(store: Store, path_run: RunRecord, against: RunRecord) -> dict[str, Any]:
    runs = [store.get_run(r.run_id) for r in (path_run, against)]  # now with their suites
    logs = [(run, store.events(run.run_id)) for run in runs if run is not None]
    if len(logs) != 2:
        raise not_found("the run")
    a, b = (_side(run, docs) for run, docs in logs)
    return run_diff(a, b)


async def _against(request: Request, who: Principal) -> RunRecord:
    """The ``against`` run, by the path's rules: another tenant's id is a 403 whatever
    follows its slash, an unknown one a 404; a missing or malformed one is a 400."""
    given = request.query_params.getlist("against")
    if len(given) != 1 or not given[0]:
        raise validation("against is required, once: the id of the run to diff this run with")
    if len(given[0]) > MAX_AGAINST_CHARS:
        raise validation(f"against must be at most {MAX_AGAINST_CHARS} characters")
    run_id = unproject(given[0])
    tenant, sep, _ = run_id.partition("/")
    if not sep:
        raise validation("against must be a run id (tenant/opaque)")
    if tenant != who.tenant:
        raise ApiError(403, "id_tenant_mismatch", "the against run id belongs to another tenant")
    if not is_run_id(run_id):  # the host mints no other: never send it to the store
        raise validation("against is not a run id of this host")
    run = await asyncio.to_thread(host(request).store.get_run, run_id, False)
    if run is None:
        raise not_found("the against run")
    return run


def _side(run: RunRecord, docs: list[dict[str, Any]]) -> DiffSide:
    try:
        suite = parse_suite(run.suite_doc).suite
    except SuiteError:  # the diff says so, content-free (rundiff)
        suite = None
    return DiffSide(run.run_id, run.status, suite, docs, run.agent_id)
