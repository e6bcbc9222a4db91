"""The pages of ``openwop-eval view``: the reports of a store's runs in a browser.

Read-only: the run list, each run's report and the comparison of two runs — the same
templates as the files ``--html`` writes. These are routes, not an app: the host's one HTTP
stack serves them (``server.app.viewer_app``). The pages show content (outputs, arguments):
the viewer is for the store's owner, so it listens on 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from ..compare import CompareInputError, compare, comparison_dict, read_side
from ..reports.html import PAGE_HEADERS, render_comparison, render_page, render_report, report_data
from ..reports.model import result_report
from ..runner import RunError
from ..runner.stored import stored_result
from ..store import Store

MAX_LISTED = 200
"""Runs on the list page, newest first."""


def viewer_routes(store: Store) -> list[Route]:
    """``/`` the run list, ``/run?id=RUN_ID`` a run's report, ``/compare?a=…&b=…`` two
    completed runs compared."""

    async def runs(request: Request) -> Response:
        listed = await asyncio.to_thread(store.list_runs, None, limit=MAX_LISTED)
        return _page(render_page("runs.html.j2", runs=listed, store=store.url))

    async def run(request: Request) -> Response:
        run_id = request.query_params.get("id", "")
        try:
            page = await asyncio.to_thread(_report, store, run_id)
        except RunError as exc:
            return _page(render_page("error.html.j2", message=str(exc)), 404)
        return _page(page)

    async def compared(request: Request) -> Response:
        a, b = request.query_params.get("a", ""), request.query_params.get("b", "")
        try:
            page = await asyncio.to_thread(_comparison, store, a, b)
        except (RunError, CompareInputError) as exc:
            return _page(render_page("error.html.j2", message=str(exc)), 400)
        return _page(page)

    return [
        Route("/", runs, methods=["GET"]),
        Route("/run", run, methods=["GET"]),
        Route("/compare", compared, methods=["GET"]),
    ]


def _report(store: Store, run_id: str) -> str:
    result = stored_result(store, run_id)
    return render_report(report_data(result_report(result, trials=True)))


def _comparison(store: Store, a: str, b: str) -> str:
    sides = []
    for run_id in (a, b):
        found = store.get_run(run_id) if run_id else None
        if found is None or found.summary is None:
            raise RunError(f"no completed run {run_id!r} in the store")
        sides.append(read_side(found.summary, run_id))
    return render_comparison(comparison_dict(compare(sides[0], sides[1])))


def _page(body: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status, headers=PAGE_HEADERS)
