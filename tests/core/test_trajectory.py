"""The trajectory matcher: orders, globs, forbidden calls, before pairs, maxCalls."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from openwop_eval.core import Problem, ToolCall
from openwop_eval.core.suite import Trajectory
from openwop_eval.core.trajectory import TrajectoryResult, check_trajectory, compile_trajectory
from tests.helpers import calls


def check(spec: dict[str, Any], made: tuple[ToolCall, ...]) -> TrajectoryResult:
    compiled, problems = compile_trajectory(Trajectory.model_validate(spec))
    assert problems == []
    return check_trajectory(compiled, made)


def rules(result: TrajectoryResult) -> list[str]:
    return [v.rule for v in result.violations]


LOOKUP_REFUND = {"steps": [{"tool": "crm:lookup"}, {"tool": "pay:refund"}]}


class TestInOrder:
    def test_steps_as_a_subsequence_match(self) -> None:
        """Other calls may come between the steps."""
        assert check(LOOKUP_REFUND, calls("crm:lookup", "crm:note", "pay:refund")).matched

    def test_reordered_steps_fail_with_an_order_reason(self) -> None:
        result = check(LOOKUP_REFUND, calls("pay:refund", "crm:lookup"))
        assert not result.matched
        assert rules(result) == ["order"]
        assert result.violations[0].step_index == 1

    def test_missing_step_is_named(self) -> None:
        result = check(LOOKUP_REFUND, calls("crm:lookup"))
        assert rules(result) == ["missing-step"]
        assert "step 2 (pay:refund) was never called" in result.violations[0].message

    def test_duplicate_steps_need_duplicate_calls(self) -> None:
        spec = {"steps": [{"tool": "crm:lookup"}, {"tool": "crm:lookup"}]}
        assert not check(spec, calls("crm:lookup")).matched
        assert check(spec, calls("crm:lookup", "crm:lookup")).matched

    def test_no_steps_and_no_calls_match(self) -> None:
        assert check({}, ()).matched

    def test_wrong_arguments_are_explained(self) -> None:
        spec = {"steps": [{"tool": "pay:refund", "args": {"amount": {"$lte": 100}}}]}
        result = check(spec, calls(("pay:refund", {"amount": 150})))
        assert not result.matched
        violation = result.violations[0]
        assert violation.call_index == 0
        assert violation.detail == "args.amount: expected a number ≤ 100, got 150"


class TestExact:
    SPEC: ClassVar[dict[str, Any]] = {**LOOKUP_REFUND, "order": "exact"}

    def test_exactly_the_steps_match(self) -> None:
        assert check(self.SPEC, calls("crm:lookup", "pay:refund")).matched

    def test_an_extra_call_fails(self) -> None:
        result = check(self.SPEC, calls("crm:lookup", "crm:note", "pay:refund"))
        assert rules(result) == ["call-count", "order"]
        assert result.violations[1].call_index == 1

    def test_an_extra_call_at_the_end_fails(self) -> None:
        assert rules(check(self.SPEC, calls("crm:lookup", "pay:refund", "crm:note"))) == [
            "call-count"
        ]

    def test_reordered_calls_fail(self) -> None:
        assert not check(self.SPEC, calls("pay:refund", "crm:lookup")).matched


class TestAnyOrder:
    def test_any_order_matches_reversed_calls(self) -> None:
        spec = {**LOOKUP_REFUND, "order": "any-order"}
        assert check(spec, calls("pay:refund", "crm:lookup")).matched

    def test_matching_is_bipartite_not_greedy(self) -> None:
        """A greedy scan gives crm:lookup to the glob and then finds nothing for step 2."""
        spec = {"steps": [{"tool": "crm:*"}, {"tool": "crm:lookup"}], "order": "any-order"}
        assert check(spec, calls("crm:lookup", "crm:update")).matched

    def test_each_step_needs_its_own_call(self) -> None:
        spec = {"steps": [{"tool": "crm:*"}, {"tool": "crm:lookup"}], "order": "any-order"}
        result = check(spec, calls("crm:lookup"))
        assert rules(result) == ["missing-step"]
        assert "no call of its own" in result.violations[0].message

    def test_arguments_decide_which_call_serves_which_step(self) -> None:
        spec = {
            "order": "any-order",
            "steps": [
                {"tool": "crm:get", "args": {"id": {"$in": [1, 2]}}},
                {"tool": "crm:get", "args": {"id": 1}},
            ],
        }
        assert check(spec, calls(("crm:get", {"id": 1}), ("crm:get", {"id": 2}))).matched
        assert not check(spec, calls(("crm:get", {"id": 2}), ("crm:get", {"id": 2}))).matched


class TestForbidden:
    def test_a_forbidden_call_fails_whatever_else_holds(self) -> None:
        spec = {**LOOKUP_REFUND, "forbidden": ["accounts:delete"]}
        result = check(spec, calls("crm:lookup", "pay:refund", "accounts:delete"))
        assert rules(result) == ["forbidden"]
        assert result.violations[0].message == "called forbidden tool accounts:delete at call 3"

    def test_forbidden_globs(self) -> None:
        spec = {"forbidden": ["accounts:*"]}
        result = check(spec, calls("accounts:delete", "crm:lookup", "accounts:wipe"))
        assert [v.call_index for v in result.violations] == [0, 2]

    def test_globs_are_case_sensitive(self) -> None:
        assert check({"forbidden": ["accounts:*"]}, calls("Accounts:delete")).matched

    def test_a_missed_call_still_counts_as_a_call(self) -> None:
        made = (ToolCall("accounts:delete", {}, missed=True),)
        assert not check({"forbidden": ["accounts:delete"]}, made).matched


class TestBeforeAndMaxCalls:
    SPEC: ClassVar[dict[str, Any]] = {"before": [["crm:lookup", "pay:refund"]]}

    def test_before_holds_when_a_comes_first(self) -> None:
        assert check(self.SPEC, calls("crm:lookup", "pay:refund", "pay:refund")).matched

    def test_before_holds_when_b_is_never_called(self) -> None:
        assert check(self.SPEC, calls("crm:note")).matched

    def test_before_fails_when_b_comes_first(self) -> None:
        result = check(self.SPEC, calls("pay:refund", "crm:lookup"))
        assert rules(result) == ["before"]
        assert result.violations[0].call_index == 0

    def test_max_calls_bounds_every_attempt(self) -> None:
        assert check({"maxCalls": 2}, calls("a:x", "a:y")).matched
        assert rules(check({"maxCalls": 2}, calls("a:x", "a:y", "a:z"))) == ["max-calls"]

    def test_every_failed_constraint_is_reported(self) -> None:
        spec = {
            **LOOKUP_REFUND,
            "forbidden": ["x:*"],
            "maxCalls": 1,
            "before": [["crm:lookup", "pay:refund"]],
        }
        result = check(spec, calls("pay:refund", "x:y"))
        assert rules(result) == ["forbidden", "missing-step", "before", "max-calls"]


def test_compile_reports_bad_matchers_with_their_path() -> None:
    spec = Trajectory.model_validate(
        {"steps": [{"tool": "a:b", "args": {"q": {"$regex": "("}, "n": {"$gte": "x"}}}]}
    )
    _, problems = compile_trajectory(spec, ("tasks", 0, "expected", "trajectory"))
    assert [p.path for p in problems] == [
        "$.tasks[0].expected.trajectory.steps[0].args.q.$regex",
        "$.tasks[0].expected.trajectory.steps[0].args.n.$gte",
    ]
    assert all(isinstance(p, Problem) for p in problems)


@pytest.mark.parametrize("order", ["exact", "in-order", "any-order"])
def test_every_order_accepts_the_reference_path(order: str) -> None:
    assert check({**LOOKUP_REFUND, "order": order}, calls("crm:lookup", "pay:refund")).matched
