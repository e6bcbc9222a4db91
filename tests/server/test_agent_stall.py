"""An agent that blocks its event loop stalls no other tenant's run beyond the stated bound:
the run worker's watchdog sees the loop held for ``agent_stall_s``, the worker is replaced,
the culprit's run ends ``agent_stalled`` (or ``cancelled``, when a cancel was asked) and the
other runs resume from their commits. Real `serve` processes with one run worker."""

from __future__ import annotations

import asyncio
import json
import random
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openwop_client.wire_id import project_id

from openwop_eval.server.manager import CANCEL_WAIT_S
from openwop_eval.server.watchdog import Watchdog, culprit
from tests.hosts import PORTS, Host, api, wait_for, write_config
from tests.server.inprocess import ANSWER_S

STALLING = """
import time

async def agent(input, tools):
    time.sleep(600)   # blocks the worker's event loop: never yields
    return "ok"
"""

QUICK = """
import asyncio

async def agent(input, tools):
    await asyncio.sleep(0.3)
    return "ok"
"""

SUITE = {
    "suiteId": "test.acme.evals.quick",
    "version": "1.0.0",
    "modes": ["golden"],
    "thresholds": {"passScore": 1},
    "trials": {"count": 3, "passRule": "mean"},
    "tasks": [
        {
            "taskId": "quick",
            "input": {},
            "expected": {"kind": "golden", "match": {"strategy": "exact", "value": "ok"}},
        }
    ],
}
STALL_S = 1.0
BOUND_S = 45.0
"""The stall bound plus a worker's restart, generous for a loaded 2-core machine (before
the watchdog, the other run waited the 600 s the agent slept)."""


def own_port() -> int:
    """A free port drawn at random from tests.hosts' range, not its next one: other test
    sessions on the machine take that range in turn from its start, and a host that lost
    the port to one of theirs would be answered for by theirs."""
    for _ in range(100):
        port = random.randrange(PORTS.start + 4000, PORTS.stop)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


def start_host(
    tmp_path: Path, database: str, extra: str, files: dict[str, str] | None = None
) -> Host:
    """A `serve` process with one run worker and the standard configuration plus ``extra``
    (TOML tables, before ``[deployment]``), and ``files`` beside it."""
    config = write_config(tmp_path, run_workers=1)
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    config.write_text(config.read_text().replace("[deployment]", f"{extra}\n[deployment]"))
    gate_dir = tmp_path / "gate"
    gate_dir.mkdir()
    return Host(config, database, gate_dir, own_port()).start()


@pytest.fixture
def host(tmp_path: Path, database: str) -> Iterator[Host]:
    files = {"stalling.py": STALLING, "quick.py": QUICK, "suites/quick.json": json.dumps(SUITE)}
    host = start_host(
        tmp_path,
        database,
        f"""[agents."test.stalling"]
agent = "stalling.py:agent"
concurrency = 1

[agents."test.quick"]
agent = "quick.py:agent"
concurrency = 1

[limits]
agent_stall_s = {STALL_S}
""",
        files,
    )
    yield host
    host.stop()


def start(host: Host, agent: str, key: str) -> str:
    body = {"mode": "eval", "evalSuiteRef": "test.acme.evals.quick@1.0.0", "agentId": agent}
    with api(host, key) as c:
        answer = c.post("/runs", json=body)
    assert answer.status_code == 201, answer.text
    run_id: str = answer.json()["runId"]
    return run_id


def snapshot(host: Host, run_id: str, key: str) -> dict[str, Any]:
    with api(host, key) as c:
        body: dict[str, Any] = c.get(f"/runs/{project_id(run_id)}").json()
    return body


def test_a_blocking_agent_stalls_another_tenants_run_only_within_the_bound(host: Host) -> None:
    stalling = start(host, "test.stalling", "acme-key")
    quick = start(host, "test.quick", "globex-key")  # the same worker, the same loop
    started = time.monotonic()
    wait_for(
        lambda: snapshot(host, quick, "globex-key")["status"] == "completed",
        "the other tenant's run to complete",
        BOUND_S,
        host.log,
    )
    assert time.monotonic() - started < BOUND_S
    ended = wait_for(
        lambda: (s := snapshot(host, stalling, "acme-key"))["status"] == "failed" and s,
        "the stalling run to fail",
        BOUND_S,
        host.log,
    )
    assert "stalled" in ended["error"]["message"]
    with api(host, "acme-key") as c:
        log = c.get(f"/runs/{project_id(stalling)}/events/poll", params={"timeout": 0}).json()
    assert log["events"][-1]["payload"]["error"]["code"] == "agent_stalled"
    with api(host, "globex-key") as c:
        summary = c.get(f"/runs/{project_id(quick)}/eval-summary").json()
    assert summary["passed"] is True
    assert summary["tasks"][0]["trials"]["trialStats"]["passed"] == 3  # none counted twice


def test_cancelling_a_stalled_run_answers_within_the_bound_and_ends_it_cancelled(
    host: Host,
) -> None:
    stalling = start(host, "test.stalling", "acme-key")
    wait_for(lambda: (host.gate_dir.parent / "host.log").exists(), "the host's log")
    with api(host, "acme-key") as c:
        asked = time.monotonic()
        answer = c.post(f"/runs/{project_id(stalling)}/cancel", json={})
        took = time.monotonic() - asked
    assert answer.status_code == 200
    assert answer.json()["status"] in ("cancelled", "cancelling")
    assert took < CANCEL_WAIT_S + 5
    wait_for(
        lambda: snapshot(host, stalling, "acme-key")["status"] == "cancelled",
        "the stalled run to end cancelled",
        BOUND_S,
        host.log,
    )


def test_the_watchdog_names_the_run_whose_agent_holds_the_loop() -> None:
    execution, other = object(), object()
    named: list[str] = []
    seen = threading.Event()

    def on_stall(run_id: str, seconds: float) -> None:
        named.append(run_id)
        seen.set()

    def agent() -> None:
        seen.wait(ANSWER_S)  # blocks the loop until the watchdog has looked

    def trial(execution: object) -> None:  # a run's trial frame holds its execution
        agent()

    async def loop_held() -> None:
        runs = {id(execution): "acme/stalling", id(other): "globex/innocent"}
        loop = asyncio.get_running_loop()
        Watchdog(loop, 0.5, lambda: runs, on_stall, {trial.__code__}).start()
        await asyncio.sleep(0)
        trial(execution)

    asyncio.run(loop_held())
    assert named == ["acme/stalling"]


def test_a_loop_held_outside_an_agent_blames_no_run() -> None:
    execution = object()

    def agent_call() -> None:  # the trial's call of its agent: not on this stack
        """Never called."""

    def store_query(execution: object) -> str | None:  # holds the loop, not in an agent
        return culprit(sys._getframe(), {id(execution): "acme/run"}, {agent_call.__code__})

    assert store_query(execution) is None
