"""Trials on Ray against trials in process: 1,000 trials of a 100 ms agent, each against the ideal.

    python -m bench.runner.ray_bench                                  # the defaults below
    python -m bench.runner.ray_bench --trials 1000 --sleep-ms 100 --concurrency 100 --json out.json

The agent waits ``--sleep-ms`` (a stand-in for a model call), makes one tool call answered
by fixtures and answers. The same suite runs three times, each to a fresh SQLite store:
in process, then on a local Ray (``ray.init(num_cpus=--ray-cpus)``, no cluster) twice —
the first Ray run starts the worker processes ("cold"), the second finds them ("warm").
The ideal wall time is trials / concurrency × the wait; each run reports its time and its
ratio to the ideal, and the three summaries must be equal.

A Ray task reserves ``--trial-cpus`` CPUs (default: ``--ray-cpus`` / ``--concurrency``, so
the local Ray has one slot per trial the run keeps in flight). A Ray worker process plays
one trial at a time, so ``--concurrency`` trials in flight need as many worker processes,
and the local Ray is told to keep that many idle ones (``num_workers_soft_limit``; its
default is one per CPU); with ``--trial-cpus 1`` (Ray's default) the 2-CPU Ray plays 2
trials at a time. Peak RSS is the driver's; each worker process has its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.runner.run_bench import TOOLS, shape, suite
from openwop_eval import parse_suite
from openwop_eval.agents import AgentReply
from openwop_eval.runner.api import run_suite_async
from openwop_eval.runner.ray_executor import RayExecutor
from openwop_eval.runner.run import RunOptions, TrialExecutor
from openwop_eval.store import Store


class SleepyAgent:
    """Defined here, in ``__main__``: Ray's cloudpickle sends it to the workers by value."""

    agent_id = "bench.sleepy"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def run(self, context: Any, port: Any) -> AgentReply:
        await asyncio.sleep(self.seconds)
        await port.call(TOOLS[0], {"orderId": context.input["orderId"]})
        return AgentReply("refunded", latency_ms=self.seconds * 1000)


def timed(
    doc: dict[str, Any],
    agent: SleepyAgent,
    concurrency: int,
    work: Path,
    executor: TrialExecutor | None,
) -> tuple[float, dict[str, Any]]:
    store = Store(f"sqlite:///{work / 'store.sqlite'}")
    started = time.perf_counter()
    result = asyncio.run(
        run_suite_async(
            parse_suite(doc),
            agent,
            store=store,
            options=RunOptions(concurrency=concurrency),
            executor=executor,
        )
    )
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed, result.summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--sleep-ms", type=float, default=100)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--ray-cpus", type=int, default=2, help="the local Ray's CPUs")
    parser.add_argument("--trial-cpus", type=float, help="CPUs a trial's task reserves")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.trials < 1 or args.sleep_ms <= 0 or args.concurrency < 1:
        parser.error("--trials, --sleep-ms and --concurrency must be above 0")
    trial_cpus = args.trial_cpus or args.ray_cpus / args.concurrency
    tasks, per_task = shape(args.trials)
    doc, n = suite(tasks, per_task), tasks * per_task
    seconds = args.sleep_ms / 1000
    ideal = n / args.concurrency * seconds
    import ray  # the [ray] extra

    started = time.perf_counter()
    slots = int(args.ray_cpus / trial_cpus)
    ray.init(
        num_cpus=args.ray_cpus,
        include_dashboard=False,
        log_to_driver=False,
        # Ray keeps as many idle workers as CPUs by default, so each burst of fractional
        # tasks would start its processes anew: keep one per slot.
        _system_config={"num_workers_soft_limit": slots},
    )
    ray_start = time.perf_counter() - started
    print(f"local Ray with {args.ray_cpus} CPUs started in {ray_start:.2f} s")
    executor = RayExecutor(num_cpus=trial_cpus)
    results: dict[str, Any] = {
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "ray": ray.__version__,
        "trials": n,
        "sleepMs": args.sleep_ms,
        "concurrency": args.concurrency,
        "rayCpus": args.ray_cpus,
        "trialCpus": trial_cpus,
        "idealSeconds": round(ideal, 3),
        "rayStartSeconds": round(ray_start, 3),
        "raySlots": slots,
    }
    summaries = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, player in (("inProcess", None), ("rayCold", executor), ("rayWarm", executor)):
            work = Path(tmp) / name
            work.mkdir()
            elapsed, summary = timed(doc, SleepyAgent(seconds), args.concurrency, work, player)
            summaries.append(summary)
            print(
                f"{name}: {n} trials of a {args.sleep_ms:g} ms agent at concurrency"
                f" {args.concurrency}: {elapsed:.2f} s; ideal {ideal:.2f} s;"
                f" ratio {elapsed / ideal:.2f}"
            )
            results[name] = {"seconds": round(elapsed, 3), "ratio": round(elapsed / ideal, 3)}
    ray.shutdown()
    same = all(s == summaries[0] for s in summaries)
    results["summariesEqual"] = same
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results["driverPeakRssMb"] = round(peak_mb, 1)
    print(f"driver peak RSS {peak_mb:.0f} MB")
    print("the three summaries are equal" if same else "THE SUMMARIES DIFFER")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
