"""Who plays the user of a conversation task: a script, or an LLM (:mod:`.simulator`)."""

from .base import UserPlayer, UserSimulatorError
from .players import UserPlayers

__all__ = ["UserPlayer", "UserPlayers", "UserSimulatorError"]
