"""HTTP details a client or a proxy relies on: the run list filters by workflow in its query
(a run is never hidden behind a page of others), a path no route serves is a 404 and never a
redirect built from the client's ``Host``, and a body that repeats a key is refused."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.server import inputs
from openwop_eval.server.errors import ApiError
from tests.server.inprocess import CAREFUL, GATE_SUITE, MOCK, REFUNDS_SUITE, AppHost

REFUNDS_WORKFLOW = "eval:" + REFUNDS_SUITE.split("@")[0]


def refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error"] == code
    assert set(body) <= {"error", "message", "details"}
    return body


# --- GET /runs?workflowId= ---------------------------------------------------------------


def test_a_run_of_a_workflow_behind_a_page_of_others_is_listed(fresh_app: AppHost) -> None:
    """Two runs of the refunds suite, three runs of another suite after each: every page of
    one run of the workflow is found, and the cursor leads from the first to the second."""
    older = fresh_app.run_to_end(REFUNDS_SUITE, CAREFUL)
    for _ in range(3):
        fresh_app.run_to_end(GATE_SUITE, MOCK)
    newer = fresh_app.run_to_end(REFUNDS_SUITE, CAREFUL)
    for _ in range(3):
        fresh_app.run_to_end(GATE_SUITE, MOCK)
    query = {"workflowId": REFUNDS_WORKFLOW, "limit": "1"}
    first = fresh_app.request("GET", "/runs", params=query).json()
    assert [r["runId"] for r in first["runs"]] == [newer]
    second = fresh_app.request(
        "GET", "/runs", params={**query, "cursor": first["nextCursor"]}
    ).json()
    assert [r["runId"] for r in second["runs"]] == [older]
    assert "nextCursor" not in second
    both = fresh_app.request("GET", "/runs", params={"workflowId": REFUNDS_WORKFLOW}).json()
    assert [r["runId"] for r in both["runs"]] == [newer, older]
    assert {r["workflowId"] for r in both["runs"]} == {REFUNDS_WORKFLOW}


@pytest.mark.parametrize(
    "workflow",
    [
        REFUNDS_SUITE.split("@")[0],  # the suite id alone
        REFUNDS_WORKFLOW.upper(),
        REFUNDS_WORKFLOW + "@1.0.0",
        "eval:",
        "eval:" + "a" * 300 + ".evals.x",
        "",
        "wf-123",
    ],
)
def test_a_workflow_id_no_eval_run_has_lists_nothing(app: AppHost, workflow: str) -> None:
    app.run_to_end(REFUNDS_SUITE, CAREFUL)
    response = app.request("GET", "/runs", params={"workflowId": workflow})
    assert response.status_code == 200, response.text
    assert response.json() == {"runs": []}


# --- no redirects ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/runs/"),
        ("POST", "/runs/"),
        ("GET", "/agents/"),
        ("GET", "/.well-known/openwop/"),
        ("GET", "/openapi.json/"),
    ],
)
def test_a_trailing_slash_is_not_found_and_never_redirected(
    app: AppHost, method: str, path: str
) -> None:
    response = app.request(method, path, headers={"Host": "evil.example"}, json={})
    refused(response, 404, "not_found")
    assert "location" not in response.headers
    assert "evil.example" not in response.text


# --- repeated keys -----------------------------------------------------------------------


def test_a_run_request_that_repeats_a_key_is_refused(app: AppHost) -> None:
    head = json.dumps({"mode": "eval", "evalSuiteRef": REFUNDS_SUITE, "agentId": CAREFUL})
    raw = head[:-1] + f', "agentId": "{MOCK}"}}'
    response = app.request(
        "POST", "/runs", content=raw, headers={"Content-Type": "application/json"}
    )
    body = refused(response, 400, "validation_error")
    assert body["details"] == {"path": "$.agentId"}
    listed = app.request("GET", "/runs", params={"workflowId": REFUNDS_WORKFLOW}).json()
    assert all(r["metadata"]["agentId"] != MOCK for r in listed["runs"])


def test_a_transition_that_repeats_a_nested_key_is_refused(app: AppHost) -> None:
    raw = '{"version": "1.0.0", "transition": "promote", "reason": "r", "x": [{"k": 1, "k": 2}]}'
    response = app.request(
        "POST",
        f"/agents/{CAREFUL}/deployments",
        content=raw,
        headers={"Content-Type": "application/json"},
    )
    assert refused(response, 400, "validation_error")["details"] == {"path": "$.x[0].k"}


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        (b'{"a": 1, "a": 1}', "$.a"),
        (b'[0, {"b": {"c": [], "c": null}}]', "$[1].b.c"),
        ('{"caf\\u00e9": 1, "café": 2}'.encode(), "$[*]"),  # no key text beyond plain names
        (b'{"' + b"k" * 100 + b'": 1, "' + b"k" * 100 + b'": 2}', "$[*]"),
    ],
)
def test_a_repeated_key_is_located_without_its_text(raw: bytes, path: str) -> None:
    with pytest.raises(ApiError) as caught:
        inputs.parse_json(raw)
    assert (caught.value.status, caught.value.code) == (400, "validation_error")
    assert caught.value.details == {"path": path}


def test_a_body_that_is_not_json_after_a_repeated_key_is_not_json() -> None:
    with pytest.raises(ApiError) as caught:
        inputs.parse_json(b'{"a": 1, "a": 2, "b": [[[')
    assert caught.value.message.startswith("the body is not valid JSON")


_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
_TREES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


@given(_TREES)
def test_a_body_without_repeated_keys_decodes_as_it_did(tree: Any) -> None:
    raw = json.dumps(tree).encode()
    assert inputs.parse_json(raw) == json.loads(raw)


@given(_TREES, _TEXT)
def test_any_repeated_key_is_refused(tree: Any, key: str) -> None:
    """The key repeated in an object wrapped around any tree, at the root or nested."""
    pair = json.dumps(key) + ": 1"
    for raw in (f"{{{pair}, {pair}}}", f"[{json.dumps(tree)}, {{{pair}, {pair}}}]"):
        with pytest.raises(ApiError) as caught:
            inputs.parse_json(raw.encode())
        assert caught.value.details is not None
        assert caught.value.details["path"].startswith("$")
