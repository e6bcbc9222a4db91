"""``GET /runs/{runId}:diff?against=OTHER`` (RFC 0054): two eval runs of one suite, one agent
careful and one that calls a forbidden tool, diffed through the host — where they diverge,
what the gate saw, no content in the answer, the tenant and scope rules, an in-flight run, and
the published `openwop-client` reading it from a real host process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st
from openwop_client import OpenwopClient
from openwop_client.wire_id import project_id

from openwop_eval.server.config import AgentConfig, ApiKey
from tests.hosts import Host
from tests.server.inprocess import (
    GATE_SUITE,
    GATED_RUN,
    MOCK,
    AppHost,
    Event,
    gated_agent,
    host_config,
)
from tests.server.test_fuzz_routes import ENVELOPE_KEYS, FUZZ, TEXT, raw_part, url_part

CANARY = "canary-9b24fd"
SUITE_REF = "test.acme.evals.diff@1.0.0"
RUN_DIFF_RESPONSE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["a", "b", "eventDiffs", "stateDiff"],
    "properties": {
        "a": {"type": "string"},
        "b": {"type": "string"},
        "divergedAtSeq": {"type": ["integer", "null"], "minimum": 0},
        "truncated": {"type": "boolean"},
        "stateDiff": {"type": "object"},
        "eventDiffs": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["seq", "op"],
                "properties": {
                    "seq": {"type": "integer", "minimum": 0},
                    "op": {"enum": ["added", "removed", "changed"]},
                    "aEvent": {"type": "object"},
                    "bEvent": {"type": "object"},
                },
            },
        },
    },
}
"""openwop ``schemas/v2/run-diff-response.schema.json`` (RFC 0054), as this test reads it."""
RESPONSE_KEYS = set(RUN_DIFF_RESPONSE["properties"])
AGENTS = f"""
async def careful(input, tools):
    found = await tools.call("crm:lookup", {{"q": "{CANARY}"}})
    return "ok {CANARY} " + found["note"]

async def reckless(input, tools):
    found = await tools.call("crm:lookup", {{"q": "{CANARY}"}})
    if input["task"] == "close":
        await tools.call("accounts:delete", {{"who": "{CANARY}"}})
    return "ok {CANARY} " + found["note"]
"""
"""Both answer right, with the canary in their output, tool arguments and tool results; the
reckless one also deletes the account on the ``close`` task, which its trajectory forbids."""


def suite() -> dict[str, Any]:
    fixtures = [
        {"tool": "crm:lookup", "response": {"note": CANARY}},
        {"tool": "accounts:delete", "response": {"deleted": CANARY}},
    ]
    expected = {
        "kind": "golden",
        "match": {"strategy": "contains", "value": "ok"},
        "trajectory": {"steps": [{"tool": "crm:lookup"}], "forbidden": ["accounts:delete"]},
    }
    return {
        "suiteId": "test.acme.evals.diff",
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": {"count": 2, "passRule": "mean"},
        "tasks": [
            {
                "taskId": task,
                "input": {"task": task, "text": CANARY},
                "expected": expected,
                "fixtures": {"toolResponses": fixtures},
            }
            for task in ("lookup", "close")
        ],
    }


@pytest.fixture
def diff_app(database: str, tmp_path: Path) -> Iterator[AppHost]:
    """The standard host plus the diff suite and both agents (one trial at a time, so two
    runs' logs line up), the gated agent, and a key that may not read runs."""
    (tmp_path / "diff.json").write_text(json.dumps(suite()))
    (tmp_path / "agents.py").write_text(AGENTS)
    gated = gated_agent(tmp_path)
    agents = {
        f"test.{name}": AgentConfig(agent=f"{tmp_path / 'agents.py'}:{name}", concurrency=1)
        for name in ("careful", "reckless")
    }
    config = host_config(
        database,
        suites=(str(tmp_path / "diff.json"), *gated["suites"]),
        agents={**agents, **gated["agents"]},
    )
    deployer = ApiKey(
        name="deployer", tenant="acme", key="acme-deployer", scopes=("deploy:promote",)
    )
    config = config.model_copy(update={"api_keys": (*config.api_keys, deployer)})
    app = AppHost(database, config)
    yield app
    app.close()


def diff_path(a: str, b: str) -> str:
    return f"/runs/{project_id(a)}:diff?against={project_id(b)}"


def get_diff(app: AppHost, a: str, b: str, key: str = "acme-key") -> dict[str, Any]:
    response = app.request("GET", diff_path(a, b), key=key)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    jsonschema.validate(body, RUN_DIFF_RESPONSE)
    for entry in body["eventDiffs"]:  # the event each side holds, and only that
        assert ("aEvent" in entry) == (entry["op"] != "added")
        assert ("bEvent" in entry) == (entry["op"] != "removed")
    return body


def run_of(app: AppHost, agent: str) -> tuple[str, list[Event]]:
    run_id = app.start({"mode": "eval", "evalSuiteRef": SUITE_REF, "agentId": agent})
    return run_id, app.follow(run_id)


def test_a_run_diffed_with_itself_is_identical(diff_app: AppHost) -> None:
    run_id, _ = run_of(diff_app, "test.careful")
    diff = get_diff(diff_app, run_id, run_id)
    assert (diff["a"], diff["b"]) == (run_id, run_id)
    assert diff["divergedAtSeq"] is None
    assert diff["eventDiffs"] == []
    assert diff["truncated"] is False
    assert diff["stateDiff"]["tasks"] == []
    assert diff["stateDiff"]["eval"]["passed"] == {"a": True, "b": True}
    # the run's own route is not swallowed by the diff's, nor the diff's by it
    snapshot = diff_app.request("GET", f"/runs/{project_id(run_id)}")
    assert snapshot.json()["runId"] == run_id
    assert "eventDiffs" not in snapshot.json()


def test_two_runs_of_one_agent_are_identical_but_for_their_ids(diff_app: AppHost) -> None:
    first, _ = run_of(diff_app, "test.careful")
    second, _ = run_of(diff_app, "test.careful")
    diff = get_diff(diff_app, first, second)
    assert diff["divergedAtSeq"] is None
    assert diff["eventDiffs"] == []


def test_a_forbidden_tool_is_where_the_runs_diverge_and_what_the_gate_saw(
    diff_app: AppHost,
) -> None:
    careful, _ = run_of(diff_app, "test.careful")
    reckless, events = run_of(diff_app, "test.reckless")
    diff = get_diff(diff_app, careful, reckless)
    forbidden = [
        e["sequence"]
        for e in events
        if e["type"] == "agent.tool-called" and e["payload"]["toolName"] == "accounts:delete"
    ]
    assert diff["divergedAtSeq"] == forbidden[0]
    assert diff["eventDiffs"][0]["bEvent"]["toolName"] == "accounts:delete"

    state = diff["stateDiff"]
    assert state["agentId"] == {"a": "test.careful", "b": "test.reckless"}
    assert state["eval"]["aggregateScore"]["delta"] == 0  # every answer was right ...
    assert state["eval"]["gatedAggregateScore"]["delta"] < 0  # ... but one path was wrong
    assert state["eval"]["passed"] == {"a": True, "b": False}
    (task,) = state["tasks"]  # the lookup task did not change
    assert task["taskId"] == "close"
    assert task["gatedScore"] == {"a": 1.0, "b": 0.0, "delta": -1.0}
    assert task["score"]["delta"] == 0
    assert [t["trial"] for t in task["trials"]] == [0, 1]
    for trial in task["trials"]:
        assert trial["constraints"]["newlyViolated"] == ["forbidden"]
        assert trial["b"]["gatingScore"] == 0
        assert trial["b"]["score"] == 1

    back = get_diff(diff_app, reckless, careful)["stateDiff"]["tasks"][0]
    assert all(t["constraints"]["resolved"] == ["forbidden"] for t in back["trials"])


def test_the_diff_carries_no_content(diff_app: AppHost) -> None:
    careful, careful_events = run_of(diff_app, "test.careful")
    reckless, _ = run_of(diff_app, "test.reckless")
    assert CANARY in json.dumps(careful_events)  # in the output, the arguments, the results
    for a, b in ((careful, reckless), (reckless, careful), (reckless, reckless)):
        response = diff_app.request("GET", diff_path(a, b))
        assert response.status_code == 200
        assert CANARY not in response.text


def test_the_against_run_follows_the_path_runs_rules(diff_app: AppHost) -> None:
    own, _ = run_of(diff_app, "test.careful")
    foreign = diff_app.run_to_end(GATE_SUITE, MOCK, key="globex-key")
    path = f"/runs/{project_id(own)}:diff"

    def refused(query: str, key: str = "acme-key") -> tuple[int, str]:
        response = diff_app.request("GET", f"{path}{query}", key=key)
        return response.status_code, response.json()["error"]

    invented = "globex/" + "0" * 24
    assert refused(f"?against={project_id(foreign)}") == (403, "id_tenant_mismatch")
    assert refused(f"?against={project_id(invented)}") == (403, "id_tenant_mismatch")
    assert refused(f"?against={project_id('acme/' + '0' * 24)}") == (404, "not_found")
    for query in ("", "?against=", "?against=acme", "?against=acme~2Fshort", "?against=~zz"):
        assert refused(query) == (400, "validation_error"), query
    both = f"?against={project_id(own)}&against={project_id(own)}"
    assert refused(both) == (400, "validation_error")
    assert refused("?against=" + "a" * 2000) == (400, "validation_error")
    # the path run's own rules, and the scope
    other_path = f"/runs/{project_id(foreign)}:diff?against={project_id(own)}"
    assert diff_app.request("GET", other_path).status_code == 403
    assert refused(f"?against={project_id(own)}", key="acme-deployer") == (403, "forbidden")
    assert diff_app.request("GET", diff_path(own, own), key=None).status_code == 401
    assert diff_app.request("GET", diff_path(own, own), key="acme-read-only").status_code == 200
    # a projected id's slash may come as %2F too
    percent = diff_app.request("GET", f"{path}?against={own.replace('/', '%2F')}")
    assert percent.status_code == 200
    assert percent.json()["b"] == own


def test_any_against_is_answered_in_the_envelope(diff_app: AppHost) -> None:
    own, _ = run_of(diff_app, "test.careful")
    near = st.sampled_from([own, "globex/" + own[5:], own + "~", own[:-1]]).map(project_id)
    values = st.one_of(TEXT.map(url_part), TEXT.map(raw_part), near, near.map(lambda v: v + "%"))

    @FUZZ
    @given(value=values)
    def fuzz(value: str) -> None:
        url = f"/runs/{project_id(own)}:diff?against={value}"
        response = diff_app.request("GET", url)
        assert response.status_code in (200, 400, 403, 404), (value, response.text)
        keys = RESPONSE_KEYS if response.status_code == 200 else ENVELOPE_KEYS
        assert set(response.json()) <= keys, value

    fuzz()


def test_an_in_flight_run_is_diffed_as_far_as_it_has_run(diff_app: AppHost) -> None:
    held = diff_app.start(GATED_RUN)
    events = diff_app.follow(held, lambda es: sum(e["type"] == "eval.scored" for e in es) == 2)
    done = diff_app.run_to_end(GATE_SUITE, MOCK)
    itself = get_diff(diff_app, held, held)
    assert itself["truncated"] is True
    assert itself["divergedAtSeq"] is None
    against = get_diff(diff_app, held, done)
    assert against["truncated"] is True
    assert against["stateDiff"]["status"] == {"a": "running", "b": "completed"}
    assert max(d["seq"] for d in against["eventDiffs"]) <= events[-1]["sequence"]
    diff_app.release()
    diff_app.follow(held)
    assert get_diff(diff_app, held, held)["truncated"] is False


def test_the_published_client_reads_the_diff(host: Host) -> None:
    """`openwop-client` 2.7.0, unmodified, over HTTP against a `serve` process."""
    c = OpenwopClient(base_url=host.url, api_key="acme-key", timeout=30)
    refunds = "acme.support.evals.refunds@1.0.0"
    with httpx.Client(base_url=host.url, headers={"Authorization": "Bearer acme-key"}) as api:
        careful = api.post(
            "/runs",
            json={"mode": "eval", "evalSuiteRef": refunds, "agentId": "acme.support-resolver"},
        ).json()["runId"]
        flawed = api.post(
            "/runs",
            json={"mode": "eval", "evalSuiteRef": refunds, "agentId": "acme.flawed-resolver"},
        ).json()["runId"]
    for run_id in (careful, flawed):
        assert list(c.runs_events(run_id))[-1].type == "run.completed"

    same = c.runs_diff(careful, careful)
    assert same is not None
    assert (same.a, same.b, same.divergedAtSeq, same.eventDiffs) == (careful, careful, None, [])
    assert same.truncated is False

    diff = c.runs_diff(careful, flawed)
    assert diff is not None
    assert isinstance(diff.divergedAtSeq, int)
    assert diff.eventDiffs
    assert diff.eventDiffs[0].seq == diff.divergedAtSeq
    assert diff.stateDiff["eval"]["passed"] == {"a": True, "b": False}
    refund = next(t for t in diff.stateDiff["tasks"] if t["taskId"] == "refund-delivered-order")
    assert refund["gatedScore"]["delta"] < 0
    assert any("missing-step" in t["constraints"]["newlyViolated"] for t in refund["trials"])
