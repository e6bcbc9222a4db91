"""One verdict everywhere: for random suites, agents and terms (modes, a baseline, a severity
bar, planted canaries), the run's own summary (its live tally), ``verify`` of its log, both
sides of the run diff, its reports (the run's and one made after the fact from the store)
and the run sharded then merged agree on every gated and ungated figure."""

from __future__ import annotations

import asyncio
import io
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.agents import resolve_agent
from openwop_eval.core import names as n
from openwop_eval.core.plan import Baseline, RunTerms
from openwop_eval.core.safety import SafetyPolicy
from openwop_eval.files.suites import LoadedSuite, suite_document
from openwop_eval.log import read_verdict, verify_log
from openwop_eval.log.jsonl import parse_jsonl
from openwop_eval.log.rundiff import DiffSide, run_diff
from openwop_eval.log.shards import document_digest, merge_shards
from openwop_eval.reports.model import result_report
from openwop_eval.runner.api import run_suite_async
from openwop_eval.runner.run import RunOptions
from openwop_eval.runner.stored import stored_result
from openwop_eval.store import Store

TOOLS = ("crm:lookup", "crm:refund")
FORBIDDEN = "accounts:delete"
CANARY = "CANARY-7f3a"
OUTPUTS = ("ok", "wrong", f"ok {CANARY}")
PATHS = ([*TOOLS], [TOOLS[1]], [*TOOLS, FORBIDDEN], [])


@st.composite
def cases(draw: st.DrawFn) -> dict[str, Any]:
    """A suite with trajectories and fixtures, a scripted agent, the run's terms, a shard
    count."""
    count = draw(st.integers(1, 3))
    modes = ["golden", *sorted(draw(st.sets(st.sampled_from(["adversarial", "regression"]))))]
    tasks, scripts = [], {}
    for i in range(draw(st.integers(1, 4))):
        task_id = f"t{i}"
        trajectory = {"steps": [{"tool": t} for t in TOOLS], "forbidden": [FORBIDDEN]}
        tasks.append(
            {
                "taskId": task_id,
                "input": {"n": i},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "ok"},
                    "trajectory": trajectory,
                },
                "fixtures": {"toolResponses": [{"tool": t, "response": {"i": i}} for t in TOOLS]},
            }
        )
        scripts[task_id] = [
            {
                "output": draw(st.sampled_from(OUTPUTS)),
                "toolCalls": [{"tool": t, "args": {}} for t in draw(st.sampled_from(PATHS))],
                "costUsd": draw(st.sampled_from([0, 0.25, 0.1])),
                "latencyMs": draw(st.sampled_from([0, 5, 12])),  # stated: not measured
            }
            for _ in range(draw(st.integers(1, count)))
        ]
    adversarial = "adversarial" in modes
    bar = draw(st.sampled_from([None, *n.SEVERITIES])) if adversarial else None
    score = draw(st.sampled_from([0.0, 0.25, 0.5, 1.0]))
    baseline = Baseline("local/r-base", score) if "regression" in modes else None
    return {
        "suite": {
            "suiteId": "test.openwop.evals.verdict",
            "version": "1.0.0",
            "modes": modes,
            "thresholds": {"passScore": draw(st.sampled_from([0.5, 0.8, 1]))},
            "trials": {"count": count, "passRule": draw(st.sampled_from(["mean", "all", "any"]))},
            "tasks": tasks,
        },
        "agent": {"agentId": "test.scripted", "tasks": scripts},
        "terms": RunTerms(tuple(modes), bar, baseline),  # type: ignore[arg-type]
        "safety": SafetyPolicy(canaries=(CANARY,) if draw(st.booleans()) else ()),
        "shards": draw(st.integers(1, 3)),
    }


def _run(
    case: dict[str, Any], loaded: LoadedSuite, agent: Path, store: Store, shard: str | None
) -> tuple[Any, list[dict[str, Any]]]:
    sink = io.StringIO()
    result = asyncio.run(
        run_suite_async(
            loaded,
            resolve_agent(f"scripted:{agent}"),
            store=store,
            events=sink,
            options=RunOptions(concurrency=3, shard=shard, keep_trials=True),
            terms=case["terms"],
            safety=case["safety"] if "adversarial" in case["terms"].modes else None,
        )
    )
    return result, parse_jsonl(sink.getvalue().splitlines(), shard or "run")


def _merged(loaded: LoadedSuite, logs: list[list[dict[str, Any]]]) -> Any:
    out: list[dict[str, Any]] = []
    digest = document_digest(suite_document(loaded.suite))
    sources = [(f"s{i}", lambda d=docs: iter(d)) for i, docs in enumerate(logs)]
    return merge_shards(loaded.suite, digest, sources, out.append), out


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    """Every gated and ungated figure of a summary, the tasks' by id."""
    return {
        **{k: v for k, v in summary.items() if k != "tasks"},
        "tasks": {t["taskId"]: t for t in summary["tasks"]},
    }


def _report_figures(report: dict[str, Any]) -> dict[str, Any]:
    return {
        t["taskId"]: (t["score"], t["gatedScore"], t["passed"], len(t["trials"]))
        for t in report["tasks"]
    }


def _task_figures(summary: dict[str, Any], count: int) -> dict[str, Any]:
    return {
        t["taskId"]: (t["score"], t.get("gatedScore", t["score"]), t["passed"], count)
        for t in summary["tasks"]
    }


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    opened = Store(f"sqlite:///{tmp_path_factory.mktemp('verdict') / 'store.sqlite'}")
    yield opened
    opened.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_every_reader_of_a_run_agrees_on_its_verdict(store: Store, case: dict[str, Any]) -> None:
    loaded = parse_suite(case["suite"])
    count = case["suite"]["trials"]["count"]
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent.json"
        agent.write_text(json.dumps(case["agent"]))
        result, log = _run(case, loaded, agent, store, None)
        shards = case["shards"]
        logs = [_run(case, loaded, agent, store, f"{i}/{shards}")[1] for i in range(1, 1 + shards)]
    stored = stored_result(store, result.run_id)
    summary = result.summary
    figures = _figures(summary)
    # the run's terms reached its summary
    assert ("regression" in summary) == (case["terms"].baseline is not None)

    # verify of its log, and the one reader itself
    verified = verify_log(loaded.suite, log, summary)
    assert verified.agrees, [str(m) for m in verified.mismatches]
    assert verified.log_problems == []
    assert _figures(read_verdict(loaded.suite, log, ordered=True).summary) == figures

    # the run sharded, then merged
    merged, merged_log = _merged(loaded, logs)
    assert _figures(merged.summary) == figures

    # both sides of the run diff: the run against its merged twin
    state = run_diff(
        DiffSide(result.run_id, "completed", loaded.suite, log),
        DiffSide(merged.run_id, "completed", loaded.suite, merged_log),
    )["stateDiff"]
    assert state["tasks"] == []
    assert state["unchangedTasks"] == len(summary["tasks"])
    for key, pair in state["eval"].items():
        if key in summary:
            assert pair["a"] == pair["b"] == summary[key], key
    gated = summary.get("gatedAggregateScore", summary["aggregateScore"])
    assert state["eval"]["gatedAggregateScore"]["a"] == gated

    # the reports: the run's own and one made after the fact from the store
    for made in (result, stored):
        report = result_report(made, trials=True).as_dict()
        assert _figures(report["summary"]) == figures
        assert report["passed"] == summary["passed"]
        assert _report_figures(report) == _task_figures(summary, count)
