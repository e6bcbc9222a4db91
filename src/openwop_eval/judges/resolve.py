"""From a ``--judge`` string to a judge."""

from __future__ import annotations

from typing import Protocol

from ..core.rubric import Judge
from .errors import JudgeSpecError
from .openai import OpenAIJudge
from .scripted import ScriptedJudge

JUDGE_FORMS = "scripted:PATH (a verdicts file) or openai:MODEL (an OpenAI-compatible endpoint)"


class ClosableJudge(Judge, Protocol):
    """A judge that holds resources (an HTTP client) until it is closed."""

    async def aclose(self) -> None: ...


def resolve_judge(
    spec: str | None, *, base_url: str | None = None, api_key: str | None = None
) -> ClosableJudge | None:
    """``None`` → no judge; ``scripted:PATH``; ``openai:MODEL`` (empty: the environment's)."""
    if spec is None:
        return None
    if spec.startswith("scripted:"):
        path = spec.removeprefix("scripted:").strip()
        if not path:
            raise JudgeSpecError("scripted: needs a file, e.g. scripted:verdicts.json")
        return ScriptedJudge.from_file(path)
    if spec.startswith("openai:"):
        model = spec.removeprefix("openai:").strip() or None
        return OpenAIJudge.from_env(model=model, base_url=base_url, api_key=api_key)
    raise JudgeSpecError(f"unknown judge {spec!r}; use {JUDGE_FORMS}")
