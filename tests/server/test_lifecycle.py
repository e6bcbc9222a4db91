"""Runs over time: the summary while running, SSE resume, cancel, and recovery — a host
stopped mid-run and started again on the same database, a run the store holds unfinished,
and a host killed with SIGKILL mid-run and restarted.

Everything runs in this process except the SIGKILL tests: only a real `serve` process can be
killed without its shutdown running.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from openwop_eval.agents import resolve_agent
from openwop_eval.files.suites import load_suite
from openwop_eval.runner import RunOptions, RunService, RunSpec
from openwop_eval.server import stream
from openwop_eval.server.manager import HOST_AGENT
from openwop_eval.store import EventRow, Store, schema
from tests.hosts import Host, api, wait_for
from tests.server.inprocess import (
    FIXTURES,
    GATE_SUITE,
    GATED,
    GATED_RUN,
    MOCK,
    AppHost,
    Event,
    gated_agent,
)


@pytest.fixture
def gated_app(make_app: Callable[..., AppHost], tmp_path: Path) -> AppHost:
    """The host app in this process with the gated agent, on a fresh database."""
    return make_app(**gated_agent(tmp_path))


def scored(events: list[Event]) -> list[dict[str, Any]]:
    return [e["payload"] for e in events if e["type"] == "eval.scored"]


def two_scored(events: list[Event]) -> bool:
    return len(scored(events)) == 2


def frames(response: httpx.Response) -> Iterator[dict[str, Any]]:
    for line in response.iter_lines():
        if line.startswith("data: "):
            yield json.loads(line.removeprefix("data: "))


def test_the_summary_is_409_while_running_then_200(gated_app: AppHost) -> None:
    run_id = gated_app.start(GATED_RUN)
    path = f"/runs/{project_id(run_id)}/eval-summary"
    with gated_app.client() as c:
        gated_app.follow(run_id, two_scored)
        running = c.get(path)
        assert running.status_code == 409
        assert running.json()["error"] == "run_state_conflict"
        assert running.json()["details"]["runStatus"] == "running"
        gated_app.release()
        gated_app.follow(run_id)
        assert c.get(path).status_code == 200
        assert c.get(path).json()["passed"] is True


def test_sse_resumes_after_a_dropped_connection(gated_app: AppHost) -> None:
    run_id = gated_app.start(GATED_RUN)
    url = f"/runs/{project_id(run_id)}/events"
    seen: list[int] = []
    with gated_app.client() as c:
        with c.stream("GET", url, params={"resumable": "true"}) as first:
            assert first.headers["content-type"].startswith("text/event-stream")
            for event in frames(first):
                seen.append(event["sequence"])
                if (
                    event["type"] == "eval.scored"
                    and event["payload"]["x-openwop-eval"]["trial"] == 1
                ):
                    break  # drop the connection mid-run
        gated_app.release()  # events keep coming while nobody listens
        with c.stream("GET", url, headers={"Last-Event-ID": str(seen[-1])}) as second:
            for event in frames(second):
                seen.append(event["sequence"])
        log = c.get(f"{url}/poll", params={"timeout": 0}).json()
    assert seen == list(range(log["lastSequence"] + 1))  # nothing lost, nothing repeated
    assert log["events"][-1]["type"] == "run.completed"


def test_cancel_ends_the_run_and_its_stream(gated_app: AppHost) -> None:
    run_id = gated_app.start(GATED_RUN)
    path = f"/runs/{project_id(run_id)}"
    with gated_app.client() as c:
        gated_app.follow(run_id, two_scored)
        cancelled = c.post(f"{path}/cancel", json={"reason": "test"})
        assert cancelled.json() == {"runId": run_id, "status": "cancelled"}
        with c.stream("GET", f"{path}/events") as events:
            types = [e["type"] for e in frames(events)]
        assert types[-1] == "run.cancelled"
        assert types.count("eval.scored") == 2
        again = c.post(f"{path}/cancel", json={})
        assert again.status_code == 409
        assert again.json()["error"] == "run_terminal"
        assert c.get(f"{path}/eval-summary").status_code == 409
        assert c.get(path).json()["status"] == "cancelled"


def test_an_idle_stream_is_kept_alive_and_a_caught_up_one_ends_at_once(
    gated_app: AppHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a quiet stream sends a comment every KEEPALIVE_S; here at its first look at the store
    monkeypatch.setattr(stream, "KEEPALIVE_S", 0.0)
    monkeypatch.setattr(stream, "RECHECK_S", 0.01)
    run_id = gated_app.start(GATED_RUN)
    url = f"/runs/{project_id(run_id)}/events"
    lines: list[str] = []
    with gated_app.client() as c:
        gated_app.follow(run_id, two_scored)  # trial 2 is held: nothing more is coming
        with c.stream("GET", url) as idle:
            assert idle.headers["cache-control"] == "no-cache"
            for line in idle.iter_lines():
                lines.append(line)
                if line == ": keep-alive":
                    break
        assert lines[0] == "retry: 1000"
        assert sum(line.startswith("data: ") for line in lines) >= 4  # the log so far
        gated_app.release()
        end = gated_app.follow(run_id)[-1]
        assert end["type"] == "run.completed"
        caught_up = c.get(url, headers={"Last-Event-ID": str(end["sequence"])})
        assert caught_up.status_code == 200
        assert caught_up.text == "retry: 1000\n\n"  # the terminal event was already sent


def test_an_unknown_stream_mode_is_refused_before_the_stream(gated_app: AppHost) -> None:
    run_id = gated_app.start(GATED_RUN)
    with gated_app.client() as c:
        refused = c.get(f"/runs/{project_id(run_id)}/events", params={"streamMode": "debug"})
    assert refused.status_code == 400
    assert refused.json()["error"] == "unsupported_stream_mode"
    assert refused.json()["details"] == {"supported": ["updates"]}


def test_a_long_poll_waits_for_the_next_commit(gated_app: AppHost) -> None:
    run_id = gated_app.start(GATED_RUN)
    so_far = gated_app.follow(run_id, two_scored)
    path = f"/runs/{project_id(run_id)}/events/poll"
    with gated_app.client() as c:
        after = so_far[-1]["sequence"]
        quiet = c.get(path, params={"afterSequence": after, "timeout": "0.1"}).json()
        assert quiet["events"] == []  # nothing was committed within the wait
        assert quiet["isTerminal"] is False
        assert quiet["status"] == "running"
        assert quiet["lastSequence"] == after
        gated_app.release()
        woken = c.get(path, params={"afterSequence": after, "timeout": 60}).json()
        assert woken["events"]
        assert woken["events"][0]["sequence"] == after + 1
        assert woken["lastSequence"] == woken["events"][-1]["sequence"]


def test_fixture_runs_replay_a_recorded_run(fresh_app: AppHost) -> None:
    body = {
        "mode": "eval",
        "evalSuiteRef": "acme.support.evals.refunds@1.0.0",
        "agentId": "acme.support-resolver",
    }
    with fresh_app.client() as c:
        first = c.post("/runs", json=body).json()["runId"]
        fresh_app.follow(first)
        assert c.get(f"/runs/{project_id(first)}").json()["status"] == "completed"
        fixture_runs = {"refund-delivered-order": first}
        second = c.post("/runs", json={**body, "fixtureRuns": fixture_runs}).json()["runId"]
        path = f"/runs/{project_id(second)}"
        fresh_app.follow(second)
        assert c.get(path).json()["status"] == "completed"
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
        assert c.get(f"{path}/eval-summary").json()["passed"] is True
    started = next(e for e in events if e["type"] == "eval.started")
    assert started["payload"]["fixtureRuns"] == fixture_runs


# --- recovery in process: a host stopped, a run the store holds unfinished ---------------


def stored(database: str, run_id: str) -> tuple[str, list[Event]]:
    """The run's status and log, read from the store itself."""
    with closing(Store(database)) as store:
        run = store.get_run(run_id, documents=False)
        assert run is not None
        return run.status, store.events(run_id)


def test_a_stopped_host_leaves_its_runs_open_and_the_next_start_resumes_them(
    make_app: Callable[..., AppHost], database: str, tmp_path: Path
) -> None:
    first = make_app(**gated_agent(tmp_path))
    run_id = first.start(GATED_RUN)
    first.follow(run_id, two_scored)
    first.close()  # a graceful shutdown: the run is stopped, not ended
    status, log = stored(database, run_id)
    assert status == "running"
    assert not [e for e in log if e["type"].startswith("run.") and e["type"] != "run.started"]
    assert len(scored(log)) == 2  # the held trial is not counted

    restarted = make_app(**gated_agent(tmp_path))  # same database: the run is resumed
    restarted.release()
    events = restarted.follow(run_id)
    with restarted.client() as c:
        summary = c.get(f"/runs/{project_id(run_id)}/eval-summary").json()
    trials = [p["x-openwop-eval"]["trial"] for p in scored(events)]
    assert sorted(trials) == [0, 1, 2, 3]
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert summary["tasks"][0]["trials"]["trialStats"]["passed"] == 4
    assert summary["passed"] is True
    assert [e["type"] for e in events].count("run.completed") == 1


def test_a_run_whose_agent_is_gone_is_ended_on_start(
    make_app: Callable[..., AppHost], tmp_path: Path
) -> None:
    first = make_app(**gated_agent(tmp_path))
    run_id = first.start(GATED_RUN)
    first.follow(run_id, two_scored)
    first.close()

    restarted = make_app(**gated_agent(tmp_path), without=(GATED,))
    path = f"/runs/{project_id(run_id)}"
    with restarted.client() as c:
        assert c.get(path).json()["status"] == "failed"  # ended by the start, not later
        snapshot = c.get(path).json()
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
        assert c.get(f"{path}/eval-summary").status_code == 409
    assert events[-1]["type"] == "run.failed"
    assert "no longer configured" in events[-1]["payload"]["error"]["message"]
    assert snapshot["error"]["code"] == "run_failed"
    assert "no longer configured" in snapshot["error"]["message"]
    assert "completedAt" in snapshot


def test_a_run_whose_suite_no_longer_loads_is_ended_on_start(
    make_app: Callable[..., AppHost], database: str, tmp_path: Path
) -> None:
    first = make_app(**gated_agent(tmp_path))
    run_id = first.start(GATED_RUN)
    first.follow(run_id, two_scored)
    first.close()
    with closing(Store(database)) as store, store.transaction() as tx:
        broken = schema.runs.update().where(schema.runs.c.run_id == run_id)
        tx.execute(broken.values(suite_doc={"suiteId": "no longer a suite"}))

    restarted = make_app(**gated_agent(tmp_path))
    with restarted.client() as c:
        path = f"/runs/{project_id(run_id)}"
        assert c.get(path).json()["status"] == "failed"
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
    assert events[-1]["type"] == "run.failed"
    assert events[-1]["payload"]["error"]["code"] == "suite_unloadable"
    assert len(scored(events)) == 2  # not continued on anything else


def test_a_run_whose_log_ends_it_is_settled_on_start_not_run_again(
    make_app: Callable[..., AppHost], database: str
) -> None:
    first = make_app()
    run_id = first.run_to_end(GATE_SUITE, MOCK)
    path = f"/runs/{project_id(run_id)}"
    with first.client() as c:
        summary = c.get(f"{path}/eval-summary").json()
    first.close()
    _, log = stored(database, run_id)
    # killed between committing run.completed and recording the status and summary
    with closing(Store(database)) as store, store.transaction() as tx:
        reopened = schema.runs.update().where(schema.runs.c.run_id == run_id)
        tx.execute(reopened.values(status="running", summary=None))

    restarted = make_app()
    with restarted.client() as c:
        assert c.get(path).json()["status"] == "completed"
        assert c.get(f"{path}/eval-summary").json() == summary
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
    assert events == log  # nothing ran again


def unfinished(database: str, agent_spec: str) -> str:
    """A run the store holds as running with no trial done (its host died right after it
    created it); its id."""
    request = RunSpec(
        load_suite(FIXTURES / "conformance-eval-trajectory-gate.suite.json"),
        resolve_agent(f"scripted:{FIXTURES / 'conformance-mock-agent.json'}", agent_id=MOCK),
        agent_spec,
        RunOptions(tenant="acme"),
        metadata={"evalSuiteRef": GATE_SUITE},
    )
    with closing(Store(database)) as store:
        return RunService(store).start(request).run_id


def test_an_unfinished_run_in_the_store_is_run_when_the_host_starts(
    make_app: Callable[..., AppHost], database: str
) -> None:
    run_id = unfinished(database, f"{HOST_AGENT}{MOCK}")
    assert stored(database, run_id)[0] == "running"
    app = make_app()
    events = app.follow(run_id)
    path = f"/runs/{project_id(run_id)}"
    with app.client() as c:
        run = c.get(path).json()
        summary = c.get(f"{path}/eval-summary").json()
    assert events[-1]["type"] == "run.completed"
    assert run["status"] == "completed"
    assert run["owner"]["tenant"] == "acme"  # no caller was recorded: the tenant's owner
    assert run["metadata"] == {"evalSuiteRef": GATE_SUITE, "agentId": MOCK}
    assert summary["aggregateScore"] == 1  # every answer right ...
    assert summary["passed"] is False  # ... one path wrong: the same verdict as ever


def test_a_command_line_run_in_the_store_is_left_to_run_resume(
    make_app: Callable[..., AppHost], database: str
) -> None:
    run_id = unfinished(database, f"scripted:{FIXTURES / 'conformance-mock-agent.json'}")
    _, before = stored(database, run_id)
    app = make_app()
    with app.client() as c:
        path = f"/runs/{project_id(run_id)}"
        assert c.get(path).json()["status"] == "running"
        poll = c.get(f"{path}/events/poll", params={"timeout": 0}).json()
    assert poll["events"] == before  # no trial was run by the host
    assert poll["isTerminal"] is False
    app.close()
    assert stored(database, run_id) == ("running", before)


# --- a real process, killed ---------------------------------------------------------------


def start_gated(host: Host) -> str:
    with api(host) as c:
        response = c.post("/runs", json=GATED_RUN)
    assert response.status_code == 201, response.text
    run_id: str = response.json()["runId"]
    return run_id


def scored_on(host: Host, run_id: str) -> list[dict[str, Any]]:
    with api(host) as c:
        body = c.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0}).json()
    return scored(body["events"])


def test_a_killed_host_resumes_its_runs_without_counting_a_trial_twice(
    make_host: Callable[[], Host],
) -> None:
    host = make_host()
    run_id = start_gated(host)
    wait_for(lambda: len(scored_on(host, run_id)) == 2, "two finished trials")
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
    wait_for(lambda: len(scored_on(host, run_id)) == 2, "two finished trials")
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


def test_every_subscriber_gets_every_event_once_from_one_read_of_the_store(
    fresh_app: AppHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = fresh_app.run_to_end(GATE_SUITE, MOCK)
    url = f"/runs/{project_id(run_id)}/events"
    reads: list[int] = []
    real = fresh_app.store.event_rows

    def counted(*args: Any, **kwargs: Any) -> list[EventRow]:
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(fresh_app.store, "event_rows", counted)
    streams = []
    with fresh_app.client() as c:
        for _ in range(5):
            with c.stream("GET", url) as response:
                streams.append([e["sequence"] for e in frames(response)])
    expected = list(range(len(real(run_id))))
    assert all(seen == expected for seen in streams)  # each event once, in order
    assert len(reads) == 1  # one page, read once, for all five subscribers


def test_a_stream_ends_once_the_run_has_stored_its_end(fresh_app: AppHost) -> None:
    """A client that has seen the terminal event reads the run's summary at once: the
    stream sends that event only after the run has stored its status and summary."""
    with fresh_app.client() as c:
        for _ in range(5):
            run_id = fresh_app.start({"mode": "eval", "evalSuiteRef": GATE_SUITE, "agentId": MOCK})
            path = f"/runs/{project_id(run_id)}"
            with c.stream("GET", f"{path}/events") as response:
                assert [e["type"] for e in frames(response)][-1] == "run.completed"
            assert c.get(f"{path}/eval-summary").status_code == 200
            assert c.get(path).json()["status"] == "completed"
