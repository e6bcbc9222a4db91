"""A run's status moves only as its table allows, by a compare-and-set in the store: a late
writer cannot turn a completed run into a failed one, nor a cancelled one back into running;
writers racing to end a run leave exactly one ending, which nothing changes afterwards."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openwop_eval.store import TERMINAL_STATUSES, RunRecord, RunStatus, Store
from openwop_eval.store.status import (
    MOVES,
    UNFINISHED,
    Moved,
    RunStatusError,
    may_move,
    move,
    predecessors,
    required,
)

STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
ALLOWED = {
    ("pending", "running"),
    ("pending", "completed"),
    ("pending", "failed"),
    ("pending", "cancelled"),
    ("running", "running"),
    ("running", "pending"),
    ("running", "completed"),
    ("running", "failed"),
    ("running", "cancelled"),
}
"""Every move a run may make, written out: a change to the table must change this too."""
ENDINGS: tuple[RunStatus, ...] = ("completed", "failed", "cancelled")


@pytest.fixture
def store(database: str) -> Iterator[Store]:
    opened = Store(database)
    yield opened
    opened.close()


_ids = itertools.count()


def new_run(store: Store, status: RunStatus = "running") -> str:
    run_id = f"acme/r{next(_ids):06d}"
    store.create_run(RunRecord(run_id, "acme", status, "a.b.evals.c", "1.0.0", "x:y", "agent"))
    return run_id


@pytest.mark.parametrize(("current", "wanted"), list(itertools.product(STATUSES, STATUSES)))
def test_the_table_allows_exactly_these_moves(current: RunStatus, wanted: RunStatus) -> None:
    assert may_move(current, wanted) == ((current, wanted) in ALLOWED)
    assert (current in predecessors(wanted)) == ((current, wanted) in ALLOWED)


def test_the_table_covers_every_status_and_terminal_ones_never_move() -> None:
    assert set(MOVES) == set(STATUSES)
    assert TERMINAL_STATUSES == {s for s in STATUSES if not MOVES[s]} == set(ENDINGS)
    assert set(UNFINISHED) == set(STATUSES) - TERMINAL_STATUSES


def test_every_move_is_a_compare_and_set_in_the_store(store: Store) -> None:
    for current, wanted in itertools.product(STATUSES, STATUSES):
        run_id = new_run(store, current)
        moved = store.set_status(run_id, wanted, summary={"passed": True}, error="e")
        allowed = (current, wanted) in ALLOWED
        assert moved == Moved(run_id, wanted, allowed, wanted if allowed else current)
        after = store.get_run(run_id)
        assert after is not None
        assert after.status == (wanted if allowed else current)
        # what came with a refused move is not written either
        assert (after.summary, after.error) == (
            ({"passed": True}, "e") if allowed else (None, None)
        )


def test_a_move_of_a_run_that_does_not_exist_takes_no_effect(store: Store) -> None:
    moved = store.set_status("acme/none", "completed")
    assert moved == Moved("acme/none", "completed", False, None)
    assert not moved.ended
    with pytest.raises(RunStatusError, match="run acme/none no longer exists; it cannot become"):
        required(moved)


def test_a_late_writer_cannot_undo_an_ending(store: Store) -> None:
    completed = new_run(store)
    assert store.set_status(completed, "completed", summary={"passed": True}).took
    late = store.set_status(completed, "failed", error="the run stopped on an internal error")
    assert (late.took, late.status, late.ended) == (False, "completed", True)
    cancelled = new_run(store)
    assert store.set_status(cancelled, "cancelled").took
    with pytest.raises(RunStatusError, match=f"run {cancelled} is cancelled; it cannot become"):
        required(store.set_status(cancelled, "running"))
    got = store.get_run(completed)
    assert got is not None
    assert (got.status, got.summary, got.error) == ("completed", {"passed": True}, None)


def test_a_retried_move_whose_first_try_landed_took_effect(store: Store) -> None:
    """The store retries a transaction whose commit's answer was lost: the second try finds
    the run moved already, by the first."""
    run_id = new_run(store)
    assert store.set_status(run_id, "completed").took
    with store.transaction() as tx:
        assert move(tx, run_id, "completed", {}, retried=True).took
        assert not move(tx, run_id, "completed", {}, retried=False).took
        assert not move(tx, run_id, "failed", {}, retried=True).took


def race(store: Store, run_id: str, writers: int) -> list[Moved]:
    """``writers`` threads, let go at once, each ending the run: completed, failed or
    cancelled in turn."""
    start = threading.Barrier(writers)
    results: list[Moved] = []

    def end(status: RunStatus) -> None:
        start.wait()
        results.append(store.set_status(run_id, status, summary={"by": status}))

    threads = [threading.Thread(target=end, args=(ENDINGS[i % 3],)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.mark.parametrize("writers", [3, 9])
def test_writers_racing_to_end_a_run_leave_exactly_one_ending(store: Store, writers: int) -> None:
    for _ in range(5):
        run_id = new_run(store)
        results = race(store, run_id, writers)
        assert len(results) == writers
        winners = [m for m in results if m.took]
        assert len(winners) == 1
        (winner,) = winners
        assert all(m.status == winner.wanted for m in results)  # every writer saw the one
        for late in ENDINGS + UNFINISHED:  # and nothing changes it afterwards
            assert not store.set_status(run_id, late).took
        got = store.get_run(run_id)
        assert got is not None
        assert (got.status, got.summary) == (winner.wanted, {"by": winner.wanted})


@pytest.fixture(scope="module")
def memory() -> Iterator[Store]:
    opened = Store("sqlite://")
    yield opened
    opened.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.sampled_from(UNFINISHED),
    moves=st.lists(st.sampled_from(STATUSES), max_size=6),
)
def test_any_sequence_of_moves_follows_the_table(
    memory: Store, start: RunStatus, moves: list[RunStatus]
) -> None:
    run_id = new_run(memory, start)
    status = start
    for wanted in moves:
        moved = memory.set_status(run_id, wanted)
        assert moved.took == may_move(status, wanted)
        status = wanted if moved.took else status
        assert moved.status == status
        assert moved.ended == (status in TERMINAL_STATUSES)
