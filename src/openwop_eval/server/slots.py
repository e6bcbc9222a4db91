"""How many of the host's runs play at once, and the line the others wait in.

``max_running_runs`` slots: a run plays only while it holds one. A run created when they are
all taken waits, stored as ``pending``, in a first-come line of at most ``max_queued_runs``
runs — an asyncio future each, no thread and no trial — and takes the next slot that frees;
a run asked for past that line is refused (``503``, the caller retries). All on the event
loop: no locks.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass


class LineFullError(Exception):
    """Every slot is taken and the line is full: the run is not created."""


@dataclass(frozen=True)
class Admission:
    """A run about to be created, counted until it is launched or given up."""

    queued: bool
    """Created to wait in the line (stored ``pending``), not to play at once."""


class RunSlots:
    def __init__(self, running: int, queued: int) -> None:
        self.running, self.queued = running, queued
        self.held = 0
        """Slots held by playing runs."""
        self.line: deque[asyncio.Future[None]] = deque()
        self._admitted = [0, 0]  # runs being created: to play at once, to wait

    @property
    def waiting(self) -> int:
        return len(self.line)

    def admit(self) -> Admission:
        """Count a run about to be created: it plays at once if a slot is free, else it
        waits; raises :class:`LineFullError` when the line has no room either."""
        now, later = self._admitted
        if not self.line and not later and self.held + now < self.running:
            self._admitted[0] += 1
            return Admission(queued=False)
        if self.waiting + later >= self.queued:
            raise LineFullError
        self._admitted[1] += 1
        return Admission(queued=True)

    def settle(self, admission: Admission) -> None:
        """The admitted run is launched, or was never created."""
        self._admitted[admission.queued] -= 1

    def try_take(self) -> bool:
        """A slot now, if one is free and nobody waits for one."""
        if self.line or self.held >= self.running:
            return False
        self.held += 1
        return True

    async def take(self) -> None:
        """A slot, after the runs that wait before this one; cancellable while waiting."""
        if self.try_take():
            return
        turn = asyncio.get_running_loop().create_future()
        self.line.append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self.give()  # handed a slot in the same turn as cancelled: pass it on
            elif turn in self.line:  # else ``give`` has passed over it
                self.line.remove(turn)
            raise

    def give(self) -> None:
        """A playing run ended: its slot goes to the first run waiting, if any."""
        while self.line:
            turn = self.line.popleft()
            if not turn.done():
                turn.set_result(None)  # the slot passes on: ``held`` is unchanged
                return
        self.held -= 1
