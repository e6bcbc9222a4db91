"""End-to-end runner benchmark: agents, tool boundary, grading, event log and store together.

    python -m bench.runner.run_bench                     # both scenarios, default sizes
    python -m bench.runner.run_bench --instant-trials 5000 --sleep-trials 1000 --json out.json

Scenario 1, "instant": an async agent that makes 3 tool calls answered by fixtures and
returns at once; every event is committed to a SQLite store (WAL) and written to a JSON-lines
file. Reports trials/second end to end (run creation to final summary).

Scenario 2, "sleepy": ``--sleep-trials`` (1,000) trials of an async agent that waits
``--sleep-ms`` (50 ms, a stand-in for a model call), at ``--concurrency`` (100). The ideal
wall time is trials / concurrency × the wait; the report gives the measured time and its
ratio to the ideal.

Suites have one task per 10 trials, at most 10,000 (the task limit), or ``--tasks``:
1,000,000 trials are 10,000 tasks × 100 by default. A suite costs memory by its tasks
(about 18 KB each, parsed and compiled); the trials must not: compare sizes at the same
``--tasks``. ``0`` trials skips a scenario; peak RSS is the whole process's (plus its
commit processes' peak, openwop_eval.runner.commit_process), so a memory figure is one
scenario alone. ``--pss`` also samples the peak PSS of this process and its commit process
together (bench/common/pss.py), which counts their shared pages once. ``--repeat N`` runs the
instant scenario N times (each on a fresh store and file) and reports the median, with
every run's seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from bench.common.pss import PssPeak
from openwop_eval import parse_suite
from openwop_eval.agents import AgentReply
from openwop_eval.base.limits import MAX_TASKS
from openwop_eval.runner.api import run_suite_async
from openwop_eval.runner.run import RunOptions
from openwop_eval.runtime import gc_tuning
from openwop_eval.store import Store

TOOLS = ["crm:lookup-order", "crm:get-customer", "payments:refund"]


def suite(tasks: int, trials: int) -> dict[str, Any]:
    def task(i: int) -> dict[str, Any]:
        return {
            "taskId": f"t-{i:05d}",
            "input": {"orderId": f"A-{i}"},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": "refunded"},
                "trajectory": {
                    "steps": [{"tool": t} for t in TOOLS],
                    "forbidden": ["accounts:delete"],
                },
            },
            "fixtures": {
                "toolResponses": [{"tool": t, "response": {"ok": True, "n": i}} for t in TOOLS]
            },
        }

    return {
        "suiteId": "bench.openwop.evals.runner",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "trials": {"count": trials},
        "tasks": [task(i) for i in range(tasks)],
    }


class InstantAgent:
    agent_id = "bench.instant"

    async def run(self, context: Any, port: Any) -> AgentReply:
        for tool in TOOLS:
            await port.call(tool, {"orderId": context.input["orderId"]})
        return AgentReply("refunded")


class SleepyAgent:
    agent_id = "bench.sleepy"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def run(self, context: Any, port: Any) -> AgentReply:
        await asyncio.sleep(self.seconds)
        await port.call(TOOLS[0], {"orderId": context.input["orderId"]})
        return AgentReply("refunded")


async def timed_run(
    doc: dict[str, Any], agent: Any, concurrency: int, workdir: Path
) -> tuple[float, dict[str, Any]]:
    loaded = parse_suite(doc)
    store = Store(f"sqlite:///{workdir / 'store.sqlite'}")
    with open(workdir / "events.jsonl", "w", encoding="utf-8") as events:
        started = time.perf_counter()
        result = await run_suite_async(
            loaded, agent, store=store, events=events, options=RunOptions(concurrency=concurrency)
        )
        elapsed = time.perf_counter() - started
    store.close()
    return elapsed, result.summary


TASKS: int | None = None
"""``--tasks``: the suite's task count (default: one task per 10 trials, at most 10,000)."""


def shape(trials: int) -> tuple[int, int]:
    """(tasks, trials per task) for about ``trials`` trials."""
    tasks = TASKS or min(MAX_TASKS, max(1, trials // 10))
    return tasks, max(1, trials // tasks)


def instant(trials: int, work: Path, repeat: int = 1) -> dict[str, Any]:
    """``repeat`` runs, each on a fresh store and file; the median run is the figure (a
    short run is a fraction of a second: one sample is at the mercy of the machine)."""
    tasks, per_task = shape(trials)
    n, samples = tasks * per_task, []
    for i in range(repeat):
        (work / str(i)).mkdir()
        elapsed, summary = asyncio.run(
            timed_run(suite(tasks, per_task), InstantAgent(), 8, work / str(i))
        )
        samples.append(round(elapsed, 4))
        if not summary["passed"]:
            break
    with open(work / str(i) / "events.jsonl", "rb") as lines:  # counted, not held
        events = sum(1 for _ in lines)
    elapsed = statistics.median(samples)
    of = f", the median of {len(samples)} runs" if len(samples) > 1 else ""
    print(
        f"instant agent, 3 fixture calls, events stored: {n} trials in {elapsed:.2f} s"
        f" = {n / elapsed:,.0f} trials/s ({events} events{of})"
    )
    return {
        "trials": n,
        "seconds": round(elapsed, 3),
        "trialsPerSecond": round(n / elapsed, 1),
        "samplesSeconds": samples,
        "events": events,
        "passed": summary["passed"],
    }


def sleepy(trials: int, sleep_ms: float, concurrency: int, work: Path) -> dict[str, Any]:
    tasks, per_task = shape(trials)
    seconds = sleep_ms / 1000
    elapsed, summary = asyncio.run(
        timed_run(suite(tasks, per_task), SleepyAgent(seconds), concurrency, work)
    )
    n = tasks * per_task
    ideal = n / concurrency * seconds
    print(
        f"{n} trials of a {sleep_ms:g} ms agent at concurrency {concurrency}:"
        f" {elapsed:.2f} s; ideal {ideal:.2f} s; ratio {elapsed / ideal:.2f}"
    )
    return {
        "trials": n,
        "sleepMs": sleep_ms,
        "concurrency": concurrency,
        "seconds": round(elapsed, 3),
        "idealSeconds": round(ideal, 3),
        "ratio": round(elapsed / ideal, 3),
        "passed": summary["passed"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instant-trials", type=int, default=5000, help="0 skips it")
    parser.add_argument("--repeat", type=int, default=1, help="instant runs; the median")
    parser.add_argument("--sleep-trials", type=int, default=1000, help="0 skips it")
    parser.add_argument("--sleep-ms", type=float, default=50)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--tasks", type=int, help="tasks in each suite (default: trials/10)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--pss", action="store_true", help="sample the peak PSS (common/pss.py)")
    args = parser.parse_args()
    if args.sleep_trials and args.sleep_ms <= 0:
        parser.error("--sleep-ms must be above 0")
    global TASKS
    TASKS = args.tasks
    gc_tuning.tune()  # as the command line does for every command (openwop_eval.runtime.gc_tuning)

    results: dict[str, Any] = {"python": sys.version.split()[0], "machine": platform.machine()}
    with tempfile.TemporaryDirectory() as tmp, PssPeak() if args.pss else nullcontext() as pss:
        if args.instant_trials > 0:
            (Path(tmp) / "instant").mkdir()
            results["instant"] = instant(
                args.instant_trials, Path(tmp) / "instant", max(1, args.repeat)
            )
        if args.sleep_trials > 0:
            (Path(tmp) / "sleepy").mkdir()
            results["sleepy"] = sleepy(
                args.sleep_trials, args.sleep_ms, args.concurrency, Path(tmp) / "sleepy"
            )
    # A run that commits in a forked process (openwop_eval.runner.commit_process) has two:
    # the figure is the sum of both peaks, an upper bound (pages they share count twice).
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    peak_mb = own + child
    results["peakRssMb"] = round(peak_mb, 1)
    results["ownPeakRssMb"], results["childPeakRssMb"] = round(own, 1), round(child, 1)
    parts = f" (this process {own:.0f} MB + its commit process {child:.0f} MB)" if child else ""
    print(f"peak RSS {peak_mb:.0f} MB{parts}")
    if pss is not None and pss.mb is not None:
        results["peakPssMb"] = round(pss.mb, 1)
        print(f"peak PSS {pss.mb:.0f} MB (with its commit process, sampled every 50 ms)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
