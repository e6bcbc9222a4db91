"""What every user player shares: the next user message after each agent reply."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from ..core import JSON


class UserSimulatorError(RuntimeError):
    """The simulated user failed: its endpoint errored or could not be reached, it broke its
    protocol (an empty or oversized message, no text), or it never answered. The trial errors
    with kind ``user-simulator``: it never passes, and it is counted apart from the agent's
    failures. The message is content-free of the persona and goal."""


class UserPlayer(Protocol):
    """One trial's user. :meth:`next` is called after each agent reply with the whole
    conversation so far (OpenAI-style messages, the agent's last); it returns the user's next
    message, or None when the user is done."""

    async def next(self, messages: Sequence[Mapping[str, JSON]]) -> str | None: ...
