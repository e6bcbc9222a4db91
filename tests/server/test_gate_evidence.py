"""The deploy gate's evidence, attacked as the walk-arounds that opened it: a version that was
never evaluated, runs the host did not run (the command line on a shared store, a forged
host run, a summary edited afterwards, a run under another policy), a passed smoke suite
instead of the real one, a suite that cannot fail, an older passing run outvoting a newer
failing one, and a promotion that skips a gated state. Each one is refused with
``422 eval_gate_unmet`` and nothing changes."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from openwop_eval.protocol.ids import project
from openwop_eval.server.config import (
    AdversarialPolicy,
    AgentConfig,
    ConfigError,
    DeploymentPolicy,
)
from openwop_eval.store.schema import runs
from tests.hosts import EXAMPLE
from tests.server.inprocess import CAREFUL, REFUNDS_SUITE, AppHost

FLAWED = "acme.flawed-resolver"
SMOKE = "acme.support.evals.smoke@1.0.0"
LAX = "acme.support.evals.lax@1.0.0"
Maker = Callable[..., AppHost]


def suite_file(tmp: Path, suite_id: str, pass_score: float) -> str:
    """A one-task suite the example agents pass, with no trajectory (a smoke test)."""
    doc = {
        "suiteId": suite_id,
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": pass_score},
        "tasks": [
            {
                "taskId": "greets",
                "input": {"message": "hello"},
                "expected": {
                    "kind": "golden",
                    "match": {"strategy": "contains", "value": "Which order"},
                },
            }
        ],
    }
    path = tmp / f"{suite_id}.json"
    path.write_text(json.dumps(doc))
    return str(path)


def agents(version: str = "1.0.0") -> dict[str, AgentConfig]:
    example = EXAMPLE.resolve()
    return {
        name: AgentConfig(
            agent=f"{example / 'agent.py'}:{function}",
            judge=f"scripted:{example / 'judge.json'}",
            version=version,
        )
        for name, function in ((CAREFUL, "careful_support_agent"), (FLAWED, "support_agent"))
    }


def served(tmp: Path, version: str = "1.0.0", **deployment: Any) -> dict[str, Any]:
    """The refunds suite required for both example agents, a smoke suite and a suite that
    cannot fail served beside it."""
    rules: dict[str, Any] = {
        "gated_states": ("staged", "active"),
        "required_suites": {CAREFUL: (REFUNDS_SUITE,), FLAWED: (REFUNDS_SUITE,)},
        **deployment,
    }
    return {
        "suites": (
            suite_file(tmp, "acme.support.evals.smoke", 0.5),
            suite_file(tmp, "acme.support.evals.lax", 0),
        ),
        "agents": agents(version),
        "deployment": DeploymentPolicy(**rules),
    }


def promote(app: AppHost, agent: str, version: str, run_id: str | None, **extra: Any) -> Any:
    body: dict[str, Any] = {"version": version, "transition": "promote", "toState": "active"}
    if run_id is not None:
        body["evalRunId"] = run_id
    return app.request("POST", f"/agents/{agent}/deployments", json={**body, **extra})


def refused(app: AppHost, agent: str, version: str, run_id: str | None, **extra: Any) -> str:
    """Promote, expecting the gate's refusal with nothing recorded; its reason."""
    response = promote(app, agent, version, run_id, **extra)
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "eval_gate_unmet"
    assert app.request("GET", f"/agents/{agent}/deployments").json() == []
    reason: str = body["details"]["reason"]
    return reason


@pytest.fixture
def app(make_app: Maker, tmp_path: Path) -> AppHost:
    return make_app(**served(tmp_path))


def test_a_run_promotes_the_version_it_evaluated_and_no_other(app: AppHost) -> None:
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    started = next(e for e in app.follow(run_id) if e["type"] == "eval.started")
    assert started["payload"]["x-openwop-eval"]["agentVersion"] == "1.0.0"
    assert app.store.get_run(run_id).agent_version == "1.0.0"  # type: ignore[union-attr]
    reason = refused(app, CAREFUL, "never-evaluated-9", run_id)
    assert reason == f"the eval run evaluated 1.0.0 of {CAREFUL}, not never-evaluated-9"
    assert promote(app, CAREFUL, "1.0.0", run_id).status_code == 200


def test_an_agent_without_a_declared_version_promotes_nothing(
    make_app: Maker, tmp_path: Path
) -> None:
    parts = served(tmp_path)
    parts["agents"] = {
        name: config.model_copy(update={"version": None})
        for name, config in parts["agents"].items()
    }
    app = make_app(**parts)
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    assert "evaluated an undeclared version" in refused(app, CAREFUL, "1.0.0", run_id)


def test_the_version_can_come_from_the_environment(
    make_app: Maker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAREFUL_VERSION", "3.1.4")
    parts = served(tmp_path)
    parts["agents"][CAREFUL] = parts["agents"][CAREFUL].model_copy(
        update={"version": None, "version_env": "CAREFUL_VERSION"}
    )
    app = make_app(**parts)
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    assert promote(app, CAREFUL, "3.1.4", run_id).status_code == 200


def test_a_run_of_the_command_line_on_the_hosts_store_is_not_evidence(
    app: AppHost, tmp_path: Path
) -> None:
    """`openwop-eval run --agent-id` writes a passing run of the agent into the host's own
    store, in the caller's tenant: it is no run of the host's."""
    example = EXAMPLE.resolve()
    cli = subprocess.run(
        [
            sys.executable,
            "-m",
            "openwop_eval",
            "run",
            str(example / "suite.yaml"),
            "--agent",
            f"{example / 'agent.py'}:careful_support_agent",
            "--judge",
            f"scripted:{example / 'judge.json'}",
            "--agent-id",
            CAREFUL,
            "--store",
            app.store.url,
            "--quiet",
        ],
        capture_output=True,
        env={**os.environ, "OPENWOP_EVAL_COMMITTER": "thread"},
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr.decode()
    (written,) = app.store.list_runs()
    with app.store.transaction() as tx:  # into the caller's tenant, as a shared store allows
        tx.execute(runs.update().values(tenant="acme"))
    assert (written.agent_id, written.status) == (CAREFUL, "completed")
    assert "undeclared version" in refused(app, CAREFUL, "1.0.0", written.run_id)


def test_a_forged_host_run_or_an_edited_summary_is_not_evidence(app: AppHost) -> None:
    failing = app.run_to_end(REFUNDS_SUITE, FLAWED)
    summary = app.store.get_run(failing).summary  # type: ignore[union-attr]
    assert summary is not None
    assert summary["passed"] is False
    with app.store.transaction() as tx:  # the summary edited to pass, the seal kept
        tx.execute(
            runs.update()
            .where(runs.c.run_id == failing)
            .values(summary={**summary, "passed": True})
        )
    assert "carries no seal of this host" in refused(app, FLAWED, "1.0.0", failing)
    with app.store.transaction() as tx:  # and a run with the seal removed
        tx.execute(runs.update().where(runs.c.run_id == failing).values(evidence=None))
    assert "carries no seal of this host" in refused(app, FLAWED, "1.0.0", failing)


def test_a_run_under_another_policy_is_not_evidence(make_app: Maker, tmp_path: Path) -> None:
    lax = make_app(**served(tmp_path))
    run_id = lax.run_to_end(REFUNDS_SUITE, CAREFUL)
    lax.close()
    strict = make_app(
        **served(tmp_path), adversarial=AdversarialPolicy(fail_on_severity="critical")
    )
    assert "under its current policy" in refused(strict, CAREFUL, "1.0.0", run_id)


def test_only_the_required_suites_are_evidence(app: AppHost) -> None:
    """The flawed agent fails the real suite and passes a smoke suite without a trajectory."""
    smoke = app.run_to_end(SMOKE, FLAWED)
    summary = app.request("GET", f"/runs/{project(smoke)}/eval-summary").json()
    assert summary["passed"] is True
    reason = refused(app, FLAWED, "1.0.0", smoke)
    assert reason == (
        f"the eval run ran suite {SMOKE}, not one required for {FLAWED}: {REFUNDS_SUITE}"
    )


def test_an_agent_with_no_required_suite_cannot_be_promoted(
    make_app: Maker, tmp_path: Path
) -> None:
    app = make_app(**served(tmp_path, required_suites={FLAWED: (REFUNDS_SUITE,)}))
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    assert "no suite is required for agent" in refused(app, CAREFUL, "1.0.0", run_id)


def test_a_suite_that_cannot_fail_is_refused_as_evidence_and_warned_about(
    make_app: Maker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "openwop_eval.server")
    app = make_app(**served(tmp_path, required_suites={FLAWED: (LAX,)}))
    assert f"suite {LAX} cannot fail" in caplog.text
    run_id = app.run_to_end(LAX, FLAWED)
    summary = app.request("GET", f"/runs/{project(run_id)}/eval-summary").json()
    assert summary["passed"] is True
    assert f"suite {LAX} cannot fail: its passScore is 0" in refused(app, FLAWED, "1.0.0", run_id)


def test_a_newer_failing_run_outvotes_an_older_passing_one(make_app: Maker, tmp_path: Path) -> None:
    parts = served(tmp_path)
    parts["agents"][FLAWED] = parts["agents"][CAREFUL].model_copy()  # careful, as 1.0.0
    app = make_app(**parts)
    passing = app.run_to_end(REFUNDS_SUITE, FLAWED)
    app.close()
    parts = served(tmp_path)  # the flawed code, declared as the same version
    app = make_app(**parts)
    app.run_to_end(REFUNDS_SUITE, FLAWED)
    reason = refused(app, FLAWED, "1.0.0", passing)
    assert reason == f"a newer eval run of {REFUNDS_SUITE} for version 1.0.0 supersedes it"


def test_every_required_suite_needs_a_passed_run_of_the_version(
    make_app: Maker, tmp_path: Path
) -> None:
    app = make_app(**served(tmp_path, required_suites={CAREFUL: (REFUNDS_SUITE, SMOKE)}))
    refunds = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    reason = refused(app, CAREFUL, "1.0.0", refunds)
    assert reason == f"suite {SMOKE} has no completed eval run of version 1.0.0"
    app.run_to_end(SMOKE, CAREFUL)
    assert promote(app, CAREFUL, "1.0.0", refunds).status_code == 200


def test_a_promotion_cannot_skip_a_gated_state(make_app: Maker, tmp_path: Path) -> None:
    app = make_app(**served(tmp_path, gated_states=("test", "staged")))
    assert refused(app, CAREFUL, "1.0.0", None) == "no evalRunId was given"  # draft → active
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    assert promote(app, CAREFUL, "1.0.0", run_id).json()["state"] == "active"


def test_a_run_in_another_mode_set_than_its_suite_declares_is_not_evidence(
    app: AppHost,
) -> None:
    modes = app.store.get_run(app.run_to_end(REFUNDS_SUITE, CAREFUL))  # the suite's modes
    assert modes is not None
    suite_modes = modes.suite_doc["modes"]
    assert suite_modes == ["golden", "rubric"]
    run_id = app.start(
        {
            "mode": "eval",
            "evalSuiteRef": REFUNDS_SUITE,
            "agentId": CAREFUL,
            "evalModes": suite_modes[:1],
        }
    )
    app.follow(run_id)
    assert "left out modes" in refused(app, CAREFUL, "1.0.0", run_id)


def test_seals_are_written_once_and_only_for_completed_runs(app: AppHost) -> None:
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    with app.store.transaction() as tx:
        seal = tx.execute(sa.select(runs.c.evidence).where(runs.c.run_id == run_id)).scalar()
    assert isinstance(seal, str)
    assert seal.startswith("v1:")


def test_a_configured_evidence_key_seals_and_another_key_refuses(
    make_app: Maker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIDENCE_KEY", "k" * 40)
    app = make_app(**served(tmp_path, evidence_key_env="EVIDENCE_KEY"))
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    app.close()
    monkeypatch.setenv("EVIDENCE_KEY", "q" * 40)  # a host that does not hold the key
    other = make_app(**served(tmp_path, evidence_key_env="EVIDENCE_KEY"))
    assert "carries no seal of this host" in refused(other, CAREFUL, "1.0.0", run_id)
    other.close()
    monkeypatch.setenv("EVIDENCE_KEY", "k" * 40)
    again = make_app(**served(tmp_path, evidence_key_env="EVIDENCE_KEY"))
    assert promote(again, CAREFUL, "1.0.0", run_id).status_code == 200


def test_an_evidence_key_too_short_stops_the_host(
    make_app: Maker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVIDENCE_KEY", "short")
    with pytest.raises(ConfigError, match="at least 32 characters"):
        make_app(**served(tmp_path, evidence_key_env="EVIDENCE_KEY"))


def test_required_suites_must_name_served_suites_of_configured_agents(
    make_app: Maker, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError) as stopped:
        make_app(
            **served(
                tmp_path,
                required_suites={CAREFUL: ("acme.nothing",), "acme.nobody": (REFUNDS_SUITE,)},
            )
        )
    assert "suite acme.nothing is not served" in str(stopped.value)
    assert "agent acme.nobody is not configured" in str(stopped.value)


@pytest.mark.parametrize(
    "forged",
    [
        {"evidence": "v1:\u00e9" * 10},  # not ASCII: a seal of ours never is
        {"summary": [1, 2]},  # a summary that is no object
        {"summary": {"passed": True, "n": 2**60}},  # beyond what canonical JSON holds
    ],
)
def test_a_run_row_forged_with_values_no_host_writes_is_refused_not_a_500(
    app: AppHost, forged: dict[str, Any]
) -> None:
    run_id = app.run_to_end(REFUNDS_SUITE, CAREFUL)
    with app.store.transaction() as tx:
        tx.execute(runs.update().where(runs.c.run_id == run_id).values(**forged))
    refused(app, CAREFUL, "1.0.0", run_id)
