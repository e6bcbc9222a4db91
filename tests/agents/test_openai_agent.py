"""The ``openai:MODEL`` agent against a fake chat-completions endpoint on loopback: what it
sends (tools, messages, tool results, retries) and what the run grades of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents import Price, ToolCatalog, ToolSpec
from openwop_eval.agents.tool_catalog import PERMISSIVE
from tests.agents.conftest import API_KEY, Sleeps, make_agent, run_suite
from tests.fakes.openai_server import FakeEndpoint, Reply, completion, tool_calls
from tests.helpers import suite_doc

LOOKUP_SCHEMA = {
    "type": "object",
    "properties": {"orderId": {"type": "string"}},
    "required": ["orderId"],
}
CATALOG = ToolCatalog(
    {
        "crm:lookup-order": ToolSpec("Look an order up by its id.", LOOKUP_SCHEMA),
        "accounts:delete": ToolSpec("Delete the customer's account."),
    },
    {"agent-model": Price(1.0, 2.0)},
    system_prompt="You are a support agent.",
)
ORDER = {"orderId": "A-1", "totalUsd": 20}
REFUNDED = {"status": "refunded"}
ANSWER = "Your order A-1 was refunded."


def refund_task(**fixtures: Any) -> dict[str, Any]:
    responses = [
        {"tool": "crm:lookup-order", "response": ORDER},
        {"tool": "payments:refund", "response": REFUNDED},
    ]
    responses += [{"tool": tool, "response": r} for tool, r in fixtures.items()]
    return {
        "taskId": "refund",
        "input": {"message": "Order A-1 arrived broken. Refund me."},
        "expected": {
            "kind": "golden",
            "match": {"strategy": "contains", "value": "refunded"},
            "trajectory": {
                "steps": [
                    {"tool": "crm:lookup-order", "args": {"orderId": "A-1"}},
                    {"tool": "payments:refund", "args": {"orderId": "A-1"}},
                ],
                "forbidden": ["accounts:delete"],
            },
        },
        "fixtures": {"toolResponses": responses},
    }


def refund_suite(**fixtures: Any) -> dict[str, Any]:
    return suite_doc(refund_task(**fixtures), pass_score=1)


def script_the_right_path(endpoint: FakeEndpoint) -> None:
    endpoint.script(
        tool_calls(("crm__lookup-order", {"orderId": "A-1"})),
        tool_calls(("payments__refund", {"orderId": "A-1", "amountUsd": 20})),
        completion(ANSWER, model="agent-model-2024"),
    )


def test_the_tools_are_offered_with_their_schemas_and_mapped_names(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    script_the_right_path(endpoint)
    run_suite(refund_suite(), make_agent(endpoint, catalog=CATALOG), tmp_path)
    first = endpoint.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == f"Bearer {API_KEY}"
    assert first.body["model"] == "agent-model"
    assert first.body["messages"] == [
        {"role": "system", "content": "You are a support agent."},
        {"role": "user", "content": "Order A-1 arrived broken. Refund me."},
    ]
    assert first.body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "accounts__delete",  # from the catalog, though no fixture serves it
                "description": "Delete the customer's account.",
                "parameters": PERMISSIVE,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "crm__lookup-order",
                "description": "Look an order up by its id.",
                "parameters": LOOKUP_SCHEMA,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "payments__refund",  # known from the fixtures only: any object
                "description": "The payments:refund tool.",
                "parameters": PERMISSIVE,
            },
        },
    ]
    assert "temperature" not in first.body


def test_tool_results_go_back_as_tool_messages_until_the_answer(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    script_the_right_path(endpoint)
    ran = run_suite(refund_suite(), make_agent(endpoint, catalog=CATALOG), tmp_path)
    assert len(endpoint.requests) == 3
    second = endpoint.requests[1].body["messages"]
    assert second[2] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "crm__lookup-order", "arguments": '{"orderId": "A-1"}'},
            }
        ],
    }
    assert second[3] == {"role": "tool", "tool_call_id": "call_0", "content": json.dumps(ORDER)}
    third = endpoint.requests[2].body["messages"]
    assert third[:4] == second
    assert json.loads(third[5]["content"]) == REFUNDED
    assert ran.calls() == [
        ("crm:lookup-order", {"orderId": "A-1"}),
        ("payments:refund", {"orderId": "A-1", "amountUsd": 20}),
    ]
    assert ran.diagnostics()["output"] == ANSWER
    assert ran.result.summary["passed"] is True
    assert (ran.trial.score, ran.trial.gating) == (1.0, 1.0)


def test_a_forbidden_call_is_gated(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.script(
        tool_calls(("crm__lookup-order", {"orderId": "A-1"})),
        tool_calls(("accounts__delete", {"customerId": "C-1"})),
        tool_calls(("payments__refund", {"orderId": "A-1"})),
        completion(ANSWER),
    )
    doc = refund_suite(**{"accounts:delete": {"deleted": True}})
    ran = run_suite(doc, make_agent(endpoint, catalog=CATALOG), tmp_path)
    assert ("accounts:delete", {"customerId": "C-1"}) in ran.calls()
    assert (ran.trial.score, ran.trial.gating, ran.trial.passed) == (1.0, 0.0, False)
    assert "forbidden tool accounts:delete" in str(ran.trial.reasons[0])
    assert ran.result.summary["passed"] is False


def test_the_right_answer_by_the_wrong_path_scores_1_and_gates_0(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(tool_calls(("payments__refund", {"orderId": "A-1"})), completion(ANSWER))
    ran = run_suite(refund_suite(), make_agent(endpoint, catalog=CATALOG), tmp_path)
    assert ran.calls() == [("payments:refund", {"orderId": "A-1"})]
    assert (ran.trial.score, ran.trial.gating) == (1.0, 0.0)
    assert [s["score"] for s in ran.scored()] == [1.0]
    assert ran.result.summary["tasks"][0]["gatedScore"] == 0


def test_a_miss_goes_back_to_the_model_and_the_trial_fails_closed(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(tool_calls(("accounts__delete", {})), completion(ANSWER))
    ran = run_suite(refund_suite(), make_agent(endpoint, catalog=CATALOG), tmp_path)
    sent = endpoint.requests[1].body["messages"][-1]
    assert sent["role"] == "tool"
    error = json.loads(sent["content"])["error"]
    assert error["kind"] == "fixture-miss"
    assert "call to accounts:delete missed" in error["message"]
    assert ran.trial.outcome == "failed-closed"
    assert (ran.trial.score, ran.trial.gating) == (0.0, 0.0)
    assert ran.diagnostics()["output"] == ANSWER  # the model went on and answered


def test_a_tool_it_was_never_offered_is_still_an_attempt(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(tool_calls(("billing__wipe", {}), ("made up!", {})), completion(ANSWER))
    ran = run_suite(refund_suite(), make_agent(endpoint), tmp_path)
    assert ran.calls() == [("billing:wipe", {}), ("made up!", {})]
    assert ran.trial.outcome == "failed-closed"


def test_parallel_tool_calls_run_in_the_order_given(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.script(
        tool_calls(
            ("crm__lookup-order", {"orderId": "A-1"}),
            ("payments__refund", {"orderId": "A-1"}),
        ),
        completion(ANSWER),
    )
    ran = run_suite(refund_suite(), make_agent(endpoint), tmp_path)
    assert [tool for tool, _ in ran.calls()] == ["crm:lookup-order", "payments:refund"]
    messages = endpoint.requests[1].body["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in messages[-2:]] == [
        ("tool", "call_0"),
        ("tool", "call_1"),
    ]
    assert ran.trial.passed


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ('{"orderId": "A-1"', "the arguments are not valid JSON"),
        ("[1, 2]", "the arguments must be a JSON object, got an array"),
        ('{"n": NaN}', "the arguments are not valid JSON"),
    ],
)
def test_arguments_that_are_not_a_json_object_are_recorded_raw(
    endpoint: FakeEndpoint, tmp_path: Path, arguments: str, problem: str
) -> None:
    endpoint.script(tool_calls(("crm__lookup-order", arguments)), completion(ANSWER))
    ran = run_suite(refund_suite(), make_agent(endpoint), tmp_path)
    assert ran.calls() == [("crm:lookup-order", {"$raw": arguments})]
    error = json.loads(endpoint.requests[1].body["messages"][-1]["content"])["error"]
    assert error["kind"] == "invalid-arguments"
    assert error["message"].startswith(problem)
    assert ran.trial.trajectory is not None
    assert not ran.trial.trajectory.matched


def test_blank_arguments_are_no_arguments(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.script(tool_calls(("crm__lookup-order", "")), completion(ANSWER))
    ran = run_suite(refund_suite(), make_agent(endpoint), tmp_path)
    assert ran.calls() == [("crm:lookup-order", {})]


def test_the_step_cap_errors_the_trial(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.respond = lambda seen: tool_calls(("crm__lookup-order", {"orderId": "A-1"}))
    ran = run_suite(refund_suite(), make_agent(endpoint, max_turns=3), tmp_path)
    assert len(endpoint.requests) == 3
    assert ran.trial.outcome == "errored"
    diagnostics = ran.diagnostics()
    assert diagnostics["error"] == (
        "OpenAIAgentError: the model took 3 turns without a final answer (the step cap)"
    )
    transcript = diagnostics["transcript"]
    assert len(transcript["turns"]) == 3
    assert [m["role"] for m in transcript["messages"]] == ["user", *["assistant", "tool"] * 3]


def test_the_catalog_sets_the_step_cap_and_temperature(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.respond = lambda seen: tool_calls(("crm__lookup-order", {"orderId": "A-1"}))
    catalog = ToolCatalog({}, {}, max_turns=2, temperature=0.0)
    run_suite(refund_suite(), make_agent(endpoint, catalog=catalog), tmp_path)
    assert len(endpoint.requests) == 2
    assert endpoint.requests[0].body["temperature"] == 0


def test_429_and_5xx_are_retried_with_backoff_honouring_retry_after(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(
        Reply(429, "slow down", {"Retry-After": "7"}),
        Reply(503, "unavailable"),
        tool_calls(("crm__lookup-order", {"orderId": "A-1"})),
        Reply(500, "boom"),
        tool_calls(("payments__refund", {"orderId": "A-1"})),
        completion(ANSWER),
    )
    sleeps = Sleeps()
    ran = run_suite(refund_suite(), make_agent(endpoint, sleeps), tmp_path)
    assert sleeps.delays == [7.0, 1.0, 0.5]  # per turn: 0.5 · 2^(n-1), at least Retry-After
    assert endpoint.requests[0].body == endpoint.requests[1].body == endpoint.requests[2].body
    assert endpoint.requests[3].body == endpoint.requests[4].body
    assert ran.trial.passed
    turns = ran.diagnostics()["transcript"]["turns"]
    assert turns[0]["retries"] == [
        "attempt 1: HTTP 429: slow down",
        "attempt 2: HTTP 503: unavailable",
    ]
    assert turns[1]["retries"] == ["attempt 1: HTTP 500: boom"]


def test_an_endpoint_that_keeps_failing_errors_the_trial_not_the_run(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.respond = lambda seen: Reply(502, "bad gateway")
    sleeps = Sleeps()
    ran = run_suite(refund_suite(), make_agent(endpoint, sleeps, max_attempts=3), tmp_path)
    assert len(endpoint.requests) == 3
    assert sleeps.delays == [0.5, 1.0]  # no wait after the last attempt
    assert ran.trial.outcome == "errored"
    error = ran.diagnostics()["error"]
    assert "no completion from" in error
    assert "after 3 attempt(s):\n  attempt 1: HTTP 502: bad gateway" in error


def test_a_refusal_errors_the_trial_at_once_without_the_key(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    echo = {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}
    endpoint.script(Reply(401, json.dumps(echo)))
    ran = run_suite(refund_suite(), make_agent(endpoint), tmp_path)
    assert len(endpoint.requests) == 1
    error = ran.diagnostics()["error"]
    assert "answered HTTP 401" in error
    assert "Incorrect API key provided: [redacted]" in error
    assert API_KEY not in json.dumps(list(ran.result.diagnostics.values()))
    assert API_KEY not in json.dumps(ran.events)


def test_cost_is_summed_from_usage_at_the_model_price(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    endpoint.script(
        tool_calls(
            ("crm__lookup-order", {"orderId": "A-1"}),
            ("payments__refund", {"orderId": "A-1"}),
            usage={"prompt_tokens": 1000, "completion_tokens": 100},
        ),
        completion(ANSWER, usage={"prompt_tokens": 3000, "completion_tokens": 400}),
    )
    ran = run_suite(
        refund_suite(), make_agent(endpoint, prices={"agent-model": Price(1, 2)}), tmp_path
    )
    # (4000 · 1 + 500 · 2) / 1e6
    assert ran.scored()[0]["costUsd"] == pytest.approx(0.005)
    usage = ran.diagnostics()["transcript"]["usage"]
    assert usage == {"promptTokens": 4000, "completionTokens": 500, "complete": True}


def test_without_usage_or_price_the_cost_is_unknown(endpoint: FakeEndpoint, tmp_path: Path) -> None:
    endpoint.script(
        tool_calls(("crm__lookup-order", {"orderId": "A-1"})),
        tool_calls(
            ("payments__refund", {"orderId": "A-1"}),
            usage={"prompt_tokens": 10, "completion_tokens": 1},
        ),
        completion(ANSWER, usage={"prompt_tokens": 10, "completion_tokens": 1}),
    )
    agent = make_agent(endpoint, prices={"agent-model": Price(1, 2)})
    ran = run_suite(refund_suite(), agent, tmp_path)
    assert "costUsd" not in ran.scored()[0]  # one turn had no usage: not a made-up number
    assert ran.diagnostics()["transcript"]["usage"]["complete"] is False
    assert ran.trial.passed


def test_the_transcript_goes_to_the_report_never_to_events(
    endpoint: FakeEndpoint, tmp_path: Path
) -> None:
    script_the_right_path(endpoint)
    ran = run_suite(refund_suite(), make_agent(endpoint, catalog=CATALOG), tmp_path)
    transcript = ran.diagnostics()["transcript"]
    assert transcript["model"] == "agent-model"
    assert transcript["functions"]["crm__lookup-order"] == "crm:lookup-order"
    assert transcript["messages"][0]["content"] == "You are a support agent."
    assert transcript["messages"][-1] == {"role": "assistant", "content": ANSWER}
    assert [t["model"] for t in transcript["turns"]] == ["agent-model-2024"] * 3
    text = json.dumps(ran.events)
    assert "You are a support agent." not in text
    assert ANSWER not in text
