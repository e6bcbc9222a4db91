"""A run's status and the moves it may make, as data; the store makes each move a
compare-and-set, so a late writer cannot undo what another decided.

A run is created ``running``, or ``pending`` when a host queues it for a slot:

- ``pending`` → ``running``: it got a slot (or a resume took it up);
- ``running`` → ``pending``: a host re-queued it (recovered past its free slots);
- ``running`` → ``running``: a resume takes up a run an interruption left running;
- ``pending`` or ``running`` → ``completed``, ``failed`` or ``cancelled``: it ended;
- ``completed``, ``failed`` and ``cancelled`` are terminal: nothing moves a run out of them.

A move the table does not allow takes no effect: the run keeps its status and the values
that came with the move (a summary, an error, a seal) are not written. So a cancel that
loses to the run's completion leaves it completed, and a run ended as cancelled is never
running again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..core import OpenwopEvalError
from .schema import runs

RunStatus: TypeAlias = Literal["pending", "running", "completed", "failed", "cancelled"]
UNFINISHED: tuple[RunStatus, ...] = ("pending", "running")
"""The statuses of a run that has not ended."""
TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

MOVES: Mapping[RunStatus, frozenset[RunStatus]] = MappingProxyType(
    {
        "pending": frozenset({"running", "completed", "failed", "cancelled"}),
        "running": frozenset({"running", "pending", "completed", "failed", "cancelled"}),
        "completed": frozenset(),
        "failed": frozenset(),
        "cancelled": frozenset(),
    }
)
"""For each status, the statuses a run in it may move to."""


def may_move(current: RunStatus, wanted: RunStatus) -> bool:
    return wanted in MOVES[current]


def predecessors(wanted: RunStatus) -> tuple[RunStatus, ...]:
    """The statuses a run may move to ``wanted`` from, in the table's order."""
    return tuple(current for current, moves in MOVES.items() if wanted in moves)


@dataclass(frozen=True)
class Moved:
    """What a move did: ``took`` whether it took effect; ``status`` the run's status after
    it (None: there is no such run)."""

    run_id: str
    wanted: RunStatus
    took: bool
    status: RunStatus | None

    @property
    def ended(self) -> bool:
        """Whether the run has ended now, by this move or before it."""
        return self.status in TERMINAL_STATUSES


class RunStatusError(OpenwopEvalError):
    """A run's status may not make the move asked: it has ended, or it is gone."""

    def __init__(self, moved: Moved) -> None:
        state = "no longer exists" if moved.status is None else f"is {moved.status}"
        super().__init__(f"run {moved.run_id} {state}; it cannot become {moved.wanted}")
        self.moved = moved


def required(moved: Moved) -> Moved:
    """``moved``, if it took effect; else :class:`RunStatusError`."""
    if not moved.took:
        raise RunStatusError(moved)
    return moved


def move(
    tx: Connection, run_id: str, wanted: RunStatus, values: dict[str, Any], retried: bool
) -> Moved:
    """Set the run's status to ``wanted`` (with ``values``) where the table allows it from
    the one it has, in one statement. ``retried``: an earlier try of this transaction may
    have landed unseen, so a run found in ``wanted`` already is taken as moved by it."""
    update = (
        runs.update()
        .where((runs.c.run_id == run_id) & runs.c.status.in_(predecessors(wanted)))
        .values(status=wanted, **values)
    )
    if tx.execute(update).rowcount == 1:
        return Moved(run_id, wanted, True, wanted)
    status = tx.execute(sa.select(runs.c.status).where(runs.c.run_id == run_id)).scalar()
    return Moved(run_id, wanted, retried and status == wanted, status)
