"""A trial's tool events: built from what the boundary recorded of each call (when the trial
is committed), in call order, with the times of the call and of its answer."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.agents.base import AgentProtocolError, ToolMissError
from openwop_eval.core import canonical_json
from openwop_eval.log.event_names import EXT, TOOL_CALLED, TOOL_RETURNED
from openwop_eval.runner.tools import FixtureBook, ToolBoundary

SCALARS = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=8)
ARGS = st.dictionaries(
    st.text(max_size=6), st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3))
)


def boundary(book: FixtureBook) -> ToolBoundary:
    return ToolBoundary(
        agent_id="agent.a", task_id="t1", trial=2, invocation_id="inv-1", fixtures=book, live=None
    )


def test_each_call_has_its_two_events_in_order_with_its_answer_or_its_miss() -> None:
    port = boundary(FixtureBook.from_responses([("crm:lookup", {"ok": True})]))

    async def play() -> None:
        assert await port.call("crm:lookup", {"id": 1}) == {"ok": True}
        with pytest.raises(ToolMissError):
            await port.call("payments:refund", {"id": 1})

    asyncio.run(play())
    events = port.events()
    assert [e.type for e in events] == [TOOL_CALLED, TOOL_RETURNED] * 2
    assert [e.payload["callId"] for e in events] == ["inv-1.c1"] * 2 + ["inv-1.c2"] * 2
    called, answered, missed_call, missed = (e.payload for e in events)
    assert called["inputs"] == {"id": 1}
    assert called[EXT] == {"taskId": "t1", "trial": 2, "invocationId": "inv-1"}
    assert (answered["status"], answered["outcome"]) == ("ok", {"ok": True})
    assert missed_call["toolName"] == "payments:refund"
    assert missed["status"] == "error"
    assert missed["error"]["code"] == "fixture_miss"
    assert missed[EXT]["miss"] is True
    stamps = [e.timestamp for e in events]
    assert stamps == sorted(stamps)  # called, answered, called, missed: in time order
    assert port.events() == events  # a function of the records: the same when built again


def test_a_call_says_its_transport_when_the_protocol_names_it_and_only_then() -> None:
    port = boundary(FixtureBook.from_responses([("crm:lookup", {"ok": True})] * 3))

    async def play() -> None:
        await port.call("crm:lookup", {"id": 1}, "mcp")
        await port.call("crm:lookup", {"id": 2})
        await port.call("crm:lookup", {"id": 3}, "carrier-pigeon")  # not the protocol's: unsaid

    asyncio.run(play())
    called = [e.payload for e in port.events() if e.type == TOOL_CALLED]
    assert [c.get("transport") for c in called] == ["mcp", None, None]
    assert ["transport" in c for c in called] == [True, False, False]


@given(st.lists(ARGS, min_size=1, max_size=4))
def test_the_args_hash_is_the_sha256_of_the_canonical_arguments(calls: list[Any]) -> None:
    port = boundary(FixtureBook.from_responses([("x:tool", None)] * len(calls)))

    async def play() -> None:
        for args in calls:
            await port.call("x:tool", args)

    asyncio.run(play())
    hashes = [e.payload["argsHash"] for e in port.events() if e.type == TOOL_CALLED]
    assert hashes == [hashlib.sha256(canonical_json(a).encode()).hexdigest() for a in calls]


def test_a_call_is_recorded_as_made_even_when_the_agent_changes_its_arguments_later() -> None:
    port = boundary(FixtureBook.from_responses([("crm:lookup", 1), ("crm:lookup", 2)]))
    args: dict[str, Any] = {"filter": {"id": "A-1"}, "tags": ["x"]}

    async def play() -> None:
        await port.call("crm:lookup", args)
        args["filter"]["id"] = "A-2"  # an agent reusing its arguments for the next call
        args["tags"].append("y")
        await port.call("crm:lookup", args)

    asyncio.run(play())
    first, second = (c.args for c in port.trajectory())
    assert first == {"filter": {"id": "A-1"}, "tags": ["x"]}
    assert second == {"filter": {"id": "A-2"}, "tags": ["x", "y"]}
    called = [e.payload for e in port.events() if e.type == TOOL_CALLED]
    assert [c["inputs"] for c in called] == [first, second]
    assert called[0]["argsHash"] == hashlib.sha256(canonical_json(first).encode()).hexdigest()


def test_what_an_agent_or_a_live_tool_changes_later_is_not_what_was_recorded() -> None:
    cache = {"status": "shipped", "items": ["a"]}

    def lookup(args: dict[str, Any]) -> Any:
        args["filter"]["id"] = "changed by the tool"
        return cache

    served = FixtureBook.from_responses([("crm:order", {"lines": [1]})])
    fixtures, live = (
        boundary(served),
        ToolBoundary(
            agent_id="agent.a",
            task_id="t1",
            trial=0,
            invocation_id="inv-2",
            fixtures=None,
            live={"crm:lookup": lookup},
        ),
    )

    async def play() -> None:
        answer = await fixtures.call("crm:order", {})
        answer["lines"].append(2)  # the agent changes what it was given
        got = await live.call("crm:lookup", {"filter": {"id": "A-1"}})
        got["items"].append("b")
        cache["items"].append("c")  # and the tool changes what it answered

    asyncio.run(play())
    assert fixtures.calls[0].result == {"lines": [1]}
    (call,) = live.calls
    assert call.args == {"filter": {"id": "A-1"}}
    assert call.result == {"status": "shipped", "items": ["a"]}
    outcome = [e.payload["outcome"] for e in live.events() if e.type == TOOL_RETURNED]
    assert outcome == [{"status": "shipped", "items": ["a"]}]


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def test_deep_arguments_are_kept_as_made_or_refused_never_a_crash() -> None:
    port = boundary(FixtureBook.from_responses([("x:tool", 1)] * 2))
    deep, too_deep = nested(300), nested(5000)  # past orjson's depth; past any encoder's

    async def play() -> None:
        await port.call("x:tool", {"deep": deep})
        deep[0] = "changed"
        with pytest.raises(AgentProtocolError, match="not JSON"):
            await port.call("x:tool", {"deep": too_deep})

    asyncio.run(play())
    (call,) = port.calls  # the refused call is not in the trajectory
    assert call.args["deep"] == nested(300)
