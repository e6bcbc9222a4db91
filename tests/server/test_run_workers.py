"""Runs played in worker processes (``run_workers``): the host creates, streams, cancels,
stops and recovers them as it does its own, and a worker that dies — or a host that dies
with its workers — changes no verdict and counts no trial twice.

Real `serve` processes (tests.hosts): the gated agent marks the process each trial plays
in (``played-by-PID`` in the gate directory), so a test knows which process to kill.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from openwop_client.wire_id import project_id

from openwop_eval.server import create_app
from openwop_eval.server.config import ConfigError, HostConfig
from openwop_eval.store import Store
from tests.hosts import Host, api, wait_for
from tests.server.test_lifecycle import scored_on, start_gated

Events = list[dict[str, Any]]


def held(host: Host) -> tuple[str, int]:
    """A gated run caught mid-way (trials 0 and 1 done, 2 held), and the process playing it."""
    run_id = start_gated(host)
    wait_for(lambda: len(scored_on(host, run_id)) == 2, "two finished trials")
    (worker,) = players(host)
    return run_id, worker


def players(host: Host) -> set[int]:
    """The processes the gated agent has played trials in."""
    return {int(p.name.removeprefix("played-by-")) for p in host.gate_dir.glob("played-by-*")}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def log_of(host: Host, run_id: str) -> tuple[Events, dict[str, Any]]:
    path = f"/runs/{project_id(run_id)}"
    with api(host) as c:
        wait_for(lambda: c.get(path).json()["status"] != "running", "the run to end")
        events = c.get(f"{path}/events/poll", params={"timeout": 0}).json()["events"]
        summary = c.get(f"{path}/eval-summary")
    return events, summary.json() if summary.status_code == 200 else {}


def trials_of(events: Events) -> list[int]:
    scored = [e for e in events if e["type"] == "eval.scored"]
    return sorted(e["payload"]["x-openwop-eval"]["trial"] for e in scored)


def completed_once(events: Events, summary: dict[str, Any]) -> None:
    assert trials_of(events) == [0, 1, 2, 3]  # each trial counted once
    assert [e["sequence"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events].count("run.completed") == 1
    assert summary["tasks"][0]["trials"]["trialStats"]["passed"] == 4
    assert summary["passed"] is True


def stream(host: Host, run_id: str, into: list[int]) -> None:
    with (
        api(host) as c,
        c.stream("GET", f"/runs/{project_id(run_id)}/events") as response,
    ):
        for line in response.iter_lines():
            if line.startswith("data: "):
                into.append(json.loads(line.removeprefix("data: "))["sequence"])


def test_a_run_plays_in_a_worker_and_streams_every_event_once_to_each_subscriber(
    host: Host,
) -> None:
    run_id, worker = held(host)
    assert host.process is not None
    assert worker != host.process.pid  # played in another process
    seen: list[list[int]] = [[] for _ in range(3)]
    readers = [threading.Thread(target=stream, args=(host, run_id, s)) for s in seen]
    for reader in readers:
        reader.start()
    wait_for(lambda: all(len(s) >= 4 for s in seen), "the streams to catch up")
    host.release()  # the rest is committed while they follow it live
    for reader in readers:
        reader.join(30)
    events, summary = log_of(host, run_id)
    completed_once(events, summary)
    assert all(s == list(range(len(events))) for s in seen)
    assert players(host) == {worker}


def test_a_run_in_a_worker_is_cancelled_keeping_its_finished_trials(host: Host) -> None:
    run_id, _worker = held(host)
    with api(host) as c:
        assert c.post(f"/runs/{project_id(run_id)}/cancel").status_code == 200
    events, summary = log_of(host, run_id)
    assert events[-1]["type"] == "run.cancelled"
    assert trials_of(events) == [0, 1]
    assert summary == {}  # a cancelled run has no summary


def test_a_killed_worker_is_replaced_and_its_run_resumed_without_counting_a_trial_twice(
    host: Host,
) -> None:
    run_id, worker = held(host)
    os.kill(worker, signal.SIGKILL)  # trial 2 was playing there
    host.release()
    events, summary = log_of(host, run_id)
    completed_once(events, summary)
    assert len(players(host) - {worker}) == 1  # a new worker played the rest


def test_a_stopped_host_stops_its_workers_and_the_next_start_resumes_their_runs(
    make_host: Callable[[], Host],
) -> None:
    host = make_host()
    run_id, worker = held(host)
    host.stop()  # SIGTERM: a graceful shutdown
    assert not alive(worker)
    store = Store(host.database)
    try:
        assert store.get_run(run_id, False).status == "running"  # left open, not ended
    finally:
        store.close()
    host.release()
    events, summary = log_of(make_host(), run_id)
    completed_once(events, summary)


def test_a_killed_host_takes_its_workers_with_it_and_the_next_start_resumes_their_runs(
    make_host: Callable[[], Host],
) -> None:
    host = make_host()
    run_id, worker = held(host)
    host.kill()  # SIGKILL: no shutdown runs, the worker is not told
    wait_for(lambda: not alive(worker), "the worker to die with its host")
    host.release()
    events, summary = log_of(make_host(), run_id)
    completed_once(events, summary)


def test_run_workers_need_a_store_other_processes_can_open() -> None:
    config = HostConfig(run_workers=1)
    with pytest.raises(ConfigError, match="not memory"):
        create_app(config, Store("sqlite://"))


def test_by_default_runs_play_in_the_host_when_a_worker_cannot_share_its_store() -> None:
    assert HostConfig().workers == 1
    assert HostConfig(executor="ray").workers == 0  # trials on Ray: runs stay in the host
    app = create_app(HostConfig(), Store("sqlite://"))
    assert app.state.host.manager.workers is None


def test_run_workers_play_trials_in_process_not_on_ray() -> None:
    with pytest.raises(ValueError, match="run_workers"):
        HostConfig(run_workers=1, executor="ray")
