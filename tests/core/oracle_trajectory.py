"""A frozen copy of the trajectory matcher as it was before its fast paths: an oracle.

Steps match through the matchers' reference ``mismatch`` path only, so the compiled fast
tests of :mod:`openwop_eval.core.trajectory` are checked against it, not against
themselves. Do not "fix" this file to follow the core: it is the behaviour the core keeps.
"""

from __future__ import annotations

from collections.abc import Sequence

from openwop_eval.core import names as n
from openwop_eval.core.reasons import Reason
from openwop_eval.core.records import ToolCall
from openwop_eval.core.trajectory import CompiledStep, TrajectoryResult, TrajectorySpec


def _step_matches(step: CompiledStep, call: ToolCall) -> bool:
    if not step.pattern.matches(call.tool):
        return False
    return step.args is None or step.args.mismatch(call.args, ()) is None


def check_trajectory(spec: TrajectorySpec, calls: Sequence[ToolCall]) -> TrajectoryResult:
    """Grade one trial's calls; every violated constraint becomes a :class:`Reason`."""
    violations: list[Reason] = []
    violations.extend(forbidden_calls(spec, calls))
    if spec.order == n.ORDER_EXACT:
        violations.extend(_exact(spec.steps, calls))
    elif spec.order == n.ORDER_ANY_ORDER:
        violations.extend(_any_order(spec.steps, calls))
    else:
        violations.extend(_in_order(spec.steps, calls))
    violations.extend(_before(spec, calls))
    if spec.max_calls is not None and len(calls) > spec.max_calls:
        violations.append(
            Reason("max-calls", f"made {len(calls)} tool calls; maxCalls is {spec.max_calls}")
        )
    return TrajectoryResult(not violations, tuple(violations))


def forbidden_calls(spec: TrajectorySpec, calls: Sequence[ToolCall]) -> list[Reason]:
    """A ``forbidden`` reason for every call attempt to a forbidden tool."""
    found = []
    for i, call in enumerate(calls):
        for pattern in spec.forbidden:
            if pattern.matches(call.tool):
                rule = "" if pattern.text == call.tool else f" (forbidden: {pattern.text})"
                found.append(
                    Reason(
                        "forbidden",
                        f"called forbidden tool {call.tool} at call {i + 1}{rule}",
                        call_index=i,
                        tool=call.tool,
                    )
                )
                break
    return found


def _near_miss(step: CompiledStep, calls: Sequence[ToolCall], start: int) -> tuple[int, str] | None:
    """The first call from ``start`` to the step's tool whose arguments differ, and how."""
    for i in range(start, len(calls)):
        if step.pattern.matches(calls[i].tool):
            mismatch = step.mismatch(calls[i])
            if mismatch is not None:
                return i, mismatch.describe()
    return None


def _missing(
    steps: Sequence[CompiledStep], j: int, calls: Sequence[ToolCall], start: int, context: str = ""
) -> Reason:
    step = steps[j]
    near = _near_miss(step, calls, start)
    if near is not None:
        i, detail = near
        return Reason(
            "missing-step",
            f"{step.describe(j)} not matched{context}: call {i + 1} to {calls[i].tool}"
            " has the wrong arguments",
            call_index=i,
            step_index=j,
            tool=calls[i].tool,
            detail=detail,
        )
    return Reason(
        "missing-step",
        f"{step.describe(j)} was never called{context}",
        step_index=j,
        tool=step.pattern.text,
    )


def _in_order(steps: Sequence[CompiledStep], calls: Sequence[ToolCall]) -> list[Reason]:
    # Greedy earliest matching is optimal for a subsequence: matching step j as early as
    # possible leaves the most calls for the steps after it.
    pos = 0
    for j, step in enumerate(steps):
        while pos < len(calls) and not _step_matches(step, calls[pos]):
            pos += 1
        if pos == len(calls):
            earlier = next((i for i in range(len(calls)) if _step_matches(step, calls[i])), None)
            if earlier is not None and j > 0:
                return [
                    Reason(
                        "order",
                        f"{step.describe(j)} matched only at call {earlier + 1}, before"
                        f" {steps[j - 1].describe(j - 1)} (order: in-order)",
                        call_index=earlier,
                        step_index=j,
                        tool=calls[earlier].tool,
                    )
                ]
            return [_missing(steps, j, calls, 0, "")]
        pos += 1
    return []


def _exact(steps: Sequence[CompiledStep], calls: Sequence[ToolCall]) -> list[Reason]:
    found = []
    if len(calls) != len(steps):
        found.append(
            Reason(
                "call-count",
                f"made {len(calls)} tool calls; the trajectory expects exactly {len(steps)}"
                " (order: exact)",
            )
        )
    for j, (step, call) in enumerate(zip(steps, calls, strict=False)):
        if _step_matches(step, call):
            continue
        detail = None
        if step.pattern.matches(call.tool):
            mismatch = step.mismatch(call)
            detail = mismatch.describe() if mismatch else None
        found.append(
            Reason(
                "order",
                f"call {j + 1} is {call.tool}; expected {step.describe(j)} (order: exact)",
                call_index=j,
                step_index=j,
                tool=call.tool,
                detail=detail,
            )
        )
        break
    return found


def assign_any_order(
    steps: Sequence[CompiledStep], calls: Sequence[ToolCall]
) -> tuple[dict[int, int], list[list[int]]]:
    """A maximum matching of steps to distinct calls (call index → step index), and each
    step's candidate calls."""
    candidates = [
        [i for i, call in enumerate(calls) if _step_matches(step, call)] for step in steps
    ]
    owner: dict[int, int] = {}

    def augment(j: int, seen: set[int]) -> bool:
        # Kuhn's augmenting path: take a free call, or move its owner to another call.
        for i in candidates[j]:
            if i in seen:
                continue
            seen.add(i)
            if i not in owner or augment(owner[i], seen):
                owner[i] = j
                return True
        return False

    for j in range(len(steps)):
        augment(j, set())
    return owner, candidates


def _any_order(steps: Sequence[CompiledStep], calls: Sequence[ToolCall]) -> list[Reason]:
    owner, candidates = assign_any_order(steps, calls)
    served = set(owner.values())
    found = []
    for j in range(len(steps)):
        if j in served:
            continue
        if candidates[j]:
            found.append(
                Reason(
                    "missing-step",
                    f"{steps[j].describe(j)} has no call of its own: every call that matches it"
                    " already serves another step (order: any-order)",
                    step_index=j,
                    tool=steps[j].pattern.text,
                )
            )
        else:
            found.append(_missing(steps, j, calls, 0, ""))
    return found


def _before(spec: TrajectorySpec, calls: Sequence[ToolCall]) -> list[Reason]:
    found = []
    for first, then in spec.before:
        at = next((i for i, call in enumerate(calls) if then.matches(call.tool)), None)
        if at is None or any(first.matches(calls[i].tool) for i in range(at)):
            continue
        found.append(
            Reason(
                "before",
                f"called {calls[at].tool} at call {at + 1} before any call to {first.text}",
                call_index=at,
                tool=calls[at].tool,
            )
        )
    return found
