"""Hostile requests get a 4xx and the error envelope, never a 500, on SQLite and PostgreSQL.

Each case once answered 500 (issue 8, defect 8): PostgreSQL refuses NUL in text and strings
longer than their column, the canonical JSON behind ``Idempotency-Key`` refuses NaN, the JSON
decoder recurses, and an SSE cursor past 2^63 aborted the stream after it had started.
"""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from openwop_eval.base import limits
from openwop_eval.protocol.ids import project
from openwop_eval.server import inputs
from openwop_eval.store import schema
from tests.hosts import ROOT
from tests.server.inprocess import CAREFUL, GATE_SUITE, MOCK, AppHost, run_routes

RUN = "acme/" + "0" * 24


def refused(response: httpx.Response, status: int | None = None) -> dict[str, Any]:
    """The response is a 4xx (``status`` when given) carrying the error envelope."""
    assert 400 <= response.status_code < 500, (response.status_code, response.text)
    if status is not None:
        assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert isinstance(body["error"], str)
    assert isinstance(body["message"], str)
    assert body["error"]
    assert body["message"]
    assert set(body) <= {"error", "message", "details"}
    return body


@pytest.fixture(scope="module")
def finished(app: AppHost) -> str:
    """A completed eval run that did not pass: the fixture's wrong-path task is gated."""
    return app.run_to_end(GATE_SUITE, MOCK)


def promote(app: AppHost, agent: str = CAREFUL, **body: Any) -> httpx.Response:
    return app.request("POST", f"/agents/{agent}/deployments", json=body)


@pytest.mark.parametrize(
    "projected",
    ["acme~2F~FF~FE", "acme~2F~C3", "acme~2Fr~ED~A0~80" + "0" * 20, "~FF~2F" + "0" * 24],
)
def test_an_undecodable_projected_run_id_is_refused(app: AppHost, projected: str) -> None:
    for method, path in run_routes(projected):
        assert refused(app.request(method, path), 400)["error"] == "validation_error"


@pytest.mark.parametrize(
    "projected",
    [
        "acme~2F~00" + "0" * 23,
        "acme~2F" + "0" * 23 + "%00",
        "acme~00~2F" + "0" * 24,
        "acme~2F" + "0" * 500,  # longer than any run id
        "acme~2F" + "0" * 10_000,
        "acme~2F" + "0" * 23 + "~0A",
    ],
)
def test_a_run_id_that_cannot_exist_is_refused(app: AppHost, projected: str) -> None:
    for method, path in run_routes(projected):
        code = refused(app.request(method, path))["error"]
        assert code in ("not_found", "validation_error", "id_tenant_mismatch")


@pytest.mark.parametrize(
    "query",
    [
        "status=%00",
        "status=running%00",
        "status=" + "r" * 500,
        "status=nonsense",
        "workflowId=%00",
        "limit=%00",
        "limit=" + "9" * 5000,
        "cursor=%00",
        "cursor=" + base64.urlsafe_b64encode(b"2024-01-01T00:00:00Z|acme/\x00").decode(),
        "cursor=" + base64.urlsafe_b64encode(b"2024\x00|" + RUN.encode()).decode(),
        "cursor=" + base64.urlsafe_b64encode(b"2024-01-01T00:00:00Z|" + b"a" * 400).decode(),
        "cursor=" + "A" * 5000,
    ],
)
def test_hostile_run_list_queries_are_refused(app: AppHost, query: str) -> None:
    assert refused(app.request("GET", f"/runs?{query}"), 400)["error"] == "validation_error"


def test_every_protocol_status_filters_the_list(app: AppHost) -> None:
    for status in ("pending", "running", "paused", "waiting-input", "cancelling", "completed"):
        assert app.request("GET", f"/runs?status={status}").status_code == 200


@pytest.mark.parametrize(
    "extra",
    [
        {"version": "1" * (inputs.MAX_VERSION_CHARS + 1)},
        {"version": "1.0\x00"},
        {"version": "1.0\n"},
        {"evalRunId": "acme/" + "1" * 400},
        {"evalRunId": "acme/" + "1" * 23 + "\x00"},
        {"evalRunId": "acme/" + "1" * 10_000},
        {"evalRunId": ""},
        {"channel": "stable\x00"},
        {"channel": "s" * 10_000},
        {"toState": "test\x00"},
        {"reason": "x\x00"},
    ],
)
def test_hostile_deployment_strings_are_refused(app: AppHost, extra: dict[str, Any]) -> None:
    # promote draft → test is not gated here, so these reach the store's bounded columns
    body = {"version": "1.0.0", "transition": "promote", "toState": "test", **extra}
    refused(promote(app, **body), 400)
    gated = {"toState": "active", **extra}  # refused before the gate is consulted
    refused(promote(app, **{**body, **gated}), 400)
    assert app.request("GET", f"/agents/{CAREFUL}/deployments").json() == []


@pytest.mark.parametrize(
    "body",
    [
        {"evalSuiteRef": "x" * 10_000},
        {"evalSuiteRef": GATE_SUITE + "\x00"},
        {"agentId": "a" * 10_000},
        {"agentId": MOCK + "\x00"},
        {"tenantId": "acme\x00"},
        {"fixtureRuns": {"matched-path": "acme/" + "2" * 10_000}},
        {"fixtureRuns": {"matched-path": "acme/" + "2" * 23 + "\x00"}},
        {"fixtureRuns": {"matched-path\x00": RUN}},
        {"tags": ["\x00"]},
        {"metadata": {"k\x00": 1}},
    ],
)
def test_hostile_run_request_strings_are_refused(app: AppHost, body: dict[str, Any]) -> None:
    payload = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK, **body}
    refused(app.request("POST", "/runs", json=payload))
    refused(app.request("POST", "/runs", json=payload, headers={"Idempotency-Key": "k-str"}))


@pytest.mark.parametrize(
    "key",
    ["k" * (inputs.MAX_IDEMPOTENCY_KEY_CHARS + 1), "k" * 100_000, "k\x00", "k\x7f", "k\xff"],
)
def test_a_hostile_idempotency_key_is_refused(app: AppHost, key: str) -> None:
    headers = [(b"Idempotency-Key", key.encode("latin-1"))]
    body = {"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK}
    assert refused(app.request("POST", "/runs", json=body, headers=headers), 400)["error"] in (
        "idempotency_key_invalid",
        "validation_error",
    )
    deploy = {"version": "1.0.0", "transition": "promote", "toState": "test"}
    refused(app.request("POST", f"/agents/{CAREFUL}/deployments", json=deploy, headers=headers))


def test_nul_in_a_repeated_header_is_refused(app: AppHost, finished: str) -> None:
    headers = [(b"Last-Event-ID", b"1\x00"), (b"Last-Event-ID", b"1")]
    response = app.request("GET", f"/runs/{project(finished)}/events", headers=headers)
    assert refused(response, 400)["error"] == "validation_error"


@pytest.mark.parametrize(
    ("agent", "status"),
    [("a" * 10_000, 404), ("%FF%FE", 404), ("~FF", 404), ("a%00", 400), (f"{CAREFUL}%00", 400)],
)
def test_a_hostile_agent_id_in_the_path_is_refused(app: AppHost, agent: str, status: int) -> None:
    for method, path in [
        ("GET", f"/agents/{agent}"),
        ("GET", f"/agents/{agent}/deployments"),
        ("POST", f"/agents/{agent}/deployments"),
    ]:
        body = {"version": "1.0.0", "transition": "promote"}
        refused(app.request(method, path, json=body), status)


def nested(depth: int) -> bytes:
    return b'{"mode":' * depth + b"1" + b"}" * depth


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 200_000 + b"]" * 200_000,  # under the body limit, far over the decoder's stack
        b"[" * 5_000,  # unterminated
        nested(2_000),
        nested(inputs.MAX_JSON_DEPTH + 1),
        b'{"tags": ' + b"[" * (inputs.MAX_JSON_DEPTH) + b"]" * (inputs.MAX_JSON_DEPTH) + b"}",
    ],
)
def test_deeply_nested_json_is_refused(app: AppHost, finished: str, raw: bytes) -> None:
    headers = {"Content-Type": "application/json"}
    for path in ("/runs", f"/agents/{CAREFUL}/deployments", f"/runs/{project(finished)}/cancel"):
        for extra in ({}, {"Idempotency-Key": "k-deep"}):
            response = app.request("POST", path, content=raw, headers={**headers, **extra})
            assert refused(response, 400)["error"] == "validation_error"


def test_nesting_up_to_the_limit_is_decoded(app: AppHost) -> None:
    depth = inputs.MAX_JSON_DEPTH - 1  # the body object itself is one level
    metadata = b"[" * depth + b"]" * depth
    body = b'{"mode":"eval","evalSuiteRef":"%s","agentId":"%s","metadata":%s}' % (
        GATE_SUITE.encode(),
        MOCK.encode(),
        metadata,
    )
    response = app.request("POST", "/runs", content=body, headers={"Idempotency-Key": "k-at-limit"})
    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    "value",
    [
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e400",
        b"-1e400",
        b"9007199254740992",  # 2^53: canonical JSON (RFC 8785) cannot represent it exactly
        b"-9007199254740992",
        b"1" + b"0" * 5000,
        b'"\\ud800"',  # a lone surrogate: not UTF-8
        b'"\\udfff\\ud800"',
        b'"\\u0000"',
    ],
)
def test_values_the_store_cannot_hold_are_refused(app: AppHost, value: bytes) -> None:
    headers = {"Content-Type": "application/json", "Idempotency-Key": "k-num"}
    create = b'{"mode":"eval","evalSuiteRef":"%s","agentId":"%s","metadata":{"x":%s}}' % (
        GATE_SUITE.encode(),
        MOCK.encode(),
        value,
    )
    assert refused(app.request("POST", "/runs", content=create, headers=headers), 400)
    deploy = b'{"version":"1.0.0","transition":"promote","toState":"test","reason":%s}' % value
    path = f"/agents/{CAREFUL}/deployments"
    assert refused(app.request("POST", path, content=deploy, headers=headers), 400)
    keyed = b'{"%s": 1}' % value.strip(b'"') if value.startswith(b'"') else None
    if keyed is not None:  # the same string as an object key
        assert refused(app.request("POST", "/runs", content=keyed, headers=headers), 400)
    assert app.request("GET", f"/agents/{CAREFUL}/deployments").json() == []


CURSORS = [
    str(2**63),
    str(2**64 + 1),
    "9" * 5000,
    "-2",
    "-9223372036854775809",
    "abc",
    "1.5",
    "1e3",
    " 1",
    "\u0661",  # an Arabic-Indic digit, which int() would accept
    "1_000",
    "0x10",
    "%00",
]


@pytest.mark.parametrize("cursor", CURSORS)
def test_an_sse_cursor_out_of_range_is_refused_before_the_stream(
    app: AppHost, finished: str, cursor: str
) -> None:
    path = f"/runs/{project(finished)}/events"
    response = app.request("GET", path, headers=[(b"Last-Event-ID", cursor.encode())])
    assert refused(response, 400)["error"] == "validation_error"


@pytest.mark.parametrize("cursor", CURSORS)
def test_a_poll_cursor_out_of_range_is_refused(app: AppHost, finished: str, cursor: str) -> None:
    path = f"/runs/{project(finished)}/events/poll?timeout=0&afterSequence={cursor}"
    assert refused(app.request("GET", path), 400)["error"] == "validation_error"


@pytest.mark.parametrize("timeout", ["nan", "inf", "-1", "61", "1e999", "9" * 5000, "%00"])
def test_a_hostile_poll_timeout_is_refused(app: AppHost, finished: str, timeout: str) -> None:
    path = f"/runs/{project(finished)}/events/poll?timeout={timeout}"
    assert refused(app.request("GET", path), 400)["error"] == "validation_error"


def test_cursors_at_the_edges_of_the_range_are_served(app: AppHost, finished: str) -> None:
    path = f"/runs/{project(finished)}/events"
    for cursor in ("-1", "0", str(2**63 - 1)):  # -1 is the empty log's lastSequence
        poll = app.request("GET", f"{path}/poll?timeout=0&afterSequence={cursor}")
        assert poll.status_code == 200, poll.text
        stream = app.request("GET", path, headers={"Last-Event-ID": cursor})
        assert stream.status_code == 200, stream.text
        assert stream.headers["content-type"].startswith("text/event-stream")
    everything = app.request("GET", f"{path}/poll?timeout=0&afterSequence=-1").json()
    assert everything["events"][0]["sequence"] == 0


def test_unknown_routes_and_methods_get_the_envelope(app: AppHost) -> None:
    for method, path in [
        ("GET", "/nope"),
        ("DELETE", "/runs"),
        ("PUT", f"/runs/{project(RUN)}"),
        ("POST", "/agents"),
        ("GET", "/runs/a/b/c/d"),
    ]:
        assert refused(app.request(method, path), 404)["error"] == "not_found"


def test_an_unexpected_failure_is_a_content_free_500(
    app: AppHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("secret detail from deep inside")

    monkeypatch.setattr(app.store, "get_run", broken)
    response = app.request("GET", f"/runs/{project(RUN)}", strict=False)
    assert response.status_code == 500
    assert response.json() == {"error": "internal_error", "message": "the host failed to answer"}
    assert response.headers["OpenWOP-Version"] == "2.0"


def test_hostile_promotions_never_open_the_gate(app: AppHost, finished: str) -> None:
    """The finished run did not pass (the fixture's wrong path); no spelling opens the gate."""
    spellings = [
        finished,
        finished + "\x00",
        finished.upper(),
        project(finished),
        finished + " ",
        " " + finished,
        finished + "/",
        finished + "0" * 300,
        finished.replace("/", "%2F"),
    ]
    for run_id in spellings:
        for to_state in ("staged", "active"):
            response = promote(
                app,
                agent=MOCK,
                version="2.0.0",
                transition="promote",
                toState=to_state,
                evalRunId=run_id,
            )
            assert response.status_code in (400, 422), response.text
            refused(response)
    assert app.request("GET", f"/agents/{MOCK}/deployments").json() == []


@pytest.mark.parametrize(
    ("limit", "table", "column"),
    [
        (inputs.MAX_RUN_ID_CHARS, schema.runs, "run_id"),
        (inputs.MAX_RUN_ID_CHARS, schema.deployments, "eval_run_id"),
        (inputs.MAX_TENANT_CHARS, schema.runs, "tenant"),
        (inputs.MAX_TENANT_CHARS, schema.deployments, "tenant"),
        (inputs.MAX_TENANT_CHARS, schema.idempotency, "tenant"),
        (inputs.MAX_AGENT_ID_CHARS, schema.runs, "agent_id"),
        (inputs.MAX_AGENT_ID_CHARS, schema.deployments, "agent_id"),
        (inputs.MAX_VERSION_CHARS, schema.deployments, "version"),
        (inputs.MAX_VERSION_CHARS, schema.deployments, "rollback_pointer"),
        (inputs.MAX_IDEMPOTENCY_KEY_CHARS, schema.idempotency, "key"),
        (inputs.MAX_OPERATION_CHARS, schema.idempotency, "operation"),
        (limits.MAX_SUITE_ID_CHARS, schema.runs, "suite_id"),
        (limits.MAX_SUITE_VERSION_CHARS, schema.runs, "suite_version"),
        (limits.MAX_TASK_ID_CHARS, schema.trial_results, "task_id"),
    ],
)
def test_the_limits_fit_the_store_columns(limit: int, table: Any, column: str) -> None:
    assert table.c[column].type.length >= limit


def test_every_host_limit_is_documented() -> None:
    text = (ROOT / "docs" / "limits.md").read_text().split("## Host", 1)[1]
    names = [n for n in vars(inputs) if n.startswith("MAX_") and n not in vars(limits)]
    assert [n for n in names if n not in text] == []
    assert "## Limits" in (ROOT / "docs" / "host.md").read_text()


def test_the_stored_sequence_bound_is_the_columns() -> None:
    """A cursor is read as at most MAX_STORED_SEQUENCE because the column is 64-bit; another
    width would make that bound, and the clamp, move."""
    assert type(schema.events.c.sequence.type) is sa.BigInteger
    assert inputs.MAX_STORED_SEQUENCE == 2**63 - 1
