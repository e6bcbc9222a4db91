"""The command line and the host build a run's spec and check it the one way: for the same
bad terms each reports the same problem, naming the member as its user knows it (the option,
the request member or setting), with the same reason, and runs nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openwop_eval.agents.python import PythonAgent
from openwop_eval.cli.main import main
from openwop_eval.cli.modes import NAMES as CLI_NAMES
from openwop_eval.core.plan import RunTerms
from openwop_eval.files.suites import load_suite
from openwop_eval.runner import RunSpec, StoredBaseline, describe, validate
from openwop_eval.server.config import AdversarialPolicy, AgentConfig
from openwop_eval.server.run_request import HOST_NAMES
from tests.server.inprocess import AppHost

SUITE = "test.acme.evals.plain"
RUN_ID = "0" * 24


def plain_suite(path: Path) -> Path:
    suite = {
        "suiteId": SUITE,
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": "t0",
                "input": {"n": 0},
                "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
            }
        ],
    }
    path.write_text(json.dumps(suite))
    return path


@pytest.mark.parametrize(
    ("cli_options", "host_body", "host_config", "changes"),
    [
        (
            ["--baseline", f"local/{RUN_ID}"],
            {"baselineRunId": f"acme/{RUN_ID}"},
            {},
            {"baseline": StoredBaseline(f"local/{RUN_ID}")},
        ),
        (
            ["--fail-on-severity", "critical"],
            {},
            {"adversarial": AdversarialPolicy(fail_on_severity="critical")},
            {"terms": RunTerms(fail_on_severity="critical")},
        ),
    ],
)
def test_the_command_line_and_the_host_report_the_same_problem(
    make_app: Callable[..., AppHost],
    tmp_path: Path,
    cli_options: list[str],
    host_body: dict[str, Any],
    host_config: dict[str, Any],
    changes: dict[str, Any],
) -> None:
    suite = plain_suite(tmp_path / "plain.json")
    (tmp_path / "agent.py").write_text("def agent(input, tools):\n    return 'ok'\n")
    agent = PythonAgent(lambda _input, _tools: "ok", "tests.ok", 1)
    (problem,) = validate(RunSpec(load_suite(suite), agent, **changes))

    said = CliRunner().invoke(
        main,
        [
            "run",
            str(suite),
            "--agent",
            f"{tmp_path / 'agent.py'}:agent",
            "--store",
            f"sqlite:///{tmp_path / 'cli.sqlite'}",
            *cli_options,
        ],
    )
    assert said.exit_code == 2
    assert f"error: {describe(problem, CLI_NAMES)}" in said.stderr
    assert "Traceback" not in said.output

    host = make_app(
        suites=(str(suite),),
        agents={"test.ok": AgentConfig(agent=f"{tmp_path / 'agent.py'}:agent")},
        **host_config,
    )
    body = {"mode": "eval", "evalSuiteRef": f"{SUITE}@1.0.0", "agentId": "test.ok", **host_body}
    response = host.request("POST", "/runs", json=body)
    assert response.status_code == 400
    refusal = response.json()
    assert refusal["error"] == "validation_error"
    assert refusal["message"].endswith(describe(problem, HOST_NAMES))
    assert refusal["message"].endswith(problem.message)
    assert host.request("GET", "/runs").json() == {"runs": []}  # nothing was started
