"""Runs over time: the summary while running, SSE resume, cancel, and a host killed with
SIGKILL mid-run and restarted on the same database."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
from openwop_client.wire_id import project_id

from tests.hosts import Host, api, wait_for

GATED = {"mode": "eval", "evalSuiteRef": "test.acme.evals.gated@1.0.0", "agentId": "test.gated"}


def start_gated(host: Host) -> str:
    with api(host) as c:
        response = c.post("/runs", json=GATED)
    assert response.status_code == 201, response.text
    run_id: str = response.json()["runId"]
    return run_id


def scored(host: Host, run_id: str) -> list[dict[str, Any]]:
    with api(host) as c:
        body = c.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0}).json()
    return [e["payload"] for e in body["events"] if e["type"] == "eval.scored"]


def frames(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line.startswith("data: "):
            yield json.loads(line.removeprefix("data: "))


def test_the_summary_is_409_while_running_then_200(host: Host) -> None:
    run_id = start_gated(host)
    path = f"/runs/{project_id(run_id)}/eval-summary"
    with api(host) as c:
        wait_for(lambda: len(scored(host, run_id)) == 2, "two finished trials")
        running = c.get(path)
        assert running.status_code == 409
        assert running.json()["error"] == "run_state_conflict"
        assert running.json()["details"]["runStatus"] == "running"
        host.release()
        wait_for(lambda: c.get(path).status_code == 200, "the summary")
        assert c.get(path).json()["passed"] is True


def test_sse_resumes_after_a_dropped_connection(host: Host) -> None:
    run_id = start_gated(host)
    url = f"/runs/{project_id(run_id)}/events"
    seen: list[int] = []
    with api(host) as c:
        with c.stream("GET", url, params={"resumable": "true"}) as first:
            assert first.headers["content-type"].startswith("text/event-stream")
            for event in frames(first):
                seen.append(event["sequence"])
                if (
                    event["type"] == "eval.scored"
                    and event["payload"]["x-openwop-eval"]["trial"] == 1
                ):
                    break  # drop the connection mid-run
        host.release()  # events keep coming while nobody listens
        with c.stream("GET", url, headers={"Last-Event-ID": str(seen[-1])}) as second:
            for event in frames(second):
                seen.append(event["sequence"])
        log = c.get(f"{url}/poll", params={"timeout": 0}).json()
    assert seen == list(range(log["lastSequence"] + 1))  # nothing lost, nothing repeated
    assert log["events"][-1]["type"] == "run.completed"


def test_cancel_ends_the_run_and_its_stream(host: Host) -> None:
    run_id = start_gated(host)
    path = f"/runs/{project_id(run_id)}"
    with api(host) as c:
        wait_for(lambda: len(scored(host, run_id)) == 2, "two finished trials")
        cancelled = c.post(f"{path}/cancel", json={"reason": "test"})
        assert cancelled.json() == {"runId": run_id, "status": "cancelled"}
        with c.stream("GET", f"{path}/events") as stream:
            types = [e["type"] for e in frames(stream)]
        assert types[-1] == "run.cancelled"
        assert types.count("eval.scored") == 2
        again = c.post(f"{path}/cancel", json={})
        assert again.status_code == 409
        assert again.json()["error"] == "run_terminal"
        assert c.get(f"{path}/eval-summary").status_code == 409


def test_a_killed_host_resumes_its_runs_without_counting_a_trial_twice(
    make_host: Callable[[], Host],
) -> None:
    host = make_host()
    run_id = start_gated(host)
    wait_for(lambda: len(scored(host, run_id)) == 2, "two finished trials")
    host.kill()  # SIGKILL: no shutdown hook runs

    host.release()
    restarted = make_host()  # same port, same database
    path = f"/runs/{project_id(run_id)}"
    with api(restarted) as c:
        wait_for(lambda: c.get(path).json()["status"] == "completed", "the resumed run")
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
        summary = c.get(f"{path}/eval-summary").json()
    trials = [e["payload"]["x-openwop-eval"]["trial"] for e in events if e["type"] == "eval.scored"]
    assert sorted(trials) == [0, 1, 2, 3]
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert summary["tasks"][0]["trials"]["trialStats"]["passed"] == 4
    assert summary["passed"] is True
    assert [e["type"] for e in events].count("run.completed") == 1


def test_a_run_whose_agent_is_gone_is_ended_not_left_running(
    make_host: Callable[[], Host],
) -> None:
    host = make_host()
    run_id = start_gated(host)
    wait_for(lambda: len(scored(host, run_id)) == 2, "two finished trials")
    host.kill()

    without_agent = host.config.with_name("host-without-agent.toml")
    text = host.config.read_text()
    without_agent.write_text(
        text.replace('[agents."test.gated"]\nagent = "gated_agent.py:agent"\nconcurrency = 1\n', "")
    )
    restarted = Host(without_agent, host.database, host.gate_dir, host.port).start()
    try:
        path = f"/runs/{project_id(run_id)}"
        with api(restarted) as c:
            wait_for(lambda: c.get(path).json()["status"] == "failed", "the run to be ended")
            events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
            assert events[-1]["type"] == "run.failed"
            assert "no longer configured" in events[-1]["payload"]["error"]["message"]
            assert c.get(f"{path}/eval-summary").status_code == 409
    finally:
        restarted.stop()


def test_fixture_runs_replay_a_recorded_run(host: Host) -> None:
    body = {
        "mode": "eval",
        "evalSuiteRef": "acme.support.evals.refunds@1.0.0",
        "agentId": "acme.support-resolver",
    }
    with api(host) as c:
        first = c.post("/runs", json=body).json()["runId"]
        wait_for(
            lambda: c.get(f"/runs/{project_id(first)}").json()["status"] == "completed",
            "the recorded run",
        )
        fixture_runs = {"refund-delivered-order": first}
        second = c.post("/runs", json={**body, "fixtureRuns": fixture_runs}).json()["runId"]
        path = f"/runs/{project_id(second)}"
        wait_for(lambda: c.get(path).json()["status"] == "completed", "the replayed run")
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
        assert c.get(f"{path}/eval-summary").json()["passed"] is True
    started = next(e for e in events if e["type"] == "eval.started")
    assert started["payload"]["fixtureRuns"] == fixture_runs
