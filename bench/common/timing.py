"""Warm wall-clock timing and memory peaks, measured the same way for every system."""

from __future__ import annotations

import gc
import resource
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    trials: int
    samples: tuple[float, ...]
    """Seconds per measured run, warm-ups excluded."""

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def iqr(self) -> tuple[float, float]:
        if len(self.samples) < 2:
            return self.samples[0], self.samples[0]
        q = statistics.quantiles(self.samples, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def per_second(self) -> float:
        return self.trials / self.median

    def as_json(self) -> dict[str, Any]:
        lo, hi = self.iqr
        return {
            "trials": self.trials,
            "medianSeconds": self.median,
            "q1Seconds": lo,
            "q3Seconds": hi,
            "trialsPerSecond": self.per_second,
            "samples": list(self.samples),
        }


def time_runs(run: Callable[[], object], trials: int, warmup: int, repeat: int) -> Timing:
    """Run ``warmup`` untimed passes, then ``repeat`` timed ones; one process, one thread."""
    for _ in range(warmup):
        run()
    return Timing(trials, tuple(timed_once(run) for _ in range(repeat)))


def timed_once(run: Callable[[], object]) -> float:
    """Seconds of one run. It starts from the same heap so one run's garbage is not billed
    to the next, and with that heap (the corpus, results kept by earlier measurements)
    frozen: the collector's passes then walk only what the run itself allocates, so no
    system is billed for the harness's heap, which grows with the order systems run in."""
    gc.collect()
    gc.freeze()
    try:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    finally:
        gc.unfreeze()


def traced_peak(run: Callable[[], object]) -> int:
    """Bytes allocated at the peak of one run, above what was live when it started."""
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = run()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return peak - base


def max_rss() -> int:
    """The process's peak resident set so far, in bytes (ru_maxrss: KiB on Linux)."""
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024
