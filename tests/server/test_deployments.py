"""Agents and their deployments over HTTP: the inventory, one version's way through the
states (promote, pause, rollback, deprecate), the eval gate on every promotion into a gated
state, scopes per transition, idempotent transitions, and the history each change records.
The rules themselves, as pure functions, are test_deploy_rules.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from openwop_eval.server.config import AgentConfig
from openwop_eval.server.state import HostState
from tests.hosts import EXAMPLE
from tests.server.inprocess import CAREFUL, FIXTURES, GATE_SUITE, MOCK, REFUNDS_SUITE, AppHost

DEPLOYMENTS = f"/agents/{CAREFUL}/deployments"


def careful(version: str) -> dict[str, AgentConfig]:
    """The careful agent, declared at ``version``."""
    example = EXAMPLE.resolve()
    return {
        CAREFUL: AgentConfig(
            agent=f"{example / 'agent.py'}:careful_support_agent",
            judge=f"scripted:{example / 'judge.json'}",
            version=version,
        )
    }


class Deploys:
    """One agent's deployments on a fresh host, with a passing and a failing eval run of
    version 1.0.0; :meth:`evaluate` runs the host with another version and evaluates it."""

    def __init__(self, make_app: Callable[..., AppHost]) -> None:
        self.make_app = make_app
        self.app = make_app()
        self.passing = self.app.run_to_end(REFUNDS_SUITE, CAREFUL)
        self.failing = self.app.run_to_end(GATE_SUITE, MOCK)

    def evaluate(self, version: str) -> str:
        """Restart the host running ``version`` of the careful agent; its passed run."""
        self.app.close()
        self.app = self.make_app(agents=careful(version))
        return self.app.run_to_end(REFUNDS_SUITE, CAREFUL)

    def post(self, key: str = "acme-key", **body: Any) -> httpx.Response:
        return self.app.request("POST", DEPLOYMENTS, key=key, json=body)

    def ok(self, **body: Any) -> dict[str, Any]:
        response = self.post(**body)
        assert response.status_code == 200, response.text
        record: dict[str, Any] = response.json()
        return record

    def states(self) -> list[tuple[str, str]]:
        listed = self.app.request("GET", DEPLOYMENTS).json()
        return sorted((d["version"], d["state"]) for d in listed)

    def history(self) -> list[tuple[str, str, str | None]]:
        """The deployment events recorded: type, version, the state entered (a rollback's
        payload names none: its version is the one restored to active)."""
        state: HostState = self.app.app.state.host
        return [
            (
                e["type"],
                e["payload"].get("version") or e["payload"]["toVersion"],
                e["payload"].get("toState"),
            )
            for e in state.host_store.history("acme", CAREFUL)
        ]


@pytest.fixture
def deploys(make_app: Callable[..., AppHost]) -> Deploys:
    return Deploys(make_app)


def test_a_version_goes_through_its_states_and_back(deploys: Deploys) -> None:
    assert deploys.ok(version="1.0.0", transition="promote") == {
        "agentId": CAREFUL,
        "version": "1.0.0",
        "state": "test",  # one step forward; test is not gated here
        "channels": ["stable"],
    }
    first = deploys.ok(version="1.0.0", transition="promote", evalRunId=deploys.passing)
    assert (first["state"], first["evalRunId"]) == ("staged", deploys.passing)
    live = deploys.ok(version="1.0.0", transition="promote", evalRunId=deploys.passing)
    assert live["state"] == "active"

    second_run = deploys.evaluate("2.0.0")
    second = deploys.ok(
        version="2.0.0", transition="promote", toState="active", evalRunId=second_run
    )
    assert second["rollbackPointer"] == "1.0.0"
    assert deploys.states() == [("1.0.0", "deprecated"), ("2.0.0", "active")]

    back = deploys.ok(version="2.0.0", transition="rollback", reason="error rate")
    assert back["state"] == "rolled-back"
    assert deploys.states() == [("1.0.0", "active"), ("2.0.0", "rolled-back")]

    assert deploys.ok(version="1.0.0", transition="pause")["state"] == "paused"
    gated = deploys.post(version="1.0.0", transition="promote")  # back to active: gated
    assert gated.status_code == 422
    assert gated.json()["details"] == {"reason": "no evalRunId was given"}
    resumed = deploys.ok(version="1.0.0", transition="promote", evalRunId=deploys.passing)
    assert resumed["state"] == "active"
    assert deploys.ok(version="1.0.0", transition="deprecate")["state"] == "deprecated"
    assert deploys.history() == [
        ("deployment.promoted", "1.0.0", "test"),
        ("deployment.promoted", "1.0.0", "staged"),
        ("deployment.promoted", "1.0.0", "active"),
        ("deployment.promoted", "2.0.0", "active"),  # replacing 1.0.0
        ("deployment.rolled-back", "1.0.0", None),  # 1.0.0 restored
        ("deployment.state-changed", "1.0.0", "paused"),
        ("deployment.promoted", "1.0.0", "active"),
        ("deployment.state-changed", "1.0.0", "deprecated"),
    ]


def test_the_gate_refuses_without_changing_anything(deploys: Deploys) -> None:
    deploys.ok(version="1.0.0", transition="promote")
    refusals = [
        ({}, "no evalRunId was given"),
        (
            {"evalRunId": deploys.failing},
            "the eval run evaluated agent core.conformance.mock-agent",
        ),
        ({"evalRunId": "acme/" + "5" * 24}, "the eval run was not found"),
    ]
    for extra, reason in refusals:
        refused = deploys.post(version="1.0.0", transition="promote", toState="staged", **extra)
        assert refused.status_code == 422, extra
        body = refused.json()
        assert body["error"] == "eval_gate_unmet"
        assert body["details"]["reason"].startswith(reason)
        assert body["message"] == f"promotion refused: {body['details']['reason']}"
    assert deploys.states() == [("1.0.0", "test")]
    assert deploys.history() == [("deployment.promoted", "1.0.0", "test")]


def test_a_run_that_did_not_pass_does_not_open_the_gate_for_its_agent(
    deploys: Deploys,
) -> None:
    refused = deploys.app.request(
        "POST",
        f"/agents/{MOCK}/deployments",
        json={
            "version": "1",
            "transition": "promote",
            "toState": "active",
            "evalRunId": deploys.failing,
        },
    )
    assert refused.status_code == 422
    assert refused.json()["details"] == {
        "reason": "the eval run did not pass",
        "evalRunId": deploys.failing,
    }
    assert deploys.app.request("GET", f"/agents/{MOCK}/deployments").json() == []


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            {"version": "1.0.0", "transition": "promote", "toState": "live"},
            "toState must be one of",
        ),
        ({"version": "1.0.0", "transition": "launch"}, "transition must be one of"),
        ({"version": " ", "transition": "promote"}, "version must be 1 to 100"),
        ({"version": "1.0.0", "transition": "promote", "reason": 3}, "reason must be a string"),
        ({"version": "1.0.0", "transition": "promote", "evalRunId": "x"}, "evalRunId must be"),
        ({"version": "1.0.0", "transition": "promote", "extra": 1}, "unknown key 'extra'"),
    ],
)
def test_an_invalid_transition_lists_its_problems(
    app: AppHost, body: dict[str, Any], problem: str
) -> None:
    response = app.request("POST", DEPLOYMENTS, json=body)
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert any(problem in p for p in response.json()["details"]["problems"]), response.json()


def test_what_the_host_does_not_serve_is_refused(deploys: Deploys) -> None:
    beta = deploys.post(version="1.0.0", transition="promote", channel="beta")
    assert beta.status_code == 400
    assert beta.json()["message"] == "channel 'beta' is not served; channels: stable"
    canary = deploys.post(version="1.0.0", transition="adjust-canary", canaryPercent=5)
    assert canary.status_code == 400
    assert "does not run canaries" in canary.json()["message"]
    illegal = deploys.post(version="1.0.0", transition="pause")  # a draft cannot be paused
    assert illegal.status_code == 400
    assert illegal.json()["error"] == "validation_error"
    assert deploys.states() == []


def test_each_transition_needs_its_scope(deploys: Deploys) -> None:
    deploys.ok(version="1.0.0", transition="promote", toState="active", evalRunId=deploys.passing)
    for transition, scope in [
        ("promote", "deploy:promote"),
        ("pause", "deploy:pause"),
        ("deprecate", "deploy:pause"),
        ("rollback", "deploy:rollback"),
    ]:
        refused = deploys.post("acme-read-only", version="1.0.0", transition=transition)
        assert refused.status_code == 403
        assert refused.json()["details"] == {"requiredScope": scope}
    reader = deploys.app.request("GET", DEPLOYMENTS, key="acme-read-only")
    assert [d["state"] for d in reader.json()] == ["active"]  # reading needs agents:read only
    assert deploys.app.request("GET", DEPLOYMENTS, key="globex-key").json() == []  # per tenant


def test_a_transition_is_idempotent_under_its_key(deploys: Deploys) -> None:
    body = {"version": "1.0.0", "transition": "promote", "toState": "active"}
    body["evalRunId"] = deploys.passing
    headers = {"Idempotency-Key": "promote-3"}
    first = deploys.app.request("POST", DEPLOYMENTS, json=body, headers=headers)
    replay = deploys.app.request("POST", DEPLOYMENTS, json=body, headers=headers)
    assert first.status_code == replay.status_code == 200
    assert replay.json() == first.json()
    assert replay.headers["OpenWOP-Idempotent-Replay"] == "true"
    assert deploys.history() == [("deployment.promoted", "1.0.0", "active")]  # recorded once
    other = deploys.app.request(
        "POST", DEPLOYMENTS, json={**body, "reason": "again"}, headers=headers
    )
    assert other.status_code == 409
    assert other.json()["error"] == "idempotency_key_mismatch"
    refusal = {"version": "4.0.0", "transition": "promote", "toState": "active"}
    for _ in range(2):  # a refusal is not cached: the same key is judged again
        again = deploys.app.request(
            "POST", DEPLOYMENTS, json=refusal, headers={"Idempotency-Key": "promote-4"}
        )
        assert again.status_code == 422


def test_the_inventory_lists_every_configured_agent(make_app: Callable[..., AppHost]) -> None:
    described = AgentConfig(
        agent=f"scripted:{FIXTURES / 'conformance-mock-agent.json'}",
        label="Refund desk",
        description="Answers refund requests.",
        model_class="reasoning",
    )
    host = make_app(agents={"acme.described": described})
    agents = host.request("GET", "/agents").json()["agents"]
    assert [a["agentId"] for a in agents] == [MOCK, CAREFUL, "acme.described"]
    entry = host.request("GET", "/agents/acme.described").json()
    assert entry == {
        "agentId": "acme.described",
        "label": "Refund desk",
        "persona": "Refund desk",
        "modelClass": "reasoning",
        "toolAllowlist": [],
        "hasHandoffSchemas": False,
        "description": "Answers refund requests.",
    }
    assert host.request("GET", f"/agents/{MOCK}").json()["label"] == MOCK
    missing = host.request("GET", "/agents/acme.nobody")
    assert missing.status_code == 404
    assert missing.json()["message"] == "agent acme.nobody was not found"
    assert host.request("GET", "/agents/acme.nobody/deployments").status_code == 404


def test_an_agent_id_at_its_longest_keeps_its_transitions_idempotent(
    make_app: Callable[..., AppHost],
) -> None:
    """The idempotency operation of a 128-character agent id is hashed to fit its column."""
    agent_id = "acme." + "a" * 123
    agent = AgentConfig(agent=f"scripted:{FIXTURES / 'conformance-mock-agent.json'}")
    host = make_app(agents={agent_id: agent})
    body = {"version": "1.0.0", "transition": "promote"}  # to test: not gated
    path = f"/agents/{agent_id}/deployments"
    headers = {"Idempotency-Key": "long-1"}
    first = host.request("POST", path, json=body, headers=headers)
    replay = host.request("POST", path, json=body, headers=headers)
    assert first.status_code == replay.status_code == 200
    assert first.json()["state"] == "test"
    assert replay.json() == first.json()
    assert replay.headers["OpenWOP-Idempotent-Replay"] == "true"
    assert [d["state"] for d in host.request("GET", path).json()] == ["test"]
