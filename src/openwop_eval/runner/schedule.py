"""Which trials a run plays, and when it stops starting them.

``concurrency`` workers each take the next missing trial (memory O(concurrency), not
O(trials)) and hand it to the committer when it ends. No trial starts once the suite's
``maxCostUsd`` is spent, or — with ``--fail-fast`` — once the run can no longer pass
(:mod:`.fail_fast`); then the trials in flight are ended too, since no outcome of theirs can
change the verdict. Trials that never ran count as the RFC counts a trial that did not run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from fractions import Fraction
from typing import Any

from ..core import CompiledTask, GradingPlan
from ..core.stats import decimal, decimal_sum
from .fail_fast import FailFast
from .trial import PlayedTrial

Play = Callable[[CompiledTask, int], Awaitable[PlayedTrial]]
Hand = Callable[[PlayedTrial], Awaitable[None]]


def budget_of(plan: GradingPlan) -> Fraction | None:
    thresholds = plan.suite.thresholds
    if thresholds is None or thresholds.max_cost_usd is None:
        return None
    return decimal_sum([thresholds.max_cost_usd])


class Schedule:
    """The trials still to play, the money spent on them, and whether to stop."""

    def __init__(
        self,
        plan: GradingPlan,
        todo: Iterator[tuple[CompiledTask, int]],
        spent: Fraction,
        decider: FailFast | None,
    ) -> None:
        self._todo, self.spent, self._decider = todo, spent, decider
        self._budget = budget_of(plan)
        self.exhausted = self._budget is not None and spent > self._budget
        self._decided = asyncio.Event()
        self.played = 0

    @property
    def decided(self) -> bool:
        """The run can no longer pass (``--fail-fast``): no further trial starts."""
        return self._decided.is_set()

    def delivered(self) -> None:
        """After a batch is folded (on the loop): stop now if the run is decided."""
        if self._decider is not None and self._decider.decided:
            self._decided.set()

    async def worker(self, play: Play, hand: Hand) -> None:
        for task, index in self._todo:
            if self.exhausted or self.decided:
                return
            finished = await (
                self._raced(play(task, index)) if self._decider else play(task, index)
            )
            if finished is None:
                return  # decided while it played: ended, not recorded
            self.played += 1
            await hand(finished)
            cost = finished.record.cost_usd
            if cost is not None:
                self.spent += decimal(cost)
                budget = self._budget
                self.exhausted = self.exhausted or (budget is not None and self.spent > budget)
            # Give the loop a turn between trials, even when the agent never waits: the
            # host's requests are served meanwhile, and each turn's trials commit together.
            await asyncio.sleep(0)

    async def _raced(self, playing: Awaitable[PlayedTrial]) -> PlayedTrial | None:
        """The trial, or None when the run is decided before it ends (it is cancelled)."""
        trial: asyncio.Future[Any] = asyncio.ensure_future(playing)
        stop = asyncio.ensure_future(self._decided.wait())
        try:
            await asyncio.wait((trial, stop), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the run is cancelled: so is its trial
            trial.cancel()
            raise
        finally:
            stop.cancel()
        if trial.done():
            played: PlayedTrial = trial.result()
            return played
        trial.cancel()
        await asyncio.gather(trial, return_exceptions=True)
        return None
