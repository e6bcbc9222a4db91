"""The scenarios that must hold, on real runs of a suite with Python agents: a one-task
regression is caught, wrong-path gains are never an improvement, identical runs are not a
regression — whichever form (run id, summary, report, event log) each side is read from."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from openwop_eval.compare import compare, read_side, regression_reasons
from tests.compare.builders import side, summary, task
from tests.compare.conftest import Invoked, Run, agent, suite

FORMS = ["run-id", "summary", "report", "events"]


@pytest.mark.parametrize("form", FORMS)
def test_a_one_task_regression_fails_the_gate_and_is_named(
    form: str, run: Callable[..., Run], cli: Callable[..., Invoked]
) -> None:
    base = run(suite(), agent())
    cand = run(suite(), agent(t3="wrong_answer"))
    assert base.summary["passed"]
    assert not cand.summary["passed"]

    gated = cli(base.side(form), cand.side(form), "--fail-on-regression")
    assert gated.exit_code == 1, gated.stderr
    assert "1 newly failing task: t3" in gated.stdout
    assert gated.stderr.splitlines()[-1] == "✗ the candidate regressed (--fail-on-regression)"
    assert cli(base.side(form), cand.side(form)).exit_code == 0  # without the gate: a report


def test_a_one_task_regression_in_handcrafted_summaries_is_caught() -> None:
    base = summary(*[task(f"t{i}") for i in range(8)])
    cand = summary(*[task(f"t{i}", 0.0 if i == 3 else 1.0) for i in range(8)])
    c = compare(side(base), side(cand))
    assert regression_reasons(c) == ["1 newly failing task: t3"]


def test_wrong_path_gains_on_failing_tasks_are_not_an_improvement(
    run: Callable[..., Run], cli: Callable[..., Invoked]
) -> None:
    wrong = {f"t{i}": "wrong_answer" for i in range(4, 8)}
    base = run(suite(), agent(**wrong))
    cand = run(suite(), agent(**dict.fromkeys(wrong, "wrong_path")))
    c = compare(read_side(base.summary, "base"), read_side(cand.summary, "cand"))
    assert (c.baseline.aggregate_score, c.candidate.aggregate_score) == (0.5, 1.0)
    assert c.score_delta == 0.5  # every output is now right …
    assert c.gated_delta == 0.0  # … through the forbidden tool: nothing gained
    assert c.verdict == "inconclusive"
    assert c.newly_passing == ()

    shown = cli(base.run_id, cand.run_id, "--json", "--fail-on-regression")
    assert shown.exit_code == 0
    assert json.loads(shown.stdout)["verdict"] == "inconclusive"


def test_wrong_path_gains_everywhere_are_degraded(
    run: Callable[..., Run], cli: Callable[..., Invoked]
) -> None:
    half = {f"t{i}": "wrong_answer" for i in range(4, 8)}
    base = run(suite(), agent(**half))
    cand = run(suite(), agent(**{f"t{i}": "wrong_path" for i in range(8)}))
    c = compare(read_side(base.summary, "base"), read_side(cand.summary, "cand"))
    assert c.score_delta == 0.5
    assert c.gated_delta == -0.5
    assert c.verdict == "degraded"
    assert c.newly_failing == ("t0", "t1", "t2", "t3")

    shown = cli(base.side("events"), cand.side("summary"), "--fail-on-regression")
    assert shown.exit_code == 1
    assert "DEGRADED" in shown.stdout


def test_identical_runs_are_inconclusive_and_no_regression(
    run: Callable[..., Run], cli: Callable[..., Invoked]
) -> None:
    base = run(suite(trials=3), agent(t1="wrong_answer"))
    cand = run(suite(trials=3), agent(t1="wrong_answer"))
    shown = cli(base.run_id, cand.run_id, "--fail-on-regression")
    assert shown.exit_code == 0, shown.stderr
    assert "INCONCLUSIVE" in shown.stdout
    assert "regression: none" in shown.stdout
    body = json.loads(cli(base.run_id, cand.run_id, "--json").stdout)
    assert body["regression"] == {"regressed": False, "reasons": []}
    assert body["tasks"][1]["baseline"]["trials"] == 3  # the trials block was read


def test_flaky_trials_are_read_from_a_real_summary(run: Callable[..., Run]) -> None:
    base = run(suite(tasks=6, trials=2), agent())
    cand = run(suite(tasks=6, trials=2), agent())
    flaky = dict(cand.summary)
    flaky["tasks"] = [dict(t) for t in cand.summary["tasks"]]
    flaky["tasks"][0]["trials"] = {**flaky["tasks"][0]["trials"], "trialStats": {"passed": 1}}
    c = compare(read_side(base.summary, "base"), read_side(flaky, "cand"))
    assert c.flaky == ("t0",)
    assert c.tasks[0].pass_rate_delta == -0.5
