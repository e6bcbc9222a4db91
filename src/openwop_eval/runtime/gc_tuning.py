"""The cyclic garbage collector's settings for a process that runs evals.

A run allocates and frees many small objects per trial (events, payloads, records). With
CPython's default first threshold, 700 more objects allocated than freed, the collector ran
every few trials: the objects of the trials in flight survived its passes and reached the
oldest generation, whose full passes walk the whole heap — a large suite's compiled plan
included. That was a third of the runner's time (measured by ``bench/runner/run_bench.py``).

Most of these objects are freed by reference counting long before a pass would find them;
the collector is needed only for reference cycles. A first threshold of
:data:`FIRST_THRESHOLD` net allocations keeps that, and bounds what waits for a pass to
that many objects (a few MB). The command line (every command, the host included) applies
it at start; a program that embeds the runner may call :func:`tune` itself.
"""

from __future__ import annotations

import gc
from typing import Final

FIRST_THRESHOLD: Final = 50_000
"""Net container allocations between passes of the youngest generation."""


def tune() -> None:
    """Raise the collector's first threshold to :data:`FIRST_THRESHOLD` (never lower it);
    the older generations keep their settings."""
    first, second, third = gc.get_threshold()
    if first < FIRST_THRESHOLD:
        gc.set_threshold(FIRST_THRESHOLD, second, third)
