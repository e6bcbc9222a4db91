"""The expected-vs-actual view of a trajectory: which call satisfied each expected step, and
what each call was — a step, an extra call, a forbidden one, a fixture miss.

For people (the HTML report); the verdict stays the matcher's (:mod:`.trajectory`). Where
the matcher named a failed step, its message is the step's explanation, word for word.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

from . import names as n
from .reasons import Reason
from .records import ToolCall
from .trajectory import CompiledStep, TrajectorySpec
from .trajectory_reasons import assign_any_order

StepStatus: TypeAlias = Literal["matched", "missing", "wrong-args", "out-of-order"]


@dataclass(frozen=True, slots=True)
class StepRow:
    index: int
    tool: str
    """The step's tool, or glob, as the suite wrote it."""
    call: int | None
    """The call that satisfied it (0-based), or None."""
    status: StepStatus
    explanation: str | None = None
    """Why it is not matched: the matcher's message, or the nearest call's difference."""


@dataclass(frozen=True, slots=True)
class CallRow:
    index: int
    tool: str
    step: int | None
    """The expected step it satisfied; None for a call no step needed (an extra call)."""
    forbidden: bool = False
    missed: bool = False
    """The fixtures could not answer it: the trial failed closed."""


@dataclass(frozen=True, slots=True)
class Alignment:
    order: str
    steps: tuple[StepRow, ...]
    calls: tuple[CallRow, ...]


def align(
    spec: TrajectorySpec, calls: Sequence[ToolCall], violations: Sequence[Reason] = ()
) -> Alignment:
    """Pair the expected steps with the calls under the spec's order."""
    if spec.order == n.ORDER_ANY_ORDER:
        owner, _ = assign_any_order(spec.steps, calls)
        served = {j: i for i, j in owner.items()}
    elif spec.order == n.ORDER_EXACT:
        served = {j: j for j, s in enumerate(spec.steps) if j < len(calls) and s.matches(calls[j])}
    else:
        served = _in_order(spec.steps, calls)
    said = {r.step_index: str(r) for r in violations if r.step_index is not None}
    steps = tuple(
        _step(j, step, served.get(j), calls, said.get(j)) for j, step in enumerate(spec.steps)
    )
    by_call = {i: j for j, i in served.items()}
    rows = tuple(
        CallRow(
            i,
            call.tool,
            by_call.get(i),
            any(p.matches(call.tool) for p in spec.forbidden),
            call.missed,
        )
        for i, call in enumerate(calls)
    )
    return Alignment(spec.order, steps, rows)


def _in_order(steps: Sequence[CompiledStep], calls: Sequence[ToolCall]) -> dict[int, int]:
    """The matcher's earliest matching, carried on past a step that is not found (so the
    view shows every later step too)."""
    served: dict[int, int] = {}
    pos = 0
    for j, step in enumerate(steps):
        at = next((i for i in range(pos, len(calls)) if step.matches(calls[i])), None)
        if at is not None:
            served[j], pos = at, at + 1
    return served


def _step(
    j: int, step: CompiledStep, call: int | None, calls: Sequence[ToolCall], said: str | None
) -> StepRow:
    tool = step.pattern.text
    if call is not None:
        return StepRow(j, tool, call, "matched")
    if any(step.matches(c) for c in calls):
        return StepRow(j, tool, None, "out-of-order", said or f"{step.describe(j)} out of order")
    near = next((i for i, c in enumerate(calls) if step.pattern.matches(c.tool)), None)
    if near is not None:
        if said is None:
            mismatch = step.mismatch(calls[near])
            said = f"{step.describe(j)} not matched: call {near + 1} has other arguments"
            said += f" ({mismatch.describe()})" if mismatch is not None else ""
        return StepRow(j, tool, None, "wrong-args", said)
    return StepRow(j, tool, None, "missing", said or f"{step.describe(j)} was never called")
