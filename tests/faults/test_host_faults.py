"""Kill-and-resume as a property of the host: a host killed at a commit of a run and
started again resumes the run through its recovery, on the fixtures the run was created with
(the suite's, or ``fixtureRuns``), and ends with the summary of an uninterrupted run — so
the deploy gate decides exactly as it would have. The run commits in the host's run worker,
where the fault strikes: it kills the host (the worker dies with it), or the worker alone,
which the host replaces. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from tests.faults.scenario import SUITE_ID, check_log, write_files
from tests.hosts import Host, wait_for

PLANT = Path(__file__).parent / "plant"
SUITE = f"{SUITE_ID}@1.0.0"
POINTS = [("1", "mid"), ("2", "after"), ("eval.completed", "before")]


def _config(tmp: Path) -> Path:
    files = write_files(tmp)
    (tmp / "suites").mkdir()
    files["suite"].rename(tmp / "suites" / "suite.json")
    config = tmp / "host.toml"
    config.write_text(
        f"""
suites = ["suites/"]

[agents."test.faults.x"]
agent = "scripted:{files["x"]}"

[agents."test.faults.y"]
agent = "scripted:{files["y"]}"
concurrency = 2
version = "2.0.0"

[deployment]
required_eval = true
gated_states = ["staged", "active"]
required_suites = {{ "test.faults.y" = ["{SUITE_ID}"] }}

[[api_keys]]
name = "acme-ci"
tenant = "acme"
key = "acme-key"
"""
    )
    return config


def _client(host: Host) -> httpx.Client:
    return httpx.Client(base_url=host.url, headers={"Authorization": "Bearer acme-key"}, timeout=30)


def _create(host: Host, agent: str, **body: Any) -> str | None:
    """The new run's id, or None when the host died before it could answer."""
    try:
        with _client(host) as c:
            response = c.post(
                "/runs", json={"mode": "eval", "evalSuiteRef": SUITE, "agentId": agent, **body}
            )
    except httpx.TransportError:
        return None
    assert response.status_code == 201, response.text
    return str(response.json()["runId"])


def _summary(host: Host, run_id: str) -> dict[str, Any]:
    path = f"/runs/{project_id(run_id)}"
    with _client(host) as c:
        wait_for(lambda: c.get(path).json()["status"] == "completed", f"run {run_id} to end")
        return dict(c.get(f"{path}/eval-summary").json())


def _started(tmp: Path, database: str) -> tuple[Host, Path]:
    gate = tmp / "gate"
    gate.mkdir()
    return Host(_config(tmp), database, gate).start(), gate


def _recorded(host: Host) -> str:
    """A completed run of agent X: the recording ``fixtureRuns`` points at."""
    recorded = _create(host, "test.faults.x")
    assert recorded is not None
    _summary(host, recorded)
    return recorded


def _promote(host: Host, run_id: str) -> httpx.Response:
    with _client(host) as c:
        return c.post(
            "/agents/test.faults.y/deployments",
            json={
                "version": "2.0.0",
                "transition": "promote",
                "toState": "active",
                "channel": "stable",
                "evalRunId": run_id,
            },
        )


@pytest.mark.parametrize("source", ["suite", "fixtureRuns"])
@pytest.mark.parametrize(("when", "mode"), POINTS)
def test_a_killed_host_resumes_the_run_to_the_uninterrupted_summary(
    tmp_path: Path,
    database: str,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    when: str,
    mode: str,
) -> None:
    arm = tmp_path / "armed"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLANT), *sys.path]))
    monkeypatch.setenv("OPENWOP_EVAL_TEST_FAULT", f"{when}:{mode}")
    monkeypatch.setenv("OPENWOP_EVAL_TEST_FAULT_ARM", str(arm))
    host, gate = _started(tmp_path, database)
    try:
        recorded = _recorded(host)
        body = {"fixtureRuns": dict.fromkeys("abc", recorded)} if source == "fixtureRuns" else {}
        clean = _create(host, "test.faults.y", **body)
        assert clean is not None
        expected = _summary(host, clean)
        assert expected["passed"] is (source == "suite")

        arm.touch()  # from here on, the planted fault counts commits
        _create(host, "test.faults.y", **body)
        assert host.process is not None
        assert host.process.wait(30) == -9  # the planted fault killed it
        monkeypatch.delenv("OPENWOP_EVAL_TEST_FAULT")
        monkeypatch.delenv("OPENWOP_EVAL_TEST_FAULT_ARM")

        host = Host(host.config, database, gate, host.port).start()
        with _client(host) as c:
            runs = c.get("/runs", params={"limit": 10}).json()["runs"]
        killed = runs[0]["runId"]
        assert killed not in (clean, recorded)
        assert _summary(host, killed) == expected
        refused = _promote(host, killed)
        if source == "fixtureRuns":  # the failing eval stays failing: nothing is promoted
            assert refused.status_code == 422, refused.text
            assert refused.json()["error"] == "eval_gate_unmet"
        else:
            assert refused.status_code in (200, 201), refused.text
        with _client(host) as c:
            poll = c.get(f"/runs/{project_id(killed)}/events/poll", params={"timeout": 0})
            check_log(poll.json()["events"])
    finally:
        host.stop()


@pytest.mark.parametrize(("when", "mode"), POINTS)
def test_a_killed_run_worker_is_replaced_and_the_run_ends_with_the_uninterrupted_summary(
    tmp_path: Path, database: str, monkeypatch: pytest.MonkeyPatch, when: str, mode: str
) -> None:
    arm = tmp_path / "armed"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLANT), *sys.path]))
    monkeypatch.setenv("OPENWOP_EVAL_TEST_FAULT", f"{when}:{mode}")
    monkeypatch.setenv("OPENWOP_EVAL_TEST_FAULT_ARM", str(arm))
    monkeypatch.setenv("OPENWOP_EVAL_TEST_FAULT_VICTIM", "worker")
    host, _gate = _started(tmp_path, database)
    try:
        clean = _create(host, "test.faults.y")
        assert clean is not None
        expected = _summary(host, clean)

        arm.touch()  # the next run's worker dies at the planted commit (once: it disarms)
        killed = _create(host, "test.faults.y")
        assert killed is not None
        assert _summary(host, killed) == expected  # resumed in a new worker, same verdict
        assert not arm.exists()  # the fault struck
        assert host.process is not None
        assert host.process.poll() is None  # the host itself never stopped
        with _client(host) as c:
            poll = c.get(f"/runs/{project_id(killed)}/events/poll", params={"timeout": 0})
            check_log(poll.json()["events"])
    finally:
        host.stop()


def test_the_fixture_source_is_stored_with_the_run(tmp_path: Path, database: str) -> None:
    from openwop_eval.store import Store

    host, _gate = _started(tmp_path, database)
    try:
        recorded = _recorded(host)
        run_id = _create(host, "test.faults.y", fixtureRuns={"a": recorded})
        assert run_id is not None
        _summary(host, run_id)
    finally:
        host.stop()
    store = Store(database)
    run = store.get_run(run_id)
    store.close()
    assert run is not None
    source = run.fixture_source
    assert source is not None
    assert json.dumps(source)  # a plain JSON copy, not a pointer to the other run
    assert set(source["recording"]) == {"a"}
    assert [t["trial"] for t in source["recording"]["a"]] == [0, 1, 2]
