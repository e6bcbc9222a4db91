"""Reading a log back, our own and other hosts': v1 names, no attribution member, events out
of order, and hostile values — each read as far as it holds, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval.log import EXT, parse_jsonl, replay


def event(seq: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"sequence": seq, "type": kind, "payload": payload, "eventId": f"e{seq}"}


def foreign_trial(start: int, invocation: str, task: str, tool: str, score: float) -> list[Any]:
    """One trial as another host writes it: v1 names, no ``x-openwop-eval`` member."""
    return [
        event(start, "agent.invocation.started", {"invocationId": invocation}),
        event(start + 1, "agent.toolCalled", {"toolName": tool, "callId": "c1", "inputs": {}}),
        event(start + 2, "agent.toolReturned", {"callId": "c1", "status": "ok", "outcome": 1}),
        event(start + 3, "agent.invocation.completed", {"outcome": "completed"}),
        event(start + 4, "eval.scored", {"taskId": task, "score": score, "passed": True}),
    ]


def test_a_foreign_log_is_read_by_invocation_bracket() -> None:
    docs = foreign_trial(0, "i1", "t", "crm:lookup", 1.0) + foreign_trial(5, "i2", "t", "x", 0.5)
    log = replay(docs)
    assert [(r.task_id, r.index, r.output_score) for r in log.records] == [
        ("t", 0, 1.0),
        ("t", 1, 0.5),
    ]
    assert [c.tool for c in log.records[0].tool_calls] == ["crm:lookup"]
    assert log.responses[("t", 0)] == [("crm:lookup", {}, 1)]
    assert log.problems == []


def test_events_out_of_order_are_read_in_sequence_order() -> None:
    docs = foreign_trial(0, "i1", "t", "crm:lookup", 1.0)
    shuffled = [docs[3], docs[0], docs[4], docs[2], docs[1]]
    assert replay(shuffled).records == replay(docs).records


def test_attributed_events_need_no_bracket() -> None:
    ext = {EXT: {"taskId": "t", "trial": 1, "invocationId": "i"}}
    docs = [
        event(2, "eval.scored", {"taskId": "t", "score": 1, "passed": True, **ext}),
        event(1, "agent.tool-called", {"toolName": "a", "callId": "c", "inputs": {}, **ext}),
    ]
    (record,) = replay(docs).records
    assert (record.index, [c.tool for c in record.tool_calls]) == (1, ["a"])


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"trial": "1"}, "its trial is not an index"),
        ({"trial": -1}, "its trial is not an index"),
        ({"trial": 1.5}, "its trial is not an index"),
    ],
)
def test_a_malformed_attribution_is_a_problem(change: dict[str, Any], problem: str) -> None:
    ext = {EXT: {"taskId": "t", "trial": 0, "invocationId": "i", **change}}
    log = replay([event(0, "eval.scored", {"taskId": "t", "score": 1, **ext})])
    assert log.records == []
    assert any(problem in p for p in log.problems)


@pytest.mark.parametrize(
    ("scored", "field"),
    [
        ({"score": True}, "score"),
        ({"score": 7}, "score"),
        ({"score": 1, "costUsd": "0.1"}, "costUsd"),
        ({"score": 1, "costUsd": -1}, "costUsd"),
        ({"score": 1, "latencyMs": [1]}, "latencyMs"),
    ],
)
def test_a_recorded_value_that_is_not_a_measure_is_a_problem(
    scored: dict[str, Any], field: str
) -> None:
    ext = {EXT: {"taskId": "t", "trial": 0, "invocationId": "i"}}
    log = replay([event(0, "eval.scored", {"taskId": "t", **scored, **ext})])
    (record,) = log.records
    assert any(field in p for p in log.problems)
    if field == "score":
        assert record.output_score == 0.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"sequence": NaN}', "not a JSON event (unexpected character"),
        ('{"sequence": 1e999}', "number is infinity"),
        ("[1]", "must be a JSON object"),
        ("{", "not a JSON event"),
        ("[" * 100_000 + "]" * 100_000, "not a JSON event"),
    ],
)
def test_a_broken_line_is_located(line: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"events\.jsonl:2") as caught:
        parse_jsonl(["", line], "events.jsonl")
    assert message in str(caught.value) or "depth limit exceeded" in str(caught.value)


JSONS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)
KINDS = st.sampled_from(
    [
        "agent.invocation-started",
        "agent.tool-called",
        "agent.tool-returned",
        "eval.scored",
        "agent.invocation-completed",
        "agent.toolCalled",
        "run.completed",
        "x",
    ]
)
PAYLOADS = st.fixed_dictionaries(
    {},
    optional={
        "invocationId": JSONS,
        "callId": JSONS,
        "toolName": JSONS,
        "inputs": JSONS,
        "outcome": JSONS,
        "status": JSONS,
        "taskId": JSONS,
        "score": JSONS,
        "costUsd": JSONS,
        "latencyMs": JSONS,
        EXT: st.dictionaries(st.sampled_from(["taskId", "trial", "invocationId", "miss"]), JSONS),
    },
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.fixed_dictionaries({"type": KINDS, "payload": PAYLOADS, "sequence": JSONS}),
        max_size=12,
    )
)
def test_replay_never_raises(docs: list[dict[str, Any]]) -> None:
    log = replay(docs)
    json.dumps([r.output_score for r in log.records])
    assert all(0 <= r.output_score <= 1 for r in log.records)
