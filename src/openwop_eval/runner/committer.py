"""The committer: one thread per running run that grades finished trials and commits them.

The event loop only runs agents. A trial the agent is done with is handed over here; the
trials handed over in one turn of the loop go to this thread as one batch, which grades
them, gives them their closing events and commits them in one transaction (group commit,
batches that waited meanwhile joining in, at most ``max_batch`` trials) — so a crash loses
at most the trials not yet committed, never part of one. Grading, encoding and the store's
I/O so never hold up the loop, which a host shares with its requests; and a run's trials
pay one commit per batch, not one each.

Committed trials are folded into the run's running totals here (``fold``, on this thread);
what happens on the loop (the observer, the host's wake-up call) is posted back to it once
per batch (``delivered``). Hand-overs wait while ``max_waiting`` trials are uncommitted, so
memory stays bounded however fast the agents are.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable

from ..core import GradingPlan, TrialGrade
from .events import EventWriter
from .trial import GradedTrial, PlayedTrial, finish_trial

Delivered = Callable[[list[GradedTrial]], None]

QUIET_S = 0.002
"""A pause this long in hand-overs means the loop is idle: commit now."""
MAX_DELAY_S = 0.02
"""While hand-overs keep coming, commit at least this often."""


class Committer:
    def __init__(
        self,
        writer: EventWriter,
        plan: GradingPlan,
        fold: Callable[[TrialGrade], None],
        delivered: Delivered,
        max_batch: int = 256,
        max_waiting: int = 1024,
    ) -> None:
        self._writer = writer
        self._plan = plan
        self._fold = fold
        self._delivered = delivered
        self._broken = False  # the thread's own flag: the store failed, commit nothing more
        self._max_batch = max_batch
        self._loop = asyncio.get_running_loop()
        self._room = asyncio.Semaphore(max_waiting)
        self._failure: BaseException | None = None
        self._turn: list[PlayedTrial] = []  # handed over in this turn of the loop
        self._queue: deque[list[PlayedTrial]] = deque()
        self._queued = 0  # trials in the queue
        self._submitted = 0  # batches ever queued
        self._wake = threading.Condition()
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="openwop-eval-committer")
        self._thread.daemon = True  # a killed run loses only what was not committed
        self._thread.start()

    async def put(self, done: PlayedTrial) -> None:
        """Hand a finished trial over; waits while too many are uncommitted."""
        self._raise_failure()
        await self._room.acquire()
        self._turn.append(done)
        if len(self._turn) >= self._max_batch:
            self._submit()
        elif len(self._turn) == 1:
            self._loop.call_soon(self._submit)

    def _submit(self) -> None:
        if not self._turn:
            return
        batch, self._turn = self._turn, []
        with self._wake:
            self._queue.append(batch)
            self._queued += len(batch)
            self._submitted += 1
            self._wake.notify()

    async def close(self) -> None:
        """Commit what is waiting, then stop the thread; raises the store's failure, if any.
        Safe to call more than once."""
        self._submit()
        with self._wake:
            self._closed = True
            self._wake.notify()
        await asyncio.to_thread(self._thread.join)
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    # --- the thread -------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closed:
                    self._wake.wait()
                if not self._queue:
                    return
                self._gather()
                batch = self._take()
            if not self._broken:
                self._commit(batch)
            else:  # the store failed: nothing more is committed; the run ends as failed
                self._post([], len(batch), None)

    def _gather(self) -> None:
        """Wait (holding the lock) while hand-overs keep coming, for at most ``MAX_DELAY_S``
        or a full batch: this thread then works while the loop is idle (agents waiting)
        rather than contend with it for the interpreter when it is busy starting trials,
        and commits are larger."""
        deadline = time.monotonic() + MAX_DELAY_S
        while not self._closed and self._queued < self._max_batch:
            before, left = self._submitted, deadline - time.monotonic()
            if left <= 0:
                return
            self._wake.wait(min(QUIET_S, left))
            if self._submitted == before:
                return  # a pause: the loop has nothing more to hand over for now

    def _take(self) -> list[PlayedTrial]:
        """The next batch, and those waiting behind it while they fit."""
        batch = self._queue.popleft()
        while self._queue and len(batch) + len(self._queue[0]) <= self._max_batch:
            batch += self._queue.popleft()
        self._queued -= len(batch)
        return batch

    def _commit(self, batch: list[PlayedTrial]) -> None:
        outcomes: list[GradedTrial] = []
        failure: BaseException | None = None
        try:
            outcomes = commit_batch(self._plan, self._writer, batch)
            for outcome in outcomes:
                self._fold(outcome.grade)
        except BaseException as exc:  # the run ends on it; the loop raises it
            self._broken = True
            failure, outcomes = exc, []
        self._post(outcomes, len(batch), failure)

    def _post(self, outcomes: list[GradedTrial], count: int, failure: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone (the process is ending)
            self._loop.call_soon_threadsafe(self._settle, outcomes, count, failure)

    # --- back on the loop -------------------------------------------------------------

    def _settle(
        self, outcomes: list[GradedTrial], count: int, failure: BaseException | None
    ) -> None:
        if failure is not None and self._failure is None:
            self._failure = failure
        for _ in range(count):
            self._room.release()
        if outcomes:
            self._delivered(outcomes)


def commit_batch(
    plan: GradingPlan, writer: EventWriter, batch: list[PlayedTrial]
) -> list[GradedTrial]:
    """Grade the trials and commit them with their events in one transaction; on any
    failure nothing of the batch is kept (the writer drops it) and the error is raised."""
    outcomes: list[GradedTrial] = []
    try:
        for done in batch:
            outcome = finish_trial(plan, done)
            task_id, index = done.key
            writer.write(
                outcome.events, (task_id, index, outcome.invocation_id, outcome.diagnostics)
            )
            outcomes.append(outcome)
        writer.flush()
    except BaseException:
        writer.discard()
        raise
    return outcomes
