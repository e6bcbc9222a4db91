"""One trial of a conversation task: the agent answers, the user speaks, until the user is
done or the agent has had ``maxTurns`` turns.

Every turn's calls are attributed to it at the tool boundary, and each message is recorded
there as an ``agent.message`` event. The trial's output is the agent's last reply; its cost is
the sum of what its turns reported. A user who still speaks after the last allowed turn ends
the conversation as *exhausted*: the trial fails closed (gating 0, see ``core/conversation``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..agents.base import AgentReply, TrialContext, conversation_with
from ..base.limits import MAX_OUTPUT_CHARS
from ..core import JSON, canonical_json
from ..core.conversation import first_user_message
from ..core.stats import decimal
from ..core.suite import MAX_USER_MESSAGE_CHARS, Conversation
from ..users import UserPlayer, UserSimulatorError
from .replies import check_reply
from .tools import ToolBoundary


@dataclass
class Played:
    """How far a conversation got: filled in as it goes, so a failed one still says."""

    turns: int = 0
    exhausted: bool = False
    transcripts: list[dict[str, Any]] | None = None
    """Per turn that had one, what the agent exchanged with its model."""


def as_text(output: JSON) -> str:
    """An agent's reply as the user reads it: its text, or its JSON."""
    return output if isinstance(output, str) else canonical_json(output)


async def converse(
    context: TrialContext,
    agent: Any,
    boundary: ToolBoundary,
    conversation: Conversation,
    user: UserPlayer,
    played: Played,
) -> AgentReply:
    """Play the conversation; the reply is the last turn's output with the turns' cost."""
    first = first_user_message(context.input)
    if first is None:  # validation refuses such a suite; a hand-built one is refused here
        raise ValueError("a conversation task's input gives no first user message")
    messages: list[dict[str, JSON]] = [{"role": "user", "content": first}]
    boundary.say(0, "user", first)
    session = conversation_with(agent, context, boundary)
    costs: list[float] = []
    latencies: list[float] | None = []
    unreported = False
    try:
        for turn in range(conversation.max_turns):
            boundary.turn = turn
            reply = await session.reply(replace(context, turn=turn, messages=tuple(messages)))
            size = check_reply(reply)
            boundary.admit(size, MAX_OUTPUT_CHARS, "output-too-large", "a reply")
            played.turns = turn + 1
            _keep_transcript(played, turn, reply)
            if reply.cost_usd is None:
                unreported = True
            else:
                costs.append(reply.cost_usd)
            if latencies is not None:
                latencies = None if reply.latency_ms is None else [*latencies, reply.latency_ms]
            boundary.say(turn, "assistant", reply.output)
            messages.append({"role": "assistant", "content": as_text(reply.output)})
            said = await _next(user, messages)
            if said is None:
                return _final(reply, costs, unreported, latencies)
            boundary.admit(len(said), MAX_USER_MESSAGE_CHARS, "user-message-too-large", "a message")
            boundary.say(turn + 1, "user", said)
            messages.append({"role": "user", "content": said})
        played.exhausted = True
        return _final(reply, costs, unreported, latencies)
    finally:
        await session.aclose()


async def _next(user: UserPlayer, messages: list[dict[str, JSON]]) -> str | None:
    said = await user.next(tuple(messages))
    if said is not None and (not isinstance(said, str) or not said.strip()):
        raise UserSimulatorError("the user's message is empty or not text")
    if said is not None and len(said) > MAX_USER_MESSAGE_CHARS:
        raise UserSimulatorError(
            f"the user's message is {len(said)} characters; the limit is {MAX_USER_MESSAGE_CHARS}"
        )
    return said


def _keep_transcript(played: Played, turn: int, reply: AgentReply) -> None:
    if reply.transcript is not None:
        played.transcripts = played.transcripts or []
        played.transcripts.append({"turn": turn, "transcript": reply.transcript})


def _final(
    reply: AgentReply, costs: list[float], unreported: bool, latencies: list[float] | None
) -> AgentReply:
    """The last reply's output, with the whole conversation's cost (unknown if a turn did
    not report one) and latency: the sum of the turns' when every turn reported one, else
    measured by the trial around the whole conversation (the user's turns included)."""
    cost = None if unreported or not costs else float(sum((decimal(c) for c in costs), Fraction()))
    latency = None if not latencies else float(sum((decimal(x) for x in latencies), Fraction()))
    return AgentReply(reply.output, cost, latency)
