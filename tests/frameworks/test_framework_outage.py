"""A framework agent whose model endpoint is down is an outage, not a bad agent: whichever
framework, once its client has given up the trial errors on infrastructure and the run exits
3 naming the endpoint."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.fakes.openai_server import serve
from tests.frameworks import (
    test_agents_sdk_adapter,
    test_langgraph_adapter,
    test_pydantic_ai_adapter,
)
from tests.frameworks.adapter_runs import MODEL_URL, report_trials


@pytest.mark.parametrize(
    "framework",
    [test_agents_sdk_adapter, test_langgraph_adapter, test_pydantic_ai_adapter],
    ids=["agents-sdk", "langgraph", "pydantic-ai"],
)
def test_a_stopped_model_endpoint_exits_3_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, framework: ModuleType
) -> None:
    with serve() as fake:
        url = fake.url  # stopped when the block ends: nothing listens there
    monkeypatch.setenv(MODEL_URL, url)
    monkeypatch.delitem(sys.modules, framework.AGENT, raising=False)
    result = framework.run(tmp_path, "good")
    assert result.exit_code == 3, result.output
    assert f"could not reach {url}" in result.output
    assert {t["errorKind"] for t in report_trials(tmp_path, "good")} == {"infrastructure"}
