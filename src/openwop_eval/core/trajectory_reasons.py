"""Why a trajectory did not match: a :class:`Reason` for every violated constraint.

The walks here are the matcher's reference reading of each constraint; they run only for a
trial whose verdict (:func:`openwop_eval.core.trajectory.check_trajectory`) is a failure,
so their texts are what a report shows, word for word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .reasons import Reason
from .records import ToolCall

if TYPE_CHECKING:  # trajectory.py calls these: the import would be circular at run time
    from .trajectory import CompiledStep, TrajectorySpec


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
    # Asked only of a step no call matches, so the first call to its tool is the near miss.
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


def in_order_reasons(
    steps: Sequence[CompiledStep], calls: Sequence[ToolCall], stuck: int | None = None
) -> list[Reason]:
    """``stuck``: the step the greedy walk below does not find, when already known."""
    if stuck is None:
        stuck = in_order_stuck(steps, calls)
    if stuck is None:
        return []
    j, step = stuck, steps[stuck]
    earlier = next((i for i in range(len(calls)) if step.test(calls[i])), None)
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


def in_order_stuck(steps: Sequence[CompiledStep], calls: Sequence[ToolCall]) -> int | None:
    """The first step the calls do not contain in order (None: they contain them all)."""
    # Greedy earliest matching is optimal for a subsequence: matching step j as early as
    # possible leaves the most calls for the steps after it.
    pos, end = 0, len(calls)
    for j, step in enumerate(steps):
        name, wants = step.name, step.wants
        if name is None:
            test = step.test
            while pos < end and not test(calls[pos]):
                pos += 1
        else:  # step.test, inline: a call fewer for every call looked at
            while pos < end:
                call = calls[pos]
                if call.tool == name and (wants is None or wants(call.args)):
                    break
                pos += 1
        if pos == end:
            return j
        pos += 1
    return None


def exact_reasons(steps: Sequence[CompiledStep], calls: Sequence[ToolCall]) -> list[Reason]:
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
        if step.test(call):
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
    steps: Sequence[CompiledStep],
    calls: Sequence[ToolCall],
    candidates: list[list[int]] | None = None,
) -> tuple[dict[int, int], list[list[int]]]:
    """A maximum matching of steps to distinct calls (call index → step index), and each
    step's candidate calls (``candidates``, if already found)."""
    if candidates is None:
        candidates = [step_candidates(step, calls) for step in steps]
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
        if candidates[j]:
            augment(j, set())
    return owner, candidates


def step_candidates(step: CompiledStep, calls: Sequence[ToolCall]) -> list[int]:
    """The indexes of the calls that match ``step``."""
    name, wants = step.name, step.wants
    if name is None:
        return [i for i, call in enumerate(calls) if step.test(call)]
    # step.test, inline: most calls are to other tools
    return [
        i
        for i, call in enumerate(calls)
        if call.tool == name and (wants is None or wants(call.args))
    ]


def any_order_reasons(
    steps: Sequence[CompiledStep],
    calls: Sequence[ToolCall],
    assigned: tuple[dict[int, int], list[list[int]]] | None = None,
) -> list[Reason]:
    """``assigned``: :func:`assign_any_order` of these steps and calls, if already made."""
    owner, candidates = assigned or assign_any_order(steps, calls)
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


def before_reasons(spec: TrajectorySpec, calls: Sequence[ToolCall]) -> list[Reason]:
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
