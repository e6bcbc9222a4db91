"""A bounded number of runs play at once (``[limits] max_running_runs``); the runs created
past it wait, ``pending``, in a bounded line (``max_queued_runs``) and play in turn; past the
line ``POST /runs`` is ``503`` with ``Retry-After``. A waiting run can be cancelled, and
survives a restart."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openwop_client.wire_id import project_id

from openwop_eval.server.slots import LineFullError, RunSlots
from tests.hosts import Host, api, wait_for
from tests.server.inprocess import GATED_RUN, AppHost, Event, gated_agent
from tests.server.test_agent_stall import start_host
from tests.server.test_run_workers import log_of

LIMITS = {"max_running_runs": 2, "max_queued_runs": 3}


def played(events: list[Event]) -> bool:
    """The run has played a trial."""
    return any(e["type"] == "agent.invocation-started" for e in events)


def log(app: AppHost, run_id: str) -> list[Event]:
    path = f"/runs/{project_id(run_id)}/events/poll?timeout=0"
    events: list[Event] = app.request("GET", path).json()["events"]
    return events


def status(app: AppHost, run_id: str) -> str:
    body: dict[str, Any] = app.request("GET", f"/runs/{project_id(run_id)}").json()
    return str(body["status"])


def created(app: AppHost) -> tuple[str, str]:
    answer = app.request("POST", "/runs", json=GATED_RUN)
    assert answer.status_code == 201, answer.text
    return answer.json()["runId"], answer.json()["status"]


@pytest.fixture
def queue_app(make_app: Callable[..., AppHost], tmp_path: Path) -> Callable[[], AppHost]:
    return lambda: make_app(limits=LIMITS, **gated_agent(tmp_path))


def test_runs_past_the_cap_wait_pending_and_past_the_line_are_503(
    queue_app: Callable[[], AppHost],
) -> None:
    app = queue_app()
    first = [created(app) for _ in range(2)]
    assert [s for _, s in first] == ["running", "running"]
    for run_id, _ in first:  # both play, to their held trial
        app.follow(
            run_id, lambda events: len([e for e in events if e["type"] == "eval.scored"]) == 2
        )
    waiting = [created(app) for _ in range(3)]
    assert [s for _, s in waiting] == ["pending"] * 3
    refused = app.request("POST", "/runs", json=GATED_RUN)
    assert refused.status_code == 503
    assert refused.headers["Retry-After"] == "5"
    assert refused.json()["error"] == "service_unavailable"
    assert refused.json()["details"]["retryAfterSeconds"] == 5
    for run_id, _ in waiting:  # stored pending, and nothing of them played
        assert status(app, run_id) == "pending"
        assert not played(log(app, run_id))
    # a waiting run is cancelled at once, and frees its place in the line
    cancelled_id = waiting[0][0]
    answer = app.request("POST", f"/runs/{project_id(cancelled_id)}/cancel", json={})
    assert answer.json() == {"runId": cancelled_id, "status": "cancelled"}
    assert [e["type"] for e in log(app, cancelled_id)][-1] == "run.cancelled"
    third, third_status = created(app)
    assert third_status == "pending"
    app.release()
    for run_id in [r for r, _ in first] + [waiting[1][0], waiting[2][0], third]:
        events = app.follow(run_id)
        assert events[-1]["type"] == "run.completed", run_id
    assert not played(log(app, cancelled_id))


def test_waiting_runs_survive_a_restart_and_play_in_turn(
    queue_app: Callable[[], AppHost],
) -> None:
    app = queue_app()
    runs = [created(app)[0] for _ in range(4)]
    app.follow(runs[1], lambda events: played(events))
    app.close()  # the two playing runs stop, the two waiting stay pending
    again = queue_app()
    assert [status(again, r) for r in runs[2:]] == ["pending", "pending"]
    assert sorted(status(again, r) for r in runs[:2]) == ["running", "running"]
    again.release()
    for run_id in runs:
        assert again.follow(run_id)[-1]["type"] == "run.completed"


# --- the slots themselves: never more than the cap, granted in the order asked ----------

OPS = st.lists(st.sampled_from(["take", "give", "cancel"]), max_size=60)


@given(ops=OPS, running=st.integers(1, 4))
def test_slots_never_exceed_the_cap_and_are_granted_first_come(
    ops: list[str], running: int
) -> None:
    async def play() -> None:
        slots = RunSlots(running, queued=1000)
        asked: list[asyncio.Task[None]] = []
        holding: list[asyncio.Task[None]] = []
        granted: list[asyncio.Task[None]] = []
        gave = 0
        for op in ops:
            if op == "take":
                task = asyncio.ensure_future(slots.take())
                task.add_done_callback(lambda t: t.cancelled() or granted.append(t))
                asked.append(task)
            elif op == "give" and holding:
                holding.pop(0)
                gave += 1
                slots.give()
            elif op == "cancel":
                waiting = [t for t in asked if not t.done()]
                if waiting:
                    waiting[-1].cancel()
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            holding.extend(granted[len(holding) + gave :])
            assert slots.held <= running
            assert slots.held == len(holding)
            # first come, first served: the granted are those asked first, less the cancelled
            kept = [t for t in asked if not t.cancelled()]
            assert granted == kept[: len(granted)]

    asyncio.run(play())


def test_admission_counts_runs_being_created() -> None:
    slots = RunSlots(running=1, queued=1)
    assert slots.admit().queued is False
    assert slots.admit().queued is True
    with pytest.raises(LineFullError):
        slots.admit()


# --- on a `serve` process, runs playing in its run worker -------------------------------


@pytest.fixture
def capped_host(tmp_path: Path, database: str) -> Iterator[Host]:
    host = start_host(tmp_path, database, "[limits]\nmax_running_runs = 3\nmax_queued_runs = 20\n")
    yield host
    host.stop()


def test_many_runs_at_once_never_play_past_the_cap_and_all_complete(capped_host: Host) -> None:
    with api(capped_host) as c:
        answers = [c.post("/runs", json=GATED_RUN) for _ in range(10)]
        assert [a.status_code for a in answers] == [201] * 10, answers[-1].text
        runs = [a.json()["runId"] for a in answers]

        def statuses() -> list[str]:
            return [c.get(f"/runs/{project_id(r)}").json()["status"] for r in runs]

        # held at their third trial: three play, seven wait, none of them having played
        wait_for(lambda: statuses().count("running") == 3, "three runs playing")
        assert statuses() == ["running"] * 3 + ["pending"] * 7
        capped_host.release()
        seen: set[int] = set()

        def all_completed() -> bool:
            # one query, one moment: how many of the host's runs are running now
            page = c.get("/runs", params={"status": "running", "limit": 100}).json()
            seen.add(len(page["runs"]))
            return statuses() == ["completed"] * 10

        wait_for(all_completed, "every run to complete", log=capped_host.log)
    assert max(seen) <= 3
    for run_id in runs:
        events, summary = log_of(capped_host, run_id)
        assert summary["passed"] is True
        assert len([e for e in events if e["type"] == "eval.scored"]) == 4
