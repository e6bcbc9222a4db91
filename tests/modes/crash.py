"""What a crash leaves in the store, made on purpose: a run whose last trials never
committed, and how two executions of a run may differ (measured latencies only)."""

from __future__ import annotations

from typing import Any

from openwop_eval.log.event_names import EXT
from openwop_eval.store import RunStatus, Store
from openwop_eval.store.schema import events, runs, trial_results


def untimed(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without measured latencies, which differ between two executions."""
    tasks = [{k: v for k, v in t.items() if k != "latencyMs"} for t in summary["tasks"]]
    return {**summary, "tasks": tasks}


def forget_task(store: Store, run_id: str, task_id: str) -> None:
    """Delete a task's trials and the run's ending from the store: what a crash leaves."""
    docs = store.events(run_id)
    gone = {
        d["payload"][EXT]["invocationId"]
        for d in docs
        if d["type"] == "agent.invocation-started" and d["payload"][EXT]["taskId"] == task_id
    }
    with store.transaction() as tx:
        for doc in docs:
            ext = (doc.get("payload") or {}).get(EXT) or {}
            if ext.get("invocationId") in gone or doc["type"] in (
                "eval.completed",
                "run.completed",
            ):
                tx.execute(
                    events.delete().where(
                        (events.c.run_id == run_id) & (events.c.sequence == doc["sequence"])
                    )
                )
        tx.execute(
            trial_results.delete().where(
                (trial_results.c.run_id == run_id) & (trial_results.c.task_id == task_id)
            )
        )
        forge_status(tx, run_id, "running")


def forge_status(tx: Any, run_id: str, status: RunStatus) -> None:
    """Write a run's status into its row, past the store's transitions (which never move a
    run out of a terminal status): what a crash, or a hand in the database, leaves."""
    tx.execute(runs.update().where(runs.c.run_id == run_id).values(status=status))
