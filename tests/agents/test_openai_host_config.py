"""An ``openai:MODEL`` agent in the host configuration: endpoint, key variable, catalog."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from openwop_eval.agents import OpenAIAgent, Price
from openwop_eval.server.catalog import Catalog
from openwop_eval.server.config import AgentConfig, ConfigError, load_config

HOST_TOML = """
[agents."acme.support-model"]
agent = "openai:support-model"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "SUPPORT_MODEL_KEY"
tool_catalog = "tools.json"
"""
TOOLS = {"models": {"support-model": {"inputPerMillion": 2, "outputPerMillion": 8}}}


def write_host(tmp_path: Path) -> Path:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS))
    path = tmp_path / "host.toml"
    path.write_text(HOST_TOML)
    return path


def test_the_host_builds_an_openai_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUPPORT_MODEL_KEY", "sk-host-key")
    catalog = Catalog(load_config(write_host(tmp_path)))
    agent = catalog.agents["acme.support-model"].agent
    assert isinstance(agent, OpenAIAgent)
    assert (agent.agent_id, agent.model, agent.base_url) == (
        "acme.support-model",
        "support-model",
        "http://127.0.0.1:11434/v1",
    )
    assert agent.price == Price(2, 8)  # the catalog path is read relative to the config
    assert "sk-host-key" not in repr(agent)


def test_an_unset_key_variable_is_a_config_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUPPORT_MODEL_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"agents.acme.support-model: api_key_env: \$SUPPORT"):
        Catalog(load_config(write_host(tmp_path)))


def test_endpoint_settings_are_for_openai_agents_only() -> None:
    with pytest.raises(ValidationError, match="base_url, tool_catalog: for an openai:MODEL"):
        AgentConfig(agent="scripted:a.json", base_url="http://x/v1", tool_catalog="t.json")
    with pytest.raises(ValidationError, match="api_key_env"):
        AgentConfig(agent="openai:m", api_key_env="not a name")


def test_the_host_builds_an_agent_on_the_responses_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUPPORT_MODEL_KEY", "sk-host-key")
    path = write_host(tmp_path)
    path.write_text(HOST_TOML + 'api = "responses"\n')
    agent = Catalog(load_config(path)).agents["acme.support-model"].agent
    assert isinstance(agent, OpenAIAgent)
    assert agent.wire.name == "responses"
    assert agent.wire.endpoint.path == "responses"
    default = Catalog(load_config(write_host(tmp_path))).agents["acme.support-model"].agent
    assert isinstance(default, OpenAIAgent)
    assert default.wire.name == "chat"


def test_the_api_is_for_openai_agents_only() -> None:
    with pytest.raises(ValidationError, match="api: for an openai:MODEL agent only"):
        AgentConfig(agent="cmd:python agent.py", api="chat")
    with pytest.raises(ValidationError, match="api"):
        AgentConfig(agent="openai:m", api="soap")  # type: ignore[arg-type]
