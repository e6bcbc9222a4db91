"""Wakes event streams when a run commits: a per-run signal, replaced after each firing.

A reader takes the run's current signal *before* it reads the store, then waits on it, so
a commit that lands between the read and the wait still wakes it.
"""

from __future__ import annotations

import asyncio
import contextlib


class Hub:
    def __init__(self) -> None:
        self._signals: dict[str, asyncio.Event] = {}

    def notify(self, run_id: str) -> None:
        signal = self._signals.pop(run_id, None)
        if signal is not None:
            signal.set()

    def signal(self, run_id: str) -> asyncio.Event:
        return self._signals.setdefault(run_id, asyncio.Event())

    @staticmethod
    async def wait(signal: asyncio.Event, timeout: float) -> bool:
        """True when the signal fired, False after ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(signal.wait(), timeout)
        return signal.is_set()
