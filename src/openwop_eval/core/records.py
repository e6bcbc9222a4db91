"""What a trial did, as recorded at the tool boundary: the input to grading."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

from .canonical import JSON

if TYPE_CHECKING:  # safety.py reads ToolCall: the import would be circular at run time
    from .safety import FindingTag


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call *attempt*, served or not."""

    tool: str
    args: JSON = field(default_factory=dict)
    missed: bool = False
    """True when fixtures were in force and could not answer this call (a fixture miss)."""
    turn: int = 0
    """The agent turn it was made in (0-based): 0 outside a conversation."""


@dataclass(frozen=True, slots=True)
class TrialRecord:
    """The recorded facts of one trial of one task."""

    task_id: str
    index: int
    """0-based trial index within the task."""
    output: JSON = None
    tool_calls: tuple[ToolCall, ...] = ()
    error: str | None = None
    """Set when the agent raised, timed out or broke its protocol: the trial errored."""
    cost_usd: float | None = None
    latency_ms: float | None = None
    verdicts: tuple[float, ...] | None = None
    """Rubric tasks: the judge's per-criterion verdicts in [0, 1], in rubric order."""
    output_score: float | None = None
    """A recorded output score (from a run's ``eval.scored``): used as is, never re-graded."""
    findings: tuple[FindingTag, ...] = ()
    """Adversarial runs: the trial's safety findings, as its ``eval.scored`` records them."""
    infrastructure: bool = False
    """It errored because it could not reach what it needed (its model endpoint, an MCP
    server, its judge) after the retries: the infrastructure's failure, not the agent's. It
    scores 0 as any error does, and shuts the gate of its run (``core/gate.py``)."""
    turns: int | None = None
    """A conversation: the agent turns it played (None: not a conversation)."""
    exhausted: bool = False
    """A conversation that reached ``maxTurns`` with the user still speaking: it fails
    closed as a wrong path does (gating 0), its output score kept."""
    user_simulator: bool = False
    """It errored because its simulated user failed (errored, broke its protocol, never
    answered): not the agent's failure. It scores 0 and shuts its run's gate."""


Recording: TypeAlias = Mapping[str, Mapping[int, list[tuple[str, JSON, JSON]]]]
"""Recorded tool responses: per task, per recorded trial, (tool, args, result) of each
answered call — what a run replays as fixtures (``--fixtures-from``, ``fixtureRuns``,
``grade``)."""
