"""OpenAI chat messages and Responses items, as the ``openai`` package's own types dump them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageToolCall
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_input_item import FunctionCallOutput

from openwop_eval.traces import read_trace_file
from openwop_eval.traces.chat import read_messages

from .conftest import Invoke, assert_same_grade
from .scenario import TRIALS, Trial


def chat_messages(task: str, trial: Trial) -> list[dict[str, Any]]:
    """What an agent loop on the chat completions API keeps: the model's messages (the SDK's
    types, dumped) and its own user and tool messages."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"task {task}"}]
    for i, call in enumerate(trial.calls):
        tool_call = ChatCompletionMessageToolCall(
            id=f"call_{i}",
            type="function",
            function=Function(name=call.tool, arguments=json.dumps(call.args)),
        )
        reply = ChatCompletionMessage(role="assistant", content=None, tool_calls=[tool_call])
        messages.append(reply.model_dump())
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{i}", "content": json.dumps(call.result)}
        )
    messages.append(ChatCompletionMessage(role="assistant", content=trial.output).model_dump())
    return messages


def response_items(trial: Trial) -> list[dict[str, Any]]:
    """What ``RunResult.to_input_list()`` gives: Responses items."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i, call in enumerate(trial.calls):
        items.append(
            ResponseFunctionToolCall(
                type="function_call",
                call_id=f"fc_{i}",
                name=call.tool,
                arguments=json.dumps(call.args),
            ).model_dump()
        )
        items.append(
            FunctionCallOutput(
                type="function_call_output", call_id=f"fc_{i}", output=json.dumps(call.result)
            ).model_dump()
        )
    text = ResponseOutputText(type="output_text", text=trial.output, annotations=[])
    message = ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=[text]
    )
    items.append(message.model_dump())
    return items


def records(key: str) -> str:
    lines = []
    for task, trials in TRIALS.items():
        for index, trial in enumerate(trials):
            body = chat_messages(task, trial) if key == "messages" else response_items(trial)
            record = {"taskId": task, "trial": index, key: body, "latencyMs": trial.latency_ms}
            if trial.cost_usd is not None:
                record["costUsd"] = trial.cost_usd
            lines.append(json.dumps(record))
    return "\n".join(lines) + "\n"


def test_grading_chat_messages_gives_the_summary_of_the_equivalent_scripted_run(
    cli: Invoke, suite_path: Path, tmp_path: Path, equivalent: Any
) -> None:
    traces = tmp_path / "chat.jsonl"
    traces.write_text(records("messages"))
    assert_same_grade(cli("grade", str(suite_path), str(traces)), equivalent(), cli, suite_path)


def test_grading_responses_items_gives_the_summary_of_the_equivalent_scripted_run(
    cli: Invoke, suite_path: Path, tmp_path: Path, equivalent: Any
) -> None:
    traces = tmp_path / "items.jsonl"
    traces.write_text(records("items"))
    assert_same_grade(cli("grade", str(suite_path), str(traces)), equivalent(), cli, suite_path)


def test_the_calls_are_the_assistant_tool_calls_answered_by_their_tool_messages() -> None:
    read = read_messages(chat_messages("refund", TRIALS["refund"][1]))
    calls, output = read.calls, read.output
    assert [(c.tool, c.args, c.result) for c in calls] == [
        ("crm_lookup", {"orderId": "A-1"}, {"status": "delivered"}),
        ("accounts_delete", {"accountId": "u-1"}, {"deleted": True}),
        ("payments_refund", {"orderId": "A-1", "amountUsd": 20}, {"refunded": True}),
    ]
    assert output == "Order A-1 was refunded."


def test_arguments_that_are_not_a_json_object_are_kept_raw_for_the_trajectory_check() -> None:
    messages = [
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "a",
                    "type": "function",
                    "function": {"name": "t", "arguments": "{orderId: A-1"},
                },
                {"id": "b", "type": "function", "function": {"name": "t", "arguments": "[1, 2]"}},
                {"id": "c", "type": "function", "function": {"name": "t", "arguments": ""}},
            ],
        },
    ]
    read = read_messages(messages)
    calls, output = read.calls, read.output
    assert [c.args for c in calls] == [{"$raw": "{orderId: A-1"}, {"$raw": "[1, 2]"}, {}]
    assert output is None  # it ended on tool calls: no answer


def test_a_conversation_that_ends_on_tool_calls_has_no_output() -> None:
    messages = chat_messages("refund", TRIALS["refund"][0])[:-1]
    assert read_messages(messages).output is None


def test_a_tool_result_no_call_asked_for_is_a_located_problem(tmp_path: Path) -> None:
    messages = [
        {"role": "assistant", "content": "x"},
        {"role": "tool", "tool_call_id": "nope", "content": "1"},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"taskId": "refund", "messages": messages}) + "\n")
    traces, problems = read_trace_file(str(path))
    assert not traces
    assert [str(p) for p in problems] == [
        f"{path}:1 $.messages[1].tool_call_id: a tool result for 'nope', which no tool call has"
    ]


def test_a_bare_conversation_file_is_one_trace_keyed_by_the_file(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(chat_messages("status", TRIALS["status"][0])))
    (trace,), problems = read_trace_file(str(path))
    assert not problems
    assert trace.keys == (str(path), "one.json")
    assert trace.task_id is None
    assert trace.output == "shipped"


def test_a_record_may_give_the_output_itself(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    record = {"taskId": "status", "trial": 1, "messages": [], "output": {"answer": 42}}
    path.write_text(json.dumps(record) + "\n")
    (trace,), _ = read_trace_file(str(path))
    assert (trace.task_id, trace.trial, trace.output) == ("status", 1, {"answer": 42})


def test_a_record_with_a_misspelt_key_is_a_located_problem(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('\n{"taskID": "status", "messages": []}\n')
    _, problems = read_trace_file(str(path))
    assert [str(p) for p in problems] == [f"{path}:2 $.taskID: Extra inputs are not permitted"]
