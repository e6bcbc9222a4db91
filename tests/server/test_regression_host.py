"""Regression runs on the host: ``evalModes`` and ``baselineRunId`` on ``POST /runs``, the
newest usable baseline picked when none is named, one refusal for every unusable baseline,
and the ``regression`` block the published client reads."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client import CreateRunRequest, OpenwopClient, WopError

from openwop_eval.server.config import AgentConfig, DeploymentPolicy
from tests.hosts import Host, _free_port
from tests.server.inprocess import AppHost

SUITE = "test.acme.evals.regress@1.0.0"
AGENT = "test.switch"
SWITCH_AGENT = """
import os

def agent(input, tools):
    # worse from the moment the test drops a file: one task regresses
    worse = os.path.exists(os.path.join(os.environ["OPENWOP_TEST_GATE_DIR"], "worse"))
    return "no" if worse and input["n"] == 0 else "ok"
"""


def regress_suite(version: str = "1.0.0") -> dict[str, Any]:
    return {
        "suiteId": "test.acme.evals.regress",
        "version": version,
        "modes": ["golden", "regression"],
        "thresholds": {"passScore": 0.8},  # one task of six may fail and the suite pass
        "tasks": [
            {
                "taskId": f"t{n}",
                "input": {"n": n},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
            }
            for n in range(6)
        ],
    }


def served(tmp: Path, agent_version: str = "1.0.0") -> dict[str, Any]:
    (tmp / "switch.py").write_text(SWITCH_AGENT)
    paths = []
    for version in ("1.0.0", "2.0.0"):
        path = tmp / f"regress-{version}.json"
        path.write_text(json.dumps(regress_suite(version)))
        paths.append(str(path))
    return {
        "suites": tuple(paths),
        "agents": {AGENT: AgentConfig(agent=f"{tmp / 'switch.py'}:agent", version=agent_version)},
    }


@pytest.fixture
def regress_app(
    make_app: Callable[..., AppHost], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AppHost:
    monkeypatch.setenv("OPENWOP_TEST_GATE_DIR", str(tmp_path))
    return make_app(**served(tmp_path))


def body(**extra: Any) -> dict[str, Any]:
    return {"mode": "eval", "evalSuiteRef": SUITE, "agentId": AGENT, **extra}


def finish(app: AppHost, **extra: Any) -> str:
    run_id = app.start(body(**extra))
    app.follow(run_id)
    return run_id


def summary(app: AppHost, run_id: str) -> dict[str, Any]:
    from openwop_eval.protocol.ids import project

    response = app.request("GET", f"/runs/{project(run_id)}/eval-summary")
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_the_newest_usable_baseline_is_picked_and_named(
    regress_app: AppHost, tmp_path: Path
) -> None:
    first = finish(regress_app)
    assert "regression" not in summary(regress_app, first)
    (tmp_path / "worse").touch()
    second = finish(regress_app)
    block = summary(regress_app, second)["regression"]
    assert block["baselineRunId"] == first
    assert block["scoreDelta"] == pytest.approx(-1 / 6)
    events = regress_app.follow(second)
    started = next(e for e in events if e["type"] == "eval.started")["payload"]
    assert started["baselineRunId"] == first
    third = finish(regress_app, evalModes=["golden"])  # regression not in effect: no baseline
    assert "regression" not in summary(regress_app, third)


def test_an_unusable_baseline_is_refused_identically_whatever_the_reason(
    regress_app: AppHost,
) -> None:
    mine = finish(regress_app)
    other_version = finish_version(regress_app, "2.0.0")
    globex = regress_app.start(body(), key="globex-key")
    regress_app.follow(globex, key="globex-key")
    refusals = []
    for baseline in [
        "acme/" + "0" * 24,  # unknown
        other_version,  # another suite version
        globex,  # another tenant's
        "not a run id",  # malformed
        "acme/" + "x" * 200,  # too long to be one
    ]:
        response = regress_app.request("POST", "/runs", json=body(baselineRunId=baseline))
        assert response.status_code == 400
        refusals.append(response.json())
    assert all(r == refusals[0] for r in refusals), refusals
    assert refusals[0]["error"] == "validation_error"
    ok = regress_app.request("POST", "/runs", json=body(baselineRunId=mine))
    assert ok.status_code == 201


def finish_version(app: AppHost, version: str) -> str:
    run_id = app.start(body(evalSuiteRef=f"test.acme.evals.regress@{version}"))
    app.follow(run_id)
    return run_id


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"evalModes": ["golden"], "baselineRunId": "acme/" + "0" * 24}, 'needs "regression"'),
        ({"evalModes": ["rubric"]}, "not declared by the suite"),
        ({"evalModes": []}, "non-empty"),
    ],
)
def test_mode_rules(regress_app: AppHost, extra: dict[str, Any], message: str) -> None:
    response = regress_app.request("POST", "/runs", json=body(**extra))
    assert response.status_code == 400
    assert message in response.json()["message"]


# --- the deployment gate ----------------------------------------------------------------


def promote(app: AppHost, version: str, run_id: str | None) -> Any:
    body: dict[str, Any] = {"version": version, "transition": "promote", "toState": "active"}
    if run_id is not None:
        body["evalRunId"] = run_id
    return app.request("POST", f"/agents/{AGENT}/deployments", json=body)


def policy(**rules: Any) -> dict[str, Any]:
    return {"deployment": DeploymentPolicy(required_suites={AGENT: (SUITE,)}, **rules)}


def no_regression(tolerance: float = 0.0) -> dict[str, Any]:
    return policy(require_no_regression=True, regression_tolerance=tolerance)


@pytest.fixture
def gate_app(
    make_app: Callable[..., AppHost], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[..., AppHost]:
    """A host running version ``agent_version`` of the agent (the one before it closed: a
    new version of an agent is a host configured to run it)."""
    monkeypatch.setenv("OPENWOP_TEST_GATE_DIR", str(tmp_path))
    running: list[AppHost] = []

    def at(agent_version: str = "1.0.0", **rules: Any) -> AppHost:
        if running:
            running.pop().close()
        app = make_app(**served(tmp_path, agent_version), **(rules or policy()))
        running.append(app)
        return app

    return at


def test_a_promotion_that_regresses_against_production_is_refused(
    gate_app: Callable[..., AppHost], tmp_path: Path
) -> None:
    app = gate_app("1.0.0", **no_regression())
    production = finish(app)
    assert promote(app, "1.0.0", production).status_code == 200
    (tmp_path / "worse").touch()
    app = gate_app("2.0.0", **no_regression())
    candidate = finish(app)
    assert summary(app, candidate)["passed"] is True  # it clears the suite's own bar ...
    refused = promote(app, "2.0.0", candidate)
    assert refused.status_code == 422  # ... but t0 passed in production and fails now
    error = refused.json()
    assert error["error"] == "eval_gate_unmet"
    assert (
        error["details"]["reason"] == "the eval run regressed against the active version's eval run"
    )
    assert error["details"]["baselineEvalRunId"] == production
    assert any("t0" in r for r in error["details"]["regressions"])
    listed = app.request("GET", f"/agents/{AGENT}/deployments").json()
    assert [(d["version"], d["state"]) for d in listed] == [("1.0.0", "active")]


def test_without_the_policy_the_same_promotion_goes_through(
    gate_app: Callable[..., AppHost], tmp_path: Path
) -> None:
    app = gate_app("1.0.0")
    assert promote(app, "1.0.0", finish(app)).status_code == 200
    (tmp_path / "worse").touch()
    app = gate_app("2.0.0")
    assert promote(app, "2.0.0", finish(app)).status_code == 200


def test_no_regression_no_refusal_and_the_first_promotion_has_nothing_to_regress_against(
    gate_app: Callable[..., AppHost],
) -> None:
    app = gate_app("1.0.0", **no_regression())
    assert promote(app, "1.0.0", finish(app)).status_code == 200  # nothing active yet
    app = gate_app("1.1.0", **no_regression())
    assert promote(app, "1.1.0", finish(app)).status_code == 200  # same results: no regression


def test_the_gate_fails_closed_when_production_has_no_eval_run_to_compare_with(
    gate_app: Callable[..., AppHost],
) -> None:
    ungated = gate_app("2.0.0", deployment=DeploymentPolicy(required_eval=False))
    assert promote(ungated, "1.0.0", None).status_code == 200
    candidate = finish(ungated)
    app = gate_app("2.0.0", **no_regression())
    refused = promote(app, "2.0.0", candidate)
    assert refused.status_code == 422
    assert refused.json()["details"] == {
        "reason": "the active version has no completed eval run to compare with",
        "activeVersion": "1.0.0",
        "evalRunId": candidate,
    }


# --- the published client, against a real host process ----------------------------------


@pytest.fixture
def regress_host(tmp_path: Path, database: str) -> Iterator[Host]:
    gate = tmp_path / "gate"
    gate.mkdir()
    parts = served(gate)
    suites = ", ".join(json.dumps(p) for p in parts["suites"])
    config = tmp_path / "host.toml"
    config.write_text(
        f"suites = [{suites}]\n"
        f'[agents."{AGENT}"]\nagent = "{gate / "switch.py"}:agent"\n'
        '[[api_keys]]\nname = "ci"\ntenant = "acme"\nkey = "acme-key"\n'
    )
    host = Host(config, database, gate, _free_port()).start()
    yield host
    host.stop()


def test_the_published_client_drives_a_regression_run(regress_host: Host) -> None:
    c = OpenwopClient(base_url=regress_host.url, api_key="acme-key", timeout=30)
    facets = c.discovery_capabilities().family("agents").facets  # type: ignore[union-attr]
    assert facets["evalSuite"]["baselineSelection"] is True
    assert {"golden", "regression"} <= set(facets["evalSuite"]["modes"])

    def run(**extra: Any) -> str:
        created = c.runs_create(
            CreateRunRequest(mode="eval", evalSuiteRef=SUITE, agentId=AGENT, **extra)
        )
        assert [e.type for e in c.runs_events(created.runId)][-1] == "run.completed"
        return created.runId

    baseline = run(evalModes=["golden"])
    (regress_host.gate_dir / "worse").touch()
    candidate = run(evalModes=["golden", "regression"], baselineRunId=baseline)
    read = c.runs_eval_summary(candidate)
    assert read is not None
    assert read.regression is not None
    assert read.regression.baselineRunId == baseline
    assert read.regression.scoreDelta == pytest.approx(-1 / 6)
    assert read.regression.diffRef is not None
    with pytest.raises(WopError) as refused:
        run(evalModes=["golden", "regression"], baselineRunId="acme/" + "0" * 24)
    assert refused.value.status == 400
