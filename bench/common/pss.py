"""The peak proportional set size (PSS) of this process and its children, sampled.

RSS counts every page a process maps, so a parent and the child it forked (a commit
process, openwop_eval.runner.commit_process) count the pages they still share twice; PSS
divides each shared page among the processes that map it, so the sum over the two is
their memory together. Linux only (``/proc/PID/smaps_rollup``); elsewhere nothing is
sampled and the peak reads None.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from types import TracebackType

INTERVAL_S = 0.05


def pss_kb(pid: int) -> int:
    """The PSS of process ``pid`` in kB (0 when it has gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


class PssPeak:
    """``with PssPeak() as peak: ...``; then ``peak.mb``: the largest sum seen of this
    process's PSS and its children's, sampled every ``INTERVAL_S`` seconds."""

    def __init__(self) -> None:
        self.kb: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="pss-sampler", daemon=True)

    @property
    def mb(self) -> float | None:
        return None if self.kb is None else self.kb / 1024

    def __enter__(self) -> PssPeak:
        if Path("/proc/self/smaps_rollup").exists():
            self.kb = 0
            self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.kb is not None:
            self._stop.set()
            self._thread.join()

    def _sample(self) -> None:
        me = os.getpid()
        while True:
            total = pss_kb(me) + sum(pss_kb(child) for child in children(me))
            self.kb = max(self.kb or 0, total)
            if self._stop.wait(INTERVAL_S):
                return
