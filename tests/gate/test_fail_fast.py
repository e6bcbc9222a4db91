"""``--fail-fast``: a run stops once no outcome of its remaining trials can make it pass.
It never changes a verdict — for random agents and policies the gate, the summary's RFC
``passed`` and ``verify`` agree with and without it — a run that can still pass runs every
trial, and an agent that fails early costs a few trials, not the suite."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval import parse_suite, run_suite_async
from openwop_eval.agents.scripted import Script, ScriptedAgent
from openwop_eval.log import verify_log
from openwop_eval.runner import RunOptions
from openwop_eval.store import Store
from tests.gate.booking import TASKS, suite

COUNT = 6


def scripted(bad: dict[str, set[int]]) -> ScriptedAgent:
    """Per task, the trials (by index) that overcharge; the others book correctly."""

    def entry(amount: int) -> dict[str, Any]:
        call = {"tool": "payments:charge", "args": {"amountUsd": amount}}
        return {"output": "done", "toolCalls": [call], "costUsd": 0.01}

    tasks = {
        t: [entry(420 if i in bad.get(t, set()) else 120) for i in range(COUNT)] for t in TASKS
    }
    return ScriptedAgent(Script.model_validate({"agentId": "booking", "tasks": tasks}))


def run(
    tmp: Path, bad: dict[str, set[int]], gate: dict[str, Any] | None, fail_fast: bool
) -> tuple[Any, int, list[dict[str, Any]]]:
    """The run's result, how many trials it played, and its log."""
    loaded = parse_suite({**suite(gate), "trials": {"count": COUNT}})
    log = tmp / f"events-{fail_fast}.jsonl"
    store = Store(f"sqlite:///{tmp}/store-{fail_fast}.sqlite")
    try:
        with log.open("w") as sink:
            options = RunOptions(concurrency=1, fail_fast=fail_fast)
            playing = run_suite_async(
                loaded, scripted(bad), store=store, options=options, events=sink
            )
            result = asyncio.run(playing)
    finally:
        store.close()
    docs = [json.loads(line) for line in log.read_text().splitlines()]
    played = sum(d["type"] == "eval.scored" for d in docs)
    return result, played, docs


def figures(value: Any) -> Any:
    """A summary without its measured latencies (they differ run to run)."""
    if isinstance(value, dict):
        return {k: figures(v) for k, v in value.items() if k != "latencyMs"}
    if isinstance(value, list):
        return [figures(v) for v in value]
    return value


BAD = st.dictionaries(
    st.sampled_from(TASKS), st.sets(st.integers(0, COUNT - 1), max_size=COUNT), max_size=4
)
GATES = st.sampled_from([None, {"requireAllTasks": True}, {"reliability": {"passHatK": 0.5}}])


@settings(max_examples=25, deadline=None)
@given(bad=BAD, gate=GATES)
def test_fail_fast_never_changes_a_verdict(
    tmp_path_factory: Any, bad: dict[str, set[int]], gate: dict[str, Any] | None
) -> None:
    tmp = tmp_path_factory.mktemp("ff")
    full, all_played, _ = run(tmp, bad, gate, fail_fast=False)
    fast, played, docs = run(tmp, bad, gate, fail_fast=True)
    assert fast.gate.passed is full.gate.passed
    # the trials it did not play count as not run: its summary can only fail where the gate
    # failed anyway (a policy shut it while the RFC alone would pass)
    assert fast.summary["passed"] <= full.summary["passed"]
    assert all_played == COUNT * len(TASKS)
    if full.gate.passed:  # a run that can still pass runs every trial
        assert (played, fast.skipped) == (all_played, 0)
        assert figures(fast.summary) == figures(full.summary)
    else:
        assert played + fast.skipped == all_played
    audit = verify_log(parse_suite({**suite(gate), "trials": {"count": COUNT}}).suite, docs)
    assert audit.log_problems == []
    assert audit.gate.passed is fast.gate.passed


def test_an_agent_that_fails_early_costs_a_few_trials(tmp_path: Path) -> None:
    everything = {task: set(range(COUNT)) for task in TASKS}
    result, played, _ = run(tmp_path, everything, None, fail_fast=True)
    assert not result.gate.passed
    # 24 trials: the gated aggregate cannot reach 0.8 once 5 of them failed; at most
    # 4 × concurrency more were handed over before the fifth was committed
    assert played <= 5 + 4
    assert result.skipped == COUNT * len(TASKS) - played


def test_a_policy_decides_as_early_as_the_rfc(tmp_path: Path) -> None:
    """With every task required, the first failed task decides the run, which the RFC
    alone would pass; its unplayed trials count as not run, so its summary fails too."""
    bad, required = {TASKS[0]: {0, 1, 2}}, {"requireAllTasks": True}
    full, _, _ = run(tmp_path, bad, required, fail_fast=False)
    assert (full.summary["passed"], full.gate.passed) == (True, False)
    fast, played, _ = run(tmp_path, bad, required, fail_fast=True)
    assert (fast.summary["passed"], fast.gate.passed) == (False, False)
    assert played < COUNT * len(TASKS) // 2
