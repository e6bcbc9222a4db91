"""An LLM plays the user: given a persona and a goal, it answers each agent reply until it
writes its stop marker.

It is asked through the OpenAI-compatible client judges use (:mod:`..llm.chat`): the same
endpoint settings, retries with backoff on throttling and server errors, replies read within
a size limit. The conversation is shown to it with the roles turned around (the agent's
replies as the user's, its own turns as the assistant's). Whatever goes wrong (the endpoint
refuses or cannot be reached after the retries, a reply with no text, an oversized one) is a
:class:`~.base.UserSimulatorError`, never the agent's failure; its message names the endpoint
and the HTTP status, never the persona, the goal or the conversation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from ..core import JSON
from ..core.suite import MAX_USER_MESSAGE_CHARS, SimulatedUser
from ..llm.chat import DEFAULT_BASE_URL, ChatEndpoint, env_value
from .base import UserSimulatorError

if TYPE_CHECKING:
    from .players import UserPlayers

MAX_ATTEMPTS: Final = 3
"""Requests per user turn: the first, and retries of throttled or failed ones."""

_INSTRUCTIONS = (
    "You are playing a user talking to an AI assistant, to test it. Stay in character.\n"
    "Persona: {persona}\n"
    "Your goal: {goal}\n"
    "Write only your next message to the assistant, as the user would, and nothing else."
    " When your goal is met, or it clearly cannot be met, reply with exactly {stop}"
)


def endpoint_for(players: UserPlayers, environ: Mapping[str, str] | None = None) -> ChatEndpoint:
    """The run's shared endpoint of simulated users: the players' settings, else
    ``OPENWOP_EVAL_USER_*``, else the judges' (``OPENWOP_EVAL_JUDGE_*``, ``OPENAI_*``)."""
    env = os.environ if environ is None else environ
    base_url = (
        players.base_url
        or env_value(env, "OPENWOP_EVAL_USER_BASE_URL", "OPENWOP_EVAL_JUDGE_BASE_URL")
        or env_value(env, "OPENAI_BASE_URL")
        or DEFAULT_BASE_URL
    )
    key = players.api_key or env_value(
        env, "OPENWOP_EVAL_USER_API_KEY", "OPENWOP_EVAL_JUDGE_API_KEY", "OPENAI_API_KEY"
    )
    found = players.endpoints.get(base_url)
    if found is None:
        found = players.endpoints[base_url] = ChatEndpoint(base_url, key, timeout=players.timeout)
    return found


def model_for(spec: SimulatedUser, environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    model = spec.model.removeprefix("openai:").strip() or env_value(
        env, "OPENWOP_EVAL_USER_MODEL", "OPENWOP_EVAL_JUDGE_MODEL"
    )
    if not model:
        raise UserSimulatorError(
            "the simulated user has no model: name one (openai:MODEL) or set"
            " OPENWOP_EVAL_USER_MODEL"
        )
    return model


class SimulatedUserPlayer:
    """One trial's simulated user (its seed, when set, is offset by the trial's index so
    trials differ as real users do, and each is reproducible where the endpoint honours it)."""

    def __init__(self, spec: SimulatedUser, trial: int, players: UserPlayers) -> None:
        self.spec = spec
        self.trial = trial
        self._players = players

    async def next(self, messages: Sequence[Mapping[str, JSON]]) -> str | None:
        endpoint = endpoint_for(self._players)
        payload: dict[str, Any] = {
            "model": model_for(self.spec),
            "messages": self._prompt(messages),
        }
        if self.spec.seed is not None:
            payload["seed"] = self.spec.seed + self.trial
        for attempt in range(1, MAX_ATTEMPTS + 1):
            result = await endpoint.post(payload)
            if result.kind == "ok":
                return self._said(result.message.get("content"))
            if result.kind == "refused":
                raise UserSimulatorError(f"POST {endpoint.url} answered HTTP {result.status}")
            if attempt < MAX_ATTEMPTS:
                await self._players.backoff.pause(attempt, result.wait)
        raise UserSimulatorError(
            f"POST {endpoint.url} failed {MAX_ATTEMPTS} times; the last: {result.error}"
        )

    def _prompt(self, messages: Sequence[Mapping[str, JSON]]) -> list[dict[str, JSON]]:
        spec = self.spec
        system = _INSTRUCTIONS.format(persona=spec.persona, goal=spec.goal, stop=spec.stop)
        turned: list[dict[str, JSON]] = [{"role": "system", "content": system}]
        for message in messages:  # the agent speaks as the "user" of the simulator's model
            role = "user" if message.get("role") == "assistant" else "assistant"
            turned.append({"role": role, "content": message.get("content")})
        return turned

    def _said(self, content: Any) -> str | None:
        if not isinstance(content, str):
            raise UserSimulatorError("the simulated user's reply has no text")
        if self.spec.stop in content:
            return None  # done: whatever it wrote around the marker is not a turn
        text = content.strip()
        if not text:
            raise UserSimulatorError("the simulated user's reply is empty")
        if len(text) > MAX_USER_MESSAGE_CHARS:
            raise UserSimulatorError(
                f"the simulated user's reply is {len(text)} characters; the limit is"
                f" {MAX_USER_MESSAGE_CHARS}"
            )
        return text
