"""The runner's status writes under the store's transition table: an ending that lost to
another keeps the first (and the log gets no second), and a run that has ended is not
taken up again."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from openwop_eval.agents import resolve_agent
from openwop_eval.files.suites import load_suite
from openwop_eval.judges import resolve_judge
from openwop_eval.runner.api import run_suite
from openwop_eval.runner.ending import end_run, settle_logged_end
from openwop_eval.runner.run import Execution, reopen_run
from openwop_eval.store import RunStatus, Store
from openwop_eval.store.status import RunStatusError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples/support-refunds"


@pytest.fixture
def completed(tmp_path: Path) -> tuple[Store, str]:
    store = Store(f"sqlite:///{tmp_path / 'store.sqlite'}")
    result = run_suite(
        load_suite(EXAMPLE / "suite.yaml"),
        f"{EXAMPLE / 'agent.py'}:careful_support_agent",
        store=store,
        judge=resolve_judge(f"scripted:{EXAMPLE / 'judge.json'}"),
    )
    return store, result.run_id


@pytest.mark.parametrize("status", ["cancelled", "failed"])
def test_an_ending_that_lost_to_the_completion_leaves_the_run_completed(
    completed: tuple[Store, str], status: RunStatus
) -> None:
    store, run_id = completed
    before = store.events(run_id)
    assert end_run(store, run_id, status) is True  # it has ended
    run = store.get_run(run_id)
    assert run is not None
    assert (run.status, run.error) == ("completed", None)
    assert store.events(run_id) == before  # no run.cancelled after its run.completed


def test_a_logged_end_does_not_move_a_run_that_ended_otherwise(
    completed: tuple[Store, str],
) -> None:
    store, run_id = completed
    assert settle_logged_end(store, run_id) == "completed"  # as its log says, already


def test_a_run_that_has_ended_is_not_taken_up_again(completed: tuple[Store, str]) -> None:
    store, run_id = completed
    run = store.get_run(run_id)
    assert run is not None
    loaded = load_suite(EXAMPLE / "suite.yaml")
    agent = resolve_agent(f"{EXAMPLE / 'agent.py'}:careful_support_agent")
    jsonl = io.StringIO()
    execution = Execution(store, loaded, agent, jsonl=jsonl)
    with pytest.raises(RunStatusError, match=f"run {run_id} is completed; it cannot become"):
        reopen_run(execution, run)
    assert jsonl.getvalue() == ""  # nothing written for a run it did not take up
