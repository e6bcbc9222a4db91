"""The users of a run's conversation tasks: a fresh player per trial, from the task's
``conversation.user``. Simulated users share one endpoint client per run (the judges'
OpenAI-compatible endpoint, configured the same way)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..core.suite import Conversation
from ..llm.chat import Backoff, ChatEndpoint
from .base import UserPlayer
from .scripted import ScriptedUser
from .simulator import SimulatedUserPlayer

DEFAULT_TIMEOUT_S = 60.0
"""A simulated user's request timeout, as a judge's."""


class UserPlayers:
    """Deals each conversation trial its user. Holds no connection until a simulated user
    first speaks; send it to another process and it opens its own there."""

    simulates: ClassVar[bool] = True
    """It deals the tasks' simulated users (a recording's users, say, do not)."""

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        backoff: Backoff | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.backoff = backoff or Backoff()
        self.timeout = timeout
        """Seconds a simulated user's request may take (connect, each read): one that never
        answers, or never finishes answering, is a failed attempt."""
        """The wait between a simulated user's attempts (exponential, as judges')."""
        self.endpoints: dict[str, ChatEndpoint] = {}
        """The simulated users' endpoint clients, by base URL (see :mod:`.simulator`)."""

    def player(self, conversation: Conversation, trial: int, task_id: str) -> UserPlayer:
        """The user of trial ``trial`` of task ``task_id`` (a recording's users tell trials
        apart by both: ``traces/agent.py``)."""
        user = conversation.user
        if user.script is not None:
            return ScriptedUser(user.script)
        assert user.simulator is not None  # the model allows exactly one of the two
        return SimulatedUserPlayer(user.simulator, trial, self)

    async def aclose(self) -> None:
        """Close the endpoint clients the simulated users opened."""
        endpoints, self.endpoints = self.endpoints, {}
        for endpoint in endpoints.values():
            await endpoint.aclose()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "base_url": self.base_url,
            "api_key": self.api_key,
            "backoff": self.backoff,
            "timeout": self.timeout,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.base_url, self.api_key, self.endpoints = state["base_url"], state["api_key"], {}
        self.backoff, self.timeout = state["backoff"], state["timeout"]
