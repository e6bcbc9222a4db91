"""End-to-end runner benchmark: agents, tool boundary, grading, event log and store together.

    python bench/run_bench.py                     # both scenarios, default sizes
    python bench/run_bench.py --instant-trials 5000 --sleep-trials 1000 --json out.json

Scenario 1, "instant": an async agent that makes 3 tool calls answered by fixtures and
returns at once; every event is committed to a SQLite store (WAL) and written to a JSON-lines
file. Reports trials/second end to end (run creation to final summary).

Scenario 2, "sleepy": 1,000 trials of an async agent that waits 50 ms (a stand-in for a model
call), at concurrency 100. The ideal wall time is trials / concurrency × 50 ms; the report
gives the measured time and its ratio to the ideal.
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

from openwop_eval import parse_suite
from openwop_eval.agents import AgentReply
from openwop_eval.runner.api import run_suite_async
from openwop_eval.runner.run import RunOptions
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instant-trials", type=int, default=5000)
    parser.add_argument("--sleep-trials", type=int, default=1000)
    parser.add_argument("--sleep-ms", type=float, default=50)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    results: dict[str, Any] = {"python": sys.version.split()[0], "machine": platform.machine()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "instant"
        work.mkdir()
        tasks = max(1, args.instant_trials // 10)
        elapsed, summary = asyncio.run(timed_run(suite(tasks, 10), InstantAgent(), 8, work))
        n = tasks * 10
        events = len((work / "events.jsonl").read_text(encoding="utf-8").splitlines())
        results["instant"] = {
            "trials": n,
            "seconds": round(elapsed, 3),
            "trialsPerSecond": round(n / elapsed, 1),
            "events": events,
            "passed": summary["passed"],
        }
        print(
            f"instant agent, 3 fixture calls, events stored: {n} trials in {elapsed:.2f} s"
            f" = {n / elapsed:,.0f} trials/s ({events} events)"
        )

        work = Path(tmp) / "sleepy"
        work.mkdir()
        tasks = max(1, args.sleep_trials // 10)
        seconds = args.sleep_ms / 1000
        elapsed, summary = asyncio.run(
            timed_run(suite(tasks, 10), SleepyAgent(seconds), args.concurrency, work)
        )
        n = tasks * 10
        ideal = n / args.concurrency * seconds
        results["sleepy"] = {
            "trials": n,
            "sleepMs": args.sleep_ms,
            "concurrency": args.concurrency,
            "seconds": round(elapsed, 3),
            "idealSeconds": round(ideal, 3),
            "ratio": round(elapsed / ideal, 3),
            "passed": summary["passed"],
        }
        print(
            f"{n} trials of a {args.sleep_ms:g} ms agent at concurrency {args.concurrency}:"
            f" {elapsed:.2f} s; ideal {ideal:.2f} s; ratio {elapsed / ideal:.2f}"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results["peakRssMb"] = round(peak_mb, 1)
    print(f"peak RSS {peak_mb:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
