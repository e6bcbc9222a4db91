"""A run ready to execute, an unfinished run as it was started, and why a run cannot start
or resume."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..core.plan import RunTerms
from ..core.problems import Problem
from ..core.safety import SafetyPolicy
from ..files.suites import LoadedSuite
from ..store import RunRecord
from .ending import RunFailure
from .fixtures import FixtureSource
from .result import RunError, RunResult
from .run import Execution, execute_run
from .spec import describe


class RunEndedError(RunError):
    """A run that could not be restored as it was started, and was ended as failed."""

    def __init__(self, run_id: str, failure: RunFailure) -> None:
        super().__init__(f"run {run_id} was ended as failed: {failure.message}")
        self.run_id, self.failure = run_id, failure


class SpecError(RunError):
    """A spec that cannot run: its problems, each located by the member it is about."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(describe(p) for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class Reopened:
    """An unfinished run as it was started: its record, suite and fixture source."""

    run: RunRecord
    loaded: LoadedSuite
    fixtures: FixtureSource
    terms: RunTerms = field(default_factory=RunTerms)
    """As its ``eval.started`` records them."""
    safety: SafetyPolicy | None = None


@dataclass
class ActiveRun:
    """A run ready to execute: await :meth:`execute`; :meth:`cancel` ends it as cancelled,
    :meth:`stop` leaves it open for a later resume (a host shutting down)."""

    run: RunRecord
    execution: Execution
    _task: asyncio.Task[Any] | None = None
    _cancelled: bool = False

    @property
    def run_id(self) -> str:
        return self.run.run_id

    async def execute(self) -> RunResult:
        self._task = asyncio.current_task()
        if self._cancelled and self._task is not None:
            self._task.cancel()  # asked before it began: it ends at its first step
        return await execute_run(self.execution, self.run_id)

    def stop(self) -> None:
        self.execution.stopping = True
        self.cancel()

    def cancel(self) -> None:
        """End the run as cancelled, keeping its finished trials (or, after :meth:`stop`,
        leave it open)."""
        self._cancelled = True
        if self._task is not None:
            self._task.cancel()
