"""What the store keeps about a run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..base import jsontext
from .status import TERMINAL_STATUSES, RunStatus

__all__ = ["HOST_AGENT", "TERMINAL_STATUSES", "EventRow", "RunRecord", "RunStatus"]

HOST_AGENT = "host-agent:"
"""The ``agent_spec`` prefix of runs a host started (the only runs replicas take over, and
the only ones that can be a host's evidence)."""


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    tenant: str
    status: RunStatus
    suite_id: str
    suite_version: str
    agent_spec: str
    agent_id: str
    suite_doc: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    mode: str = "eval"
    summary: dict[str, Any] | None = None
    error: str | None = None
    fixture_source: dict[str, Any] | None = None
    """What answers the run's tool calls, as the runner stored it when the run was created."""
    agent_version: str | None = None
    """The version of the agent the run evaluated (a host's agent configuration's)."""
    evidence: str | None = None
    """The host's MAC over the completed run (server/evidence.py); None: not evidence."""

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class EventRow(NamedTuple):
    """An event as the store keeps it: its key columns and its JSON text, encoded once."""

    sequence: int
    event_id: str
    type: str
    text: str

    @classmethod
    def of(cls, doc: dict[str, Any]) -> EventRow:
        return cls(doc["sequence"], doc["eventId"], doc["type"], jsontext.dumps(doc))
