"""Gate policies a suite declares under ``x-openwop-eval.gate``, and a task's tags.

A policy only ever adds conditions to the RFC 0246 ``passed``: every task passed, groups of
tagged tasks with their own bar, a reliability floor on every task, an unknown cost that does
not pass, and quarantined tasks that the policies do not count. :mod:`.gate` decides them.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import AfterValidator, Field, model_validator

from .closed import Closed

TAG_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
MAX_TAGS = 32
MAX_GROUPS = 64
MAX_QUARANTINED = 1000
MAX_REASON_CHARS = 500

UnknownCost: TypeAlias = Literal["fail", "zero"]
BoundMethod: TypeAlias = Literal["wilson", "exact"]

_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _calendar_date(text: str) -> str:
    """``text`` when it is a real date ``YYYY-MM-DD`` (no clock: the calendar by hand)."""
    year, month, day = (int(part) for part in text.split("-"))
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not 1 <= month <= 12 or not 1 <= day <= _DAYS[month - 1] + (month == 2 and leap):
        raise ValueError(f"{text} is not a date")
    return text


Tag: TypeAlias = Annotated[str, Field(pattern=TAG_PATTERN, max_length=64)]
IsoDate: TypeAlias = Annotated[str, Field(pattern=DATE_PATTERN), AfterValidator(_calendar_date)]


class GateGroup(Closed):
    """The tasks tagged ``tag``, gated on their own: a mean bar, every task, or both."""

    tag: Tag
    pass_score: float | None = Field(
        None,
        alias="passScore",
        ge=0,
        le=1,
        description="Minimum mean gated score of the group's tasks.",
    )
    require_all: bool = Field(
        False, alias="requireAll", description="Every task of the group must pass."
    )

    @model_validator(mode="after")
    def _says_something(self) -> GateGroup:
        if self.pass_score is None and not self.require_all:
            raise ValueError("a group needs passScore or requireAll: true")
        return self


class LowerBound(Closed):
    """A lower confidence bound of a task's pass rate (passing trials / trials)."""

    method: BoundMethod = Field("wilson", description="wilson (score interval) or exact.")
    at_least: float = Field(alias="atLeast", gt=0, le=1)
    confidence: float = Field(0.95, ge=0.5, lt=1, description="One-sided confidence.")


class Reliability(Closed):
    """A floor every task must reach; too few trials to show it is not passed."""

    pass_hat_k: float | None = Field(
        None, alias="passHatK", gt=0, le=1, description="Minimum passHatK of every task."
    )
    lower_bound: LowerBound | None = Field(None, alias="lowerBound")

    @model_validator(mode="after")
    def _says_something(self) -> Reliability:
        if self.pass_hat_k is None and self.lower_bound is None:
            raise ValueError("reliability needs passHatK or lowerBound")
        return self


class QuarantinedTask(Closed):
    """A task that runs and is reported but that the policies do not count, until a date."""

    task_id: str = Field(alias="taskId", pattern=r"^[a-z0-9][a-z0-9-]*$")
    until: IsoDate = Field(description="The last day (UTC) the quarantine holds.")
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)


class GatePolicy(Closed):
    """Conditions a run must meet beside the RFC's ``passed``; none can loosen it."""

    require_all_tasks: bool = Field(
        False, alias="requireAllTasks", description="Every task must pass under its pass rule."
    )
    groups: tuple[GateGroup, ...] = Field((), max_length=MAX_GROUPS)
    reliability: Reliability | None = None
    unknown_cost: UnknownCost = Field(
        "fail",
        alias="unknownCost",
        description="With maxCostUsd set, a trial that reports no cost makes the cost"
        " unknown: fail (the default) does not pass; zero counts it as 0, as the RFC does.",
    )
    quarantine: tuple[QuarantinedTask, ...] = Field((), max_length=MAX_QUARANTINED)

    @model_validator(mode="after")
    def _each_once(self) -> GatePolicy:
        tags = [group.tag for group in self.groups]
        if len(set(tags)) != len(tags):
            raise ValueError("a tag may have one group")
        tasks = [entry.task_id for entry in self.quarantine]
        if len(set(tasks)) != len(tasks):
            raise ValueError("a task may be quarantined once")
        return self

    def quarantined_on(self, day: str | None) -> frozenset[str]:
        """The tasks whose quarantine holds on ``day`` (an ISO date); none without a day."""
        if day is None:
            return frozenset()
        return frozenset(q.task_id for q in self.quarantine if day <= q.until)


class SuiteExtension(Closed):
    """This project's members of a suite's ``x-openwop-eval``."""

    gate: GatePolicy | None = None
