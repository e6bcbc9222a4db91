"""What an ``openai:MODEL`` agent offers the model: tool definitions, their function names,
prices per model and the system prompt — from a tool catalog file (JSON or YAML)::

    {"tools": {"crm:lookup-order": {"description": "Look an order up.",
                                    "parameters": {"type": "object", "properties": {...}}}},
     "models": {"gpt-4o-mini": {"inputPerMillion": 0.15, "outputPerMillion": 0.6}},
     "systemPrompt": "You are a support agent.",
     "maxTurns": 32, "temperature": 0}

OpenWOP tool names (``crm:lookup-order``) are mapped to function names the API accepts
(``^[A-Za-z0-9_-]{1,64}$``) by :func:`function_name`, an injective encoding (see
``docs/openai-agent.md``).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import Field, ValidationError, field_validator

from ..core.closed import Closed
from ..core.problems import Problem
from ..files.documents import read_document
from .base import AgentSpecError

MAX_FUNCTION_CHARS = 64
HASH_CHARS = 10
PERMISSIVE: dict[str, Any] = {"type": "object", "additionalProperties": True}
"""The parameters of a tool nothing describes: any object."""

_SAFE = re.compile(r"[A-Za-z0-9-]")
_PLAIN_TOOL = re.compile(r"[A-Za-z0-9-]+(?:[:_][A-Za-z0-9-]+)*")
_PLAIN_FUNCTION = re.compile(r"[A-Za-z0-9-]+(?:_{1,2}[A-Za-z0-9-]+)*")
_ESCAPE = re.compile(r"_([0-9a-f]{2})|([A-Za-z0-9-])")


def function_name(tool: str) -> str:
    """The function name of an OpenWOP tool; distinct tools never share one.

    * plain: a name of ``[A-Za-z0-9-]`` runs joined by single ``:`` or ``_`` — ``:`` becomes
      ``__`` (``crm:lookup_order`` → ``crm__lookup_order``);
    * escaped, any other name: ``_`` then the name with each byte outside ``[A-Za-z0-9-]``
      as ``_xx`` in hex (``docs.search`` → ``_docs_2esearch``);
    * over 64 characters: the first 51 of that, ``___``, and 10 hex digits of the SHA-256 of
      the name. Neither of the other forms starts with ``_`` and holds ``___`` both.
    """
    if _PLAIN_TOOL.fullmatch(tool):
        encoded = tool.replace(":", "__")
    else:
        encoded = "_" + "".join(
            c if _SAFE.fullmatch(c) else "".join(f"_{b:02x}" for b in c.encode()) for c in tool
        )
    if len(encoded) <= MAX_FUNCTION_CHARS:
        return encoded
    digest = hashlib.sha256(tool.encode()).hexdigest()[:HASH_CHARS]
    return encoded[: MAX_FUNCTION_CHARS - HASH_CHARS - 3] + "___" + digest


def decode_function_name(function: str) -> str | None:
    """The tool a plain or escaped function name stands for; None for a hashed name or one
    :func:`function_name` never makes (the offered tools' table knows the hashed ones)."""
    if function.startswith("_"):
        parts = list(_ESCAPE.finditer(function, 1))
        if sum(len(m.group(0)) for m in parts) != len(function) - 1:
            return None
        data = b"".join(
            bytes([int(m.group(1), 16)]) if m.group(1) else m.group(2).encode() for m in parts
        )
        try:
            tool = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    elif _PLAIN_FUNCTION.fullmatch(function):
        tool = function.replace("__", ":")
    else:
        return None
    return tool if tool and function_name(tool) == function else None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it."""

    description: str | None = None
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million input (prompt) and output (completion) tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million
        ) / 1_000_000


def parse_price(spec: str) -> tuple[str, Price]:
    """``MODEL=IN/OUT`` (``gpt-4o-mini=0.15/0.6``); the model name may hold ``/`` and ``:``."""
    model, sep, rates = spec.rpartition("=")
    numbers = rates.split("/")
    try:
        values = [float(n) for n in numbers] if sep and model.strip() else []
    except ValueError:
        values = []
    if len(values) != 2 or not all(math.isfinite(v) and v >= 0 for v in values):
        raise AgentSpecError(
            f"--price {spec!r}: expected MODEL=IN/OUT, USD per million input and output"
            " tokens, e.g. gpt-4o-mini=0.15/0.6"
        )
    return model.strip(), Price(values[0], values[1])


class _ToolEntry(Closed):
    description: str | None = None
    parameters: dict[str, Any] | None = None

    @field_validator("parameters")
    @classmethod
    def _schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        try:
            Draft202012Validator.check_schema(value)
        except SchemaError as exc:
            raise ValueError(f"not a valid JSON Schema: {exc.message}") from None
        if value.get("type", "object") != "object":
            raise ValueError('the parameters schema must describe an object ("type": "object")')
        return value


class _PriceEntry(Closed):
    input_per_million: float = Field(alias="inputPerMillion", ge=0, allow_inf_nan=False)
    output_per_million: float = Field(alias="outputPerMillion", ge=0, allow_inf_nan=False)


class _CatalogDoc(Closed):
    tools: dict[str, _ToolEntry] = Field(default_factory=dict)
    models: dict[str, _PriceEntry] = Field(default_factory=dict)
    system_prompt: str | None = Field(None, alias="systemPrompt")
    max_turns: int | None = Field(None, alias="maxTurns", ge=1, le=1000)
    temperature: float | None = Field(None, ge=0, le=2)


@dataclass(frozen=True)
class ToolCatalog:
    tools: Mapping[str, ToolSpec]
    prices: Mapping[str, Price]
    system_prompt: str | None = None
    max_turns: int | None = None
    temperature: float | None = None

    @classmethod
    def empty(cls) -> ToolCatalog:
        return cls({}, {})

    @classmethod
    def from_file(cls, path: str | Path) -> ToolCatalog:
        path = Path(path)
        doc, lines, problems = read_document(path)
        if not problems:
            try:
                parsed = _CatalogDoc.model_validate(doc)
            except ValidationError as exc:
                problems = [
                    Problem(tuple(e["loc"]), e["msg"]).at_line(lines.line_of(tuple(e["loc"])))
                    for e in exc.errors()
                ]
            else:
                return cls(
                    {k: ToolSpec(v.description, v.parameters) for k, v in parsed.tools.items()},
                    {
                        k: Price(v.input_per_million, v.output_per_million)
                        for k, v in parsed.models.items()
                    },
                    parsed.system_prompt,
                    parsed.max_turns,
                    parsed.temperature,
                )
        listed = "\n".join(f"  {p}" for p in problems)
        raise AgentSpecError(f"{path} is not a valid tool catalog:\n{listed}")


def live_declarations(live: Mapping[str, Callable[..., Any]]) -> dict[str, ToolSpec]:
    """What live tools say of themselves: a ``parameters`` attribute (a JSON Schema object)
    and a ``description`` attribute, else a function's docstring."""
    found: dict[str, ToolSpec] = {}
    for tool, fn in live.items():
        parameters = getattr(fn, "parameters", None)
        description = getattr(fn, "description", None)
        if not isinstance(description, str):  # a partial's or an object's doc is its class's
            routine = inspect.isfunction(fn) or inspect.ismethod(fn)
            description = inspect.getdoc(fn) if routine else None
        if parameters is not None:
            try:
                parameters = _ToolEntry(parameters=parameters).parameters
            except ValidationError as exc:
                raise AgentSpecError(
                    f"live tool {tool}: parameters: {exc.errors()[0]['msg']}"
                ) from None
        if parameters is not None or description:
            found[tool] = ToolSpec(description or None, parameters)
    return found
