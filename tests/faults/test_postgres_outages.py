"""PostgreSQL going away under a running host: connections cut (a blip, a restart) and a
stall (a frozen server, a dead path), through a TCP proxy of the test's own.

Cut connections fail the transactions on them; the store retries them on new connections
(and a commit whose answer was lost is not committed twice), so every run completes and its
log verifies. A stall makes requests answer ``503 store_unavailable`` within seconds instead
of hanging, and the host serves again once the path does.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.outage import (
    GATED,
    MANY,
    client,
    create,
    ended,
    many_suite,
    scored,
    start_host,
    verify_stored,
)
from tests.faults.proxy import Proxy
from tests.hosts import _postgres_database, wait_for


@pytest.fixture
def postgres() -> Iterator[str]:
    yield from _postgres_database()


@pytest.fixture
def proxy(postgres: str) -> Iterator[Proxy]:
    port = int(postgres.rsplit(":", 1)[1].split("/", 1)[0])
    with Proxy(port) as proxied:
        yield proxied


def test_runs_complete_and_verify_when_postgres_connections_are_cut_mid_run(
    tmp_path: Path, postgres: str, proxy: Proxy
) -> None:
    url = proxy.url(postgres)
    host = start_host(tmp_path, url, many_suite(tasks=10, trials=40))
    try:
        with client(host) as c:
            runs = [create(c, MANY, "test.many") for _ in range(4)]
            wait_for(lambda: scored(c, runs[0]) > 0, "the runs to commit trials", log=host.log)
            for _ in range(5):  # five resets 0.3 s apart, as the report's proxy did
                proxy.reset()
                time.sleep(0.3)  # the interval between faults, not a wait for a state
            assert [ended(c, run_id, host) for run_id in runs] == ["completed"] * 4
        suite = tmp_path / "suites" / "many.json"
        assert [verify_stored(postgres, suite, run_id) for run_id in runs] == [400] * 4
    finally:
        host.stop()


def test_a_stalled_postgres_fails_requests_fast_and_the_run_goes_on_after(
    tmp_path: Path, postgres: str, proxy: Proxy
) -> None:
    host = start_host(tmp_path, proxy.url(postgres), many_suite())
    try:
        with client(host) as c:
            held = create(c, GATED, "test.gated")
            wait_for(lambda: scored(c, held) == 2, "trials 0 and 1", log=host.log)
            proxy.stall()
            began = time.monotonic()
            refused = c.get("/runs")
            took = time.monotonic() - began
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"] == "store_unavailable"
            assert refused.headers["Retry-After"].isdigit()
            assert took < 15, took
            host.release()  # the held trials finish while the store is away
            proxy.reset()  # the stalled connections are dead: a path that comes back
            proxy.resume()
            assert ended(c, held, host) == "completed"
            assert scored(c, held) == 4
            assert c.get("/runs").status_code == 200
        assert verify_stored(postgres, tmp_path / "suites" / "gated.json", held) == 4
    finally:
        proxy.resume()
        host.stop()
