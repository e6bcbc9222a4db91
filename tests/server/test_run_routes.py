"""The run routes past the refusals of hostile input: the list (newest first, paged by the
cursor it mints, filtered), discovery and its ETag, what a run request may name — a suite's
latest version, the agent a suite targets, its modes, recorded fixture runs — and an
``Idempotency-Key`` whose first request is still being answered."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_eval.core import canonical_json
from openwop_eval.protocol.deployments import STATES
from openwop_eval.protocol.ids import project
from openwop_eval.server.state import HostState
from tests.server.inprocess import (
    CAREFUL,
    FIXTURES,
    GATE_SUITE,
    MOCK,
    REFUNDS_SUITE,
    AppHost,
)

GATE_RUN = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK}
REFUNDS_RUN = {"mode": "eval", "evalSuiteRef": REFUNDS_SUITE, "agentId": CAREFUL}


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == code
    return body


def test_the_run_list_is_newest_first_and_pages_with_the_cursor_it_mints(
    fresh_app: AppHost,
) -> None:
    gate_runs = {fresh_app.run_to_end(GATE_SUITE, MOCK) for _ in range(3)}
    refunds = fresh_app.run_to_end(REFUNDS_SUITE, CAREFUL)
    fresh_app.run_to_end(GATE_SUITE, MOCK, key="globex-key")  # another tenant's: never listed
    with fresh_app.client() as c:
        everything = c.get("/runs").json()
        runs = everything["runs"]
        assert "nextCursor" not in everything  # one page holds them all
        assert {r["runId"] for r in runs} == {*gate_runs, refunds}
        stamps = [r["startedAt"] for r in runs]
        assert stamps == sorted(stamps, reverse=True)

        paged: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": 1}
        for _ in range(len(runs)):
            page = c.get("/runs", params=params).json()
            assert len(page["runs"]) == 1
            paged += page["runs"]
            if "nextCursor" not in page:
                break
            params = {"limit": 1, "cursor": page["nextCursor"]}
        assert paged == runs  # every run once, in the same order

        snapshot = next(r for r in runs if r["runId"] == refunds)
        by_workflow = c.get("/runs", params={"workflowId": snapshot["workflowId"]}).json()
        assert by_workflow["runs"] == [snapshot]
        completed = c.get("/runs", params={"status": "completed"}).json()["runs"]
        assert completed == runs
        assert c.get("/runs", params={"status": "failed"}).json() == {"runs": []}
    assert snapshot["status"] == "completed"
    assert snapshot["metadata"] == {"evalSuiteRef": REFUNDS_SUITE, "agentId": CAREFUL}
    assert snapshot["owner"]["subject"]["subjectId"] == "acme-ci"  # the key that created it
    assert snapshot["completedAt"] >= snapshot["startedAt"]


@pytest.mark.parametrize(
    "cursor",
    [
        "not base64!",
        base64.urlsafe_b64encode(b"\xff\xfe|acme/x").decode(),  # not UTF-8
        base64.urlsafe_b64encode(b"no separator").decode(),
        "x" * 1025,  # longer than any cursor the host mints
    ],
)
def test_a_cursor_the_host_did_not_mint_is_refused(app: AppHost, cursor: str) -> None:
    body = refused(app.request("GET", "/runs", params={"cursor": cursor}), 400, "validation_error")
    assert body["message"] == "the cursor was not minted by this host"


def test_a_run_id_of_the_callers_tenant_naming_no_run_is_not_found(app: AppHost) -> None:
    path = f"/runs/{project('acme/' + '0' * 24)}"
    for route in (path, f"{path}/events", f"{path}/events/poll?timeout=0", f"{path}/eval-summary"):
        body = refused(app.request("GET", route), 404, "not_found")
        assert body["message"] == "the run was not found"
    refused(app.request("POST", f"{path}/cancel"), 404, "not_found")


@pytest.mark.parametrize("projected", ["acme~2F" + "0" * 20 + "~ZZ", "acme~2F" + "0" * 20 + "~"])
def test_a_tilde_that_starts_no_escape_is_refused(app: AppHost, projected: str) -> None:
    body = refused(app.request("GET", f"/runs/{projected}"), 400, "validation_error")
    assert body["message"] == "a '~' in a run id must start a two-digit hex escape"


def test_discovery_describes_the_host_and_is_cached_by_its_etag(app: AppHost) -> None:
    first = app.request("GET", "/.well-known/openwop", key=None)
    assert first.status_code == 200
    doc = first.json()
    assert doc["protocolVersions"] == ["2.0"]
    assert doc["implementation"]["name"] == "openwop-eval"
    eval_suite = doc["agents"]["evalSuite"]
    assert eval_suite["modes"] == ["golden", "rubric", "adversarial", "regression"]  # a judge
    assert eval_suite["baselineSelection"] is True
    assert doc["agents"]["deployment"]["states"] == list(STATES)
    assert doc["agents"]["deployment"]["channels"] == ["stable"]
    assert doc["runList"]["maxPageSize"] == 100
    assert doc["fixtures"] == [
        "conformance-eval-trajectory-gate",
        "conformance-eval-trajectory-gate-mean",
    ]
    tag = first.headers["ETag"]
    cached = app.request("GET", "/.well-known/openwop", key=None, headers={"If-None-Match": tag})
    assert cached.status_code == 304
    assert cached.content == b""
    assert cached.headers["ETag"] == tag
    assert cached.headers["OpenWOP-Version"] == "2.0"
    stale = app.request(
        "GET", "/.well-known/openwop", key=None, headers={"If-None-Match": '"stale"'}
    )
    assert stale.status_code == 200
    assert stale.json() == doc


def write_suite(path: Path, suite_id: str, version: str, **extra: Any) -> None:
    """The RFC 0246 gate fixture under another id and version (the mock agent answers it)."""
    doc = json.loads((FIXTURES / "conformance-eval-trajectory-gate.suite.json").read_text())
    path.write_text(json.dumps({**doc, "suiteId": suite_id, "version": version, **extra}))


def test_a_suite_named_without_a_version_runs_its_latest(
    make_app: Callable[..., AppHost], tmp_path: Path
) -> None:
    for version in ("1.9.0", "1.10.0", "1.2.0"):  # 1.10.0 is the latest: numbers, not text
        write_suite(tmp_path / f"v{version}.json", "test.acme.evals.versions", version)
    host = make_app(suites=(str(tmp_path),))
    run_id = host.start({**GATE_RUN, "evalSuiteRef": "test.acme.evals.versions"})
    host.follow(run_id)
    snapshot = host.request("GET", f"/runs/{project(run_id)}").json()
    assert snapshot["metadata"]["evalSuiteRef"] == "test.acme.evals.versions@1.10.0"
    unknown = host.request("POST", "/runs", json={**GATE_RUN, "evalSuiteRef": "test.acme.evals.x"})
    body = refused(unknown, 400, "validation_error")
    assert body["message"] == "no suite 'test.acme.evals.x' on this host"
    assert "test.acme.evals.versions@1.10.0" in body["details"]["suites"]


def test_what_a_run_request_names_must_fit_the_suite_and_the_host(
    make_app: Callable[..., AppHost], tmp_path: Path
) -> None:
    write_suite(
        tmp_path / "targeted.json", "test.acme.evals.targeted", "1.0.0", targetAgentId=CAREFUL
    )
    host = make_app(suites=(str(tmp_path / "targeted.json"),), limits={"max_tasks_per_suite": 2})
    discovery = host.request("GET", "/.well-known/openwop").json()
    assert discovery["agents"]["evalSuite"]["maxTasksPerSuite"] == 2
    cases: list[tuple[dict[str, Any], str]] = [
        (
            {**GATE_RUN, "evalSuiteRef": "test.acme.evals.targeted@1.0.0"},
            f"the suite targets agent {CAREFUL}, not {MOCK}",
        ),
        (REFUNDS_RUN, "the suite has 3 tasks; this host runs at most 2"),
        ({**GATE_RUN, "evalModes": "golden"}, "evalModes must be a non-empty list of modes"),
        ({**GATE_RUN, "evalModes": []}, "evalModes must be a non-empty list of modes"),
    ]
    for body, message in cases:
        response = host.request("POST", "/runs", json=body)
        assert refused(response, 400, "validation_error")["message"] == message, body
    other = host.request("POST", "/runs", json={**GATE_RUN, "tenantId": "globex"})
    assert refused(other, 403, "id_tenant_mismatch")["message"] == (
        "tenantId is not the caller's tenant"
    )
    assert host.request("GET", "/runs").json() == {"runs": []}  # nothing was started
    own = host.request("POST", "/runs", json={**GATE_RUN, "tenantId": "acme"})
    assert own.status_code == 201


def test_a_rubric_suite_needs_an_agent_with_a_judge(fresh_app: AppHost) -> None:
    response = fresh_app.request("POST", "/runs", json={**REFUNDS_RUN, "agentId": MOCK})
    message = refused(response, 400, "validation_error")["message"]
    assert message.startswith("the run cannot start: tasks close-account-request are rubric")
    assert fresh_app.request("GET", "/runs").json() == {"runs": []}


def test_fixture_runs_must_be_completed_runs_of_the_suite_in_the_tenant(
    fresh_app: AppHost,
) -> None:
    refunds = fresh_app.run_to_end(REFUNDS_SUITE, CAREFUL)
    gate = fresh_app.run_to_end(GATE_SUITE, MOCK)
    foreign = fresh_app.run_to_end(REFUNDS_SUITE, CAREFUL, key="globex-key")
    task = "refund-delivered-order"
    wrong: list[Any] = [
        {},  # no entry
        [refunds],  # not a map
        {task: gate},  # a run of another suite
        {task: foreign},  # another tenant's run
        {"no-such-task": refunds},
        {task: "acme/" + "4" * 24},  # no such run
        {task: 7},
    ]
    message = (
        "fixtureRuns must map task ids of the suite to completed eval runs of the same suite"
        " in your tenant"
    )
    for fixture_runs in wrong:  # the same answer whatever the reason
        response = fresh_app.request(
            "POST", "/runs", json={**REFUNDS_RUN, "fixtureRuns": fixture_runs}
        )
        assert refused(response, 400, "validation_error")["message"] == message, fixture_runs
    replay = fresh_app.start({**REFUNDS_RUN, "fixtureRuns": {task: refunds}})
    assert fresh_app.follow(replay)[-1]["type"] == "run.completed"


def test_a_key_whose_first_request_is_unanswered_is_in_flight(fresh_app: AppHost) -> None:
    """Another host process on the same database has claimed the key and not yet answered."""
    state: HostState = fresh_app.app.state.host
    digest = hashlib.sha256(canonical_json(GATE_RUN).encode()).hexdigest()
    assert state.host_store.claim("acme", "runs.create", "k-busy", digest)[0] == "new"
    headers = {"Idempotency-Key": "k-busy"}
    response = fresh_app.request("POST", "/runs", json=GATE_RUN, headers=headers)
    assert refused(response, 409, "idempotency_in_flight")
    other = fresh_app.request("POST", "/runs", json={**GATE_RUN, "tags": ["x"]}, headers=headers)
    assert refused(other, 409, "idempotency_key_mismatch")
    assert fresh_app.request("GET", "/runs").json() == {"runs": []}
    state.host_store.settle("acme", "runs.create", "k-busy", 201, {"runId": "acme/answered"})
    replay = fresh_app.request("POST", "/runs", json=GATE_RUN, headers=headers)
    assert replay.status_code == 201
    assert replay.json() == {"runId": "acme/answered"}
    assert replay.headers["OpenWOP-Idempotent-Replay"] == "true"


def test_a_chunked_body_over_the_limit_is_refused_as_it_arrives(fresh_app: AppHost) -> None:
    def chunks() -> Any:
        yield b'{"mode": "eval", "tags": ["'
        for _ in range(1100):
            yield b"x" * 1024
        yield b'"]}'

    with fresh_app.client() as c:
        response = c.post("/runs", content=chunks())  # no Content-Length: read until too long
    assert "content-length" not in response.request.headers
    body = refused(response, 413, "payload_too_large")
    assert body["message"] == "the body is over 1048576 bytes"


def test_a_completed_summary_is_served_from_memory_after_its_first_read(
    fresh_app: AppHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = fresh_app.run_to_end(GATE_SUITE, MOCK)
    path = f"/runs/{project(run_id)}/eval-summary"
    first = fresh_app.request("GET", path)
    assert first.status_code == 200

    def no_store(*_: object, **__: object) -> None:
        raise AssertionError("the store was read for a cached summary")

    monkeypatch.setattr(fresh_app.store, "get_run", no_store)
    monkeypatch.setattr(fresh_app.store, "summary", no_store)
    again = fresh_app.request("GET", path)
    assert again.status_code == 200
    assert again.content == first.content
    assert again.headers["OpenWOP-Version"] == "2.0"
    # the tenant rule still comes first
    assert fresh_app.request("GET", path, key="globex-key").status_code == 403


def test_the_summary_cache_is_bounded() -> None:
    from openwop_eval.server.summaries import SummaryCache

    cache = SummaryCache(max_entries=2, max_bytes=10)
    cache.put("a", b"12345")
    cache.put("b", b"12345")
    assert cache.get("a") == b"12345"  # now the most recent
    cache.put("c", b"123")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"12345", None, b"123")
    cache.put("big", b"x" * 11)
    assert cache.get("big") is None
    assert len(cache) == 2
