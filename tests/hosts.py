"""Real host processes on loopback, on SQLite and on PostgreSQL, driven over HTTP."""

from __future__ import annotations

import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "support-refunds"
PG_ADMIN = os.environ.get("OPENWOP_EVAL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")

GATED_AGENT = '''
import asyncio, os
from openwop_eval.agents import AgentReply

async def agent(input, tools):
    """Answers at once, except trials from `hold_from` on, which wait for a release file."""
    trial = tools.context.trial
    gate_dir = os.environ["OPENWOP_TEST_GATE_DIR"]
    open(os.path.join(gate_dir, f"played-by-{os.getpid()}"), "w").close()
    release = os.path.join(gate_dir, "release")
    if trial >= input.get("hold_from", 99):
        while not os.path.exists(release):
            await asyncio.sleep(0.01)   # waiting for the test, not timing anything
    await tools.call("crm:lookup", {"n": trial})
    return AgentReply(output="ok", latency_ms=5)
'''


PORTS = range(20_000, 32_000)
"""The hosts' ports: below Linux's ephemeral range (32768–60999), where no client socket
lands; each test process (pytest-xdist worker) has its own slice of it, so no process is
given a port that another one's host holds, or frees between a kill and a restart."""
_next_port: Iterator[int] | None = None


def _ports() -> Iterator[int]:
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    size = len(PORTS) // count
    return itertools.cycle(PORTS[index * size : (index + 1) * size])


def _free_port() -> int:
    """A port of this test process's slice, free now (the slice is taken in turn)."""
    global _next_port
    if _next_port is None:
        _next_port = _ports()
    for _ in PORTS:
        port = next(_next_port)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # held, by a host of ours or another program
                continue
            return port
    raise RuntimeError("no free port in this test process's slice")


@dataclass
class Host:
    """One `openwop-eval serve` process; restartable on the same database."""

    config: Path
    database: str
    gate_dir: Path
    port: int = field(default_factory=_free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        return self.gate_dir.parent / "host.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Host:
        env = {**os.environ, "OPENWOP_TEST_GATE_DIR": str(self.gate_dir)}
        with open(self.log, "ab") as log:  # a file, not a pipe: a full pipe would stall the host
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "openwop_eval",
                    "serve",
                    "--config",
                    str(self.config),
                    "--database",
                    self.database,
                    "--port",
                    str(self.port),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the host exited: {self.log.read_text()}")
            try:
                if httpx.get(f"{self.url}/.well-known/openwop", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.05)  # waiting for the process to listen
        raise RuntimeError("the host did not start")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def release(self) -> None:
        (self.gate_dir / "release").touch()


GATED_SUITE: dict[str, Any] = {
    "suiteId": "test.acme.evals.gated",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 1},
    "trials": {"count": 4, "passRule": "mean"},
    "tasks": [
        {
            "taskId": "hold",
            "input": {"hold_from": 2},
            "expected": {
                "kind": "golden",
                "match": {"strategy": "exact", "value": "ok"},
                "trajectory": {"steps": [{"tool": "crm:lookup"}]},
            },
            "fixtures": {"toolResponses": [{"tool": "crm:lookup", "response": {}}]},
        }
    ],
}
"""Four trials of one task; with the gated agent at concurrency 1, trials 0 and 1 finish and
trial 2 waits for the test's release (so a run can be caught mid-way)."""


def write_config(tmp: Path, run_workers: int = 1) -> Path:
    (tmp / "suites").mkdir()
    (tmp / "suites" / "gated.json").write_text(json.dumps(GATED_SUITE))
    (tmp / "gated_agent.py").write_text(GATED_AGENT)
    example = EXAMPLE.resolve()
    config = f'''
suites = ["suites/", "{example / "suite.yaml"}"]
conformance_fixtures = true
run_workers = {run_workers}

[agents."acme.support-resolver"]
agent = "{example / "agent.py"}:careful_support_agent"
judge = "scripted:{example / "judge.json"}"
version = "1.1.0"

[agents."acme.flawed-resolver"]
agent = "{example / "agent.py"}:support_agent"
judge = "scripted:{example / "judge.json"}"
version = "1.0.1"

[agents."core.conformance.mock-agent"]
agent = "scripted:{ROOT / "src/openwop_eval/conformance/fixtures/conformance-mock-agent.json"}"
version = "2.0.0"

[agents."test.gated"]
agent = "gated_agent.py:agent"
concurrency = 1

[deployment]
required_eval = true
gated_states = ["staged", "active"]

[deployment.required_suites]
"acme.support-resolver" = ["acme.support.evals.refunds"]
"acme.flawed-resolver" = ["acme.support.evals.refunds"]
"core.conformance.mock-agent" = ["core.conformance.evals.trajectory-gate"]

[[api_keys]]
name = "acme-ci"
tenant = "acme"
key = "acme-key"

[[api_keys]]
name = "globex-ci"
tenant = "globex"
key = "globex-key"

[[api_keys]]
name = "acme-reader"
tenant = "acme"
key = "acme-read-only"
scopes = ["runs:read", "agents:read"]
'''
    path = tmp / "host.toml"
    path.write_text(config)
    return path


def _postgres_database() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    name = f"openwop_eval_test_{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(PG_ADMIN, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN}: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'host.sqlite'}"
    else:
        yield from _postgres_database()


@pytest.fixture
def run_workers() -> int:
    """The hosts' ``run_workers``: the default, one (a module may override the fixture)."""
    return 1


@pytest.fixture
def make_host(tmp_path: Path, database: str, run_workers: int) -> Iterator[Callable[[], Host]]:
    hosts: list[Host] = []
    config = write_config(tmp_path, run_workers)
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()

    def make() -> Host:
        port = hosts[-1].port if hosts else _free_port()
        host = Host(config, database, gate_dir, port)
        hosts.append(host)
        return host.start()

    yield make
    for host in hosts:
        host.stop()


@pytest.fixture
def host(make_host: Callable[[], Host]) -> Host:
    return make_host()


def api(host: Host, key: str = "acme-key") -> httpx.Client:
    return httpx.Client(base_url=host.url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def wait_for(
    predicate: Callable[[], Any], what: str, seconds: float = 90, log: Path | None = None
) -> Any:
    """Poll until ``predicate`` holds. The deadline only stops a hung test: it is long, as
    the whole suite in parallel on a slow 2-core machine can take a host many seconds to
    start a worker process or take over a lease. ``log``: a host log to show on failure."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)  # polling the host for a state, not timing it
    tail = "" if log is None or not log.exists() else "\n" + log.read_text()[-4000:]
    raise AssertionError(f"timed out waiting for {what}{tail}")
