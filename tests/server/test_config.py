"""The host's configuration and catalog: the TOML file `serve --config` reads, every problem
in it reported at once, the development default, and keys given by their SHA-256 only."""

from __future__ import annotations

import hashlib
import json
from contextlib import closing
from pathlib import Path

import pytest

from openwop_eval.protocol.ids import project
from openwop_eval.server import create_app, load_config
from openwop_eval.server.config import (
    DEV_KEY,
    AgentConfig,
    ApiKey,
    ConfigError,
    HostConfig,
    development_config,
)
from openwop_eval.store import Store
from tests.hosts import EXAMPLE, write_config
from tests.server.inprocess import FIXTURES, GATE_SUITE, MOCK, REFUNDS_SUITE, AppHost


def test_the_serve_config_file_is_the_host_the_process_tests_run(
    tmp_path: Path, database: str
) -> None:
    config = load_config(write_config(tmp_path))
    assert config.base_dir == str(tmp_path.resolve())  # relative paths: from the file
    assert config.path("suites/") == (tmp_path / "suites").resolve()
    assert config.deployment.gated_states == ("staged", "active")
    assert [(k.name, k.tenant) for k in config.api_keys] == [
        ("acme-ci", "acme"),
        ("globex-ci", "globex"),
        ("acme-reader", "acme"),
    ]
    assert config.agents["test.gated"].concurrency == 1
    host = AppHost(database, config)
    try:
        agents = host.request("GET", "/agents").json()["agents"]
        assert [a["agentId"] for a in agents] == list(config.agents)
        run_id = host.run_to_end(GATE_SUITE, MOCK)
        assert host.request("GET", f"/runs/{project(run_id)}").json()["status"] == "completed"
    finally:
        host.close()


def test_an_unreadable_or_malformed_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    broken = tmp_path / "broken.toml"
    broken.write_text('suites = ["a"\n')
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(broken)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'database = "caf\xe9"\n')
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(latin)


def test_every_problem_in_the_file_is_listed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "host.toml"
    path.write_text(
        f"""
surprise = 1
run_workers = 33

[[api_keys]]
name = "both"
tenant = "acme"
key = "a-secret"
key_sha256 = "{"0" * 64}"

[[api_keys]]
name = "neither"
tenant = "acme"

[[api_keys]]
name = "greedy"
tenant = "acme"
key = "b-secret"
scopes = ["runs:read", "root"]
"""
    )
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: 5 problem(s):")
    assert "surprise: Extra inputs are not permitted" in message
    assert "run_workers: Input should be less than or equal to 32" in message
    assert message.count("give exactly one of key or key_sha256") == 2
    assert "unknown scopes ['root']" in message


def test_an_agent_id_outside_the_protocols_grammar_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "host.toml"
    path.write_text('[agents."bad id"]\nagent = "x.py:f"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(path)
    assert "agent ids must be 1 to 128 of [A-Za-z0-9._~:-]: ['bad id']" in str(refused.value)


def test_a_catalog_that_does_not_load_names_every_problem(tmp_path: Path, database: str) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "broken.json").write_text(json.dumps({"suiteId": "test.x.evals.broken"}))
    (suites / "notes.txt").write_text("not a suite: skipped by its suffix")
    config = HostConfig(
        database=database,
        suites=("suites/", str(EXAMPLE / "suite.yaml"), str(EXAMPLE / "suite.yaml")),
        agents={
            "gone": AgentConfig(agent="gone.py:agent"),
            "no-judge-file": AgentConfig(
                agent=f"scripted:{FIXTURES / 'conformance-mock-agent.json'}",
                judge="scripted:missing-judge.json",
            ),
        },
        base_dir=str(tmp_path),
    )
    with closing(Store(database)) as store, pytest.raises(ConfigError) as refused:
        create_app(config, store)
    message = str(refused.value)
    assert message.startswith("the host configuration does not load:")
    assert f"{suites / 'broken.json'}: " in message
    assert "notes.txt" not in message
    assert f"{REFUNDS_SUITE} is also defined in {EXAMPLE / 'suite.yaml'}" in message
    assert "agents.gone: no such file" in message
    assert "agents.no-judge-file: " in message


def test_the_development_default_serves_the_fixtures_to_one_key(database: str) -> None:
    config = development_config(database)
    assert config.development is True
    host = AppHost(database, config)
    try:
        discovery = host.request("GET", "/.well-known/openwop", key=None).json()
        assert discovery["fixtures"] == [
            "conformance-eval-trajectory-gate",
            "conformance-eval-trajectory-gate-mean",
        ]
        assert discovery["agents"]["evalSuite"]["modes"] == ["golden", "adversarial", "regression"]
        run_id = host.run_to_end(GATE_SUITE, MOCK, key=DEV_KEY)
        assert run_id.startswith("dev/")
        assert host.request("GET", "/runs", key="acme-key").status_code == 401
    finally:
        host.close()


def test_a_key_given_by_its_digest_opens_with_the_secret_only(database: str) -> None:
    secret = "pipeline-secret"
    digest = hashlib.sha256(secret.encode()).hexdigest()
    config = development_config(database).model_copy(
        update={"api_keys": (ApiKey(name="deploy", tenant="acme", key_sha256=digest),)}
    )
    host = AppHost(database, config)
    try:
        assert host.request("GET", "/runs", key=secret).json() == {"runs": []}
        refused = host.request("GET", "/runs", key=digest)
        assert refused.status_code == 401
        assert refused.json()["message"] == "the API key is not valid"
        scheme = host.request("GET", "/runs", key=None, headers={"Authorization": secret})
        assert scheme.status_code == 401
        assert "Authorization: Bearer <key>" in scheme.json()["message"]
    finally:
        host.close()


def test_only_replicas_on_postgresql_fence_their_commits(database: str) -> None:
    """On SQLite the host's file lock already makes it the store's only committer."""
    with closing(Store(database)) as store:
        app = create_app(development_config(database), store)
        lease = app.state.host.manager.service.lease
        assert lease is not None
        assert lease.fenced is (not database.startswith("sqlite"))
