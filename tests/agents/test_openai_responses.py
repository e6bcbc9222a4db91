"""The ``openai:MODEL`` agent on the Responses API (``api="responses"``) against a fake
``/responses`` endpoint on loopback: the same boundary, grading, cost and retries as the chat
loop, and every request a valid stateless Responses request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from openai.types.responses import EasyInputMessageParam, FunctionToolParam
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from openai.types.responses.response_function_tool_call_param import (
    ResponseFunctionToolCallParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput
from pydantic import TypeAdapter

from openwop_eval.agents import Price
from tests.agents.conftest import API_KEY, Sleeps, make_agent, run_suite
from tests.agents.test_openai_agent import ANSWER, CATALOG, ORDER, REFUNDED, refund_suite
from tests.fakes.openai_server import (
    FakeEndpoint,
    Reply,
    response_calls,
    response_reply,
    response_text,
)

USAGE = {"input_tokens": 1000, "output_tokens": 100}
SHAPES: dict[str, Any] = {
    "function_call": ResponseFunctionToolCallParam,
    "function_call_output": FunctionCallOutput,
    None: EasyInputMessageParam,
}


def keys(shape: Any) -> tuple[frozenset[str], frozenset[str]]:
    """A TypedDict's required keys and all its keys."""
    return shape.__required_keys__, shape.__required_keys__ | shape.__optional_keys__


def assert_valid_request(body: dict[str, Any]) -> None:
    """``body`` is a non-streaming ``POST /responses`` request as the ``openai`` package
    types it, without a key those types do not know, and every tool output answers a call."""
    TypeAdapter(ResponseCreateParamsNonStreaming).validate_python(body)
    assert set(body) <= keys(ResponseCreateParamsNonStreaming)[1]
    assert body["store"] is False
    assert "previous_response_id" not in body  # stateless: the whole conversation each time
    for tool in body.get("tools", []):
        required, known = keys(FunctionToolParam)
        assert required <= set(tool) <= known
    called: set[str] = set()
    for item in body["input"]:
        required, known = keys(SHAPES[item.get("type")])
        assert required <= set(item) <= known, item
        if item.get("type") == "function_call":
            called.add(item["call_id"])
        if item.get("type") == "function_call_output":
            assert item["call_id"] in called


def script_the_right_path(endpoint: FakeEndpoint, usage: dict[str, int] | None = None) -> None:
    endpoint.script(
        response_calls(("crm__lookup-order", {"orderId": "A-1"}), usage=usage),
        response_calls(("payments__refund", {"orderId": "A-1", "amountUsd": 20}), usage=usage),
        response_text(ANSWER, usage),
    )


def responses_agent(endpoint: FakeEndpoint, sleeps: Sleeps | None = None, **options: Any) -> Any:
    return make_agent(endpoint, sleeps, api="responses", **options)


def test_the_right_path_passes_over_valid_stateless_requests(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    script_the_right_path(endpoint)
    ran = run_suite(refund_suite(), responses_agent(endpoint, catalog=CATALOG), tmp_path)
    assert ran.result.summary["passed"] is True
    assert (ran.trial.score, ran.trial.gating) == (1.0, 1.0)
    assert ran.calls() == [
        ("crm:lookup-order", {"orderId": "A-1"}),
        ("payments:refund", {"orderId": "A-1", "amountUsd": 20}),
    ]
    assert ran.diagnostics()["output"] == ANSWER
    assert [r.path for r in endpoint.requests] == ["/v1/responses"] * 3
    assert endpoint.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    for request in endpoint.requests:
        assert_valid_request(request.body)
    first, third = endpoint.requests[0].body, endpoint.requests[2].body
    assert first["model"] == "agent-model"
    assert first["input"] == [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Order A-1 arrived broken. Refund me."},
    ]
    assert [t["name"] for t in first["tools"]] == [
        "accounts__delete",
        "crm__lookup-order",
        "payments__refund",
    ]
    assert first["tools"][1]["description"] == "Look an order up by its id."
    assert first["tools"][1]["strict"] is False
    # every turn resends the whole conversation; the reasoning items stay out of it
    assert third["input"][2:] == [
        {
            "type": "function_call",
            "call_id": "call_0",
            "name": "crm__lookup-order",
            "arguments": '{"orderId": "A-1"}',
        },
        {"type": "function_call_output", "call_id": "call_0", "output": json.dumps(ORDER)},
        {
            "type": "function_call",
            "call_id": "call_0",
            "name": "payments__refund",
            "arguments": '{"orderId": "A-1", "amountUsd": 20}',
        },
        {"type": "function_call_output", "call_id": "call_0", "output": json.dumps(REFUNDED)},
    ]


def test_the_wrong_path_scores_the_answer_and_gates_0(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(response_calls(("payments__refund", {"orderId": "A-1"})), response_text(ANSWER))
    ran = run_suite(refund_suite(), responses_agent(endpoint), tmp_path)
    assert ran.calls() == [("payments:refund", {"orderId": "A-1"})]
    assert (ran.trial.score, ran.trial.gating, ran.trial.passed) == (1.0, 0.0, False)
    assert ran.result.summary["passed"] is False


def test_a_miss_goes_back_as_the_calls_output_and_fails_closed(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(response_calls(("accounts__delete", {})), response_text(ANSWER))
    ran = run_suite(refund_suite(), responses_agent(endpoint), tmp_path)
    sent = endpoint.requests[1].body["input"][-1]
    assert (sent["type"], sent["call_id"]) == ("function_call_output", "call_0")
    error = json.loads(sent["output"])["error"]
    assert error["kind"] == "fixture-miss"
    assert ran.trial.outcome == "failed-closed"
    assert (ran.trial.score, ran.trial.gating) == (0.0, 0.0)


def test_cost_is_priced_from_input_and_output_tokens(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    script_the_right_path(endpoint, USAGE)
    agent = responses_agent(endpoint, prices={"agent-model": Price(1, 2)})
    ran = run_suite(refund_suite(), agent, tmp_path)
    # (3 · 1000 · 1 + 3 · 100 · 2) / 1e6
    assert ran.scored()[0]["costUsd"] == pytest.approx(0.0036)
    usage = ran.diagnostics()["transcript"]["usage"]
    assert usage == {"promptTokens": 3000, "completionTokens": 300, "complete": True}


def test_a_turn_without_usage_leaves_the_cost_unknown(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(
        response_calls(("crm__lookup-order", {"orderId": "A-1"}), usage=USAGE),
        response_calls(("payments__refund", {"orderId": "A-1"})),
        response_text(ANSWER, USAGE),
    )
    agent = responses_agent(endpoint, prices={"agent-model": Price(1, 2)})
    ran = run_suite(refund_suite(), agent, tmp_path)
    assert "costUsd" not in ran.scored()[0]
    assert ran.trial.passed


def test_5xx_is_retried_with_backoff_then_the_trial_goes_on(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(
        Reply(503, "unavailable"),
        Reply(429, "slow down", {"Retry-After": "4"}),
        response_calls(("crm__lookup-order", {"orderId": "A-1"})),
        response_calls(("payments__refund", {"orderId": "A-1"})),
        response_text(ANSWER),
    )
    sleeps = Sleeps()
    ran = run_suite(refund_suite(), responses_agent(endpoint, sleeps), tmp_path)
    assert sleeps.delays == [0.5, 4.0]
    assert endpoint.requests[0].body == endpoint.requests[1].body == endpoint.requests[2].body
    assert ran.trial.passed
    turns = ran.diagnostics()["transcript"]["turns"]
    assert turns[0]["retries"] == [
        "attempt 1: HTTP 503: unavailable",
        "attempt 2: HTTP 429: slow down",
    ]


def test_an_endpoint_that_keeps_failing_errors_the_trial(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.respond = lambda seen: Reply(502, "bad gateway")
    ran = run_suite(refund_suite(), responses_agent(endpoint, max_attempts=2), tmp_path)
    assert len(endpoint.requests) == 2
    assert ran.trial.outcome == "errored"
    error = ran.diagnostics()["error"]
    assert f"no response from {endpoint.url}/responses after 2 attempt(s)" in error


def test_a_chat_completion_is_not_a_response(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    chat = {"choices": [{"message": {"role": "assistant", "content": "hi"}}]}
    endpoint.respond = lambda seen: Reply(200, json.dumps(chat))
    ran = run_suite(refund_suite(), responses_agent(endpoint, max_attempts=2), tmp_path)
    assert "attempt 2: the response is not a Responses API response" in ran.diagnostics()["error"]


def test_the_step_cap_errors_the_trial_with_its_transcript(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.respond = lambda seen: response_calls(("crm__lookup-order", {"orderId": "A-1"}))
    ran = run_suite(refund_suite(), responses_agent(endpoint, max_turns=2), tmp_path)
    assert len(endpoint.requests) == 2
    assert ran.trial.outcome == "errored"
    assert "the model took 2 turns without a final answer" in ran.diagnostics()["error"]
    items = ran.diagnostics()["transcript"]["items"]
    assert [i.get("type", i.get("role")) for i in items] == [
        "user",
        *["function_call", "function_call_output"] * 2,
    ]


def test_the_transcript_goes_to_the_report_never_to_events(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    script_the_right_path(endpoint, USAGE)
    ran = run_suite(refund_suite(), responses_agent(endpoint, catalog=CATALOG), tmp_path)
    transcript = ran.diagnostics()["transcript"]
    assert (transcript["agent"], transcript["api"]) == ("openai", "responses")
    assert "messages" not in transcript
    assert transcript["items"][-1] == {"role": "assistant", "content": ANSWER}
    assert transcript["functions"]["crm__lookup-order"] == "crm:lookup-order"
    assert transcript["turns"][0] == {
        "model": "agent-model-2024",
        "promptTokens": 1000,
        "completionTokens": 100,
        "finishReason": "completed",
        "retries": [],
    }
    text = json.dumps(ran.events)
    assert ANSWER not in text
    assert "You are a support agent." not in text


def test_text_beside_calls_is_sent_back_before_them(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.script(
        response_reply(
            {"type": "reasoning", "id": "rs_9", "summary": []},
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "Let me look.", "annotations": []},
                    {"type": "output_text", "text": " One moment.", "annotations": []},
                ],
            },
            {"type": "function_call", "call_id": "c9", "name": "crm__lookup-order"},
        ),
        response_text(ANSWER),
    )
    run_suite(refund_suite(), responses_agent(endpoint), tmp_path)
    sent = endpoint.requests[1].body["input"][1:]
    assert sent[:2] == [
        {"role": "assistant", "content": "Let me look. One moment."},
        {"type": "function_call", "call_id": "c9", "name": "crm__lookup-order", "arguments": ""},
    ]
    assert sent[2]["call_id"] == "c9"
    assert_valid_request(endpoint.requests[1].body)
