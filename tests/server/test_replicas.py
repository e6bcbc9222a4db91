"""Host replicas on one PostgreSQL database: a replica killed mid-run, the survivor finishes
its runs with no trial counted twice, and a stream that reconnects to it misses nothing."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from openwop_client.wire_id import project_id

from openwop_eval.server.config import ConfigError, HostConfig
from openwop_eval.server.replicas import SqliteLock
from tests.hosts import Host, _free_port, _postgres_database, api, wait_for, write_config
from tests.server.inprocess import GATED_RUN

REPLICAS = """
[replicas]
lease_seconds = 3
heartbeat_seconds = 0.5
"""


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[Host, Host]]:
    made = _postgres_database()
    database = next(made)
    config = write_config(tmp_path)
    config.write_text(config.read_text() + REPLICAS)
    gate = tmp_path / "gate"
    gate.mkdir()
    one = Host(config, database, gate, _free_port()).start()
    two = Host(config, database, gate, _free_port()).start()
    try:
        yield one, two
    finally:
        one.stop()
        two.stop()
        for _ in made:  # drops the database
            pass


def _events(host: Host, run_id: str) -> list[dict[str, Any]]:
    with api(host) as c:
        body = c.get(f"/runs/{project_id(run_id)}/events/poll", params={"timeout": 0}).json()
    events: list[dict[str, Any]] = body["events"]
    return events


def _status(client: httpx.Client, path: str) -> str:
    status: str = client.get(path).json()["status"]
    return status


def _scored(events: list[dict[str, Any]]) -> list[int]:
    return [e["payload"]["x-openwop-eval"]["trial"] for e in events if e["type"] == "eval.scored"]


class Stream:
    """An SSE client in a thread: records every event's sequence until the stream ends or
    breaks (its host killed). As the SSE spec says, an event counts, and its id becomes the
    last event id, only once its blank line has come: a stream cut inside an event drops
    it, and the resumed stream sends it again."""

    def __init__(self, host: Host, run_id: str, after: str | None = None) -> None:
        self.sequences: list[int] = []
        self.last_id: str | None = after
        url = f"{host.url}/runs/{project_id(run_id)}/events"
        headers = {"Authorization": "Bearer acme-key"}
        if after is not None:
            headers["Last-Event-ID"] = after
        self._thread = threading.Thread(target=self._read, args=(url, headers), daemon=True)
        self._thread.start()

    def _read(self, url: str, headers: dict[str, str]) -> None:
        try:
            with httpx.stream("GET", url, headers=headers, timeout=60) as response:
                event_id, data = None, None
                for line in response.iter_lines():
                    if line.startswith("id: "):
                        event_id = line.removeprefix("id: ")
                    elif line.startswith("data: "):
                        data = json.loads(line.removeprefix("data: "))
                    elif not line and data is not None:
                        self.sequences.append(data["sequence"])
                        self.last_id, event_id, data = event_id, None, None
        except httpx.HTTPError:
            pass  # the replica died under it

    def join(self) -> None:
        self._thread.join(60)


def test_a_killed_replica_s_runs_are_finished_by_the_survivor(
    replicas: tuple[Host, Host],
) -> None:
    one, two = replicas
    runs = []
    for _ in range(2):
        with api(one) as c:
            created = c.post("/runs", json=GATED_RUN)
        assert created.status_code == 201, created.text
        runs.append(created.json()["runId"])
    for run_id in runs:  # trials 0 and 1 finish; trial 2 waits for the release
        wait_for(lambda r=run_id: len(_scored(_events(two, r))) == 2, "two trials, seen anywhere")
    streams = [Stream(one, run_id) for run_id in runs]
    wait_for(lambda: all(len(s.sequences) >= 8 for s in streams), "the streams to catch up")

    one.kill()  # SIGKILL: no shutdown, its leases just stop being renewed
    for stream in streams:
        stream.join()
    one.release()
    resumed = [
        Stream(two, run_id, after=s.last_id) for run_id, s in zip(runs, streams, strict=True)
    ]

    for run_id in runs:
        path = f"/runs/{project_id(run_id)}"
        with api(two) as c:
            wait_for(lambda p=path: _status(c, p) == "completed", "the survivor", log=two.log)
            summary = c.get(f"{path}/eval-summary").json()
        events = _events(two, run_id)
        assert sorted(_scored(events)) == [0, 1, 2, 3]  # each trial once
        assert [e["sequence"] for e in events] == list(range(len(events)))
        assert [e["type"] for e in events].count("run.completed") == 1
        assert summary["passed"] is True
        assert summary["tasks"][0]["trials"]["trialStats"]["passed"] == 4
    for stream, again, run_id in zip(streams, resumed, runs, strict=True):
        again.join()
        everything = stream.sequences + again.sequences
        assert everything == list(range(len(_events(two, run_id))))  # every event once


def test_a_run_on_one_replica_is_cancelled_from_another(replicas: tuple[Host, Host]) -> None:
    one, two = replicas
    with api(one) as c:
        run_id = c.post("/runs", json=GATED_RUN).json()["runId"]
    wait_for(lambda: len(_scored(_events(two, run_id))) == 2, "two trials")
    path = f"/runs/{project_id(run_id)}"
    with api(two) as c:
        assert c.post(f"{path}/cancel").status_code in (200, 202)
        wait_for(lambda: c.get(path).json()["status"] == "cancelled", "the owner to cancel it")
    assert _events(one, run_id)[-1]["type"] == "run.cancelled"


def test_a_second_host_on_one_sqlite_store_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'host.sqlite'}"
    first = SqliteLock(url)
    with pytest.raises(ConfigError, match="several host replicas need PostgreSQL"):
        SqliteLock(url)
    first.release()
    SqliteLock(url).release()  # free again once the first has gone


def test_heartbeats_must_fit_in_a_lease() -> None:
    with pytest.raises(ValueError, match="a third of lease_seconds"):
        HostConfig.model_validate({"replicas": {"lease_seconds": 3, "heartbeat_seconds": 2}})
