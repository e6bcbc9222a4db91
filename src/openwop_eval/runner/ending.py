"""Ending a run that cannot complete: one event, one status, and a content-free reason.

A run-level error is read by anyone who can list runs, so it carries a kind and a fixed
message, never an exception's text: a database error quotes its parameters (tool arguments,
fixture responses), an agent's exception quotes whatever the agent had in hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..agents.python import AgentStalledError
from ..log.event_names import RUN_CANCELLED, RUN_COMPLETED, RUN_FAILED
from ..store import EventRow, RunStatus, Store, StoreError
from ..store.sql import Within
from .events import EventWriter, pending


@dataclass(frozen=True)
class RunFailure:
    code: str
    message: str

    def as_error(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


STORE_FAILED = RunFailure("store_error", "the store could not record the run")
INTERNAL = RunFailure("run_failed", "the run stopped on an internal error")
SOURCE_LOST = RunFailure(
    "fixture_source_lost",
    "the run's fixture source cannot be read back; it is not continued on other fixtures",
)
SUITE_LOST = RunFailure("suite_unloadable", "the run's suite no longer loads")
AGENT_GONE = RunFailure(
    "run_abandoned", "the run's agent is no longer configured on this host to run it"
)

AGENT_STALLED = RunFailure(
    "agent_stalled",
    "the run's agent stalled: it blocked its event loop, or left too many calls running"
    " past their timeouts",
)


def failure_of(exc: BaseException) -> RunFailure:
    """The content-free kind of an exception that ended a run."""
    if isinstance(exc, AgentStalledError):
        return AGENT_STALLED
    return STORE_FAILED if isinstance(exc, StoreError) else INTERNAL


def writer_for(
    store: Store,
    run_id: str,
    last: int,
    jsonl: Any = None,
    on_commit: Callable[[str], None] | None = None,
    fence: Within | None = None,
) -> EventWriter:
    """The one writer of a run's events: to the store, then the optional file. ``fence``
    checks in each commit's transaction that this process may still write the run."""

    def commit(rows: list[EventRow], trials: list[Any]) -> None:
        store.append(run_id, rows, trials, fence)
        if on_commit is not None:
            on_commit(run_id)

    return EventWriter(run_id, commit, last, jsonl)


def end_run(
    store: Store,
    run_id: str,
    status: RunStatus,
    failure: RunFailure | None = None,
    writer: EventWriter | None = None,
) -> bool:
    """Commit what ``writer`` holds, then ``run.failed``/``run.cancelled`` and the status.

    Returns whether the run has ended now: False when the store refused even that (what is
    committed is kept, and the run stays open for a later resume or recovery to end it).
    A run another writer has ended already keeps its ending (its log gets no second one,
    its status does not move: a cancel that lost to the completion leaves it completed).
    """
    writer = writer or writer_for(store, run_id, store.last_sequence(run_id))
    try:
        writer.flush()  # finished trials first
    except Exception:  # the store may be what failed; what is committed is kept
        writer.discard()
    if status == "cancelled":
        event = pending(RUN_CANCELLED, {})
    else:
        event = pending(RUN_FAILED, {"error": (failure or INTERNAL).as_error()})
    try:
        if _has_ended(store, run_id):
            return True
        writer.write([event])
        writer.flush()
        moved = store.set_status(run_id, status, error=failure.message if failure else None)
    except Exception:
        return False
    return moved.ended


def _has_ended(store: Store, run_id: str) -> bool:
    run = store.get_run(run_id, documents=False)
    return run is not None and run.terminal


_ENDINGS: dict[str, RunStatus] = {
    RUN_COMPLETED: "completed",
    RUN_FAILED: "failed",
    RUN_CANCELLED: "cancelled",
}


def settle_logged_end(store: Store, run_id: str) -> RunStatus | None:
    """A run whose log already ends it (killed between that commit and the status update)
    takes the status its log states; returns the status it has then (another writer's, if
    it ended the run first), or None when the log does not end it."""
    last = store.last_sequence(run_id)
    tail = store.events(run_id, after=last - 1) if last >= 0 else []
    status = _ENDINGS.get(tail[-1].get("type", "")) if tail else None
    if status is None:
        return None
    payload = tail[-1].get("payload") or {}
    summary = (payload.get("outputs") or {}).get("evalSummary") if status == "completed" else None
    error = (payload.get("error") or {}).get("message") if status == "failed" else None
    moved = store.set_status(run_id, status, summary=summary, error=error)
    return moved.status if moved.ended else None  # ended otherwise meanwhile: as it was
