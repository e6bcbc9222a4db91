"""A run's spec and its one check: every problem located by the member it is about, a spec
that fits passes, the baseline asked for is chosen once, and a shell names each member its
own way."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openwop_eval import parse_suite
from openwop_eval.agents.python import PythonAgent
from openwop_eval.cli.modes import NAMES as CLI_NAMES
from openwop_eval.core.plan import Baseline, RunTerms
from openwop_eval.core.problems import Problem
from openwop_eval.core.safety import SafetyPolicy
from openwop_eval.runner import (
    NEWEST,
    RunOptions,
    RunService,
    RunSpec,
    SpecError,
    StoredBaseline,
    SummaryBaseline,
    describe,
    run_suite,
    settle,
    validate,
)
from openwop_eval.runner.baseline import UNUSABLE
from openwop_eval.server.run_request import HOST_NAMES
from openwop_eval.store import Store

MODES = ("golden", "rubric", "adversarial", "regression", "live-shadow")


def suite(*modes: str, rubric: bool = False, version: str = "1.0.0") -> Any:
    task: dict[str, Any] = {
        "taskId": "t0",
        "input": {"n": 0},
        "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
    }
    if rubric:
        task = {**task, "expected": {"kind": "rubric", "rubric": [{"criterion": "c", "weight": 1}]}}
    return parse_suite(
        {
            "suiteId": "test.openwop.evals.spec",
            "version": version,
            "modes": list(modes or ("golden",)),
            "tasks": [task],
        }
    )


def echo() -> PythonAgent:
    """An agent that answers ``ok``."""
    return PythonAgent(lambda _input, _tools: "ok", "tests.echo", 1)


def spec(*modes: str, **changes: Any) -> RunSpec:
    return replace(RunSpec(suite(*modes), echo()), **changes)


def located(problems: list[Problem]) -> list[tuple[str, str]]:
    return [(p.path, p.message) for p in problems]


def test_a_spec_that_fits_has_no_problem() -> None:
    assert validate(spec("golden")) == []
    fits = spec(
        "golden",
        "adversarial",
        "regression",
        terms=RunTerms(modes=("golden", "adversarial"), fail_on_severity="high"),
        safety=SafetyPolicy(canaries=("c",)),
        options=RunOptions(concurrency=2, shard="1/2"),
    )
    assert validate(fits) == []


@pytest.mark.parametrize(
    ("changes", "modes", "path", "message"),
    [
        ({"judge": None}, (), "$.judge", "tasks t0 are rubric tasks; choose a judge"),
        (
            {"options": RunOptions(live_shadow=True)},
            ("golden",),
            "$.options.live_shadow",
            "live-shadow runs need a suite whose modes include live-shadow",
        ),
        (
            {"options": RunOptions(concurrency=0)},
            ("golden",),
            "$.options.concurrency",
            "concurrency must be at least 1",
        ),
        (
            {"options": RunOptions(shard="5/4")},
            ("golden",),
            "$.options.shard",
            "shard index 5 is outside 1..4",
        ),
        (
            {"terms": RunTerms(modes=("golden", "regression"))},
            ("golden",),
            "$.terms.modes",
            "modes ['regression'] are not declared by the suite",
        ),
        ({"terms": RunTerms(modes=())}, ("golden",), "$.terms.modes", "must name at least one"),
        (
            {"baseline": StoredBaseline("local/" + "0" * 24)},
            ("golden",),
            "$.baseline",
            "needs a suite whose modes include regression",
        ),
        (
            {"terms": RunTerms(baseline=Baseline("a/b", 1.0))},
            ("golden",),
            "$.terms.baseline",
            "needs a suite whose modes include regression",
        ),
        (
            {"terms": RunTerms(modes=("golden",), baseline=Baseline("a/b", 1.0))},
            ("golden", "regression"),
            "$.terms.baseline",
            'needs "regression" among the modes in effect',
        ),
        (
            {"terms": RunTerms(fail_on_severity="high")},
            ("golden",),
            "$.terms.fail_on_severity",
            "needs a suite whose modes include adversarial",
        ),
        (
            {"terms": RunTerms(fail_on_severity="severe")},  # type: ignore[arg-type]
            ("golden", "adversarial"),
            "$.terms.fail_on_severity",
            "must be one of low, medium, high, critical",
        ),
        ({"safety": SafetyPolicy()}, ("golden",), "$.safety", "need an adversarial suite"),
        (
            {"safety": SafetyPolicy(severities={"canary-leak": "severe"})},  # type: ignore[dict-item]
            ("golden", "adversarial"),
            "$.safety.severities.canary-leak",
            "canary-leak=severe: ",
        ),
    ],
)
def test_each_problem_names_the_member_it_is_about(
    changes: dict[str, Any], modes: tuple[str, ...], path: str, message: str
) -> None:
    base = RunSpec(suite(*modes, rubric=not modes), echo())
    problems = validate(replace(base, **changes))
    assert len(problems) == 1, problems
    assert problems[0].path == path
    assert problems[0].message.startswith(message)


def test_a_resumed_run_keeps_its_suite_and_terms() -> None:
    resumed = RunSpec(None, None, resume="local/" + "1" * 24)
    assert validate(resumed) == []
    asked = replace(resumed, suite=suite(), baseline=StoredBaseline("x"), safety=SafetyPolicy())
    assert located(validate(asked)) == [
        ("$.suite", "a resumed run keeps the suite it was started with"),
        ("$.terms", "a resumed run keeps the baseline and detectors it was started with"),
    ]
    assert validate(replace(resumed, baseline=NEWEST)) == []  # nothing named: nothing asked
    assert located(validate(RunSpec(None, None))) == [
        ("$.suite", "a new run needs a suite (or a run to resume)")
    ]


@pytest.fixture
def store(tmp_path: Any) -> Store:
    return Store(f"sqlite:///{tmp_path / 'store.sqlite'}")


def ran(store: Store, *modes: str, version: str = "1.0.0") -> str:
    return run_suite(suite(*modes, version=version), echo(), store=store).run_id


def test_the_baseline_asked_is_chosen_once_and_refused_the_same_whatever_the_reason(
    store: Store,
) -> None:
    first = ran(store, "golden", "regression")
    other = ran(store, "golden", "regression", version="2.0.0")
    newest, problems = settle(spec("golden", "regression", baseline=NEWEST), store)
    assert problems == []
    assert newest.baseline is None
    assert newest.terms.baseline == Baseline(first, 1.0)
    named, _ = settle(spec("golden", "regression", baseline=StoredBaseline(first)), store)
    assert named.terms.baseline == Baseline(first, 1.0)
    refusals = [
        located(validate(spec("golden", "regression", baseline=StoredBaseline(ref)), store))
        for ref in ("local/" + "0" * 24, other, None, "not an id")
    ]
    assert refusals == [[("$.baseline", UNUSABLE)]] * 4
    plain, problems = settle(spec("golden", baseline=NEWEST), store)
    assert (plain.terms.baseline, problems) == (None, [])  # not a regression run: none
    summary = SummaryBaseline({"suiteId": "other", "suiteVersion": "1.0.0"}, None, "s.json")
    assert located(validate(spec("golden", "regression", baseline=summary))) == [
        ("$.baseline", "is not a summary of test.openwop.evals.spec@1.0.0")
    ]


def test_the_run_service_refuses_a_spec_with_problems_before_it_stores_anything(
    store: Store,
) -> None:
    bad = spec("golden", terms=RunTerms(fail_on_severity="high"), safety=SafetyPolicy())
    with pytest.raises(SpecError) as caught:
        RunService(store).start(bad)
    assert [p.path for p in caught.value.problems] == ["$.terms.fail_on_severity", "$.safety"]
    assert str(caught.value) == (
        "failing on a finding's severity needs a suite whose modes include adversarial;"
        " the detectors of a safety policy need an adversarial suite"
    )
    assert store.list_runs() == []


def test_each_shell_names_the_member_its_own_way() -> None:
    problem = validate(spec("golden", baseline=StoredBaseline("x")))[0]
    assert describe(problem) == "a baseline needs a suite whose modes include regression"
    assert describe(problem, CLI_NAMES) == "--baseline needs a suite whose modes include regression"
    assert describe(problem, HOST_NAMES) == (
        "baselineRunId needs a suite whose modes include regression"
    )
    shard = validate(spec("golden", options=RunOptions(shard="two")))[0]
    assert describe(shard, CLI_NAMES).startswith("--shard: ")


terms_asked = st.fixed_dictionaries(
    {
        "suite": st.lists(st.sampled_from(MODES), min_size=1, unique=True),
        "asked": st.none() | st.lists(st.sampled_from(MODES), min_size=1, unique=True),
        "baseline": st.booleans(),
        "bar": st.none() | st.sampled_from(("low", "critical")),
        "safety": st.booleans(),
    }
)


@settings(max_examples=200, deadline=None)
@given(terms_asked)
def test_a_term_is_refused_exactly_when_its_mode_is_not_in_effect(case: dict[str, Any]) -> None:
    """An oracle of the term rules: the modes asked are the suite's, a baseline needs
    regression in effect, a bar and detectors need adversarial in effect."""
    asked = tuple(case["asked"]) if case["asked"] is not None else None
    terms = RunTerms(
        modes=asked,
        fail_on_severity=case["bar"],
        baseline=Baseline("a/b", 0.5) if case["baseline"] else None,
    )
    checked = spec(
        *case["suite"],
        terms=terms,
        safety=SafetyPolicy() if case["safety"] else None,
    )
    effective = asked if asked is not None else tuple(case["suite"])
    expected = set()
    if asked is not None and not set(asked) <= set(case["suite"]):
        expected.add("$.terms.modes")
    if case["baseline"] and "regression" not in effective:
        expected.add("$.terms.baseline")
    if case["bar"] is not None and "adversarial" not in effective:
        expected.add("$.terms.fail_on_severity")
    if case["safety"] and "adversarial" not in effective:
        expected.add("$.safety")
    assert {p.path for p in validate(checked)} == expected
    settled, problems = settle(checked)
    if not problems:
        assert settled.terms.baseline == terms.baseline
