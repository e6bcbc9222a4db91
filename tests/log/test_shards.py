"""Shards: a run's trials split across processes and merged back equal the run unsplit."""

from __future__ import annotations

import asyncio
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.agents import resolve_agent
from openwop_eval.files.suites import LoadedSuite, suite_document
from openwop_eval.log.jsonl import parse_jsonl
from openwop_eval.log.shards import (
    MAX_SHARDS,
    Shard,
    ShardError,
    document_digest,
    merge_shards,
)
from openwop_eval.runner.api import run_suite_async
from openwop_eval.runner.run import RunOptions
from openwop_eval.store import Store

TOOLS = ("crm:lookup", "crm:refund")
FORBIDDEN = "accounts:delete"


def test_a_shard_is_i_of_n() -> None:
    assert Shard.parse("2/4") == Shard(2, 4)
    assert str(Shard.parse(" 1/1 ")) == "1/1"
    for bad in ("0/4", "5/4", "1/0", "a/b", "1/2/3", "", f"1/{MAX_SHARDS + 1}", "-1/2"):
        with pytest.raises(ValueError, match="shard"):
            Shard.parse(bad)


@given(tasks=st.integers(1, 30), trials=st.integers(1, 8), count=st.integers(1, 12))
def test_the_shards_partition_the_pairs_evenly(tasks: int, trials: int, count: int) -> None:
    owners = [
        [i for i in range(1, count + 1) if Shard(i, count).holds(t, k, tasks)]
        for k in range(trials)
        for t in range(tasks)
    ]
    assert all(len(o) == 1 for o in owners)  # every pair is exactly one shard's
    sizes = [sum(o == [i] for o in owners) for i in range(1, count + 1)]
    assert max(sizes) - min(sizes) <= 1  # and the slices differ by at most one pair


# --- running: random suites and agents ----------------------------------------------------


@st.composite
def cases(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any], int]:
    """A suite with trajectories and fixtures, a scripted agent, and a shard count."""
    count = draw(st.integers(1, 4))
    tasks, scripts = [], {}
    for i in range(draw(st.integers(1, 5))):
        task_id = f"t{i}"
        tasks.append(
            {
                "taskId": task_id,
                "input": {"n": i},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "exact", "value": "ok"},
                    "trajectory": {"steps": [{"tool": t} for t in TOOLS], "forbidden": [FORBIDDEN]},
                },
                "fixtures": {"toolResponses": [{"tool": t, "response": {"i": i}} for t in TOOLS]},
            }
        )
        paths = st.sampled_from([list(TOOLS), [TOOLS[1]], [*TOOLS, FORBIDDEN], []])
        scripts[task_id] = [
            {
                "output": draw(st.sampled_from(["ok", "wrong"])),
                "toolCalls": [{"tool": t, "args": {}} for t in draw(paths)],
                "costUsd": draw(st.sampled_from([0, 0.25, 0.1])),
                # stated, not measured: a measured latency differs from run to run
                "latencyMs": draw(st.sampled_from([0, 5, 12])),
            }
            for _ in range(draw(st.integers(1, count)))
        ]
    suite = {
        "suiteId": "test.openwop.evals.shards",
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": draw(st.sampled_from([0.5, 0.8, 1]))},
        "trials": {"count": count, "passRule": draw(st.sampled_from(["mean", "all", "any"]))},
        "tasks": tasks,
    }
    agent = {"agentId": "test.scripted", "tasks": scripts}
    return suite, agent, draw(st.integers(1, 5))


def _run(
    loaded: LoadedSuite, agent_file: Path, store: Store, shard: str | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    sink = io.StringIO()
    options = RunOptions(concurrency=3, shard=shard)
    agent = resolve_agent(f"scripted:{agent_file}")
    result = asyncio.run(run_suite_async(loaded, agent, store=store, events=sink, options=options))
    return result.summary, parse_jsonl(sink.getvalue().splitlines(), shard or "run")


def _merge(loaded: LoadedSuite, logs: dict[str, list[dict[str, Any]]]) -> Any:
    digest = document_digest(suite_document(loaded.suite))
    out: list[dict[str, Any]] = []
    merged = merge_shards(
        loaded.suite,
        digest,
        [(name, lambda d=docs: iter(d)) for name, docs in logs.items()],
        out.append,
    )
    return merged, out


@settings(max_examples=25, deadline=None)
@given(case=cases())
def test_sharded_then_merged_is_the_run_unsharded(case: tuple[dict[str, Any], Any, int]) -> None:
    suite, agent, count = case
    loaded = parse_suite(suite)
    with tempfile.TemporaryDirectory() as tmp:
        agent_file = Path(tmp) / "agent.json"
        agent_file.write_text(json.dumps(agent))
        store = Store(f"sqlite:///{tmp}/store.sqlite")
        whole, _ = _run(loaded, agent_file, store, None)
        logs = {
            f"s{i}": _run(loaded, agent_file, store, f"{i}/{count}")[1] for i in range(1, count + 1)
        }
        merged, events = _merge(loaded, logs)
        store.close()
    assert merged.summary == whole
    trials = suite["trials"]["count"] * len(suite["tasks"])
    assert merged.trials == trials
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert len({e["eventId"] for e in events}) == len(events)
    assert {e["runId"] for e in events} == {merged.run_id}
    assert events[-1]["payload"]["outputs"]["evalSummary"] == whole


# --- refusals -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shards() -> tuple[LoadedSuite, dict[str, list[dict[str, Any]]], Path]:
    suite = {
        "suiteId": "test.openwop.evals.shards",
        "version": "1.0.0",
        "modes": ["golden"],
        "trials": {"count": 2},
        "tasks": [
            {
                "taskId": f"t{i}",
                "input": {},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
            }
            for i in range(3)
        ],
    }
    tmp = Path(tempfile.mkdtemp())
    agent_file = tmp / "agent.json"
    agent_file.write_text(json.dumps({"agentId": "test.scripted", "default": [{"output": "ok"}]}))
    loaded = parse_suite(suite)
    store = Store(f"sqlite:///{tmp}/store.sqlite")
    logs = {f"s{i}": _run(loaded, agent_file, store, f"{i}/3")[1] for i in (1, 2, 3)}
    logs["whole"] = _run(loaded, agent_file, store, None)[1]
    store.close()
    return loaded, logs, tmp


def _refused(loaded: LoadedSuite, logs: dict[str, list[dict[str, Any]]]) -> list[str]:
    with pytest.raises(ShardError) as caught:
        _merge(loaded, logs)
    return caught.value.reasons


def test_every_shard_merges(shards: Any) -> None:
    loaded, logs, _ = shards
    merged, _ = _merge(loaded, {k: logs[k] for k in ("s3", "s1", "s2")})  # any order
    assert merged.summary["passed"] is True
    assert merged.shards == 3
    assert merged.trials == 6


def test_a_missing_shard_is_named(shards: Any) -> None:
    loaded, logs, _ = shards
    assert _refused(loaded, {k: logs[k] for k in ("s1", "s3")}) == ["missing shard(s) 2/3"]


def test_a_shard_given_twice_is_named(shards: Any) -> None:
    loaded, logs, _ = shards
    reasons = _refused(loaded, {"a": logs["s1"], "b": logs["s1"], "c": logs["s2"], "d": logs["s3"]})
    assert reasons == ["shard 1/3 is given twice: a and b"]


def test_a_log_that_is_no_shard_is_refused(shards: Any) -> None:
    loaded, logs, _ = shards
    reasons = _refused(loaded, {**{k: logs[k] for k in ("s1", "s2", "s3")}, "whole": logs["whole"]})
    assert reasons == ["whole is not a shard's log (its eval.started has no shard mark)"]


def _edit_mark(docs: list[dict[str, Any]], **changes: Any) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(docs))
    started = next(d for d in out if d["type"] == "eval.started")
    started["payload"]["x-openwop-eval"]["shard"].update(changes)
    return out


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"agentId": "other.agent"}, "s2 ran agent 'other.agent', s1 'test.scripted'"),
        ({"fixturesDigest": "sha256:00"}, "s2 was served other fixtures than s1"),
        ({"suiteDigest": "sha256:00"}, "s2 ran another suite (digest sha256:00…)"),
        ({"count": 4}, "the shards were split differently: s1 is 1/3, s2 is 2/4"),
    ],
)
def test_shards_that_do_not_belong_together_are_refused(
    shards: Any, changes: dict[str, Any], reason: str
) -> None:
    loaded, logs, _ = shards
    edited = {"s1": logs["s1"], "s2": _edit_mark(logs["s2"], **changes), "s3": logs["s3"]}
    assert reason in _refused(loaded, edited)


def test_a_shard_that_did_not_complete_is_refused(shards: Any) -> None:
    loaded, logs, _ = shards
    cut = [d for d in logs["s2"] if d["type"] != "run.completed"]
    reasons = _refused(loaded, {"s1": logs["s1"], "s2": cut, "s3": logs["s3"]})
    assert reasons == ["s2 did not complete (its log has no end)"]


def test_a_trial_outside_its_slice_is_refused(shards: Any) -> None:
    loaded, logs, _ = shards
    moved = json.loads(json.dumps(logs["s2"]))
    for doc in moved:  # s2 holds pair 1 (t1, trial 0); say it is t0's
        ext = doc["payload"].get("x-openwop-eval")
        if isinstance(ext, dict) and ext.get("taskId") == "t1":
            ext["taskId"] = "t0"
        if doc["type"] == "eval.scored" and doc["payload"].get("taskId") == "t1":
            doc["payload"]["taskId"] = "t0"
    reasons = _refused(loaded, {"s1": logs["s1"], "s2": moved, "s3": logs["s3"]})
    assert "s2: trial 0 of task 't0' is not shard 2/3's" in reasons
