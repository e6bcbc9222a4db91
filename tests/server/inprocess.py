"""The host app in this process, on SQLite or PostgreSQL, driven over httpx's ASGI transport.

Faster than a `serve` process by two orders of magnitude, so hostile requests can be sent by
the thousand; the app, its lifespan (run recovery and shutdown) and its eval runs all live on
one event loop that every request is run on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_eval.server import HostConfig, create_app
from openwop_eval.server.config import AgentConfig, ApiKey, DeploymentPolicy, Limits
from openwop_eval.store import Store
from tests.hosts import EXAMPLE, ROOT, _postgres_database

FIXTURES = ROOT / "src" / "openwop_eval" / "conformance" / "fixtures"
MOCK = "core.conformance.mock-agent"
CAREFUL = "acme.support-resolver"
GATE_SUITE = "core.conformance.evals.trajectory-gate@1.0.0"
REFUNDS_SUITE = "acme.support.evals.refunds@1.0.0"
ANSWER_S = 20.0
"""A request with no answer within this many seconds is a hang (every wait is bounded)."""


def host_config(database: str) -> HostConfig:
    """Two tenants and a read-only key; promotions into staged and active are gated."""
    example = EXAMPLE.resolve()
    return HostConfig(
        database=database,
        suites=(str(example / "suite.yaml"),),
        conformance_fixtures=True,
        agents={
            MOCK: AgentConfig(agent=f"scripted:{FIXTURES / 'conformance-mock-agent.json'}"),
            CAREFUL: AgentConfig(
                agent=f"{example / 'agent.py'}:careful_support_agent",
                judge=f"scripted:{example / 'judge.json'}",
            ),
        },
        deployment=DeploymentPolicy(gated_states=("staged", "active")),
        api_keys=(
            ApiKey(name="acme-ci", tenant="acme", key="acme-key"),
            ApiKey(name="globex-ci", tenant="globex", key="globex-key"),
            ApiKey(
                name="acme-reader",
                tenant="acme",
                key="acme-read-only",
                scopes=("runs:read", "agents:read"),
            ),
        ),
        limits=Limits(max_poll_wait_s=1),  # a long poll on a live run answers within 1 s
        base_dir=str(ROOT),
    )


class AppHost:
    """One app on one database; ``request`` answers within ``ANSWER_S`` or fails the test."""

    def __init__(self, database: str) -> None:
        self.store = Store(database)
        self.app = create_app(host_config(database), self.store)
        self.runner = asyncio.Runner()
        self._lifespan = self.app.router.lifespan_context(self.app)
        self.runner.run(self._lifespan.__aenter__())
        # Strict: an exception escaping the app fails the request even after the response
        # started, so a stream cut mid-response is caught too; lenient shows the 500 the
        # last-resort handler sends.
        self.strict, self.lenient = (
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=self.app, raise_app_exceptions=strict),
                base_url="http://host",
            )
            for strict in (True, False)
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        key: str | None = "acme-key",
        strict: bool = True,
        **kwargs: Any,
    ) -> httpx.Response:
        # a list of pairs, not a dict: a repeated header must reach the host twice
        given = kwargs.pop("headers", None) or []
        headers = list(given.items() if isinstance(given, dict) else given)
        names = {(k.decode("latin-1") if isinstance(k, bytes) else k).lower() for k, _ in headers}
        if key is not None and "authorization" not in names:
            headers.append(("Authorization", f"Bearer {key}"))
        client = self.strict if strict else self.lenient
        call = client.request(method, url, headers=headers, **kwargs)
        try:
            return self.runner.run(asyncio.wait_for(call, ANSWER_S))
        except TimeoutError:
            raise AssertionError(f"{method} {url!r}: no answer within {ANSWER_S} s") from None

    def run_to_end(self, suite: str, agent: str, key: str = "acme-key") -> str:
        """Create an eval run and long-poll it to its terminal event; its run id."""
        body = {"mode": "eval", "evalSuiteRef": suite, "agentId": agent}
        created = self.request("POST", "/runs", key=key, json=body)
        assert created.status_code == 201, created.text
        run_id: str = created.json()["runId"]
        path = created.json()["statusUrl"]
        for _ in range(200):  # each poll waits for the run's next commit, at most 1 s
            page = self.request("GET", f"{path}/events/poll?timeout=1&afterSequence=-1", key=key)
            if page.json()["isTerminal"]:
                return run_id
        raise AssertionError(f"run {run_id} did not end")

    def close(self) -> None:
        self.runner.run(self.strict.aclose())
        self.runner.run(self.lenient.aclose())
        self.runner.run(self._lifespan.__aexit__(None, None, None))
        self.runner.close()
        self.store.close()


def app_host(request: pytest.FixtureRequest, tmp: Path) -> Iterator[AppHost]:
    """The body of the ``app_host`` fixture (conftest.py): a fresh database per module."""
    if request.param == "sqlite":
        databases: Iterator[str] = iter([f"sqlite:///{tmp / 'host.sqlite'}"])
    else:
        databases = _postgres_database()
    database = next(databases)
    host = AppHost(database)
    try:
        yield host
    finally:
        host.close()
        next(databases, None)  # drops the PostgreSQL database
