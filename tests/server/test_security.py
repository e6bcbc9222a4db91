"""Keys, tenants, scopes and request validation: every refusal in the one envelope."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from tests.hosts import Host, api, wait_for

GATE_SUITE = "core.conformance.evals.trajectory-gate@1.0.0"
MOCK = "core.conformance.mock-agent"


def create(host: Host, key: str = "acme-key", **body: Any) -> httpx.Response:
    payload = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK, **body}
    with api(host, key) as c:
        return c.post("/runs", json=payload)


def finished_run(host: Host) -> str:
    run_id: str = create(host).json()["runId"]
    with api(host) as c:
        wait_for(
            lambda: c.get(f"/runs/{project_id(run_id)}").json()["status"] == "completed",
            "the run to complete",
        )
    return run_id


def run_routes(run_id: str) -> list[tuple[str, str]]:
    path = f"/runs/{project_id(run_id)}"
    return [
        ("GET", path),
        ("GET", f"{path}/events"),
        ("GET", f"{path}/events/poll?timeout=0"),
        ("GET", f"{path}/eval-summary"),
        ("POST", f"{path}/cancel"),
    ]


def test_discovery_needs_no_key_and_everything_else_does(host: Host) -> None:
    assert httpx.get(f"{host.url}/.well-known/openwop").status_code == 200
    run_id = finished_run(host)
    routes = [
        *run_routes(run_id),
        ("GET", "/runs"),
        ("POST", "/runs"),
        ("GET", "/agents"),
        ("GET", f"/agents/{MOCK}"),
        ("GET", f"/agents/{MOCK}/deployments"),
        ("POST", f"/agents/{MOCK}/deployments"),
    ]
    for method, path in routes:
        for headers in ({}, {"Authorization": "Bearer wrong-key"}):
            response = httpx.request(method, f"{host.url}{path}", headers=headers, json={})
            assert response.status_code == 401, (method, path)
            assert response.json()["error"] == "unauthenticated"
            assert response.headers["WWW-Authenticate"] == "Bearer"


def test_every_run_route_is_tenant_isolated(host: Host) -> None:
    run_id = finished_run(host)
    invented = "acme/" + "0" * 24
    with api(host, "globex-key") as other:
        for rid in (run_id, invented):  # same answer whether or not the run exists
            for method, path in run_routes(rid):
                response = other.request(method, path, json={} if method == "POST" else None)
                assert response.status_code == 403, (method, path)
                assert response.json()["error"] == "id_tenant_mismatch"
        assert other.get("/runs").json()["runs"] == []
    with api(host) as own:
        assert [r["runId"] for r in own.get("/runs").json()["runs"]] == [run_id]


def test_scopes_are_enforced(host: Host) -> None:
    response = create(host, "acme-read-only")
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden"
    with api(host, "acme-read-only") as c:
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
        ({"baselineRunId": "acme/" + "1" * 20}, "baselineRunId needs"),
    ],
)
def test_invalid_run_requests(host: Host, body: dict[str, Any], problem: str) -> None:
    response = create(host, **body)
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert any(problem in p for p in response.json()["details"]["problems"])


def test_unknown_suite_agent_and_modes_are_refused(host: Host) -> None:
    assert create(host, evalSuiteRef="nope.x.evals.y@1.0.0").json()["error"] == "validation_error"
    assert create(host, agentId="nobody").status_code == 400
    assert create(host, evalModes=["rubric"]).status_code == 400
    wrong = create(host, fixtureRuns={"wrong-path": "acme/" + "2" * 24})
    assert wrong.status_code == 400


def test_a_version_header_of_another_major_is_refused(host: Host) -> None:
    response = httpx.get(f"{host.url}/.well-known/openwop", headers={"OpenWOP-Version": "3.0"})
    assert response.status_code == 406
    assert response.json()["details"]["protocolVersions"] == ["2.0"]
    ok = httpx.get(f"{host.url}/.well-known/openwop", headers={"OpenWOP-Version": "2"})
    assert ok.headers["OpenWOP-Version"] == "2.0"


def test_bodies_are_bounded(host: Host) -> None:
    with api(host) as c:
        response = c.post(
            "/runs",
            content=b"{" + b" " * 2_000_000 + b"}",
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 413


def test_idempotency_key_reuse_with_another_body_conflicts(host: Host) -> None:
    with api(host) as c:
        body = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK}
        first = c.post("/runs", json=body, headers={"Idempotency-Key": "k-1"})
        replay = c.post("/runs", json=body, headers={"Idempotency-Key": "k-1"})
        other = c.post("/runs", json={**body, "tags": ["x"]}, headers={"Idempotency-Key": "k-1"})
    assert first.status_code == replay.status_code == 201
    assert replay.json() == first.json()
    assert replay.headers["OpenWOP-Idempotent-Replay"] == "true"
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_key_mismatch"


def test_the_gate_is_fail_closed(host: Host) -> None:
    passing = create(
        host, evalSuiteRef="acme.support.evals.refunds@1.0.0", agentId="acme.support-resolver"
    ).json()["runId"]
    with api(host) as c:
        wait_for(
            lambda: c.get(f"/runs/{project_id(passing)}").json()["status"] == "completed",
            "the passing run",
        )
    other_tenant = create(
        host,
        "globex-key",
        evalSuiteRef="acme.support.evals.refunds@1.0.0",
        agentId="acme.support-resolver",
    ).json()["runId"]
    cases = [
        {},  # no evalRunId
        {"evalRunId": "acme/" + "3" * 24},  # unknown
        {"evalRunId": other_tenant},  # another tenant's run, even a passing one
    ]
    with api(host) as c:
        for extra in cases:
            refused = c.post(
                "/agents/acme.support-resolver/deployments",
                json={"version": "9.0.0", "transition": "promote", "toState": "active", **extra},
            )
            assert refused.status_code == 422, extra
            assert refused.json()["error"] == "eval_gate_unmet"
        assert c.get("/agents/acme.support-resolver/deployments").json() == []
        ok = c.post(
            "/agents/acme.support-resolver/deployments",
            json={
                "version": "9.0.0",
                "transition": "promote",
                "toState": "active",
                "evalRunId": passing,
            },
        )
        assert ok.status_code == 200
        assert ok.json()["state"] == "active"
