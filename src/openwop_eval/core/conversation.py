"""The path of a conversation, graded: the task's trajectory over every call of every turn,
and each turn's own rule over the calls made while that turn was answered.

A turn the conversation never reached has no calls: its steps are missing, its forbidden
tools were not called. A conversation that ran out of turns fails closed as a wrong path
does (RFC 0246 applied to conversations): its gating score is 0, its output score kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .reasons import Reason, Reasons
from .records import ToolCall
from .trajectory import MATCHED, TrajectoryResult, TrajectorySpec, check_trajectory

TurnSpecs = tuple[TrajectorySpec | None, ...]
"""Per agent turn (by position), its compiled trajectory, or None where it has no rule."""


def first_user_message(task_input: Any) -> str | None:
    """The first user turn of a conversation task: its ``input`` when it is text, or the
    input's ``message`` member; None when the input is neither."""
    if isinstance(task_input, str) and task_input:
        return task_input
    if isinstance(task_input, dict):
        message = task_input.get("message")
        if isinstance(message, str) and message:
            return message
    return None


def check_path(
    whole: TrajectorySpec | None, turns: TurnSpecs, calls: Sequence[ToolCall]
) -> TrajectoryResult | None:
    """The whole conversation's trajectory and every turn rule over ``calls``, as one result
    (None when there is no rule at all). The whole trajectory's violations come first, then
    each turn's in turn order, located by turn and by call in the whole conversation."""
    result = None if whole is None else check_trajectory(whole, calls)
    if not any(spec is not None for spec in turns):
        return result
    failed: list[tuple[int, TrajectoryResult, list[int]]] = []
    for turn, spec in enumerate(turns):
        if spec is None:
            continue
        positions = [i for i, call in enumerate(calls) if call.turn == turn]
        checked = check_trajectory(spec, [calls[i] for i in positions])
        if not checked.matched:
            failed.append((turn, checked, positions))
    if not failed:
        return MATCHED if result is None else result
    earlier = result.violations if result is not None else Reasons()
    return TrajectoryResult(False, Reasons((), _located, earlier, failed))


def _located(
    earlier: Reasons, failed: list[tuple[int, TrajectoryResult, list[int]]]
) -> list[Reason]:
    reasons = list(earlier)
    for turn, checked, positions in failed:
        for reason in checked.violations:
            index = reason.call_index
            reasons.append(
                replace(
                    reason,
                    message=f"turn {turn + 1}: {reason.message}",
                    call_index=None if index is None else positions[index],
                    turn=turn,
                )
            )
    return reasons


def exhausted_reason(turns: int) -> Reason:
    return Reason(
        "turns-exhausted",
        f"the user still had more to say after the agent's {turns} turns (maxTurns): the"
        " conversation ran out of turns",
    )
