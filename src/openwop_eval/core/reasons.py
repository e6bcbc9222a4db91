"""Structured reasons: why a trial, a task or a suite did not pass.

Reasons are diagnostics for people and reports. They may quote tool names and argument
values, so they never go into ``eval.*`` events or the summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, overload

from .frozen import quick_init

Rule: TypeAlias = Literal[
    # trial
    "agent-error",
    "fixture-miss",
    "not-run",
    "judge",
    "score-below-bar",
    "safety-finding",
    "turns-exhausted",
    "user-simulator",
    # trajectory
    "forbidden",
    "missing-step",
    "order",
    "call-count",
    "before",
    "max-calls",
    # task and suite
    "task-below-bar",
    "no-trial-passed",
    "not-every-trial-passed",
    "gated-aggregate-below-bar",
    "cost-over-budget",
    "latency-over-bar",
    "latency-unknown",
    # the gate (core/gate.py): the run's, then its policies
    "infrastructure",
    "user-simulator-errors",
    "cost-unknown",
    "policy-require-all-tasks",
    "policy-group-below-bar",
    "policy-group-require-all",
    "policy-pass-hat-k",
    "policy-too-few-trials",
    "policy-lower-bound",
]


@quick_init
@dataclass(frozen=True, slots=True)
class Reason:
    """One failed constraint. Indexes are 0-based; ``message`` speaks 1-based to people."""

    rule: Rule
    message: str
    call_index: int | None = None
    step_index: int | None = None
    tool: str | None = None
    detail: str | None = None
    """A finer point, such as which argument differed and how."""
    turn: int | None = None
    """A conversation: the agent turn whose rule it breaks (its ``call_index`` counts the
    calls of the whole conversation)."""

    def __str__(self) -> str:
        return f"{self.message} ({self.detail})" if self.detail else self.message

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"rule": self.rule, "message": self.message}
        for key, value in (
            ("callIndex", self.call_index),
            ("stepIndex", self.step_index),
            ("tool", self.tool),
            ("detail", self.detail),
            ("turn", self.turn),
        ):
            if value is not None:
                out[key] = value
        return out


class Reasons(Sequence[Reason]):
    """Reasons, worked out when first read.

    Only a failure has any, and a verdict needs none of them: most are never read (a run
    gates on the scores), while the walk that explains a failure costs more than deciding
    it. So a grade keeps what the walk needs and runs it on first reading; the reasons are
    the same, word for word, as if they had been built at once. The walk is pure, so two
    threads reading at once both get the same reasons.
    """

    __slots__ = ("_args", "_explain", "_items")

    def __init__(
        self,
        items: Iterable[Reason] = (),
        explain: Callable[..., Iterable[Reason]] | None = None,
        *args: Any,
    ) -> None:
        # The walk and its arguments, not a closure: a closure's cells are objects of their
        # own, and a run's many failures would make the collector's full passes frequent.
        self._items = tuple(items)
        self._explain = explain
        self._args = args

    @property
    def items(self) -> tuple[Reason, ...]:
        explain = self._explain
        if explain is not None:
            self._items = self._items + tuple(explain(*self._args))
            self._explain, self._args = None, ()
        return self._items

    @overload
    def __getitem__(self, index: int) -> Reason: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Reason, ...]: ...
    def __getitem__(self, index: int | slice) -> Reason | tuple[Reason, ...]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Reason]:
        return iter(self.items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Reasons | tuple):
            return self.items == tuple(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.items)

    def __repr__(self) -> str:
        return f"Reasons({self.items!r})"

    def __reduce__(self) -> tuple[type[Reasons], tuple[tuple[Reason, ...]]]:
        return Reasons, (self.items,)  # worked out before pickling: a walk is not pickled


NO_REASONS: Final = Reasons()
"""Every passing grade's reasons: one object, shared."""
