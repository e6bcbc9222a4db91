"""The trajectory matcher: does a trial's sequence of tool calls satisfy its constraints?

A trajectory *matched* iff its order constraint holds (``exact``: the calls are exactly the
steps; ``in-order``: the steps are a subsequence of the calls; ``any-order``: each step is
matched by a distinct call — a maximum bipartite matching, so a call that could serve two
steps is never spent greedily on the wrong one), no forbidden tool was called, every
``before`` pair holds and ``maxCalls`` is respected. Every failed constraint is reported.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

from . import names as n
from .matchers import ArgMismatch, Matcher, compile_args
from .problems import Loc, Problem
from .reasons import Reason
from .records import ToolCall
from .suite import Trajectory

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class ToolPattern:
    """A tool name, or a glob over tool names (``crm:*``), matched case-sensitively."""

    text: str
    regex: re.Pattern[str] | None

    @classmethod
    def of(cls, text: str) -> ToolPattern:
        if _GLOB_CHARS.search(text):
            return cls(text, re.compile(fnmatch.translate(text)))
        return cls(text, None)

    def matches(self, tool: str) -> bool:
        return tool == self.text if self.regex is None else self.regex.match(tool) is not None


@dataclass(frozen=True, slots=True)
class CompiledStep:
    pattern: ToolPattern
    args: Matcher | None

    def mismatch(self, call: ToolCall) -> ArgMismatch | None:
        """The argument difference of a call to the right tool (None: it matches)."""
        return None if self.args is None else self.args.mismatch(call.args, ())

    def matches(self, call: ToolCall) -> bool:
        return self.pattern.matches(call.tool) and self.mismatch(call) is None

    def describe(self, index: int) -> str:
        return f"step {index + 1} ({self.pattern.text})"


@dataclass(frozen=True, slots=True)
class TrajectorySpec:
    steps: tuple[CompiledStep, ...]
    order: str
    forbidden: tuple[ToolPattern, ...]
    before: tuple[tuple[ToolPattern, ToolPattern], ...]
    max_calls: int | None


@dataclass(frozen=True, slots=True)
class TrajectoryResult:
    matched: bool
    violations: tuple[Reason, ...]


def compile_trajectory(spec: Trajectory, loc: Loc = ()) -> tuple[TrajectorySpec, list[Problem]]:
    """Compile the constraints once per suite; argument-matcher problems come back located."""
    problems: list[Problem] = []
    steps = []
    exact = spec.args_match == n.ARGS_EXACT
    for i, step in enumerate(spec.steps):
        matcher = None
        if step.args is not None:
            matcher, found = compile_args(
                step.args, exact, (*loc, n.TRAJ_STEPS, i, n.TRAJ_STEP_ARGS)
            )
            problems.extend(found)
        steps.append(CompiledStep(ToolPattern.of(step.tool), matcher))
    compiled = TrajectorySpec(
        steps=tuple(steps),
        order=spec.order,
        forbidden=tuple(ToolPattern.of(f) for f in spec.forbidden),
        before=tuple((ToolPattern.of(a), ToolPattern.of(b)) for a, b in spec.before),
        max_calls=spec.max_calls,
    )
    return compiled, problems


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
        while pos < len(calls) and not step.matches(calls[pos]):
            pos += 1
        if pos == len(calls):
            earlier = next((i for i in range(len(calls)) if step.matches(calls[i])), None)
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
        if step.matches(call):
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
    candidates = [[i for i, call in enumerate(calls) if step.matches(call)] for step in steps]
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
