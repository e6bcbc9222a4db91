"""A trial's tool events: built from what the boundary recorded of each call (when the trial
is committed), in call order, with the times of the call and of its answer."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.agents.base import ToolMissError
from openwop_eval.core import canonical_json
from openwop_eval.log.names import EXT, TOOL_CALLED, TOOL_RETURNED
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


@given(st.lists(ARGS, min_size=1, max_size=4))
def test_the_args_hash_is_the_sha256_of_the_canonical_arguments(calls: list[Any]) -> None:
    port = boundary(FixtureBook.from_responses([("x:tool", None)] * len(calls)))

    async def play() -> None:
        for args in calls:
            await port.call("x:tool", args)

    asyncio.run(play())
    hashes = [e.payload["argsHash"] for e in port.events() if e.type == TOOL_CALLED]
    assert hashes == [hashlib.sha256(canonical_json(a).encode()).hexdigest() for a in calls]
