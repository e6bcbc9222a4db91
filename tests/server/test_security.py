"""Keys, tenants, scopes and request validation: every refusal in the one envelope.

Each test has the host app to itself, in this process, on a fresh database."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from tests.server.inprocess import GATE_SUITE, MOCK, AppHost, run_routes


def create(host: AppHost, key: str = "acme-key", **body: Any) -> httpx.Response:
    payload = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK, **body}
    with host.client(key) as c:
        return c.post("/runs", json=payload)


def finished_run(host: AppHost) -> str:
    run_id: str = create(host).json()["runId"]
    host.follow(run_id)
    with host.client() as c:
        assert c.get(f"/runs/{project_id(run_id)}").json()["status"] == "completed"
    return run_id


def test_discovery_needs_no_key_and_everything_else_does(fresh_app: AppHost) -> None:
    with fresh_app.client(key=None) as anonymous:
        assert anonymous.get("/.well-known/openwop").status_code == 200
    run_id = finished_run(fresh_app)
    routes = [
        *run_routes(project_id(run_id)),
        ("GET", "/runs"),
        ("POST", "/runs"),
        ("GET", "/agents"),
        ("GET", f"/agents/{MOCK}"),
        ("GET", f"/agents/{MOCK}/deployments"),
        ("POST", f"/agents/{MOCK}/deployments"),
    ]
    with fresh_app.client(key=None) as anonymous:
        for method, path in routes:
            for headers in ({}, {"Authorization": "Bearer wrong-key"}):
                response = anonymous.request(method, path, headers=headers, json={})
                assert response.status_code == 401, (method, path)
                assert response.json()["error"] == "unauthenticated"
                assert response.headers["WWW-Authenticate"] == "Bearer"


def test_every_run_route_is_tenant_isolated(fresh_app: AppHost) -> None:
    run_id = finished_run(fresh_app)
    invented = "acme/" + "0" * 24
    with fresh_app.client("globex-key") as other:
        for rid in (run_id, invented):  # same answer whether or not the run exists
            for method, path in run_routes(project_id(rid)):
                response = other.request(method, path, json={} if method == "POST" else None)
                assert response.status_code == 403, (method, path)
                assert response.json()["error"] == "id_tenant_mismatch"
        assert other.get("/runs").json()["runs"] == []
    with fresh_app.client() as own:
        assert [r["runId"] for r in own.get("/runs").json()["runs"]] == [run_id]


def test_scopes_are_enforced(fresh_app: AppHost) -> None:
    response = create(fresh_app, "acme-read-only")
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    with fresh_app.client("acme-read-only") as c:
        refused = c.post(
            f"/agents/{MOCK}/deployments", json={"version": "1.0.0", "transition": "promote"}
        )
        assert refused.status_code == 403


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"surprise": 1}, "unknown key 'surprise'"),
        ({"mode": "workflow"}, 'mode must be "eval"'),
        ({"agentId": ""}, "agentId is required"),
        ({"baselineRunId": 7}, "baselineRunId must be a run id"),
    ],
)
def test_invalid_run_requests(fresh_app: AppHost, body: dict[str, Any], problem: str) -> None:
    response = create(fresh_app, **body)
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert any(problem in p for p in response.json()["details"]["problems"])


def test_unknown_suite_agent_and_modes_are_refused(fresh_app: AppHost) -> None:
    unknown_suite = create(fresh_app, evalSuiteRef="nope.x.evals.y@1.0.0")
    assert unknown_suite.json()["error"] == "validation_error"
    assert create(fresh_app, agentId="nobody").status_code == 400
    assert create(fresh_app, evalModes=["rubric"]).status_code == 400
    wrong = create(fresh_app, fixtureRuns={"wrong-path": "acme/" + "2" * 24})
    assert wrong.status_code == 400


def test_a_version_header_of_another_major_is_refused(fresh_app: AppHost) -> None:
    with fresh_app.client(key=None) as c:
        response = c.get("/.well-known/openwop", headers={"OpenWOP-Version": "3.0"})
        assert response.status_code == 406
        assert response.json()["details"]["protocolVersions"] == ["2.0"]
        ok = c.get("/.well-known/openwop", headers={"OpenWOP-Version": "2"})
        assert ok.headers["OpenWOP-Version"] == "2.0"


def test_bodies_are_bounded(fresh_app: AppHost) -> None:
    with fresh_app.client() as c:
        response = c.post(
            "/runs",
            content=b"{" + b" " * 2_000_000 + b"}",
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 413


def test_idempotency_key_reuse_with_another_body_conflicts(fresh_app: AppHost) -> None:
    with fresh_app.client() as c:
        body = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK}
        first = c.post("/runs", json=body, headers={"Idempotency-Key": "k-1"})
        replay = c.post("/runs", json=body, headers={"Idempotency-Key": "k-1"})
        other = c.post("/runs", json={**body, "tags": ["x"]}, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == replay.status_code == 201
    assert replay.json() == first.json()
    assert replay.headers["OpenWOP-Idempotent-Replay"] == "true"
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_key_mismatch"


def test_the_gate_is_fail_closed(fresh_app: AppHost) -> None:
    passing = create(
        fresh_app, evalSuiteRef="acme.support.evals.refunds@1.0.0", agentId="acme.support-resolver"
    ).json()["runId"]
    fresh_app.follow(passing)
    with fresh_app.client() as c:
        assert c.get(f"/runs/{project_id(passing)}").json()["status"] == "completed"
    other_tenant = create(
        fresh_app,
        "globex-key",
        evalSuiteRef="acme.support.evals.refunds@1.0.0",
        agentId="acme.support-resolver",
    ).json()["runId"]
    cases = [
        {},  # no evalRunId
        {"evalRunId": "acme/" + "3" * 24},  # unknown
        {"evalRunId": other_tenant},  # another tenant's run, even a passing one
    ]
    with fresh_app.client() as c:
        for extra in cases:
            refused = c.post(
                "/agents/acme.support-resolver/deployments",
                json={"version": "1.0.0", "transition": "promote", "toState": "active", **extra},
            )
            assert refused.status_code == 422, extra
            assert refused.json()["error"] == "eval_gate_unmet"
        assert c.get("/agents/acme.support-resolver/deployments").json() == []
        ok = c.post(
            "/agents/acme.support-resolver/deployments",
            json={
                "version": "1.0.0",
                "transition": "promote",
                "toState": "active",
                "evalRunId": passing,
            },
        )
        assert ok.status_code == 200
        assert ok.json()["state"] == "active"
