"""Test doubles of OpenWOP hosts: each serves the conformance fixtures' real event logs and
summaries (produced by our runner), bent by one defect, over real HTTP on loopback."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from openwop_eval.conformance.harness import SUITE_REFS, fixture_suite
from openwop_eval.runner.api import run_suite_async
from openwop_eval.store import Store

Mutation = Callable[[str, list[dict[str, Any]], dict[str, Any]], None]
AGENT = Path(__file__).parent.parent.parent / (
    "src/openwop_eval/conformance/fixtures/conformance-mock-agent.json"
)


def recorded_runs(tmp: Path) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """The real log and summary of each fixture, as our runner produces them."""
    store = Store(f"sqlite:///{tmp / 'doubles.sqlite'}")
    runs = {}
    for fixture in SUITE_REFS:
        result = asyncio.run(
            run_suite_async(fixture_suite(fixture), f"scripted:{AGENT}", store=store)
        )
        runs[fixture] = (store.events(result.run_id), result.summary)
    return runs


def double_app(
    runs: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]],
    mutate: Mutation | None = None,
    eval_suite: bool = True,
) -> Starlette:
    by_ref = {ref: fixture for fixture, ref in SUITE_REFS.items()}
    served: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {}
    for fixture, (events, summary) in runs.items():
        events, summary = copy.deepcopy(events), copy.deepcopy(summary)
        if mutate is not None:
            mutate(fixture, events, summary)
        served[fixture] = (events, summary)

    async def discovery(request: Request) -> JSONResponse:
        agents: dict[str, Any] = {
            "status": "experimental",
            "since": "2.0",
            "until": "2099-01-01",
            "witness": "witnessable-gated",
        }
        if eval_suite:
            agents["evalSuite"] = {"modes": ["golden"], "trajectory": True, "trials": True}
        return JSONResponse(
            {
                "protocolVersions": ["2.0"],
                "preferredVersion": "2.0",
                "agents": agents,
                "fixtures": list(SUITE_REFS),
            }
        )

    async def create(request: Request) -> JSONResponse:
        fixture = by_ref[(await request.json())["evalSuiteRef"]]
        return JSONResponse(
            {"runId": f"t/{fixture}-0000000000", "status": "running", "eventsUrl": "/x"},
            status_code=201,
        )

    def fixture_of(request: Request) -> str:
        return request.path_params["run_id"].removeprefix("t~2F").removesuffix("-0000000000")

    async def poll(request: Request) -> JSONResponse:
        events, _ = served[fixture_of(request)]
        return JSONResponse(
            {
                "runId": "t/x",
                "events": events,
                "isTerminal": True,
                "lastSequence": events[-1]["sequence"],
                "status": "completed",
            }
        )

    async def summary(request: Request) -> JSONResponse:
        return JSONResponse(served[fixture_of(request)][1])

    return Starlette(
        routes=[
            Route("/.well-known/openwop", discovery),
            Route("/runs", create, methods=["POST"]),
            Route("/runs/{run_id}/events/poll", poll),
            Route("/runs/{run_id}/eval-summary", summary),
        ]
    )


@contextmanager
def serving(app: Starlette, port: int) -> Iterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the double did not start")
        time.sleep(0.01)  # waiting for the socket, not timing anything
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
