"""The host's ``[telemetry]``: every run it ends reaches an OpenTelemetry collector (a real
OTLP/HTTP receiver decoding the protobuf), played in the app's process or in a run worker,
on SQLite and PostgreSQL; content only when the section opts in; a collector away changes
nothing of the run but a warning in the host's log."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client.wire_id import project_id

from openwop_eval.server.config import AgentConfig, ConfigError, load_config
from openwop_eval.server.exports import TelemetryConfig
from openwop_eval.telemetry import OtlpTarget
from tests.hosts import Host, api, wait_for, write_config
from tests.server.inprocess import AppHost
from tests.telemetry.receiver import Received, attributes, dump, evaluations, serve
from tests.telemetry.test_run_export import AGENT, SECRETS, SUITE, _task

SUITE_REF = f"{SUITE}@1.0.0"
BOT = "test.support-bot"
_ENV = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SERVICE_NAME",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own OpenTelemetry settings must not decide these tests."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def receiver() -> Iterator[tuple[str, Received]]:
    yield from serve()


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A suite of a right path and a forbidden one (which fails the suite), its scripted agent."""
    suite = {
        "suiteId": SUITE,
        "version": "1.0.0",
        "modes": ["golden"],
        "thresholds": {"passScore": 1},
        "tasks": [_task("right-path"), _task("wrong-path")],
    }
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    (tmp_path / "agent.json").write_text(json.dumps(AGENT))
    return tmp_path


def _app(make_app: Callable[..., AppHost], files: Path, telemetry: TelemetryConfig) -> AppHost:
    return make_app(
        suites=(str(files / "suite.json"),),
        agents={BOT: AgentConfig(agent=f"scripted:{files / 'agent.json'}")},
        telemetry=telemetry,
    )


def _played(app: AppHost) -> dict[str, Any]:
    """Run the suite to its end on ``app``, then stop the app (which waits for the export
    under way); the run's summary."""
    run_id = app.run_to_end(SUITE_REF, BOT)
    summary: dict[str, Any] = app.request("GET", f"/runs/{project_id(run_id)}/eval-summary").json()
    app.close()
    return summary


def _the_run_arrived(received: Received, summary: dict[str, Any]) -> None:
    run = received.one(f"eval_run {SUITE}")
    (verdict,) = evaluations(run)
    assert verdict["gen_ai.evaluation.score.value"] == summary["gatedAggregateScore"] == 0.5
    assert verdict["gen_ai.evaluation.score.label"] == "failed"
    trials = received.named("invoke_agent ")
    assert sorted(attributes(t)["openwop_eval.gated_score"] for t in trials) == [0.0, 1.0]
    assert len(received.named("execute_tool ")) == 3


def test_a_run_the_host_ends_reaches_the_collector_without_content(
    make_app: Callable[..., AppHost], files: Path, receiver: tuple[str, Received]
) -> None:
    url, received = receiver
    app = _app(make_app, files, TelemetryConfig(otlp_endpoint=url, service_name="eval-host"))
    summary = _played(app)
    assert summary["passed"] is False
    _the_run_arrived(received, summary)
    assert {"key": "service.name", "value": {"stringValue": "eval-host"}} in (
        received.resources[0]["attributes"]
    )
    body = b"".join(received.bodies)
    assert not [s for s in SECRETS if s.encode() in body], dump(received)


def test_content_is_exported_only_when_the_section_opts_in(
    make_app: Callable[..., AppHost], files: Path, receiver: tuple[str, Received]
) -> None:
    url, received = receiver
    _played(_app(make_app, files, TelemetryConfig(otlp_endpoint=url, capture_content=True)))
    body = b"".join(received.bodies)
    assert [s for s in SECRETS if s.encode() in body] == list(SECRETS)


def test_a_collector_away_leaves_the_run_and_its_verdict_and_warns(
    make_app: Callable[..., AppHost], files: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        away = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = _app(make_app, files, TelemetryConfig(otlp_endpoint=away))
    with caplog.at_level(logging.WARNING, logger="openwop_eval.server"):
        summary = _played(app)
    assert summary["passed"] is False
    assert summary["gatedAggregateScore"] == 0.5
    (warning,) = [r.getMessage() for r in caplog.records if "was not exported" in r.getMessage()]
    assert away in warning


def test_a_run_played_in_a_run_worker_is_exported_by_the_host(
    tmp_path: Path, database: str, files: Path, receiver: tuple[str, Received]
) -> None:
    url, received = receiver
    config = write_config(tmp_path, run_workers=1)
    config.write_text(
        config.read_text().replace("suites = [", f'suites = ["{files / "suite.json"}", ', 1)
        + f'\n[agents."{BOT}"]\nagent = "scripted:{files / "agent.json"}"\n'
        + f'\n[telemetry]\notlp_endpoint = "{url}"\n'
    )
    (gate := tmp_path / "gate").mkdir()
    host = Host(config, database, gate).start()
    try:
        with api(host) as client:
            created = client.post(
                "/runs", json={"mode": "eval", "evalSuiteRef": SUITE_REF, "agentId": BOT}
            )
            assert created.status_code == 201, created.text
            path = f"/runs/{project_id(created.json()['runId'])}"
            wait_for(lambda: client.get(path).json()["status"] == "completed", "the run's end")
            summary = client.get(f"{path}/eval-summary").json()
        wait_for(lambda: received.named(f"eval_run {SUITE}"), "the export", log=host.log)
    finally:
        host.stop()
    _the_run_arrived(received, summary)


def test_the_section_comes_before_the_environment_and_can_turn_it_off() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318", "OTEL_SERVICE_NAME": "env-name"}
    assert TelemetryConfig().target(env) == OtlpTarget("http://env:4318/v1/traces", "env-name")
    assert TelemetryConfig().target({}) is None
    assert TelemetryConfig(export=False).target(env) is None
    mine = TelemetryConfig(otlp_endpoint="https://mine:4318/", service_name="mine")
    assert mine.target(env) == OtlpTarget("https://mine:4318/v1/traces", "mine")
    opted = {**env, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
    assert TelemetryConfig().target(opted).content is True  # type: ignore[union-attr]
    assert TelemetryConfig(capture_content=False).target(opted).content is False  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ('otlp_endpoint = "ftp://collector"', "telemetry.otlp_endpoint"),
        ('otlp_endpoint = ""', "telemetry.otlp_endpoint"),
        ('capture_content = "yes please"', "telemetry.capture_content"),
        ('headers = "x"', "telemetry.headers"),
    ],
)
def test_a_bad_section_is_a_located_configuration_error(
    tmp_path: Path, section: str, problem: str
) -> None:
    path = tmp_path / "host.toml"
    path.write_text(f"[telemetry]\n{section}\n")
    with pytest.raises(ConfigError, match=problem.replace(".", r"\.")):
        load_config(path)
