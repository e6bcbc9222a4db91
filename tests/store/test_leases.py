"""Run leases: a replica that lost a run's lease can commit nothing more to it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openwop_eval.store import RunRecord, Store
from openwop_eval.store.leases import HOST_AGENT, Lease, LeaseLostError, Leases


def _run(store: Store, run_id: str, lease: Lease) -> None:
    record = RunRecord(run_id, "acme", "running", "s", "1.0.0", f"{HOST_AGENT}a", "a")
    store.create_run(record, within=lease.claim_in(run_id))


def _row(sequence: int) -> dict[str, object]:
    return {"eventId": f"ev-{sequence}", "type": "x.y", "sequence": sequence, "payload": {}}


def test_a_stalled_replica_cannot_commit_beside_the_one_that_took_over(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    stalled, survivor = Lease("a", ttl=-1.0), Lease("b", ttl=60.0)  # a's lease born expired
    _run(store, "r1", stalled)
    store.append("r1", [_row(0)], within=stalled.fence("r1"))  # still a's: committed
    assert Leases(store, survivor).take_expired() == ["r1"]
    with pytest.raises(LeaseLostError, match="leased to another replica"):
        store.append("r1", [_row(1)], within=stalled.fence("r1"))
    assert [e["sequence"] for e in store.events("r1")] == [0]  # the refused commit left nothing
    store.append("r1", [_row(1)], within=survivor.fence("r1"))
    assert [e["sequence"] for e in store.events("r1")] == [0, 1]
    assert Leases(store, stalled).renew(["r1"]) == (set(), set())  # a must stop it
    store.close()


def test_a_live_lease_is_not_taken_and_a_released_one_is(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    one, two = Leases(store, Lease("a", 60.0)), Leases(store, Lease("b", 60.0))
    _run(store, "r1", one.lease)
    assert two.take_expired() == []
    assert two.request_cancel("r1") is True
    assert one.renew(["r1"]) == ({"r1"}, {"r1"})  # the owner sees the cancel
    one.release(["r1"])
    assert two.take_expired() == ["r1"]
    assert two.renew(["r1"]) == ({"r1"}, set())  # a fresh owner: no stale cancel
    store.close()


def test_an_unfenced_lease_commits_without_the_check(tmp_path: Path) -> None:
    """The only host of a SQLite store (its file lock excludes another) does not fence."""
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    only, other = Lease("a", 60.0, fenced=False), Lease("b", 60.0)
    assert only.fence("r1") is None
    _run(store, "r1", other)  # even a lease row of another owner does not stop it
    store.append("r1", [_row(0)], within=only.fence("r1"))
    assert [e["sequence"] for e in store.events("r1")] == [0]
    store.close()


def test_a_heartbeat_never_takes_a_run_its_replica_plays(tmp_path: Path) -> None:
    """Taking its own live runs made the heartbeat lock them against their commits (a
    deadlock on PostgreSQL), and cleared a cancel asked of them meanwhile."""
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    mine = Leases(store, Lease("a", 60.0))
    _run(store, "live", mine.lease)
    _run(store, "expired", Lease("a", -1.0))
    _run(store, "left-open", Lease("a", -1.0))
    assert mine.request_cancel("live") is True
    assert mine.take_expired(playing={"live", "expired"}) == ["left-open"]
    assert mine.renew(["live"]) == ({"live"}, {"live"})  # the cancel still stands
    # At start-up it plays nothing yet and takes back every run it held, live or not.
    assert sorted(mine.take_expired(restart=True)) == ["expired", "left-open", "live"]
    store.close()
