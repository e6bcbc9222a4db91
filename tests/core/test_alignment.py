"""The expected-vs-actual trajectory view: every step paired with the call that satisfied it,
or explained in the matcher's own words; every call's role."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from openwop_eval.core import ToolCall, check_trajectory
from openwop_eval.core.alignment import align
from tests.helpers import golden, plan, suite_doc


def spec(**trajectory: Any) -> Any:
    compiled = plan(suite_doc(golden("t", trajectory=trajectory))).tasks[0].trajectory
    assert compiled is not None
    return compiled


def view(s: Any, *calls: ToolCall) -> Any:
    return align(s, calls, check_trajectory(s, calls).violations)


LOOKUP = {"tool": "crm:lookup"}
REFUND = {"tool": "pay:refund", "args": {"amount": {"$lte": 50}}}


def test_a_skipped_step_is_explained_in_the_matchers_words() -> None:
    s = spec(steps=[LOOKUP, REFUND], forbidden=["acct:delete"])
    shown = view(s, ToolCall("acct:delete"), ToolCall("pay:refund", {"amount": 20}))
    assert [(r.status, r.call) for r in shown.steps] == [("missing", None), ("matched", 1)]
    assert shown.steps[0].explanation == "step 1 (crm:lookup) was never called"
    assert [(c.step, c.forbidden) for c in shown.calls] == [(None, True), (1, False)]


def test_wrong_arguments_name_the_matcher_that_failed() -> None:
    s = spec(steps=[LOOKUP, REFUND])
    shown = view(s, ToolCall("crm:lookup"), ToolCall("pay:refund", {"amount": 80}))
    assert shown.steps[1].status == "wrong-args"
    assert "args.amount: expected a number ≤ 50, got 80" in (shown.steps[1].explanation or "")
    assert shown.calls[1].step is None  # an extra call: it satisfied nothing


def test_order_broken() -> None:
    s = spec(steps=[LOOKUP, {"tool": "pay:refund"}])
    shown = view(s, ToolCall("pay:refund"), ToolCall("crm:lookup"))
    assert [r.status for r in shown.steps] == ["matched", "out-of-order"]
    assert "before" in (shown.steps[1].explanation or "")


def test_any_order_and_exact() -> None:
    both = spec(steps=[{"tool": "a:*"}, {"tool": "a:x"}], order="any-order")
    shown = view(both, ToolCall("a:x"), ToolCall("a:y"))
    assert sorted(r.call for r in shown.steps if r.call is not None) == [0, 1]
    exact = spec(steps=[LOOKUP], order="exact")
    assert [r.status for r in view(exact, ToolCall("crm:lookup")).steps] == ["matched"]
    assert view(exact, ToolCall("x:y"), ToolCall("crm:lookup")).steps[0].status == "out-of-order"


def test_a_fixture_miss_is_marked() -> None:
    shown = view(spec(steps=[LOOKUP]), ToolCall("crm:lookup", missed=True))
    assert shown.calls[0].missed


TOOLS = st.sampled_from(["crm:lookup", "pay:refund", "acct:delete", "x:y"])


@given(st.lists(TOOLS, max_size=8), st.sampled_from(["in-order", "any-order", "exact"]))
def test_the_view_agrees_with_the_verdict(tools: list[str], order: str) -> None:
    s = spec(steps=[LOOKUP, {"tool": "pay:refund"}], order=order)
    calls = tuple(ToolCall(t) for t in tools)
    shown = view(s, *calls)
    every_step_matched = all(r.status == "matched" for r in shown.steps)
    if check_trajectory(s, calls).matched:
        assert every_step_matched
    served = [r.call for r in shown.steps if r.call is not None]
    assert len(served) == len(set(served))  # a call serves one step at most
    assert all(
        calls[i].tool == s.steps[r.index].pattern.text
        for r in shown.steps
        if (i := r.call) is not None
    )
