"""Structured reasons: why a trial, a task or a suite did not pass.

Reasons are diagnostics for people and reports. They may quote tool names and argument
values, so they never go into ``eval.*`` events or the summary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from .frozen import quick_init

Rule: TypeAlias = Literal[
    # trial
    "agent-error",
    "fixture-miss",
    "not-run",
    "judge",
    "score-below-bar",
    "safety-finding",
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

    def __str__(self) -> str:
        return f"{self.message} ({self.detail})" if self.detail else self.message

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"rule": self.rule, "message": self.message}
        for key, value in (
            ("callIndex", self.call_index),
            ("stepIndex", self.step_index),
            ("tool", self.tool),
            ("detail", self.detail),
        ):
            if value is not None:
                out[key] = value
        return out
