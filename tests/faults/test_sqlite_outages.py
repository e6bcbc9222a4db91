"""A SQLite store that fails under a running host: its disk full, its file gone.

Requests that need the store answer ``503 store_unavailable`` with ``Retry-After`` (never a
500, never a success that is not kept), and a run that could not commit is left open, not
failed: once the disk has room again the host takes it back and it completes; once the
operator restores the file and restarts the host, it resumes.
"""

from __future__ import annotations

import resource
from pathlib import Path

import httpx
import pytest

from openwop_eval.protocol.ids import project
from tests.faults.outage import (
    GATED,
    MANY,
    client,
    ended,
    many_suite,
    scored,
    start_host,
    status,
    verify_stored,
)
from tests.hosts import Host, wait_for


def _processes(pid: int) -> list[int]:
    """``pid`` and its descendants (the host and its run workers)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid] + [p for child in children for p in _processes(int(child))]


def _file_size_limit(host: Host, size: int) -> None:
    """Every process of the host may write files up to ``size`` bytes: 0 is a full disk
    (each write fails with EFBIG; Python ignores SIGXFSZ)."""
    assert host.process is not None
    for pid in _processes(host.process.pid):
        _, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (size, hard))


def _refused(c: httpx.Client) -> None:
    body = {"mode": "eval", "evalSuiteRef": MANY, "agentId": "test.many"}
    response = c.post("/runs", json=body)
    assert response.status_code == 503, response.text
    assert response.json() == {
        "error": "store_unavailable",
        "message": "the store is unavailable for now; try again later",
    }
    assert int(response.headers["Retry-After"]) > 0


def _held_run(host: Host, c: httpx.Client) -> str:
    """A run of the gated agent with trials 0 and 1 committed and 2 waiting for release."""
    body = {"mode": "eval", "evalSuiteRef": GATED, "agentId": "test.gated"}
    response = c.post("/runs", json=body)
    assert response.status_code == 201, response.text
    run_id = str(response.json()["runId"])
    wait_for(lambda: scored(c, run_id) == 2, "trials 0 and 1", log=host.log)
    return run_id


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
def test_a_full_disk_answers_503_and_the_run_left_open_completes_once_it_has_room(
    tmp_path: Path,
) -> None:
    database = f"sqlite:///{tmp_path / 'host.sqlite'}"
    host = start_host(tmp_path, database, many_suite())
    try:
        with client(host) as c:
            held = _held_run(host, c)
            _file_size_limit(host, 0)
            _refused(c)
            host.release()  # trials 2 and 3 end, and cannot be committed
            _refused(c)  # each refusal takes the store's whole retry time: the run's
            _refused(c)  # commits have given up by the second
            assert status(c, held) == "running"  # reads go on; the run is open, not failed
            _file_size_limit(host, resource.RLIM_INFINITY)
            assert ended(c, held, host) == "completed"
        assert verify_stored(database, tmp_path / "suites" / "gated.json", held) == 4
    finally:
        _file_size_limit(host, resource.RLIM_INFINITY)
        host.stop()


def test_a_vanished_store_file_answers_503_and_the_run_resumes_once_restored(
    tmp_path: Path,
) -> None:
    path = tmp_path / "host.sqlite"
    database = f"sqlite:///{path}"
    host = start_host(tmp_path, database, many_suite())
    try:
        with client(host) as c:
            held = _held_run(host, c)
            path.rename(tmp_path / "aside.sqlite")  # deleted, as far as the host can tell
            refused = c.get("/runs")
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"] == "store_unavailable"
            _refused(c)
            host.release()  # trials 2 and 3 end, and cannot be committed
        host.stop()
        assert "was deleted or replaced while open" in host.log.read_text()
        assert not path.exists()  # no empty store was made in its place
        (tmp_path / "aside.sqlite").rename(path)  # the operator restores it, and restarts
        host = Host(host.config, database, host.gate_dir, host.port).start()
        with client(host) as c:
            assert ended(c, held, host) == "completed"
        assert verify_stored(database, tmp_path / "suites" / "gated.json", held) == 4
    finally:
        host.stop()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux's /proc")
def test_a_run_cancelled_while_the_disk_is_full_ends_cancelled_once_it_has_room(
    tmp_path: Path,
) -> None:
    """The cancel could not be recorded: the run is not resumed as if it had never been
    asked, but ended as cancelled when the store takes writes again."""
    database = f"sqlite:///{tmp_path / 'host.sqlite'}"
    host = start_host(tmp_path, database, many_suite())
    try:
        with client(host) as c:
            held = _held_run(host, c)
            _file_size_limit(host, 0)
            cancel = c.post(f"/runs/{project(held)}/cancel")
            assert cancel.status_code in (200, 503), cancel.text
            assert status(c, held) == "running"  # nothing could be written
            _file_size_limit(host, resource.RLIM_INFINITY)
            host.release()
            assert ended(c, held, host) == "cancelled"
    finally:
        _file_size_limit(host, resource.RLIM_INFINITY)
        host.stop()
