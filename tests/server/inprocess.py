"""The host app in this process, on SQLite or PostgreSQL, driven over httpx's ASGI transport
(``AppHost.request``) or a plain ``httpx.Client`` whose bodies stream (``AppHost.client``,
tests.asgi), so an SSE stream can be read in part and dropped.

Faster than a `serve` process by two orders of magnitude, so hostile requests can be sent by
the thousand; the app, its lifespan (run recovery and shutdown, driven over ASGI as a server
drives it) and its eval runs all live on one event loop that every request is run on.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from openwop_eval.protocol.ids import project
from openwop_eval.server import HostConfig, create_app
from openwop_eval.server.config import (
    AdversarialPolicy,
    AgentConfig,
    ApiKey,
    DeploymentPolicy,
    Limits,
    UsersConfig,
)
from openwop_eval.server.exports import TelemetryConfig
from openwop_eval.store import Store
from tests.asgi import Lifespan, client
from tests.hosts import EXAMPLE, GATED_SUITE, ROOT, _postgres_database
from tests.server import gated

FIXTURES = ROOT / "src" / "openwop_eval" / "conformance" / "fixtures"
MOCK = "core.conformance.mock-agent"
CAREFUL = "acme.support-resolver"
GATE_SUITE = "core.conformance.evals.trajectory-gate@1.0.0"
REFUNDS_SUITE = "acme.support.evals.refunds@1.0.0"
GATED = "test.gated"
GATED_RUN = {"mode": "eval", "evalSuiteRef": "test.acme.evals.gated@1.0.0", "agentId": GATED}
REQUIRED = {CAREFUL: (REFUNDS_SUITE,), MOCK: (GATE_SUITE,)}
"""The suites whose runs are evidence for the standard agents' promotions."""
ANSWER_S = 20.0
"""A request with no answer within this many seconds is a hang (every wait is bounded)."""
Event = dict[str, Any]


def host_config(
    database: str,
    *,
    suites: Sequence[str] = (),
    agents: Mapping[str, AgentConfig] | None = None,
    without: Sequence[str] = (),
    limits: Mapping[str, Any] | None = None,
    adversarial: AdversarialPolicy | None = None,
    deployment: DeploymentPolicy | None = None,
    users: UsersConfig | None = None,
    telemetry: TelemetryConfig | None = None,
) -> HostConfig:
    """Two tenants and a read-only key; promotions into staged and active are gated.

    ``suites`` and ``agents`` are served besides the standard ones; the agents named in
    ``without`` are not configured (a host restarted without an agent); ``limits`` tightens
    the host's limits (a long poll answers within 1 s whatever is given)."""
    example = EXAMPLE.resolve()
    standard = {
        MOCK: AgentConfig(
            agent=f"scripted:{FIXTURES / 'conformance-mock-agent.json'}", version="1.0.0"
        ),
        CAREFUL: AgentConfig(
            agent=f"{example / 'agent.py'}:careful_support_agent",
            judge=f"scripted:{example / 'judge.json'}",
            version="1.0.0",
        ),
    }
    served = {**standard, **(agents or {})}
    policy = deployment or DeploymentPolicy(gated_states=("staged", "active"))
    if not policy.required_suites:  # the suites each standard agent's promotions count
        policy = policy.model_copy(update={"required_suites": REQUIRED})
    return HostConfig(
        database=database,
        suites=(str(example / "suite.yaml"), *suites),
        conformance_fixtures=True,
        agents={agent_id: c for agent_id, c in served.items() if agent_id not in without},
        deployment=policy,
        adversarial=adversarial or AdversarialPolicy(),
        users=users or UsersConfig(),
        telemetry=telemetry or TelemetryConfig(export=False),  # not the environment's collector
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
        limits=Limits(**{**(limits or {}), "max_poll_wait_s": 1}),  # a long poll: 1 s at most
        base_dir=str(ROOT),
        run_workers=0,  # runs on the app's one loop (above); `serve` processes have a worker
    )


def gated_agent(tmp: Path) -> dict[str, Any]:
    """``host_config`` arguments that add the gated suite (tests.hosts.GATED_SUITE) and the
    gated agent in process (tests.server.gated), at concurrency 1."""
    path = tmp / "gated.json"
    path.write_text(json.dumps(GATED_SUITE))
    return {
        "suites": (str(path),),
        "agents": {GATED: AgentConfig(agent=gated.SPEC, concurrency=1)},
    }


class AppHost:
    """One app on one database; ``request`` answers within ``ANSWER_S`` or fails the test.

    Starting it runs the app's lifespan start (run recovery), ``close`` its end (runs stop
    and stay open). Its eval runs progress only while a request is being answered: waits
    are long polls (``follow``), which return as soon as the run commits."""

    def __init__(self, database: str, config: HostConfig | None = None) -> None:
        self.store = Store(database)
        try:
            self.app = create_app(config or host_config(database), self.store)
        except BaseException:  # a configuration the host refuses: nothing is left open
            self.store.close()
            raise
        self.runner = asyncio.Runner()
        self.closed = False
        self._lifespan = Lifespan(self.app)
        self.runner.run(asyncio.wait_for(self._lifespan.startup(), ANSWER_S))
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

    def at_once(
        self, requests: Sequence[tuple[str, str, dict[str, Any]]], key: str = "acme-key"
    ) -> list[httpx.Response]:
        """Send ``(method, url, keyword arguments)`` requests concurrently; their answers."""
        headers = {"Authorization": f"Bearer {key}"}
        calls = [
            self.strict.request(method, url, headers=headers, **kwargs)
            for method, url, kwargs in requests
        ]
        gathered = asyncio.wait_for(asyncio.gather(*calls), ANSWER_S)
        return list(self.runner.run(gathered))

    def client(self, key: str | None = "acme-key") -> httpx.Client:
        """A plain ``httpx.Client`` onto the app, on its loop; bodies (SSE) stream."""
        headers = {} if key is None else {"Authorization": f"Bearer {key}"}
        return client(
            self.app, "http://host", runner=self.runner, headers=headers, timeout=ANSWER_S
        )

    def start(self, body: dict[str, Any], key: str = "acme-key") -> str:
        """Create an eval run; its run id."""
        created = self.request("POST", "/runs", key=key, json=body)
        assert created.status_code == 201, created.text
        run_id: str = created.json()["runId"]
        return run_id

    def follow(
        self,
        run_id: str,
        until: Callable[[list[Event]], bool] | None = None,
        key: str = "acme-key",
    ) -> list[Event]:
        """Long-poll the run's log until ``until(the events so far)`` holds, or by default
        until its terminal event; the events so far. Each poll returns at the run's next
        commit, or after 1 s while nothing is committed."""
        path = f"/runs/{project(run_id)}/events/poll"
        events: list[Event] = []
        for _ in range(200):
            after = events[-1]["sequence"] if events else -1
            page = self.request("GET", f"{path}?timeout=1&afterSequence={after}", key=key)
            assert page.status_code == 200, page.text
            events += page.json()["events"]
            if until is not None and until(events):
                return events
            if page.json()["isTerminal"]:
                assert until is None, f"run {run_id} ended first: {events[-1]['type']}"
                return events
        raise AssertionError(f"run {run_id} did not get there")

    def run_to_end(self, suite: str, agent: str, key: str = "acme-key") -> str:
        """Create an eval run and long-poll it to its terminal event; its run id."""
        run_id = self.start({"mode": "eval", "evalSuiteRef": suite, "agentId": agent}, key)
        self.follow(run_id, key=key)
        return run_id

    def release(self) -> None:
        """Let the gated agent's held trials go on (tests.server.gated)."""
        gated.release(self.runner.get_loop())

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.runner.run(self.strict.aclose())
            self.runner.run(self.lenient.aclose())
            self.runner.run(asyncio.wait_for(self._lifespan.shutdown(), ANSWER_S))
        finally:
            self.runner.close()
            self.store.close()


def app_host(request: pytest.FixtureRequest, tmp: Path) -> Iterator[AppHost]:
    """The body of the ``app`` fixture (conftest.py): a fresh database per module."""
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


def run_routes(projected: str) -> list[tuple[str, str]]:
    """Every route of one run, by its projected id."""
    path = f"/runs/{projected}"
    return [
        ("GET", path),
        ("GET", f"{path}/events"),
        ("GET", f"{path}/events/poll?timeout=0"),
        ("GET", f"{path}/eval-summary"),
        ("GET", f"{path}:diff?against={projected}"),
        ("GET", f"{path}/report"),
        ("POST", f"{path}/cancel"),
    ]
