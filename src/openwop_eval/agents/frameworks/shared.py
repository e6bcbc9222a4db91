"""What every framework adapter does alike: the task's input as the user's prompt, a tool's
answer as the text a framework hands its model, a miss as the tool error the model sees, the
framework's final output and arguments as JSON, and its transcript, with an exception too.
It imports no framework."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from ...base.errors import InfrastructureError, leaves, told
from ...core import JSON
from ..base import AgentProtocolError, ToolMissError


def prompt(task_input: JSON) -> str:
    """The user's turn: a string input as it is, ``{"message": "..."}`` (its only key) as its
    message, anything else as its JSON text — as an ``openai:`` agent's first user turn, so
    no field the task gives is hidden from the model."""
    if isinstance(task_input, str):
        return task_input
    if isinstance(task_input, dict) and set(task_input) == {"message"}:
        message = task_input["message"]
        if isinstance(message, str):
            return message
    return json.dumps(task_input, ensure_ascii=False)


def tool_text(result: JSON) -> str:
    """A tool's answer as a framework's tool output: a string as it is, else its JSON text
    (never a Python ``repr``, and never a value a framework would read as its own types)."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def miss_text(error: ToolMissError) -> str:
    """What the model sees of a miss (the trial has already failed closed): a tool error, as
    an ``openai:`` agent's model sees it, so a model does not retry a call none can answer."""
    return error_text("fixture-miss", str(error))


def error_text(kind: str, message: str) -> str:
    """A tool error as an ``openai:`` agent's model sees one."""
    return json.dumps({"error": {"kind": kind, "message": message}}, ensure_ascii=False)


def output_json(value: Any, what: str) -> JSON:
    """``value`` as JSON: text as it is, a pydantic model, dataclass or typed dict as the JSON
    it dumps to. An output with no JSON form is the agent's protocol error."""
    try:
        found: JSON = to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise AgentProtocolError(f"{what} is not JSON: {exc}") from None
    return found


class FrameworkRunError(RuntimeError):
    """A framework's run that ended without an output; ``transcript`` is what it exchanged."""

    def __init__(self, message: str, transcript: JSON = None) -> None:
        super().__init__(message)
        self.transcript = transcript


_TRANSCRIPT = "transcript"
"""The attribute of an agent's exception the runner reads its transcript from."""


def attach_transcript(error: BaseException, transcript: JSON) -> None:
    """Gives a framework's exception the run's transcript, which the report keeps with it."""
    setattr(error, _TRANSCRIPT, transcript)


def transcript_json(value: Any) -> JSON:
    """A transcript as JSON; a part without a JSON form becomes its text (it is diagnostics)."""
    found: JSON = to_jsonable_python(value, fallback=str)
    return found


def arguments_json(args: Mapping[str, Any], tool: str) -> dict[str, JSON]:
    """A framework's validated arguments as a JSON object (a date as its ISO text, a model as
    its dump)."""
    return {key: output_json(value, f"argument {key!r} of {tool}") for key, value in args.items()}


def raise_infrastructure(exc: BaseException) -> None:
    """Raise :class:`InfrastructureError` from ``exc`` (keeping its transcript) when ``exc``
    says the model endpoint could not be reached after the client's own retries — a
    connection or timeout error, 429 or 5xx, as the OpenAI SDK, Pydantic AI or httpx tell it —
    so the trial errors on infrastructure, not as the agent's failure; else do nothing."""
    endpoint = _unreachable_endpoint(exc)
    if endpoint is None:
        return
    error = InfrastructureError(f"the model endpoint could not be reached: {told(exc)}", endpoint)
    attach_transcript(error, getattr(exc, _TRANSCRIPT, None))
    raise error from exc


def _unreachable_endpoint(exc: BaseException) -> str | None:
    """What ``exc`` could not reach, if it is such a failure (a framework that is not
    loaded raised none of its errors, so none is imported here)."""
    for leaf in leaves(exc):
        for module, names in _UNREACHABLE:
            loaded = sys.modules.get(module)
            kinds = tuple(getattr(loaded, name) for name in names if hasattr(loaded, name))
            if kinds and isinstance(leaf, kinds):
                return _where(leaf)
    return None


_UNREACHABLE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai", ("APIConnectionError", "InternalServerError", "RateLimitError")),
    (
        "pydantic_ai.exceptions",
        (
            "ModelConnectionError",
            "ModelUnavailableError",
            "ModelServerError",
            "ModelRateLimitError",
            "ModelRequestTimeout",
        ),
    ),
    ("httpx", ("TransportError",)),
)
"""(a module, its exceptions that mean the endpoint never answered usably)."""


def _where(error: BaseException) -> str:
    """The URL of the request that failed (on ``error`` or an exception it was raised from),
    else the model it names."""
    seen: BaseException | None = error
    for _ in range(8):  # a cause chain is short; a cycle is not followed
        if seen is None:
            break
        url = getattr(getattr(seen, "request", None), "url", None)
        if url is not None:
            return str(url)
        seen = seen.__cause__ or seen.__context__
    model = getattr(error, "model_name", None)
    return f"the model {model}" if model else "the model endpoint"
