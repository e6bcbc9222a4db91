"""An agent built on the OpenAI Agents SDK (``agents_sdk_agent.py``: one
``MCPServerStreamableHttp`` per entry of ``{mcp_config}``), its model a scripted one on a
fake Chat Completions endpoint on loopback (``scripted_model.py``), is graded through the
tool boundary like any other: a good path passes, a skipped step, a forbidden call and a
call no fixture answers fail with the reason in the table."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from openwop_eval.agents.mcp.hub import MISS
from tests.fakes.openai_server import FakeEndpoint, serve
from tests.mcp_servers import scripted_model
from tests.mcp_servers.runs import called, run_case

AGENT = Path(__file__).with_name("agents_sdk_agent.py")

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("agents") is None,
    reason="the OpenAI Agents SDK is not installed: pip install -e '.[test]'",
)


@pytest.fixture
def model() -> Iterator[FakeEndpoint]:
    with serve() as fake:
        fake.respond = scripted_model.respond
        yield fake


def run(tmp: Path, case: str, model: FakeEndpoint) -> Result:
    return run_case(tmp, case, f"{sys.executable} {AGENT} {{mcp_config}} {model.url}")


def test_a_good_path_over_the_agents_sdk_passes_and_every_call_is_recorded(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    result = run(tmp_path, "good", model)
    assert result.exit_code == 0, result.output
    assert called(tmp_path, "good") == ["crm:lookup-order", "payments:refund"] * 2
    # The SDK listed every server's tools over MCP and offered them under their MCP names.
    assert len(model.requests) == 6  # 2 trials × (2 calls + the answer)
    for seen in model.requests:
        assert seen.body["model"] == scripted_model.MODEL
        assert scripted_model.offered(seen) == {"lookup-order", "refund", "delete"}


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("skipped-step", "step 1 (crm:lookup-order) was never called"),
        ("forbidden", "called forbidden tool accounts:delete"),
    ],
)
def test_a_wrong_path_over_the_agents_sdk_fails_with_the_reason(
    tmp_path: Path, model: FakeEndpoint, case: str, reason: str
) -> None:
    result = run(tmp_path, case, model)
    assert result.exit_code == 1, result.output
    assert reason in result.output


def test_a_call_no_fixture_answers_fails_closed_and_the_model_gets_a_tool_error(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    """A listed tool called once more than its fixtures answer: the SDK sends the call, the
    boundary records the miss and fails the trial, and the model sees the error."""
    result = run(tmp_path, "used-up", model)
    assert result.exit_code == 1, result.output
    assert "call 2 to crm:lookup-order had no fixture response" in result.output
    results = [
        str(message["content"])
        for seen in model.requests
        for message in seen.body["messages"]
        if message["role"] == "tool"
    ]
    assert any(MISS in text for text in results)


def test_a_tool_no_server_lists_is_refused_by_the_sdk_and_the_trial_fails(
    tmp_path: Path, model: FakeEndpoint
) -> None:
    """The servers list only what the trial can answer; the SDK refuses a call of anything
    else before it is sent (``ModelBehaviorError``), so the call never reaches the boundary
    and the trial fails on the agent's exit, with the SDK's reason."""
    result = run(tmp_path, "unanswered", model)
    assert result.exit_code == 1, result.output
    assert "Tool lookup-customer not found in agent support" in result.output
    assert called(tmp_path, "unanswered") == ["crm:lookup-order"] * 2
