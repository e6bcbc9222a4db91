"""The agent turns of a recorded conversation, told apart as its messages are read.

An agent turn is what the agent does after a user message, up to the next user message: its
tool calls and its reply. A user message starts a new turn once the agent has acted (replied,
called a tool) since the previous one; consecutive user messages are one user turn, which the
agent answers once. Whatever comes before the first user message (a system prompt, a
greeting) belongs to the first turn, which answers the task's input. A trace that ends on a
user message the agent never acted on ends on an unanswered turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..core import JSON, canonical_json
from ..core.suite import MAX_USER_MESSAGE_CHARS
from .records import TraceTurn, text_of

NO_TEXT = "(the trace records no text for this message)"
"""What the replay's user says for a user message without text (an image, a file)."""


class TurnSplitter:
    """Fed a conversation's messages in order; :attr:`index` is the turn being read."""

    def __init__(self) -> None:
        self.closed: list[TraceTurn] = []
        self.heard: list[str] = []
        """The user's messages the turn being read answers."""
        self.output: JSON = None
        self.acted = False
        """The agent acted since the last user message (or since the start)."""

    @property
    def index(self) -> int:
        return len(self.closed)

    def user(self, content: Any) -> None:
        if self.heard and self.acted:
            self.closed.append(TraceTurn(self._said(), self.output))
            self.heard = []
        self.heard.append(user_text(content))
        self.output, self.acted = None, False  # a greeting before it answers nothing

    def act(self) -> None:
        """The agent called a tool or a tool answered: a reply, if any, comes after."""
        self.acted = True

    def reply(self, output: JSON) -> None:
        """The agent's message: the turn's reply so far (None when it made calls)."""
        self.output, self.acted = output, True

    def turns(self) -> tuple[TraceTurn, ...]:
        answered = self.acted or not self.heard
        return (*self.closed, TraceTurn(self._said(), self.output, answered))

    def _said(self) -> str | None:
        return _cut("\n\n".join(self.heard)) if self.heard else None


def user_text(content: Any) -> str:
    """A user message as the replay's user says it: its text; else its content as JSON; a
    message with neither says :data:`NO_TEXT`. Cut to the user message limit."""
    text = text_of(content)
    if text is None and content is not None and not isinstance(content, str):
        try:
            text = canonical_json(content)
        except (TypeError, ValueError):
            text = None  # not JSON data (a value past the limits): said as text-less
    return _cut(text) if text is not None and text.strip() else NO_TEXT


def _cut(text: str) -> str:
    limit = MAX_USER_MESSAGE_CHARS
    return text if len(text) <= limit else text[: limit - 1] + "…"


def with_final_output(turns: Sequence[TraceTurn], output: JSON) -> tuple[TraceTurn, ...]:
    """``turns`` with ``output`` as the last answered turn's reply (a record's own
    ``output``, a root span's answer: the conversation's answer)."""
    answered = [i for i, t in enumerate(turns) if t.answered]
    if not answered:
        return tuple(turns)
    last = answered[-1]
    return (*turns[:last], replace(turns[last], output=output), *turns[last + 1 :])
