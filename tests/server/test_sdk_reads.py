"""What a user of the published `openwop-client` 2.7.0, unmodified, reads from this host
beyond its typed models (docs/host.md#reading-with-openwop-client): the RFC 0246 gated
fields and the trials of a summary, which its ``EvalSummary`` drops, are in the run's
``run.completed`` event, whose payload the SDK keeps whole; an agent's deployment records
come through its method, their events through the route it has no method for."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from openwop_client import (
    AgentDeploymentTransition,
    CreateRunRequest,
    OpenwopClient,
    RunEventDoc,
)

from openwop_eval.protocol.ids import project
from openwop_eval.server import create_app
from openwop_eval.store import Store
from tests.server.inprocess import CAREFUL, MOCK, REFUNDS_SUITE, host_config
from tests.server.official import payload_errors
from tests.server.served import serving

MEAN_SUITE = "core.conformance.evals.trajectory-gate-mean@1.0.0"


@pytest.fixture
def live(database: str) -> Iterator[str]:
    """The standard host under uvicorn on loopback, on a fresh database; its base URL."""
    store = Store(database)
    try:
        with serving(create_app(host_config(database), store)) as url:
            yield url
    finally:
        store.close()


def run_to_end(c: OpenwopClient, suite: str, agent: str) -> tuple[str, list[RunEventDoc]]:
    created = c.runs_create(CreateRunRequest(mode="eval", evalSuiteRef=suite, agentId=agent))
    return created.runId, list(c.runs_events(created.runId))


def logged_summary(events: list[RunEventDoc]) -> dict[str, Any]:
    """The summary as the run's ``run.completed`` event carries it, whole."""
    completed = [e for e in events if e.type == "run.completed"]
    assert len(completed) == 1
    summary: dict[str, Any] = completed[0].payload["outputs"]["evalSummary"]
    return summary


def test_the_gated_fields_and_trials_reach_a_client_through_the_run_log(live: str) -> None:
    c = OpenwopClient(base_url=live, api_key="acme-key", timeout=30)
    run_id, events = run_to_end(c, MEAN_SUITE, MOCK)
    summary = logged_summary(events)
    (task,) = summary["tasks"]
    # RFC 0246: right answers (score 1) on a forbidden path (gated 0), two trials
    assert (summary["aggregateScore"], summary["gatedAggregateScore"]) == (1, 0)
    assert (task["score"], task["gatedScore"]) == (1, 0)
    assert task["trials"]["count"] == 2
    assert summary["passed"] is False

    typed = c.runs_eval_summary(run_id)  # the SDK's model: the same run, fields dropped
    assert typed is not None
    assert (typed.aggregateScore, typed.passed) == (1, False)
    assert not hasattr(typed, "gatedAggregateScore")
    assert not hasattr(typed.tasks[0], "gatedScore")
    assert not hasattr(typed.tasks[0], "trials")

    # the long poll carries the same event; both equal the summary the route serves
    polled: list[RunEventDoc] = []
    after = -1
    while True:
        page = c.runs_poll_events(run_id, after_sequence=after, timeout_seconds=1)
        polled += page.events
        after = page.lastSequence
        if page.isTerminal and after == polled[-1].sequence:
            break
    served = httpx.get(
        f"{live}/runs/{project(run_id)}/eval-summary",
        headers={"Authorization": "Bearer acme-key"},
    ).json()
    assert logged_summary(polled) == summary == served


def test_deployments_through_the_sdk_and_their_events_beside_it(live: str) -> None:
    c = OpenwopClient(base_url=live, api_key="acme-key", timeout=30)
    run_id, _ = run_to_end(c, REFUNDS_SUITE, CAREFUL)
    promoted = c.agents_transition_deployment(
        CAREFUL,
        AgentDeploymentTransition(
            version="1.0.0", transition="promote", toState="active", evalRunId=run_id
        ),
    )
    assert promoted.state == "active"
    listed = c.agents_list_deployments(CAREFUL)
    assert listed is not None
    assert [(d.version, d.state, d.evalRunId) for d in listed] == [("1.0.0", "active", run_id)]

    response = httpx.get(
        f"{live}/agents/{CAREFUL}/deployments/events",
        headers={"Authorization": "Bearer acme-key", "OpenWOP-Version": c.protocol_version},
    )
    assert response.status_code == 200
    assert response.headers["OpenWOP-Version"] == "2.0"
    (event,) = response.json()["events"]
    assert event["type"] == "deployment.promoted"
    assert event["payload"]["evalRunId"] == run_id
    assert payload_errors(event) == []
