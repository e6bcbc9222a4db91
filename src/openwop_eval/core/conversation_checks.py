"""Semantic checks of a task's ``x-openwop-eval.conversation``, located, on the raw document:
a first user turn the input does not give, a script or turn rules that ``maxTurns`` cannot
hold, and each turn's trajectory checked as a task's is."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from . import names as n
from .conversation import first_user_message
from .problems import Loc, Problem

TrajectoryCheck = Callable[[dict[str, Any], Loc], Iterator[Problem]]


def check_conversation(
    task: dict[str, Any], loc: Loc, check_trajectory: TrajectoryCheck
) -> Iterator[Problem]:
    ext = task.get(n.EXT)
    conversation = ext.get("conversation") if isinstance(ext, dict) else None
    if not isinstance(conversation, dict):
        return
    here = (*loc, n.EXT, "conversation")
    if "input" in task and first_user_message(task["input"]) is None:
        yield Problem(
            (*loc, "input"),
            "a conversation task's input is its first user turn: a non-empty string, or an"
            " object with a non-empty string message",
        )
    max_turns = conversation.get("maxTurns")
    max_turns = (
        max_turns if isinstance(max_turns, int) and not isinstance(max_turns, bool) else None
    )
    turns = conversation.get("turns")
    turns = turns if isinstance(turns, list) else []
    if max_turns is not None and len(turns) > max_turns:
        yield Problem(
            (*here, "turns"),
            f"there are {len(turns)} turn rules but maxTurns is {max_turns}; the agent never"
            f" plays turn {max_turns + 1}",
        )
    user = conversation.get("user")
    script = user.get("script") if isinstance(user, dict) else None
    if max_turns is not None and isinstance(script, list) and len(script) >= max_turns:
        yield Problem(
            (*here, "user", "script"),
            f"the script has {len(script)} user turns after the first, so the agent needs"
            f" {len(script) + 1} turns, but maxTurns is {max_turns}: every trial would run"
            " out of turns",
        )
    for i, rule in enumerate(turns):
        trajectory = rule.get(n.TRAJECTORY) if isinstance(rule, dict) else None
        if isinstance(trajectory, dict):
            yield from check_trajectory(trajectory, (*here, "turns", i, n.TRAJECTORY))
