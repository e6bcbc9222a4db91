"""The agent turns of a trace of spans: one per agent invocation, else one per model call that
answers a user message, else the whole trace is one turn.

- **Agent invocations.** Each outermost agent span (``invoke_agent``, OpenInference
  ``AGENT``; an agent another agent runs is part of its turn) is one turn, in start order. A
  span is in the turn of the invocation that encloses it; a span outside every invocation,
  in the turn of the last invocation started before it.
- **Model calls.** A trace without agent spans whose model calls record their input
  messages: each call (not in error) whose input ends on a user message starts a turn — a
  call that goes on after tool results does not — and every span is in the turn of the last
  such call started before it.

A turn's reply is its invocation's answer, else that of its model call that ended last; the
user's message is the last user input message its invocation records, else the one its
first model call that answers a user message records. A trace with neither agent spans nor
such model calls is one turn, which says no user message (:attr:`.records.Trace.turns` is
empty).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from ..core import JSON
from .otlp import Span
from .records import TraceTurn
from .span_attrs import answer_of, input_roles, is_agent, is_chat, unresolved_chain, user_said
from .turns import user_text


@dataclass(frozen=True)
class SpanTurns:
    """The turn of every span (by ``order``) and the turns, empty for one turn."""

    of: dict[int, int]
    turns: tuple[TraceTurn, ...]


def span_turns(spans: Sequence[Span]) -> SpanTurns:
    """The turns of one trace's spans, ``spans`` ordered by start time."""
    top = _outermost_agents(spans)
    starts = [s for s in spans if top[s.order] is s]
    enclosing = True
    if not starts:
        starts = [s for s in spans if _answers_user(s)]
        enclosing = False
    if not starts:
        return SpanTurns({}, ())
    times = [s.start for s in starts]
    index = {s.order: i for i, s in enumerate(starts)}
    of: dict[int, int] = {}
    members: list[list[Span]] = [[] for _ in starts]
    for span in spans:
        agent = top[span.order] if enclosing else None
        turn = index[agent.order] if agent is not None else bisect_right(times, span.start) - 1
        of[span.order] = max(0, turn)
        members[of[span.order]].append(span)
    return SpanTurns(of, tuple(_turn(s, m) for s, m in zip(starts, members, strict=True)))


def _turn(start: Span, members: list[Span]) -> TraceTurn:
    said = user_said(start.attrs)
    if said is None:  # an invocation that does not record its input: its first model call
        said = next((user_said(s.attrs) for s in members if _answers_user(s)), None)
    return TraceTurn(None if said is None else user_text(said), _reply(start, members))


def _reply(start: Span, members: list[Span]) -> JSON:
    chats = sorted((s for s in members if is_chat(s.attrs)), key=lambda s: (s.end, s.order))
    for span in (start, *reversed(chats)):
        found = answer_of(span.attrs)
        if found is not None:
            return found
    return None


def _answers_user(span: Span) -> bool:
    if span.error is not None or not is_chat(span.attrs):
        return False
    roles = input_roles(span.attrs)
    return bool(roles) and roles[-1][0] == "user"


def _outermost_agents(spans: Sequence[Span]) -> dict[int, Span | None]:
    """Each span's outermost agent span, itself or an ancestor, or None. Every chain of
    parents is walked once (memoised), so a deep or cyclic trace costs linear time."""
    by_id = {s.span_id: s for s in spans}
    memo: dict[int, Span | None] = {}
    for span in spans:
        chain = unresolved_chain(span, memo, lambda node: by_id.get(node.parent_id or ""))
        for member in reversed(chain):
            parent = by_id.get(member.parent_id or "")
            above = memo.get(parent.order) if parent is not None else None  # None: a cycle
            if above is None and is_agent(member.attrs):
                above = member
            memo[member.order] = above
    return memo
