"""Responses ``mcp_call`` items — tools the API called on a remote MCP server — as the
``openai`` package's own types dump them: tool ``server_label:name``, result and error in the
item."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import ResponseOutputMessage, ResponseOutputText
from openai.types.responses.response_output_item import (
    McpApprovalRequest,
    McpCall,
    McpListTools,
    McpListToolsTool,
)

from openwop_eval.traces import read_trace_file
from openwop_eval.traces.records import TraceError
from openwop_eval.traces.responses import read_items

from .conftest import Invoke, Outcome, assert_same_grade
from .scenario import SUITE, TRIALS, Call, Trial, write_script, write_suite
from .test_hostile import JSON_VALUES

NAMES = {
    "crm_lookup": "crm:lookup",
    "payments_refund": "payments:refund",
    "accounts_delete": "accounts:delete",
}


def namespaced(trials: dict[str, list[Trial]]) -> dict[str, list[Trial]]:
    """The scenario's trials with each tool on an MCP server: ``crm:lookup``, …"""
    return {
        task: [
            Trial(
                t.output,
                tuple(Call(NAMES[c.tool], c.args, c.result) for c in t.calls),
                t.latency_ms,
                t.cost_usd,
            )
            for t in entries
        ]
        for task, entries in trials.items()
    }


MCP_TRIALS = namespaced(TRIALS)


def mcp_suite() -> dict[str, Any]:
    """The scenario's suite over the same tools on MCP servers."""
    text = json.dumps(SUITE)
    for plain, on_server in NAMES.items():
        text = text.replace(f'"{plain}"', f'"{on_server}"')
    suite: dict[str, Any] = json.loads(text)
    return suite


def mcp_items(trial: Trial) -> list[dict[str, Any]]:
    """A Responses output: the servers' tool lists, an ``mcp_call`` per call, the answer."""
    tool = McpListToolsTool(name="lookup", input_schema={"type": "object"})
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        McpListTools(
            id="mcpl_1", server_label="crm", tools=[tool], type="mcp_list_tools"
        ).model_dump(),
    ]
    for i, call in enumerate(trial.calls):
        label, name = call.tool.split(":")
        items.append(
            McpCall(
                id=f"mcp_{i}",
                type="mcp_call",
                server_label=label,
                name=name,
                arguments=json.dumps(call.args),
                output=json.dumps(call.result),
                error=None,
                status="completed",
            ).model_dump()
        )
    text = ResponseOutputText(type="output_text", text=trial.output, annotations=[])
    message = ResponseOutputMessage(
        id="msg", type="message", role="assistant", status="completed", content=[text]
    )
    items.append(message.model_dump())
    return items


def write_records(path: Path, *records: dict[str, Any]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def record(task: str, trial: int, items: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entry = MCP_TRIALS[task][trial]
    body = mcp_items(entry) if items is None else items
    return {"taskId": task, "trial": trial, "items": body, "latencyMs": entry.latency_ms} | (
        {"costUsd": entry.cost_usd} if entry.cost_usd is not None else {}
    )


def grade(cli: Invoke, tmp_path: Path, *records: dict[str, Any]) -> Outcome:
    suite = write_suite(tmp_path, mcp_suite())
    return cli("grade", str(suite), write_records(tmp_path / "items.jsonl", *records))


def trial_of(outcome: Outcome, task: str, index: int) -> dict[str, Any]:
    trials = next(t["trials"] for t in outcome.report["tasks"] if t["taskId"] == task)
    found: dict[str, Any] = trials[index]
    return found


def test_grading_mcp_calls_gives_the_summary_of_the_equivalent_scripted_run(
    cli: Invoke, tmp_path: Path
) -> None:
    every = [record(task, i) for task, trials in MCP_TRIALS.items() for i in range(len(trials))]
    graded = grade(cli, tmp_path, *every)
    suite = write_suite(tmp_path, mcp_suite())  # the suite grade() graded against
    ran = cli("run", str(suite), "--agent", f"scripted:{write_script(tmp_path, MCP_TRIALS)}")
    assert_same_grade(graded, ran, cli, suite)
    forbidden = trial_of(graded, "refund", 1)  # answered well, but deleted the account
    assert [c["tool"] for c in forbidden["calls"]] == [
        "crm:lookup",
        "accounts:delete",
        "payments:refund",
    ]
    assert (forbidden["outputScore"], forbidden["gatingScore"]) == (1.0, 0.0)
    assert forbidden["passed"] is False
    assert forbidden["reasons"][0]["rule"] == "forbidden"
    assert trial_of(graded, "refund", 0)["passed"]


@pytest.mark.parametrize(
    ("error", "served"),
    [
        ("Order service unavailable", "Order service unavailable"),
        (
            {"type": "mcp_protocol_error", "code": -32602, "message": "Unknown tool: lookup"},
            "mcp_protocol_error -32602: Unknown tool: lookup",
        ),
        (
            {
                "type": "mcp_tool_execution_error",
                "content": [{"type": "text", "text": "order A-1 is locked"}],
            },
            "mcp_tool_execution_error: order A-1 is locked",
        ),
        (
            {"type": "http_error", "code": 502, "message": "Bad Gateway"},
            "http_error 502: Bad Gateway",
        ),
    ],
)
def test_a_failed_mcp_call_is_served_its_error(
    cli: Invoke, tmp_path: Path, error: Any, served: str
) -> None:
    items = mcp_items(MCP_TRIALS["status"][0])
    items[2] |= {"error": error, "output": None, "status": "failed"}
    graded = grade(cli, tmp_path, record("status", 0, items))
    first = trial_of(graded, "status", 0)
    assert [(c["tool"], c["result"]) for c in first["calls"]] == [("crm:lookup", {"error": served})]


def test_a_failed_status_without_an_error_is_a_failed_call() -> None:
    items = mcp_items(MCP_TRIALS["status"][0])
    items[2] |= {"output": None, "status": "failed"}
    (call,) = read_items(items).calls
    assert call.served == {"error": "the MCP call failed"}


def test_arguments_that_are_not_json_reach_the_trajectory_check_raw(
    cli: Invoke, tmp_path: Path
) -> None:
    items = mcp_items(MCP_TRIALS["status"][0])
    items[2]["arguments"] = "{orderId: B-2"
    graded = grade(cli, tmp_path, record("status", 0, items))
    first = trial_of(graded, "status", 0)
    assert (first["passed"], first["trajectoryMatched"]) == (False, False)
    assert first["calls"][0]["args"] == {"$raw": "{orderId: B-2"}
    assert first["outputScore"] == 1.0


@pytest.mark.parametrize(
    ("arguments", "args"),
    [({"orderId": "B-2"}, {"orderId": "B-2"}), (["B-2"], {"$raw": ["B-2"]}), (7, {"$raw": 7})],
)
def test_arguments_that_are_not_text_are_read_as_function_call_arguments_are(
    arguments: Any, args: Any
) -> None:
    items = mcp_items(MCP_TRIALS["status"][0])
    items[2]["arguments"] = arguments
    (call,) = read_items(items).calls
    assert call.args == args


def test_tool_lists_and_approval_requests_are_not_calls() -> None:
    approval = McpApprovalRequest(
        id="mcpr_1",
        type="mcp_approval_request",
        server_label="accounts",
        name="delete",
        arguments='{"accountId": "u-1"}',
    ).model_dump()
    response = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False}
    items = mcp_items(MCP_TRIALS["status"][0])
    read = read_items([*items[:-1], approval, response, items[-1]])
    calls, output = read.calls, read.output
    assert [c.tool for c in calls] == ["crm:lookup"]
    assert output == "shipped"


def test_a_bare_list_of_mcp_items_is_read_as_responses_items(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps(mcp_items(MCP_TRIALS["status"][0])[1:]))
    (trace,), problems = read_trace_file(str(path))
    assert not problems
    assert ([c.tool for c in trace.calls], trace.output) == (["crm:lookup"], "shipped")


@pytest.mark.parametrize(
    ("change", "where", "message"),
    [
        ({"name": None}, "name", "an mcp_call needs a name (a non-empty string)"),
        ({"name": ""}, "name", "an mcp_call needs a name (a non-empty string)"),
        (
            {"server_label": 3},
            "server_label",
            "an mcp_call needs a server_label (a non-empty string)",
        ),
        ({"error": ["boom"]}, "error", "an mcp_call's error must be text, an object or null"),
    ],
)
def test_a_malformed_mcp_call_is_a_located_problem(
    cli: Invoke, tmp_path: Path, change: dict[str, Any], where: str, message: str
) -> None:
    items = mcp_items(MCP_TRIALS["status"][0])
    items[2] |= change
    graded = grade(cli, tmp_path, record("status", 0, items))
    assert graded.exit_code == 2
    assert f"{tmp_path / 'items.jsonl'}:1 $.items[2].{where}: {message}" in graded.stderr
    assert "nothing was graded" in graded.stderr


def test_huge_arguments_error_the_trial_as_a_live_agents_would(cli: Invoke, tmp_path: Path) -> None:
    items = mcp_items(MCP_TRIALS["status"][0])
    items[2]["arguments"] = json.dumps({"orderId": "B-2", "note": "x" * 2_000_000})
    graded = grade(cli, tmp_path, record("status", 0, items))
    first = trial_of(graded, "status", 0)
    assert (first["outcome"], first["passed"]) == ("errored", False)
    assert first["errorKind"] == "tool-arguments-too-large"


FIELDS = st.sampled_from(["id", "server_label", "name", "arguments", "output", "error", "status"])


@settings(max_examples=300, deadline=None)
@given(fields=st.dictionaries(FIELDS, JSON_VALUES, max_size=7))
def test_any_mcp_call_item_reads_or_is_a_located_problem(fields: dict[str, Any]) -> None:
    located = []
    try:
        read_items([{"type": "mcp_call", **fields}])
    except TraceError as exc:  # never anything else
        located.append(exc.loc[:1])
    assert located in ([], [(0,)])
