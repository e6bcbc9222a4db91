"""An outage is not a bad agent: with its model endpoint down, an ``openai:`` run exits 3
naming the endpoint, and its summary does not pass; an endpoint that fails twice and then
answers is retried, and the run exits 0 or 1 on the agent's merit."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from click.testing import Result

from openwop_eval.agents import openai_agent
from openwop_eval.llm.chat import Backoff
from tests.agents.test_openai_cli import CATALOG, EXAMPLE, invoke, support_model
from tests.fakes.openai_server import Reply, Seen, serve


@pytest.fixture(autouse=True)
def no_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without their backoff: the tests read what was retried, not how long."""
    monkeypatch.setattr(openai_agent, "Backoff", functools.partial(Backoff, base=0.0))


def run(tmp: Path, url: str) -> tuple[Result, dict[str, object]]:
    (tmp / "tools.yaml").write_text(CATALOG)
    summary = tmp / "summary.json"
    ran = invoke(
        "run", str(EXAMPLE / "suite.yaml"),
        "--agent", "openai:support-model",
        "--agent-base-url", url,
        "--tool-catalog", str(tmp / "tools.yaml"),
        "--judge", f"scripted:{EXAMPLE / 'judge.json'}",
        "--store", f"sqlite:///{tmp / 'store.sqlite'}",
        "--out", str(summary),
        "--quiet",
    )  # fmt: skip
    return ran, json.loads(summary.read_text())


def test_a_stopped_endpoint_exits_3_naming_it_and_nothing_passes(tmp_path: Path) -> None:
    with serve() as fake:
        url = fake.url  # the endpoint is stopped when the block ends: nothing listens there
    ran, summary = run(tmp_path, url)
    assert ran.exit_code == 3, ran.output
    assert f"could not reach {url}/chat/completions" in ran.stderr
    assert "(infrastructure, not the agent)" in ran.stderr
    assert summary["passed"] is False


def test_an_endpoint_that_fails_twice_then_answers_is_graded_on_the_agents_merit(
    tmp_path: Path,
) -> None:
    failures = iter([Reply(503, "unavailable"), Reply(drop=True)])

    def flaky(seen: Seen) -> Reply:
        return next(failures, None) or support_model(seen)

    with serve() as fake:
        fake.respond = flaky
        ran, _ = run(tmp_path, fake.url)
    assert ran.exit_code == 1, ran.output  # the model deletes an account: the gate, not an outage
    assert "could not reach" not in ran.stderr
