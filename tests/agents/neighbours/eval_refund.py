"""An agent file that imports the module beside it, as a user's evaluation file does."""

from __future__ import annotations

from typing import Any

from refund_helpers import ANSWER  # type: ignore[import-not-found]


def agent(task: Any, tools: Any) -> str:
    return str(ANSWER)
