"""``--fail-fast``: agent invocations saved on a broken build, and the cost on a good one.

    python -m bench.runner.fail_fast_bench                           # the defaults below
    python -m bench.runner.fail_fast_bench --tasks 100 --count 10 --rounds 5 --json out.json

The suite (``--tasks`` golden tasks × ``--count`` trials, passScore 0.95) is seeded
(``--seed``). The broken agent fails the trials a seeded ``random.Random`` picks among the
first tenth of the schedule (``--fail-rate`` of them; every later trial passes), so the run's
verdict is decided in its first tenth: with ``--fail-fast`` it should play far fewer trials
(goal: at least 80% fewer invocations), and without it play them all. The good agent passes
every trial; ``--fail-fast`` must then play every trial and cost at most 2% more wall time
(the runs are interleaved over ``--rounds`` rounds, each to a fresh SQLite store; the median
of each is compared). Both agents wait ``--sleep-ms`` (default 20 ms, a stand-in for a model
call) at concurrency 8. A fail-fast run lets at most ``4 × concurrency`` trials wait for their
commit, so it learns each verdict in time; with an agent that answers in no time the
commits, not the agent, set the pace, and the overhead grows (``--sleep-ms 0`` shows it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from openwop_eval import parse_suite
from openwop_eval.agents import AgentReply
from openwop_eval.runner import RunOptions
from openwop_eval.runner.api import run_suite_async
from openwop_eval.store import Store


def suite(tasks: int, count: int) -> dict[str, Any]:
    return {
        "suiteId": "bench.evals.fail-fast",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 0.95},
        "trials": {"count": count},
        "tasks": [
            {
                "taskId": f"t{i}",
                "input": {"n": i},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
            }
            for i in range(tasks)
        ],
    }


class SeededAgent:
    """Answers ``wrong`` for the (task, trial) pairs in ``failing``, else ``ok``."""

    agent_id = "bench.seeded"

    def __init__(self, failing: set[tuple[str, int]], seconds: float = 0.0) -> None:
        self.failing, self.seconds = failing, seconds
        self.invocations = 0

    async def run(self, context: Any, port: Any) -> AgentReply:
        self.invocations += 1
        await asyncio.sleep(self.seconds)  # a stand-in for a model call
        wrong = (context.task_id, context.trial) in self.failing
        return AgentReply("wrong" if wrong else "ok", cost_usd=0.001, latency_ms=1)


def broken(tasks: int, count: int, rate: float, seed: int) -> set[tuple[str, int]]:
    """Trials the broken build fails: a share of the first tenth of the schedule (trial-major,
    as the runner takes them)."""
    rng = random.Random(seed)
    schedule = [(f"t{t}", i) for i in range(count) for t in range(tasks)]
    head = schedule[: max(1, len(schedule) // 10)]
    return {pair for pair in head if rng.random() < rate}


def play(doc: dict[str, Any], agent: SeededAgent, fail_fast: bool) -> tuple[float, Any]:
    """One run to a fresh SQLite store: its wall time and result."""
    loaded = parse_suite(doc)
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(f"sqlite:///{Path(tmp) / 'store.sqlite'}")
        try:
            options = RunOptions(concurrency=8, fail_fast=fail_fast)
            start = time.perf_counter()
            result = asyncio.run(run_suite_async(loaded, agent, store=store, options=options))
            return time.perf_counter() - start, result
        finally:
            store.close()


def saved(doc: dict[str, Any], failing: set[tuple[str, int]], seconds: float) -> dict[str, Any]:
    full_agent, fast_agent = SeededAgent(failing, seconds), SeededAgent(failing, seconds)
    _, full = play(doc, full_agent, fail_fast=False)
    _, fast = play(doc, fast_agent, fail_fast=True)
    assert full.gate.passed is fast.gate.passed is False, "the broken build must fail"
    fewer = 1 - fast_agent.invocations / full_agent.invocations
    return {
        "failing trials": len(failing),
        "invocations without --fail-fast": full_agent.invocations,
        "invocations with --fail-fast": fast_agent.invocations,
        "fewer invocations": round(fewer, 4),
        "met (>= 80% fewer)": fewer >= 0.8,
    }


def overhead(doc: dict[str, Any], rounds: int, seconds: float) -> dict[str, Any]:
    plain: list[float] = []
    fast: list[float] = []
    for _ in range(rounds):  # interleaved: drift hits both alike
        took, result = play(doc, SeededAgent(set(), seconds), fail_fast=False)
        plain.append(took)
        took, decided = play(doc, SeededAgent(set(), seconds), fail_fast=True)
        fast.append(took)
        assert result.gate.passed
        assert decided.gate.passed
        assert decided.skipped == 0
    ratio = statistics.median(fast) / statistics.median(plain)
    return {
        "median s without --fail-fast": round(statistics.median(plain), 4),
        "median s with --fail-fast": round(statistics.median(fast), 4),
        "overhead": round(ratio - 1, 4),
        "met (<= 2%)": ratio <= 1.02,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--fail-rate", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=246)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sleep-ms", type=float, default=20.0)
    parser.add_argument("--json", dest="json_path")
    args = parser.parse_args()
    doc = suite(args.tasks, args.count)
    failing = broken(args.tasks, args.count, args.fail_rate, args.seed)
    figures = {
        "trials": args.tasks * args.count,
        "agent ms": args.sleep_ms,
        "broken build": saved(doc, failing, args.sleep_ms / 1000),
        "good build": overhead(doc, args.rounds, args.sleep_ms / 1000),
    }
    print(json.dumps(figures, indent=2))
    if args.json_path:
        Path(args.json_path).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
