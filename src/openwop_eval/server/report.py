"""``GET /runs/{runId}/report``: a run's HTML report, for its own tenant.

Not an OpenWOP route: the same page ``openwop-eval report --html`` writes, behind the
host's API keys (``runs:read``) and its tenant rule — the report shows the run's outputs and
arguments, so it is never served to another tenant.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import HTMLResponse

from ..reports.html import PAGE_HEADERS, render_report, report_data
from ..reports.model import result_report
from ..runner import RunError
from ..runner.result import RunResult
from ..runner.stored import stored_result
from .auth import require
from .errors import PROTOCOL_VERSION, not_found
from .runs import own_run
from .state import host, principal


async def run_report(request: Request) -> HTMLResponse:
    who = principal(request)
    require(who, "runs:read")
    run = await own_run(request, who)
    store = host(request).store
    try:
        result = await asyncio.to_thread(stored_result, store, run.run_id)
    except RunError:
        raise not_found("a report of this run") from None
    page = await asyncio.to_thread(_page, result)
    return HTMLResponse(page, headers={"OpenWOP-Version": PROTOCOL_VERSION, **PAGE_HEADERS})


def _page(result: RunResult) -> str:
    return render_report(report_data(result_report(result, trials=True)))
