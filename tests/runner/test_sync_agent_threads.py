"""A plain-function agent's calls never starve one another: each gets a thread of its own, so
calls that never return (their trials time out) hold no thread the other trials need; past
``MAX_ABANDONED_CALLS`` such calls, the run fails ``agent_stalled`` instead of piling up
threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from openwop_eval.agents import python as python_agents
from openwop_eval.agents.python import PythonAgent
from openwop_eval.files.suites import parse_suite
from openwop_eval.runner import RunOptions, run_suite_async
from openwop_eval.store import Store

SUITE = {
    "suiteId": "test.openwop.evals.stuck",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 0.5},
    "trials": {"count": 4, "passRule": "mean"},
    "tasks": [
        {
            "taskId": task,
            "input": {"hang": task == "hang"},
            "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
        }
        for task in ("hang", "fast")
    ],
}


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """What the hung calls wait for: set when the test ends, so their threads end too."""
    event = threading.Event()
    yield event
    event.set()


def agent(release: threading.Event) -> PythonAgent:
    def answer(input: dict[str, Any], tools: Any) -> str:
        if input["hang"]:
            release.wait()  # a call that does not return while the test runs
        return "ok"

    return PythonAgent(answer, "stuck", threads=2)  # a pool as wide as the concurrency


def test_calls_that_never_return_do_not_starve_the_other_trials(
    release: threading.Event, tmp_path: Any
) -> None:
    suite = parse_suite(SUITE, source="suite")
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    options = RunOptions(concurrency=2, timeout_s=0.5)
    result = asyncio.run(run_suite_async(suite, agent(release), store=store, options=options))
    tasks = {t["taskId"]: t for t in result.summary["tasks"]}
    assert tasks["hang"]["trials"]["trialStats"]["passed"] == 0  # each timed out
    assert tasks["fast"]["trials"]["trialStats"]["passed"] == 4  # none waited for a thread


def test_past_the_abandoned_bound_the_run_fails_agent_stalled(
    release: threading.Event, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(python_agents, "MAX_ABANDONED_CALLS", 2, raising=False)
    suite = parse_suite(SUITE, source="suite")
    store = Store(f"sqlite:///{tmp_path / 's.sqlite'}")
    options = RunOptions(concurrency=2, timeout_s=0.5)
    stuck = agent(release)
    with pytest.raises(Exception, match="still running past their timeouts"):
        asyncio.run(run_suite_async(suite, stuck, store=store, options=options))
    (run,) = store.list_runs("local", limit=5)
    assert run.status == "failed"
    assert store.events(run.run_id)[-1]["payload"]["error"]["code"] == "agent_stalled"
    release.set()  # the abandoned calls return: they no longer count
    for _ in range(1000):
        if stuck.abandoned == 0:
            break
        threading.Event().wait(0.01)  # the released threads finishing
    assert stuck.abandoned == 0
