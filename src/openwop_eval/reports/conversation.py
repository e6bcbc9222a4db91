"""A conversation trial as people read it: turn by turn, the user's message, the calls the
agent made in that turn and its reply, each turn with the reasons located in it, and how the
conversation ended.

It is read from what the store kept of the trial: its messages (``conversation``: turn, role,
content, in the order they were said) and its calls (each with its ``turn``). A reason is
located by its own ``turn`` (a turn's rule) or, failing that, by the turn of the call its
``call_index`` names (those count the calls of the whole conversation).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import JSON, Reason
from ..core.names import ENDED_AT_MAX_TURNS, ENDED_BY_USER
from ..core.names import ERROR_USER_SIMULATOR as USER_SIMULATOR

__all__ = ["ENDED_BY_ERROR", "ConversationReport", "Exchange", "conversation_report", "ending"]

ENDED_BY_ERROR = "error"
"""The conversation was cut short: the agent, the simulated user or a limit failed in it."""

FIXTURE_MISS = "fixture-miss"
"""The error kind of a trial whose agent met a call without a fixture response."""


@dataclass(frozen=True, slots=True)
class Exchange:
    """One turn: the user's message, the calls the agent made answering it, its reply."""

    turn: int
    """0-based, as ``ToolCall.turn`` and ``Reason.turn``; people read it 1-based."""
    user: JSON
    said: bool
    """Whether the user said anything in this turn (``user`` is its message)."""
    calls: tuple[int, ...]
    """Indexes into the trial's calls, in call order."""
    reply: JSON
    replied: bool
    """Whether the agent replied in this turn (``reply`` is its reply)."""
    reasons: tuple[Reason, ...]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"turn": self.turn}
        if self.said:
            out["user"] = self.user
        out["calls"] = list(self.calls)
        if self.replied:
            out["reply"] = self.reply
        out["reasons"] = [r.as_dict() for r in self.reasons]
        return out


@dataclass(frozen=True, slots=True)
class ConversationReport:
    """A conversation trial, turn by turn (JSON ``conversation``)."""

    exchanges: tuple[Exchange, ...]
    turns: int
    """The agent turns played: its replies."""
    max_turns: int | None
    ended: str
    """``user`` (the user was done), ``max-turns`` (the user still spoke after the last turn
    the task allows) or ``error`` (cut short: see the trial's error)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "maxTurns": self.max_turns,
            "ended": self.ended,
            "exchanges": [e.as_dict() for e in self.exchanges],
        }


def conversation_report(
    detail: Mapping[str, Any], reasons: Sequence[Reason], max_turns: int | None
) -> ConversationReport | None:
    """The conversation of a trial from what the store kept of it (None: not a conversation,
    or one kept before messages were)."""
    messages = detail.get("conversation")
    if not isinstance(messages, list):
        return None
    calls = detail.get("calls")
    calls = calls if isinstance(calls, list) else []
    call_turns = [_turn_of(c) for c in calls]
    turns: dict[int, dict[str, Any]] = {}
    for message in messages:
        if not isinstance(message, dict):
            continue
        at = turns.setdefault(_turn_of(message), {})
        at["assistant" if message.get("role") == "assistant" else "user"] = message.get("content")
    for turn in call_turns:
        turns.setdefault(turn, {})
    located = _located(reasons, call_turns)
    exchanges = tuple(
        Exchange(
            turn,
            said.get("user"),
            "user" in said,
            tuple(i for i, t in enumerate(call_turns) if t == turn),
            said.get("assistant"),
            "assistant" in said,
            tuple(located.get(turn, ())),
        )
        for turn, said in sorted(turns.items())
    )
    replies = sum(e.replied for e in exchanges)
    return ConversationReport(exchanges, replies, max_turns, _ended(messages, detail, max_turns))


def ending(conversation: ConversationReport, error_kind: object) -> str:
    """How the conversation ended, in a sentence."""
    turns, most = conversation.turns, conversation.max_turns
    if conversation.ended == ENDED_AT_MAX_TURNS:
        return (
            f"Ran out of turns: the user still had more to say after the agent's {turns}"
            f" turn{'s' if turns != 1 else ''} (maxTurns {most}); the path counts as wrong."
        )
    last = conversation.exchanges[-1] if conversation.exchanges else None
    at = (last.turn + 1) if last is not None else 1
    if conversation.ended == ENDED_BY_ERROR:
        when = "after" if last is not None and last.replied else "in"
        if error_kind == USER_SIMULATOR:
            return (
                f"The simulated user failed after turn {at}: the conversation ended there."
                " That is the simulator's failure, not the agent's."
            )
        if error_kind == FIXTURE_MISS:
            return f"Cut short in turn {at}: a call had no fixture response (failed closed)."
        return f"Cut short {when} turn {at} by an error ({error_kind})."
    of = f" of at most {most}" if most is not None else ""
    return f"The user was done after turn {at} ({turns}{of} turns)."


def _turn_of(item: Any) -> int:
    turn = item.get("turn") if isinstance(item, dict) else None
    return turn if isinstance(turn, int) and not isinstance(turn, bool) and turn >= 0 else 0


def _located(reasons: Sequence[Reason], call_turns: list[int]) -> dict[int, list[Reason]]:
    """The reasons that belong to a turn, by turn: its rule's, or its call's."""
    by_turn: dict[int, list[Reason]] = {}
    for reason in reasons:
        turn = reason.turn
        if turn is None and reason.call_index is not None and reason.call_index < len(call_turns):
            turn = call_turns[reason.call_index]
        if turn is not None:
            by_turn.setdefault(turn, []).append(reason)
    return by_turn


def _ended(messages: list[Any], detail: Mapping[str, Any], max_turns: int | None) -> str:
    """Out of turns: its last message is the user's, past the last turn allowed (an agent
    that failed mid-turn leaves the user's message of an allowed turn last). Otherwise an
    error of the trial — not its judge's, which came after the conversation — cut it short."""
    last = messages[-1] if messages else None
    if (
        isinstance(last, dict)
        and last.get("role") == "user"
        and max_turns is not None
        and _turn_of(last) >= max_turns
    ):
        return ENDED_AT_MAX_TURNS
    if detail.get("errorKind") and not detail.get("judgeError"):
        return ENDED_BY_ERROR
    return ENDED_BY_USER
