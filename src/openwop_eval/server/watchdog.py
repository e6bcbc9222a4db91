"""A run worker's watchdog: it sees the worker's event loop stop turning, and names the run
whose code holds it.

An ``async def`` agent that blocks (``time.sleep``, a busy loop, blocking I/O) holds the one
event loop every run of its worker plays on: the other runs, the cancels the host sends, the
trials' own timeouts all wait behind it, and nothing on that loop can interrupt it. The loop
beats every ``BEAT_S``; a thread beside it looks as often, and when no beat came for the
stall bound it looks at the loop thread's stack: inside a trial's call of its agent, the run
whose execution an outer frame holds is handed to ``on_stall`` (worker.py: tell the host,
exit; the host ends that run ``agent_stalled`` and resumes the others in a new worker).
Held anywhere else (a store that does not answer) blames no run: it is logged.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping
from types import CodeType, FrameType
from typing import Final

log = logging.getLogger("openwop_eval.server.run_worker")

BEAT_S: Final = 0.25
"""How often the loop beats and the watchdog looks."""


def culprit(
    frame: FrameType | None, executions: Mapping[int, str], agent_calls: Collection[CodeType]
) -> str | None:
    """The run whose agent holds this stack: a frame of ``agent_calls`` (the trial's call of
    its agent), and outside it the run's execution (by ``id``) in a frame's locals. None
    when the stack is not in an agent's call (then it is not an agent's doing)."""
    in_agent = False
    while frame is not None:
        in_agent = in_agent or frame.f_code in agent_calls
        if in_agent:
            for value in list(frame.f_locals.values()):
                run_id = executions.get(id(value))
                if run_id is not None:
                    return run_id
        frame = frame.f_back
    return None


class Watchdog:
    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        stall_s: float,
        executions: Callable[[], Mapping[int, str]],
        on_stall: Callable[[str, float], None],
        agent_calls: Collection[CodeType],
    ) -> None:
        self.loop, self.stall_s = loop, stall_s
        self.executions, self.on_stall, self.agent_calls = executions, on_stall, agent_calls
        self.last = time.monotonic()
        self._thread = threading.get_ident()  # the loop's: started on it

    def start(self) -> None:
        self._beat()
        threading.Thread(target=self._watch, name="openwop-eval-watchdog", daemon=True).start()

    def _beat(self) -> None:
        self.last = time.monotonic()
        self.loop.call_later(BEAT_S, self._beat)

    def _watch(self) -> None:
        said = False
        while not self.loop.is_closed():
            time.sleep(BEAT_S)
            stalled = time.monotonic() - self.last
            if stalled <= self.stall_s:
                said = False
                continue
            frame = sys._current_frames().get(self._thread)
            run_id = culprit(frame, self.executions(), self.agent_calls)
            if run_id is not None:
                self.on_stall(run_id, stalled)
                return
            if not said:  # not an agent (a store that does not answer): nobody to blame
                log.warning("the run worker's event loop has not turned for %.1f s", stalled)
                said = True
