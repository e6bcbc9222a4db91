"""Hostile Responses API replies, and the task input as Responses input items."""

from __future__ import annotations

from typing import Any

import pytest

from openwop_eval.agents import AgentSpecError, OpenAIAgent, ToolCatalog
from openwop_eval.core import JSON
from tests.agents.conftest import make_agent
from tests.agents.test_openai_replies import ask, fails
from tests.agents.test_openai_responses import assert_valid_request
from tests.fakes.openai_server import FakeEndpoint, response_reply, response_text

CALL = {"type": "function_call", "call_id": "c", "name": "crm__lookup", "arguments": "{}"}


def agent(endpoint: FakeEndpoint, **options: Any) -> OpenAIAgent:
    return make_agent(endpoint, api="responses", **options)


@pytest.mark.parametrize(
    ("output", "options", "error"),
    [
        ([7], {}, "output[0] is a number, not an item"),
        ([{"type": "message", "content": "hi"}], {}, "output[0].content is a string, not an array"),
        (
            [{"type": "message", "content": [{"type": "output_text", "text": None}]}],
            {},
            "output[0].content[0].text is null, not text",
        ),
        ([{**CALL, "name": ""}], {}, "output[0].name must be a non-empty string"),
        ([], {}, "the reply has neither text nor tool calls"),
        (
            [{"type": "message", "content": [{"type": "refusal", "refusal": "I can't"}]}],
            {},
            "neither text nor tool calls (refusal: I can't)",
        ),
        ([CALL] * 65, {}, "the reply asks for 65 tool calls at once; at most 64"),
        ([], {"status": "failed"}, "the response failed: no error given"),
        (
            [{"type": "reasoning", "summary": []}],
            {"status": "incomplete", "incomplete": "max_output_tokens"},
            "the response is incomplete (max_output_tokens): no text, no tool calls",
        ),
    ],
)
def test_an_unusable_response_errors_the_trial_with_what_was_wrong(
    endpoint: FakeEndpoint, output: list[Any], options: dict[str, Any], error: str
) -> None:
    endpoint.script(response_reply(*output, **options))
    caught = fails(agent(endpoint))
    assert error in str(caught)
    assert isinstance(caught.transcript, dict)
    assert caught.transcript["api"] == "responses"
    assert len(endpoint.requests) == 1  # the model's own reply: not retried


def test_a_failed_response_names_its_error(endpoint: FakeEndpoint) -> None:
    error = {"code": "server_error", "message": "The model crashed."}
    endpoint.script(response_reply(status="failed", error=error))
    assert "the response failed: server_error: The model crashed." in str(fails(agent(endpoint)))


def test_text_cut_short_is_still_the_answer(endpoint: FakeEndpoint) -> None:
    endpoint.script(
        response_text("Partial answ", status="incomplete", incomplete="max_output_tokens")
    )
    reply = ask(agent(endpoint))
    assert reply.output == "Partial answ"
    assert isinstance(reply.transcript, dict)
    assert reply.transcript["turns"][0]["finishReason"] == "max_output_tokens"


@pytest.mark.parametrize(
    ("task_input", "items"),
    [
        ("Where is my order?", [{"role": "user", "content": "Where is my order?"}]),
        (
            {"system": "Be brief.", "message": "Hi"},
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        ),
        (
            {
                "messages": [
                    {"role": "developer", "content": "Rules."},
                    {"role": "user", "content": [{"type": "text", "text": "Look up 7"}]},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "c1", "function": {"name": "crm__lookup", "arguments": "{}"}}
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": '{"id": 7}'},
                    {"role": "assistant", "content": [{"type": "text", "text": "Found."}]},
                ]
            },
            [
                {"role": "developer", "content": "Rules."},
                {"role": "user", "content": [{"type": "input_text", "text": "Look up 7"}]},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "crm__lookup",
                    "arguments": "{}",
                },
                {"type": "function_call_output", "call_id": "c1", "output": '{"id": 7}'},
                {"role": "assistant", "content": "Found."},
            ],
        ),
    ],
)
def test_the_input_becomes_input_items(
    endpoint: FakeEndpoint, task_input: JSON, items: list[dict[str, Any]]
) -> None:
    endpoint.script(response_text("ok"))
    assert ask(agent(endpoint), task_input).output == "ok"
    assert endpoint.requests[0].body["input"] == items
    assert_valid_request(endpoint.requests[0].body)


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([{"role": "function", "content": "x"}], "input.messages[0]: a 'function' message has no"),
        (
            [{"role": "user", "content": "a"}, {"role": "tool", "content": "x"}],
            "input.messages[1].tool_call_id",
        ),
        ([{"role": "user", "content": 3}], "input.messages[0].content must be text or an array"),
        ([{"role": "user"}], "input.messages[0] has neither content nor tool calls"),
        (
            [{"role": "assistant", "tool_calls": [{"function": {"name": ""}}]}],
            "input.messages[0]: tool_calls[0].function.name must be a non-empty string",
        ),
    ],
)
def test_input_messages_without_a_responses_form_error_the_trial(
    endpoint: FakeEndpoint, messages: list[Any], error: str
) -> None:
    assert error in str(fails(agent(endpoint), {"messages": messages}))
    assert endpoint.requests == []


def test_the_catalog_temperature_is_sent(endpoint: FakeEndpoint) -> None:
    endpoint.script(response_text("ok"))
    ask(agent(endpoint, catalog=ToolCatalog({}, {}, temperature=0.2)))
    assert endpoint.requests[0].body["temperature"] == 0.2
    assert_valid_request(endpoint.requests[0].body)


def test_an_unknown_api_is_refused(endpoint: FakeEndpoint) -> None:
    with pytest.raises(AgentSpecError, match="the API must be one of chat, responses, not 'soap'"):
        make_agent(endpoint, api="soap")
