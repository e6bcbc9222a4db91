"""A scripted user: the task's ``script``, one message per agent reply, then done."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core import JSON


class ScriptedUser:
    def __init__(self, script: Sequence[str]) -> None:
        self._script = tuple(script)
        self._said = 0

    async def next(self, messages: Sequence[Mapping[str, JSON]]) -> str | None:
        if self._said >= len(self._script):
            return None
        self._said += 1
        return self._script[self._said - 1]
