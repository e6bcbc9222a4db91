"""Regression runs: the baseline is chosen and named, recorded in the log, and the summary's
``regression`` block (ungated ``scoreDelta``) is what the log alone recomputes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from openwop_eval import parse_suite
from openwop_eval.core.plan import Baseline, RunTerms
from openwop_eval.log import verify_log
from openwop_eval.runner import RunError
from openwop_eval.runner.api import resume_async, run_suite
from openwop_eval.runner.baseline import BaselineError, baseline_run, newest_baseline
from openwop_eval.store import Store
from tests.modes.crash import forge_status, forget_task, untimed

AGENT = """
def good(input, tools):
    return "ok"

def half(input, tools):
    return "ok" if input["n"] % 2 == 0 else "no"
"""


def suite_doc(version: str = "1.0.0", modes: tuple[str, ...] = ("golden", "regression")) -> Any:
    return {
        "suiteId": "test.openwop.evals.regression",
        "version": version,
        "modes": list(modes),
        "tasks": [
            {
                "taskId": f"t{n}",
                "input": {"n": n},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
            }
            for n in range(4)
        ],
    }


@pytest.fixture
def world(tmp_path: Path) -> tuple[Store, Path]:
    (tmp_path / "agent.py").write_text(AGENT)
    return Store(f"sqlite:///{tmp_path / 'store.sqlite'}"), tmp_path / "agent.py"


def run(store: Store, agent: Path, name: str, terms: RunTerms | None = None, **doc: Any) -> Any:
    suite = parse_suite(suite_doc(**doc))
    return run_suite(suite, f"{agent}:{name}", store=store, terms=terms)


def events(store: Store, run_id: str) -> list[dict[str, Any]]:
    return store.events(run_id)


def test_a_regression_run_names_its_baseline_and_the_ungated_delta(
    world: tuple[Store, Path],
) -> None:
    store, agent = world
    base = run(store, agent, "good")
    assert "regression" not in base.summary  # the first run has nothing to compare with
    suite = parse_suite(suite_doc()).suite
    chosen = newest_baseline(store, suite, "local")
    assert chosen == Baseline(base.run_id, 1.0)
    cand = run(store, agent, "half", RunTerms(baseline=chosen))
    regression = cand.summary["regression"]
    assert regression["baselineRunId"] == base.run_id
    assert regression["scoreDelta"] == -0.5
    assert regression["diffRef"].endswith(":diff?against=" + base.run_id.replace("/", "~2F"))
    log = events(store, cand.run_id)
    started = next(d["payload"] for d in log if d["type"] == "eval.started")
    completed = next(d["payload"] for d in log if d["type"] == "eval.completed")
    assert started["baselineRunId"] == base.run_id
    assert completed["regressionVsBaseline"] == -0.5
    check = verify_log(suite, log, cand.summary)
    assert check.mismatches == []
    assert check.log_problems == []


def test_the_log_carries_the_baseline_score_so_an_audit_needs_no_store(
    world: tuple[Store, Path],
) -> None:
    store, agent = world
    cand = run(store, agent, "half", RunTerms(baseline=Baseline("elsewhere/run", 0.25)))
    assert cand.summary["regression"] == {"baselineRunId": "elsewhere/run", "scoreDelta": 0.25}
    tampered = [
        {**d, "payload": {**d["payload"], "baselineRunId": "other"}}
        if d["type"] == "eval.started"
        else d
        for d in events(store, cand.run_id)
    ]
    check = verify_log(parse_suite(suite_doc()).suite, tampered, cand.summary)
    assert [m.path for m in check.mismatches] == ["$.regression.baselineRunId"]


def test_newest_baseline_is_the_newest_completed_run_of_the_same_suite_and_version(
    world: tuple[Store, Path],
) -> None:
    store, agent = world
    first = run(store, agent, "good")
    second = run(store, agent, "half")
    run(store, agent, "good", version="2.0.0")  # another version: never a baseline
    suite = parse_suite(suite_doc()).suite
    assert newest_baseline(store, suite, "local") == Baseline(second.run_id, 0.5)
    assert newest_baseline(store, suite, "elsewhere") is None
    assert first.run_id != second.run_id


def test_an_unusable_baseline_is_refused_the_same_way_whatever_the_reason(
    world: tuple[Store, Path],
) -> None:
    store, agent = world
    other_version = run(store, agent, "good", version="2.0.0")
    suite = parse_suite(suite_doc()).suite
    good = run(store, agent, "good")
    unfinished = run(store, agent, "good")
    with store.transaction() as tx:
        forge_status(tx, unfinished.run_id, "failed")
    messages = []
    for run_id, tenant in [
        ("local/nosuchrun0000000000", "local"),  # unknown
        (other_version.run_id, "local"),  # another suite version
        (good.run_id, "acme"),  # another tenant
        (unfinished.run_id, "local"),  # did not complete
    ]:
        with pytest.raises(BaselineError) as caught:
            baseline_run(store, suite, tenant, run_id)
        messages.append(str(caught.value).replace(run_id, "RUN"))
    assert len(set(messages)) == 1, messages


def test_a_baseline_needs_the_regression_mode(world: tuple[Store, Path]) -> None:
    store, agent = world
    with pytest.raises(RunError, match="regression"):
        run(store, agent, "good", RunTerms(baseline=Baseline("a/b", 1.0)), modes=("golden",))


def test_the_summary_validates_against_the_shipped_schema(world: tuple[Store, Path]) -> None:
    from openwop_eval.core import EvalSummary

    store, agent = world
    base = run(store, agent, "good")
    cand = run(store, agent, "half", RunTerms(baseline=Baseline(base.run_id, 1.0)))
    EvalSummary.model_validate(cand.summary)
    assert json.dumps(cand.summary)


def test_a_resumed_regression_run_keeps_its_baseline(world: tuple[Store, Path]) -> None:
    store, agent = world
    base = run(store, agent, "good")
    done = run(store, agent, "half", RunTerms(baseline=Baseline(base.run_id, 1.0)))
    run(store, agent, "good")  # a newer completed run: the resume must not pick it
    forget_task(store, done.run_id, "t1")
    resumed = asyncio.run(resume_async(done.run_id, store=store, agent=f"{agent}:half"))
    assert resumed.resumed_trials == 3
    assert untimed(resumed.summary) == untimed(done.summary)
    assert resumed.summary["regression"]["baselineRunId"] == base.run_id
