"""Wakes event streams when a run commits: a per-run signal, replaced after each firing.

A reader takes the run's current signal *before* it reads the store, then waits on it, so
a commit that lands between the read and the wait still wakes it.

Paced: a run's signal fires at once after a quiet ``PACE_S``, and otherwise at most once
per ``PACE_S``, for every commit since the last firing. A run committing a trial at a time
thousands of times a second would wake each of its subscribers for every commit — one page
read, formatted and written per commit per subscriber, on the loop the run itself needs; so
its readers get one page per ``PACE_S`` instead, at most ``PACE_S`` late. A commit made off
the event loop (a worker thread) is handed to the loop: an ``asyncio.Event`` is not
thread-safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Final

PACE_S: Final = 0.025
MAX_PACED: Final = 1024
"""Runs whose last firing is remembered; older ones have been quiet for longer than PACE_S."""


class Hub:
    def __init__(self) -> None:
        self._signals: dict[str, asyncio.Event] = {}
        self._fired: dict[str, float] = {}  # when each run's signal last fired (loop time)
        self._due: set[str] = set()  # runs whose firing is scheduled
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    def notify(self, run_id: str) -> None:
        """The run committed; called on the loop or from any thread."""
        loop = self._loop
        if loop is None:  # no signal was ever taken: nobody waits
            return
        if threading.get_ident() != self._loop_thread:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                loop.call_soon_threadsafe(self.notify, run_id)
            return
        if run_id in self._due:
            return  # a firing is on its way: it covers this commit too
        wait = self._fired.get(run_id, float("-inf")) + PACE_S - loop.time()
        if wait <= 0:
            self._fire(run_id)
        else:
            self._due.add(run_id)
            loop.call_later(wait, self._fire, run_id)

    def call(self, fn: Callable[..., object], *args: object) -> None:
        """``fn(*args)`` on the loop: now when called there, else as soon as it can."""
        loop = self._loop
        if loop is None:
            return  # no signal was ever taken: no reader to serve
        if threading.get_ident() == self._loop_thread:
            fn(*args)
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed
            loop.call_soon_threadsafe(fn, *args)

    def _fire(self, run_id: str) -> None:
        assert self._loop is not None
        self._due.discard(run_id)
        signal = self._signals.pop(run_id, None)
        if signal is None:
            return  # no reader since the last firing: the next commit fires at once
        now = self._loop.time()
        if len(self._fired) >= MAX_PACED:
            self._fired = {r: t for r, t in self._fired.items() if now - t < PACE_S}
        self._fired[run_id] = now
        signal.set()

    def signal(self, run_id: str) -> asyncio.Event:
        """The run's current signal; called on the event loop."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._loop_thread = loop, threading.get_ident()
            self._due.clear()  # timers of a closed loop never run
        signal = self._signals.get(run_id)
        if signal is None:
            signal = self._signals[run_id] = asyncio.Event()
        return signal

    def current(self, run_id: str) -> asyncio.Event | None:
        """The run's signal if one is out, without making one."""
        return self._signals.get(run_id)

    @staticmethod
    async def wait(signal: asyncio.Event, timeout: float) -> bool:
        """True when the signal fired, False after ``timeout`` seconds."""
        if signal.is_set():
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):  # no task per wait, unlike wait_for
                await signal.wait()
        return signal.is_set()
