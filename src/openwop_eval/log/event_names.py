"""The names of an eval run's OpenWOP v2 event log, and how an event names its trial.

Every event of a trial carries the extension member ``x-openwop-eval`` = ``{taskId, trial,
invocationId}``, so it is attributable to exactly one (task, trial) even when trials run
concurrently; the protocol's closed payloads admit ``x-`` members for exactly this.
"""

from __future__ import annotations

from typing import Any

from ..core import JSON
from ..core.names import EXT as EXT

SCHEMA_VERSION = 1
"""The envelope's ``schemaVersion`` of every event this project writes."""
EVENT_LOG_SCHEMA_VERSION = 3
"""The ``eventLogSchemaVersion`` a host states for its runs' logs."""

# The v2 event types of an eval run (v1 spellings are accepted when reading).
RUN_STARTED = "run.started"
RUN_COMPLETED = "run.completed"
RUN_FAILED = "run.failed"
RUN_CANCELLED = "run.cancelled"
EVAL_STARTED = "eval.started"
EVAL_SCORED = "eval.scored"
EVAL_COMPLETED = "eval.completed"
INVOCATION_STARTED = "agent.invocation-started"
INVOCATION_COMPLETED = "agent.invocation-completed"
TOOL_CALLED = "agent.tool-called"
TOOL_RETURNED = "agent.tool-returned"
DECIDED = "agent.decided"
MESSAGE = "agent.message"
"""A conversation's user message or agent reply (``{agentId, role, content}`` with the turn in
``x-openwop-eval``): content, so an ``agent.*`` event, never an ``eval.*`` one."""

TOOL_LISTING = "toolListing"
"""The ``x-openwop-eval`` member of a trial's ``agent.invocation-started`` that holds what its
MCP servers listed of its tools beyond their names, by tool: ``{"description"?,
"inputSchema"}`` (a recording's, or a real server's): a replay of its log lists the same."""

ENDINGS = (RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED)
"""The events that end a run; a log holds at most one, as its last event."""

V1_NAMES = {
    "agent.toolCalled": TOOL_CALLED,
    "agent.toolReturned": TOOL_RETURNED,
    "agent.invocation.started": INVOCATION_STARTED,
    "agent.invocation.completed": INVOCATION_COMPLETED,
}


def v2_type(event_type: str) -> str:
    return V1_NAMES.get(event_type, event_type)


def trial_ext(task_id: str, trial: int, invocation_id: str, **extra: JSON) -> dict[str, JSON]:
    return {EXT: {"taskId": task_id, "trial": trial, "invocationId": invocation_id, **extra}}


def workflow_id(suite_id: str) -> str:
    """The stable synthetic ``workflowId`` of an eval run (runs of a suite share it)."""
    return f"eval:{suite_id}"


def sequence_of(doc: dict[str, Any]) -> int:
    """An event's sequence for ordering; a missing or malformed one sorts first."""
    value = doc.get("sequence")
    return value if type(value) is int else 0
