"""No route handler touches the store on the event loop.

The store is SQLAlchemy: every call blocks its thread for a query's time, and a host has one
loop for all its requests and runs. So every handler reads and writes the store in a worker
thread (``asyncio.to_thread``). Checked without any timing: every transaction the store
opens records whether its thread runs an event loop and whether a host handler called it
(a frame of ``openwop_eval.server`` on the stack). The runs' own work — their task
(``RunManager._execute``) and their commits (``FeedingStore.append``) — is the runner's,
and not counted here.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from openwop_client.wire_id import project_id

from openwop_eval.server import runs
from openwop_eval.server.state import HostState
from openwop_eval.store import Store
from tests.server.inprocess import (
    CAREFUL,
    GATE_SUITE,
    GATED_RUN,
    MOCK,
    REFUNDS_SUITE,
    AppHost,
    gated_agent,
)

SERVER = str(Path(runs.__file__).parent)
RUNS_OWN = {"_execute", "append"}  # RunManager._execute, FeedingStore.append


def handler_frame() -> str | None:
    """The innermost host frame on this stack, if it is a handler's and not a run's own."""
    frame = sys._getframe(2)
    found = None
    while frame is not None:
        code = frame.f_code
        if code.co_filename.startswith(SERVER):
            if code.co_name in RUNS_OWN:
                return None
            found = found or f"{Path(code.co_filename).name}:{code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return found


@pytest.fixture
def on_loop(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Where a host handler opened a store transaction on an event loop's thread."""
    seen: list[str] = []
    real = Store.transaction

    def transaction(self: Store) -> AbstractContextManager[Any]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # a worker thread: what handlers must use
        else:
            where = handler_frame()
            if where is not None:
                seen.append(where)
        return real(self)

    monkeypatch.setattr(Store, "transaction", transaction)
    return seen


def test_the_check_sees_a_store_call_on_the_loop(fresh_app: AppHost, on_loop: list[str]) -> None:
    """The check can fail: host code reading the store on the loop is caught."""
    run_id = fresh_app.run_to_end(GATE_SUITE, MOCK)
    on_loop.clear()
    state: HostState = fresh_app.app.state.host

    async def blocking() -> bytes:
        return runs._summary_body(state, run_id)  # the cache-miss read, on the loop

    assert fresh_app.runner.run(blocking())
    assert set(on_loop) == {"runs.py:_summary_body"}  # its two reads


def test_no_handler_uses_the_store_on_the_loop(
    make_app: Callable[..., AppHost], tmp_path: Path, on_loop: list[str]
) -> None:
    app = make_app(**gated_agent(tmp_path))
    passing = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    failing = app.run_to_end(GATE_SUITE, MOCK)
    path, other = f"/runs/{project_id(passing)}", f"/runs/{project_id(failing)}"
    held = app.start(GATED_RUN)  # trials from hold_from on wait for the gate
    body = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK}
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("POST", "/runs", {"json": body}),
        ("POST", "/runs", {"json": body, "headers": {"Idempotency-Key": "k-1"}}),
        ("POST", "/runs", {"json": body, "headers": {"Idempotency-Key": "k-1"}}),  # replay
        ("POST", "/runs", {"json": {**body, "fixtureRuns": {"t": failing}}}),  # refused
        ("GET", "/runs", {}),
        ("GET", "/runs?limit=1", {}),
        ("GET", path, {}),
        ("GET", f"{path}/eval-summary", {}),  # a miss
        ("GET", f"{path}/eval-summary", {}),  # cached
        ("GET", f"/runs/{project_id(held)}/eval-summary", {}),  # 409: running
        ("GET", f"{path}/events/poll?timeout=0", {}),
        ("GET", f"{path}/events/poll?timeout=0&afterSequence=100000", {}),
        ("GET", f"{path}:diff?against={project_id(failing)}", {}),
        ("GET", f"{path}/report", {}),
        ("POST", f"{other}/cancel", {}),  # 409: terminal
        ("GET", "/agents", {}),
        ("GET", f"/agents/{CAREFUL}/deployments", {}),
        ("POST", f"/agents/{CAREFUL}/deployments", {"json": promote(passing)}),
        ("POST", f"/agents/{CAREFUL}/deployments", {"json": promote(failing, "2.0.0")}),  # 422
        ("POST", f"/runs/{project_id(held)}/cancel", {}),
    ]
    statuses = [app.request(method, url, **kw).status_code for method, url, kw in calls]
    assert statuses == [
        201,
        201,
        201,
        400,
        *[200] * 5,
        409,
        *[200] * 4,
        409,
        200,
        200,
        200,
        422,
        200,
    ]
    with app.client() as c, c.stream("GET", f"{path}/events") as stream:
        assert stream.status_code == 200
        assert sum(line.startswith("id: ") for line in stream.iter_lines()) > 0
    assert on_loop == []


def promote(run_id: str, version: str = "1.0.0") -> dict[str, Any]:
    return {
        "version": version,  # 1.0.0: the version the careful agent declares
        "transition": "promote",
        "toState": "active",
        "evalRunId": run_id,
    }
