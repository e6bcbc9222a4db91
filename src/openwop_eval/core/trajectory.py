"""The trajectory matcher: does a trial's sequence of tool calls satisfy its constraints?

A trajectory *matched* iff its order constraint holds (``exact``: the calls are exactly the
steps; ``in-order``: the steps are a subsequence of the calls; ``any-order``: each step is
matched by a distinct call — a maximum bipartite matching, so a call that could serve two
steps is never spent greedily on the wrong one), no forbidden tool was called, every
``before`` pair holds and ``maxCalls`` is respected. Every failed constraint is reported.

Each step and the forbidden list are compiled into plain predicates (no locations, no
texts), which decide every trial; only a trial that fails is walked again to say why, so the
reasons are those the matcher always gave, and a matched trial allocates nothing.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from . import names as n
from .frozen import quick_init
from .matchers import ArgMismatch, Matcher, compile_args
from .predicates import Test, predicate
from .problems import Loc, Problem
from .reasons import NO_REASONS, Reason, Reasons
from .records import ToolCall
from .suite import Trajectory
from .trajectory_reasons import (
    any_order_reasons,
    assign_any_order,
    before_reasons,
    exact_reasons,
    forbidden_calls,
    in_order_reasons,
    in_order_stuck,
)

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


CallTest = Callable[[ToolCall], bool]


@dataclass(frozen=True, slots=True)
class CompiledStep:
    pattern: ToolPattern
    args: Matcher | None
    test: CallTest = field(init=False, repr=False, compare=False)
    """The verdict of :meth:`matches`, compiled: tool name, then arguments."""
    name: str | None = field(init=False, repr=False, compare=False)
    """The tool's name when it is not a glob: the hot loops compare it inline."""
    wants: Test | None = field(init=False, repr=False, compare=False)
    """The arguments' compiled test (None: any arguments)."""

    def __post_init__(self) -> None:
        wants = None if self.args is None else predicate(self.args)
        object.__setattr__(self, "wants", wants)
        object.__setattr__(self, "name", self.pattern.text if self.pattern.regex is None else None)
        object.__setattr__(self, "test", _step_test(self.pattern, wants))

    def __reduce__(self) -> tuple[type[CompiledStep], tuple[ToolPattern, Matcher | None]]:
        return CompiledStep, (self.pattern, self.args)  # the test is rebuilt, not pickled

    def mismatch(self, call: ToolCall) -> ArgMismatch | None:
        """The argument difference of a call to the right tool (None: it matches)."""
        return None if self.args is None else self.args.mismatch(call.args, ())

    def matches(self, call: ToolCall) -> bool:
        return self.test(call)

    def describe(self, index: int) -> str:
        return f"step {index + 1} ({self.pattern.text})"


def _step_test(pattern: ToolPattern, wants: Test | None) -> CallTest:
    name, regex = pattern.text, pattern.regex
    if regex is None:
        if wants is None:
            return lambda call: call.tool == name
        return lambda call: call.tool == name and wants(call.args)
    match = regex.match
    if wants is None:
        return lambda call: match(call.tool) is not None
    return lambda call: match(call.tool) is not None and wants(call.args)


MEMO_TOOLS: Final = 4096
"""Tool names whose forbidden-ness a trajectory remembers (they repeat across trials)."""


def _forbidden_test(patterns: Sequence[ToolPattern]) -> Callable[[Sequence[ToolCall]], bool]:
    """Whether any call is to a forbidden tool: a set lookup; globs once per tool name."""
    names = frozenset(p.text for p in patterns if p.regex is None)
    globs = [p.regex.pattern for p in patterns if p.regex is not None]
    if not globs:

        def any_named(calls: Sequence[ToolCall]) -> bool:
            for call in calls:  # noqa: SIM110 (a loop, not a generator frame per trial)
                if call.tool in names:
                    return True
            return False

        return any_named
    glob = re.compile("|".join(globs)).match  # each is anchored: (?s:...)\Z
    known: dict[str, bool] = {}

    def any_forbidden(calls: Sequence[ToolCall]) -> bool:
        for call in calls:
            tool = call.tool
            hit = known.get(tool)
            if hit is None:
                hit = tool in names or glob(tool) is not None
                if len(known) < MEMO_TOOLS:
                    known[tool] = hit
            if hit:
                return True
        return False

    return any_forbidden


@dataclass(frozen=True, slots=True)
class TrajectorySpec:
    steps: tuple[CompiledStep, ...]
    order: str
    forbidden: tuple[ToolPattern, ...]
    before: tuple[tuple[ToolPattern, ToolPattern], ...]
    max_calls: int | None
    any_forbidden: Callable[[Sequence[ToolCall]], bool] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "any_forbidden", _forbidden_test(self.forbidden))

    def __reduce__(self) -> tuple[type[TrajectorySpec], tuple[object, ...]]:
        fields = (self.steps, self.order, self.forbidden, self.before, self.max_calls)
        return TrajectorySpec, fields  # the forbidden test is rebuilt, not pickled


@quick_init
@dataclass(frozen=True, slots=True)
class TrajectoryResult:
    matched: bool
    """The verdict: decided by the compiled tests, whether or not the reasons are read."""
    violations: Reasons
    """Every violated constraint (none when matched), worked out when first read."""


MATCHED: Final = TrajectoryResult(True, NO_REASONS)
"""Every matched trajectory's result: one object, shared."""


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
    """Grade one trial's calls; every violated constraint becomes a :class:`Reason` (when
    the result's ``violations`` are first read)."""
    forbidden = bool(spec.forbidden) and spec.any_forbidden(calls)
    assigned, stuck = None, None
    if spec.order == n.ORDER_ANY_ORDER:
        assigned = _any_order_assigned(spec.steps, calls)
        ordered = assigned is None
    elif spec.order == n.ORDER_EXACT:
        ordered = _exact_holds(spec.steps, calls)
    else:
        stuck = in_order_stuck(spec.steps, calls)
        ordered = stuck is None
    before = before_reasons(spec, calls) if spec.before else ()
    too_many = spec.max_calls is not None and len(calls) > spec.max_calls
    if ordered and not (forbidden or before or too_many):
        return MATCHED
    facts = (forbidden, ordered, assigned, stuck, before, too_many)
    return TrajectoryResult(False, Reasons((), _violations, spec, calls, *facts))


def _violations(
    spec: TrajectorySpec,
    calls: Sequence[ToolCall],
    forbidden: bool,
    ordered: bool,
    assigned: tuple[dict[int, int], list[list[int]]] | None,
    stuck: int | None,
    before: list[Reason] | tuple[()],
    too_many: bool,
) -> list[Reason]:
    """Every violated constraint of a trajectory that did not match, in the order the
    matcher always gave them: forbidden calls, the order, ``before`` pairs, ``maxCalls``."""
    violations: list[Reason] = forbidden_calls(spec, calls) if forbidden else []
    if not ordered:
        if spec.order == n.ORDER_EXACT:
            violations.extend(exact_reasons(spec.steps, calls))
        elif spec.order == n.ORDER_ANY_ORDER:
            violations.extend(any_order_reasons(spec.steps, calls, assigned))
        else:
            violations.extend(in_order_reasons(spec.steps, calls, stuck))
    violations.extend(before)
    if too_many:
        violations.append(
            Reason("max-calls", f"made {len(calls)} tool calls; maxCalls is {spec.max_calls}")
        )
    return violations


# The loops below inline step.test for a step named without a glob (the common case):
# one call per trial fewer for every call they look at.


def _exact_holds(steps: Sequence[CompiledStep], calls: Sequence[ToolCall]) -> bool:
    if len(calls) != len(steps):
        return False
    for step, call in zip(steps, calls, strict=True):
        name, wants = step.name, step.wants
        if name is None:
            if not step.test(call):
                return False
        elif call.tool != name or (wants is not None and not wants(call.args)):
            return False
    return True


def _any_order_assigned(
    steps: Sequence[CompiledStep], calls: Sequence[ToolCall]
) -> tuple[dict[int, int], list[list[int]]] | None:
    """None when every step has a call of its own; else the maximum matching, for the
    reasons. A greedy assignment that serves every step is a perfect matching; only when
    greedy is stuck does the maximum matching decide (a call greedy spent may serve another)."""
    used = [False] * len(calls)
    for step in steps:
        name, wants, test = step.name, step.wants, step.test
        for i, call in enumerate(calls):
            if used[i]:
                continue
            if name is None:
                if not test(call):
                    continue
            elif call.tool != name or (wants is not None and not wants(call.args)):
                continue
            used[i] = True
            break
        else:
            assigned = assign_any_order(steps, calls)
            return None if len(assigned[0]) == len(steps) else assigned
    return None
